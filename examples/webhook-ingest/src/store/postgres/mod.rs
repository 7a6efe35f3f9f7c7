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
mod durability;
mod inboxes;
mod refusals;
mod replays;
pub mod tls;
mod writer;

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use deadpool_postgres::{
    Manager, ManagerConfig, Pool, PoolError, RecyclingMethod, Runtime, TimeoutType,
};
use tokio_postgres::error::SqlState;
use tokio_postgres::NoTls;

use super::{InboxRow, Ingested, InstanceRow, NewInbox, Stats, StoreError, StoredCommit};
use crate::store::replays::Claim;
use crate::store::Commit;

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

/// The schema, one migration per version, recorded in `schema_migrations`.
const MIGRATIONS: [&str; 6] = [
    "
CREATE TABLE instances (
    id TEXT PRIMARY KEY,
    key_hash BYTEA NOT NULL,
    created_at TEXT NOT NULL
        DEFAULT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')
);
CREATE TABLE digests (
    id TEXT PRIMARY KEY,
    instance_id TEXT NOT NULL REFERENCES instances (id),
    description TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX digests_by_instance ON digests (instance_id);
CREATE TABLE inboxes (
    id TEXT PRIMARY KEY,
    instance_id TEXT NOT NULL REFERENCES instances (id),
    digest_id TEXT NOT NULL REFERENCES digests (id),
    vcs TEXT NOT NULL,
    name TEXT NOT NULL,
    secret TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX inboxes_by_instance ON inboxes (instance_id);
-- One row per delivery accepted; the primary key is what makes redelivery idempotent.
CREATE TABLE deliveries (
    inbox_id TEXT NOT NULL REFERENCES inboxes (id),
    delivery_id TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    commit_count INTEGER NOT NULL,
    redeliveries INTEGER NOT NULL DEFAULT 0,
    received_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (inbox_id, delivery_id)
);
CREATE INDEX deliveries_by_instance ON deliveries (instance_id);
CREATE TABLE commits (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    instance_id TEXT NOT NULL,
    digest_id TEXT NOT NULL,
    inbox_id TEXT NOT NULL,
    delivery_id TEXT NOT NULL,
    sha TEXT NOT NULL,
    message TEXT,
    author TEXT,
    timestamp TEXT,
    repository TEXT NOT NULL,
    branch TEXT NOT NULL,
    FOREIGN KEY (inbox_id, delivery_id) REFERENCES deliveries (inbox_id, delivery_id)
);
CREATE INDEX commits_by_digest ON commits (digest_id, seq);
CREATE INDEX commits_by_instance ON commits (instance_id);
",
    // Secret rotation keeps the replaced secret, and when it was replaced (Unix milliseconds
    // by the database's clock, which every node of a fleet shares).
    "
ALTER TABLE inboxes ADD COLUMN previous_secret TEXT, ADD COLUMN secret_rotated_ms BIGINT;
",
    // The deliveries refused for something the sender must fix, a bounded number per inbox.
    "
CREATE TABLE refusals (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    instance_id TEXT NOT NULL,
    inbox_id TEXT NOT NULL REFERENCES inboxes (id),
    delivery_id TEXT,
    status INTEGER NOT NULL,
    code TEXT NOT NULL,
    refused_at TEXT NOT NULL
        DEFAULT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')
);
CREATE INDEX refusals_by_inbox ON refusals (inbox_id, seq);
",
    // The deliveries remembered against replays, which every node shares (`replays.rs`):
    // a key until its expiry, in Unix milliseconds.
    "
CREATE TABLE replays (
    key BYTEA PRIMARY KEY,
    until_ms BIGINT NOT NULL
);
CREATE INDEX replays_by_until ON replays (until_ms);
",
    // A replay key is reserved while its delivery is in hand, and taken once it is answered
    // 2xx: `until_ms` is the reservation's lease while `taken` is false. The keys
    // remembered before were taken. A key the service's own ingest takes, in the delivery's
    // transaction, names that delivery: its redelivery under the same id is a redelivery,
    // any other copy a replay.
    "
ALTER TABLE replays ADD COLUMN taken BOOLEAN NOT NULL DEFAULT true,
    ADD COLUMN inbox_id TEXT, ADD COLUMN delivery_id TEXT;
",
    // Catch-up's credentials, cursor and lease per inbox (`catchup.rs`).
    catchup::CATCHUP,
];

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

    /// Why a commit may return before it is durable, or `None` when it waits.
    pub(super) fn not_durable(&self) -> Option<&str> {
        self.not_durable.as_deref()
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
        for (version, migration) in MIGRATIONS.iter().enumerate().skip(done as usize) {
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

    pub(super) async fn health(&self) -> Result<(), StoreError> {
        self.pool.get().await?.simple_query("SELECT 1").await?;
        Ok(())
    }

    pub(super) async fn create_instance(
        &self,
        id: String,
        key_hash: Vec<u8>,
    ) -> Result<(), StoreError> {
        let client = self.pool.get().await?;
        let insert = client
            .prepare_cached("INSERT INTO instances (id, key_hash) VALUES ($1, $2)")
            .await?;
        client.execute(&insert, &[&id, &key_hash]).await?;
        Ok(())
    }

    pub(super) async fn instance(&self, id: String) -> Result<Option<InstanceRow>, StoreError> {
        let client = self.pool.get().await?;
        let select = client
            .prepare_cached("SELECT id, key_hash, created_at FROM instances WHERE id = $1")
            .await?;
        Ok(client
            .query_opt(&select, &[&id])
            .await?
            .map(|row| InstanceRow {
                id: row.get(0),
                key_hash: row.get(1),
                created_at: row.get(2),
            }))
    }

    pub(super) async fn create_digest(
        &self,
        instance: String,
        id: String,
        description: String,
    ) -> Result<(), StoreError> {
        let client = self.pool.get().await?;
        let insert = client
            .prepare_cached(
                "INSERT INTO digests (id, instance_id, description) VALUES ($1, $2, $3)",
            )
            .await?;
        client
            .execute(&insert, &[&id, &instance, &description])
            .await?;
        Ok(())
    }

    pub(super) async fn digest_exists(
        &self,
        instance: String,
        id: String,
    ) -> Result<bool, StoreError> {
        let client = self.pool.get().await?;
        let select = client
            .prepare_cached("SELECT 1 FROM digests WHERE id = $1 AND instance_id = $2")
            .await?;
        Ok(client
            .query_opt(&select, &[&id, &instance])
            .await?
            .is_some())
    }

    pub(super) async fn create_inbox(&self, inbox: NewInbox) -> Result<(), StoreError> {
        let client = self.pool.get().await?;
        let insert = client
            .prepare_cached(
                "INSERT INTO inboxes (id, instance_id, digest_id, vcs, name, secret)
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .await?;
        let vcs = inbox.vcs.as_str();
        client
            .execute(
                &insert,
                &[
                    &inbox.id,
                    &inbox.instance,
                    &inbox.digest,
                    &vcs,
                    &inbox.name,
                    &inbox.secret,
                ],
            )
            .await?;
        Ok(())
    }

    pub(super) async fn rotate_secret(
        &self,
        instance: String,
        digest: String,
        id: String,
        secret: String,
    ) -> Result<bool, StoreError> {
        let client = self.pool.get().await?;
        let update = client
            .prepare_cached(
                "UPDATE inboxes SET previous_secret = secret, secret = $1,
                     secret_rotated_ms = (extract(epoch FROM now()) * 1000)::bigint
                 WHERE id = $2 AND instance_id = $3 AND digest_id = $4",
            )
            .await?;
        let updated = client
            .execute(&update, &[&secret, &id, &instance, &digest])
            .await?;
        Ok(updated == 1)
    }

    /// Stores a delivery in the next group commit ([`writer`]).
    pub(super) async fn ingest(
        &self,
        instance: String,
        inbox: InboxRow,
        claim: Claim,
        commits: Vec<Commit>,
    ) -> Result<Ingested, StoreError> {
        self.writers
            .ingest(writer::Job {
                instance,
                inbox,
                claim,
                commits,
            })
            .await
    }

    pub(super) async fn commits(
        &self,
        digest: String,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<StoredCommit>, StoreError> {
        let client = self.pool.get().await?;
        let select = client
            .prepare_cached(
                "SELECT seq, inbox_id, sha, message, author, timestamp, repository, branch
                 FROM commits WHERE digest_id = $1 AND seq < $2
                 ORDER BY seq DESC LIMIT $3",
            )
            .await?;
        let rows = client
            .query(
                &select,
                &[&digest, &before.unwrap_or(i64::MAX), &i64::from(limit)],
            )
            .await?;
        Ok(rows
            .into_iter()
            .map(|row| StoredCommit {
                seq: row.get(0),
                inbox_id: row.get(1),
                commit: Commit {
                    sha: row.get(2),
                    message: row.get(3),
                    author: row.get(4),
                    timestamp: row.get(5),
                    repository: row.get(6),
                    branch: row.get(7),
                },
            })
            .collect())
    }

    pub(super) async fn stats(&self, instance: String) -> Result<Stats, StoreError> {
        let client = self.pool.get().await?;
        let select = client
            .prepare_cached(
                "SELECT
                    (SELECT count(*) FROM digests WHERE instance_id = $1),
                    (SELECT count(*) FROM inboxes WHERE instance_id = $1),
                    (SELECT count(*) FROM deliveries WHERE instance_id = $1),
                    (SELECT coalesce(sum(redeliveries), 0)::bigint
                     FROM deliveries WHERE instance_id = $1),
                    (SELECT count(*) FROM commits WHERE instance_id = $1)",
            )
            .await?;
        let row = client.query_one(&select, &[&instance]).await?;
        Ok(Stats {
            digests: row.get(0),
            inboxes: row.get(1),
            deliveries: row.get(2),
            redeliveries: row.get(3),
            commits: row.get(4),
        })
    }
}
