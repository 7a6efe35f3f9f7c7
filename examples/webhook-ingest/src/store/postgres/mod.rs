//! The PostgreSQL store, for a fleet of nodes behind a load balancer.
//!
//! tokio-postgres speaks the protocol on the async runtime without blocking a thread, and
//! deadpool-postgres keeps a bounded pool of its connections: a request waits for one at most
//! `POOL_WAIT` and is then answered "busy" (503, `Retry-After`), never parked for good.
//! Deliveries go through a group commit ([`writer`]): those waiting share one transaction,
//! each under a savepoint of its own. Whether a delivery is new is decided by the
//! `deliveries` primary key in that transaction (`INSERT … ON CONFLICT`), so twenty copies
//! arriving at twenty nodes at once store it once: the database makes the later ones
//! wait on the first's row and then see it.

mod catchup;
mod deliveries;
mod durability;
mod inboxes;
mod instances;
mod refusals;
mod replays;
mod schema;
pub mod tls;
mod writer;

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{
    Manager, ManagerConfig, Pool, PoolError, RecyclingMethod, Runtime, TimeoutType,
};
use tokio_postgres::error::SqlState;
use tokio_postgres::NoTls;

use super::{Operations, StoreError};

/// Connections per node: enough to keep a 2-core node's handlers fed, and small
/// enough that a fleet of a dozen stays well under PostgreSQL's default 100 connections.
const POOL_SIZE: usize = 8;
/// How long a request waits for a free connection before the store answers "busy".
const POOL_WAIT: Duration = Duration::from_secs(5);
/// How long opening a connection (TCP, then password authentication, which costs CPU on
/// both sides) may take: a database that does not answer by then is reported unreachable
/// (503) rather than holding the request until the provider gives up (GitHub waits 10 s).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Fixed key of the advisory lock that makes nodes starting together migrate one at a
/// time (any constant works; this one spells "webhook" in ASCII).
const MIGRATION_LOCK: i64 = 0x0077_6562_686f_6f6b;

/// Whether PostgreSQL refused only because of contention that a retry clears.
pub(super) fn is_busy(error: &tokio_postgres::Error) -> bool {
    matches!(
        error.code(),
        Some(&SqlState::T_R_SERIALIZATION_FAILURE | &SqlState::T_R_DEADLOCK_DETECTED)
    )
}

/// Whether the pool only had no free connection in time (the database itself answered).
pub(super) fn pool_is_busy(error: &PoolError) -> bool {
    matches!(error, PoolError::Timeout(TimeoutType::Wait))
}

/// A handle on the PostgreSQL store; cheap to clone.
#[derive(Clone)]
pub(super) struct PgStore {
    pool: Pool,
    /// Why a commit may return before it is durable, read from the settings at start.
    not_durable: Option<String>,
    /// The group commit every delivery goes through.
    writers: writer::Writers,
}

impl PgStore {
    /// Connects to the database `url` names, over TLS as its `sslmode` asks (trusting the
    /// system's roots and those in the PEM file `ca`), and runs the migrations it has not had
    /// yet.
    pub(super) async fn open(url: &str, ca: Option<&Path>) -> Result<PgStore, StoreError> {
        let (mode, url) =
            tls::SslMode::from_url(url).map_err(|e| StoreError::Misconfigured(e.into()))?;
        let mut config = tokio_postgres::Config::from_str(&url)
            .map_err(|e| StoreError::Misconfigured(e.into()))?;
        config.connect_timeout(CONNECT_TIMEOUT);
        config.ssl_mode(mode.for_config());
        let manager_config = ManagerConfig {
            // A connection that broke is found out by the query that uses it, and the pool
            // drops it; checking each one before use would cost a round trip.
            recycling_method: RecyclingMethod::Fast,
        };
        let manager = if mode == tls::SslMode::Disable {
            Manager::from_config(config, NoTls, manager_config)
        } else {
            let connector =
                tls::connector(mode, ca).map_err(|e| StoreError::Misconfigured(e.into()))?;
            Manager::from_config(config, connector, manager_config)
        };
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .wait_timeout(Some(POOL_WAIT))
            .create_timeout(Some(CONNECT_TIMEOUT))
            .recycle_timeout(Some(CONNECT_TIMEOUT))
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|e| StoreError::Open(e.into()))?;
        let mut store = PgStore {
            writers: writer::Writers::start(pool.clone()),
            pool,
            not_durable: None,
        };
        store
            .migrate()
            .await
            .map_err(|e| StoreError::Open(e.into()))?;
        store.warm().await;
        let client = store.pool.get().await?;
        store.not_durable = durability::check(&client).await?;
        if let Some(why) = &store.not_durable {
            tracing::warn!(why = %why, "answers that say stored may not survive a crash");
        }
        Ok(store)
    }

    /// Opens every connection of the pool before the first delivery, all at once. Opening one
    /// is the costly part of a connection (a process forked on the server, a SCRAM exchange
    /// on both sides), and a node that opened them on demand paid it during its first burst:
    /// on a loaded machine that burst's deliveries waited past `CONNECT_TIMEOUT` and were
    /// answered 503. Best effort: a connection that does not open now opens on demand later.
    async fn warm(&self) {
        let opened = futures::future::join_all((0..POOL_SIZE).map(|_| self.pool.get())).await;
        let failed = opened.iter().filter(|c| c.is_err()).count();
        if failed > 0 {
            tracing::warn!(failed, of = POOL_SIZE, "connections not opened at start");
        }
    }

    /// Applies the missing migrations in one transaction, under an advisory lock, so that
    /// nodes starting at the same moment neither race nor apply one twice.
    async fn migrate(&self) -> Result<(), StoreError> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .await?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (
                version INTEGER PRIMARY KEY,
                applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
            )",
        )
        .await?;
        let done: i64 = tx
            .query_one("SELECT count(*) FROM schema_migrations", &[])
            .await?
            .get(0);
        for (version, migration) in schema::MIGRATIONS.iter().enumerate().skip(done as usize) {
            tx.batch_execute(migration).await?;
            let version = version as i32 + 1;
            tx.execute(
                "INSERT INTO schema_migrations (version) VALUES ($1)",
                &[&version],
            )
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

#[async_trait]
impl Operations for PgStore {
    async fn health(&self) -> Result<(), StoreError> {
        self.pool.get().await?.simple_query("SELECT 1").await?;
        Ok(())
    }

    fn not_durable(&self) -> Option<&str> {
        self.not_durable.as_deref()
    }
}

#[cfg(test)]
mod tests;
