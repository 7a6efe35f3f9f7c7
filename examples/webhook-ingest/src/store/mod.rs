//! Where deliveries and commits are kept: an embedded SQLite file (the default), or a
//! PostgreSQL database that several nodes (running copies of the service) share.
//!
//! Both keep the same promises, which is what lets the handlers not care which one runs:
//! one transaction per delivery; a delivery id stored once per inbox, decided by the
//! database's unique key inside that transaction (never by a look-up before it), so copies of
//! one delivery that reach different nodes at the same instant still store it once; and
//! no database work on the async runtime's threads (SQLite's runs on threads of its own,
//! PostgreSQL's is network I/O the runtime waits on).

mod front;
mod operations;
mod options;
mod postgres;
mod rows;
mod sqlite;

pub use front::Front;
pub use operations::{CatchUps, Deliveries, Inboxes, Instances, Operations, Refusals, Replays};
pub use options::{OpenOptions, SqliteSync};
pub use postgres::tls::SslMode;
pub use rows::{
    Commit, InboxRow, Ingested, InstanceRow, KnownInbox, NewInbox, PreviousSecret, RefusedDelivery,
    RefusedDeliveryRow, Stats, StoredCommit, REFUSALS_KEPT_PER_INBOX,
};

use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

/// Why the store could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the writer's queue is full")]
    QueueFull,
    #[error("sqlite failed")]
    Sqlite(#[from] rusqlite::Error),
    #[error("postgres failed")]
    Postgres(#[from] tokio_postgres::Error),
    #[error("no postgres connection could be had: {0}")]
    Pool(#[from] deadpool_postgres::PoolError),
    #[error("the store is not connected yet")]
    Connecting,
    #[error("the store's worker stopped before answering")]
    Stopped,
    /// The failure of a transaction that held several writes, each of which failed with it.
    #[error("the transaction that held this write failed")]
    BatchFailed(#[source] Arc<StoreError>),
    #[error("the store's settings are wrong")]
    Misconfigured(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("opening the store failed")]
    Open(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("starting the store's writer thread failed")]
    Spawn(#[source] std::io::Error),
}

impl StoreError {
    /// Whether retrying cannot help: a setting is wrong, or the server's certificate does not
    /// verify. A database that is merely down is not lasting.
    pub fn is_lasting(&self) -> bool {
        if matches!(self, StoreError::Misconfigured(_)) {
            return true;
        }
        let mut cause = std::error::Error::source(self);
        while let Some(c) = cause {
            let tls = c
                .downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref());
            if c.is::<rustls::Error>() || tls.is_some_and(|e| e.is::<rustls::Error>()) {
                return true;
            }
            cause = c.source();
        }
        false
    }

    /// Whether the failure is only contention, which clears within a second.
    pub fn is_busy(&self) -> bool {
        match self {
            StoreError::QueueFull => true,
            StoreError::Sqlite(e) => sqlite::is_busy(e),
            StoreError::Postgres(e) => postgres::is_busy(e),
            StoreError::Pool(e) => postgres::pool_is_busy(e),
            StoreError::BatchFailed(e) => e.is_busy(),
            _ => false,
        }
    }
}

/// A handle on the store; cheap to clone. Its operations are those of [`Operations`], which
/// it derefs to: the SQLite or the PostgreSQL backend, or a [`Front`] before one.
#[derive(Clone)]
pub struct Store {
    operations: Arc<dyn Operations>,
    kind: &'static str,
}

impl Deref for Store {
    type Target = dyn Operations;

    fn deref(&self) -> &(dyn Operations + 'static) {
        &*self.operations
    }
}

/// The first wait between two attempts to open a store that is not reachable, doubled after
/// each failure up to [`MAX_OPEN_BACKOFF`].
const MIN_OPEN_BACKOFF: Duration = Duration::from_millis(100);
/// The longest wait between two attempts: a database back from an outage is found within
/// seconds, and a database that stays away costs one log line per this much.
const MAX_OPEN_BACKOFF: Duration = Duration::from_secs(5);

pub mod catchup;
mod replays;

pub use replays::Claim;

impl Store {
    /// Opens the store `location` names, running its migrations: a `postgres://` (or
    /// `postgresql://`) URL for PostgreSQL, else a SQLite file path; `:memory:` makes a
    /// throwaway SQLite store.
    pub async fn open(location: &str) -> Result<Store, StoreError> {
        Store::open_with(location, &OpenOptions::default()).await
    }

    /// `open`, with the options only some deployments need.
    pub async fn open_with(location: &str, options: &OpenOptions) -> Result<Store, StoreError> {
        Ok(Store {
            operations: Arc::from(open_backend(location, options).await?),
            kind: kind(location),
        })
    }

    /// A store that opens `location` in the background: it answers
    /// [`StoreError::Connecting`] until the database is reached and migrated, which is
    /// retried with backoff for as long as it takes. So a service starts, and spools, while
    /// its database is down.
    pub fn open_in_background(location: &str, options: OpenOptions) -> Store {
        let deferred = Arc::new(front::Deferred::default());
        let store = Store {
            operations: deferred.clone(),
            kind: kind(location),
        };
        let location = location.to_owned();
        tokio::spawn(async move {
            let mut wait = MIN_OPEN_BACKOFF;
            loop {
                match open_backend(&location, &options).await {
                    Ok(opened) => {
                        let _ = deferred.0.set(opened);
                        tracing::info!(db = %redacted(&location), "the store is connected");
                        return;
                    }
                    Err(error) => {
                        let cause = std::error::Error::source(&error).map(ToString::to_string);
                        tracing::warn!(
                            db = %redacted(&location),
                            %error,
                            cause = cause.as_deref().unwrap_or(""),
                            retry_in = ?wait,
                            "opening the store failed; retrying"
                        );
                    }
                }
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(MAX_OPEN_BACKOFF);
            }
        });
        store
    }

    /// A handle on the store `wrap` makes of this one: a [`Front`] before it, as the
    /// service's tests make to fail on cue.
    pub fn wrapped<W: Operations + 'static>(&self, wrap: impl FnOnce(Store) -> W) -> Store {
        Store {
            operations: Arc::new(wrap(self.clone())),
            kind: self.kind,
        }
    }

    /// The store's catch-up operations alone, as catch-up's loop holds them (and a
    /// `catchup::WrapStore` may wrap them).
    pub fn catchup_operations(&self) -> Arc<dyn CatchUps> {
        self.operations.clone()
    }

    /// Which kind of store this is (`sqlite` or `postgres`), for the start-up log.
    pub fn kind(&self) -> &'static str {
        self.kind
    }
}

/// The kind of store `location` names.
fn kind(location: &str) -> &'static str {
    if is_postgres(location) {
        "postgres"
    } else {
        "sqlite"
    }
}

async fn open_backend(
    location: &str,
    options: &OpenOptions,
) -> Result<Box<dyn Operations>, StoreError> {
    if is_postgres(location) {
        let ca = options.db_ca.as_deref();
        return Ok(Box::new(postgres::PgStore::open(location, ca).await?));
    }
    let (path, sync) = (location.to_owned(), options.sqlite_sync);
    let opened = tokio::task::spawn_blocking(move || sqlite::SqliteStore::open(&path, sync))
        .await
        .map_err(|_| StoreError::Stopped)?;
    Ok(Box::new(opened?))
}

/// Whether `location` names a PostgreSQL database rather than a SQLite file.
pub fn is_postgres(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

/// `location` as it may be logged: a PostgreSQL URL's password is replaced by `***`.
pub fn redacted(location: &str) -> String {
    if !is_postgres(location) {
        return location.to_owned();
    }
    let (scheme, rest) = location.split_once("://").unwrap_or(("", location));
    // The user info ends at the last `@` before the path: a password may contain `@` only
    // percent-encoded, but a careless one may not be, and must still be hidden.
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let mut redacted = match rest[..authority_end].rfind('@') {
        Some(at) => match rest[..at].split_once(':') {
            Some((user, _password)) => format!("{scheme}://{user}:***{}", &rest[at..]),
            None => location.to_owned(),
        },
        None => location.to_owned(),
    };
    // libpq also takes the password as a query parameter.
    if let Some(query_start) = redacted.find('?') {
        let (head, query) = redacted.split_at(query_start + 1);
        let query: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                _ => pair.to_owned(),
            })
            .collect();
        redacted = format!("{head}{}", query.join("&"));
    }
    redacted
}

#[cfg(test)]
mod tests;
