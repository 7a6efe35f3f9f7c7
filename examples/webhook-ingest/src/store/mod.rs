//! Where deliveries and commits are kept: an embedded SQLite file (the default), or a
//! PostgreSQL database that several nodes (running copies of the service) share.
//!
//! Both keep the same promises, which is what lets the handlers not care which one runs:
//! one transaction per delivery; a delivery id stored once per inbox, decided by the
//! database's unique key inside that transaction (never by a look-up before it), so copies of
//! one delivery that reach different nodes at the same instant still store it once; and
//! no database work on the async runtime's threads (SQLite's runs on threads of its own,
//! PostgreSQL's is network I/O the runtime waits on).

mod options;
mod postgres;

pub use options::{OpenOptions, SqliteSync};
pub use postgres::tls::SslMode;
#[cfg(feature = "faults")]
mod faults;
mod rows;
mod sqlite;

#[cfg(feature = "faults")]
pub use faults::Faults;
pub use rows::{
    Commit, InboxRow, Ingested, InstanceRow, KnownInbox, NewInbox, PreviousSecret, RefusedDelivery,
    RefusedDeliveryRow, Stats, StoredCommit, REFUSALS_KEPT_PER_INBOX,
};

use std::sync::{Arc, OnceLock};
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

/// A handle on the store; cheap to clone.
#[derive(Clone)]
pub struct Store {
    /// Set once connected and migrated: at once by [`Store::open`], later by
    /// [`Store::open_in_background`].
    backend: Arc<OnceLock<Backend>>,
    kind: &'static str,
    /// What the tests make fail (see `faults.rs`); absent from the service itself.
    #[cfg(feature = "faults")]
    faults: faults::Chain,
}

/// The first wait between two attempts to open a store that is not reachable, doubled after
/// each failure up to [`MAX_OPEN_BACKOFF`].
const MIN_OPEN_BACKOFF: Duration = Duration::from_millis(100);
/// The longest wait between two attempts: a database back from an outage is found within
/// seconds, and a database that stays away costs one log line per this much.
const MAX_OPEN_BACKOFF: Duration = Duration::from_secs(5);

#[derive(Clone)]
enum Backend {
    Sqlite(sqlite::SqliteStore),
    Postgres(postgres::PgStore),
}

/// Runs the same call on whichever backend this store is. Its paths are whole, so that a
/// submodule (`replays`) can use it too.
macro_rules! dispatch {
    ($self:ident . $method:ident ( $($arg:expr),* )) => {{
        #[cfg(feature = "faults")]
        $crate::store::faults::check(&$self.faults, stringify!($method))?;
        match $self.backend.get().ok_or($crate::store::StoreError::Connecting)? {
            $crate::store::Backend::Sqlite(store) => store.$method($($arg),*).await,
            $crate::store::Backend::Postgres(store) => store.$method($($arg),*).await,
        }
    }};
}

// After `dispatch!`, which they use: a macro is in scope only below its definition.
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
        let store = Store::unopened(location);
        let _ = store.backend.set(open_backend(location, options).await?);
        Ok(store)
    }

    /// A store that opens `location` in the background: it answers
    /// [`StoreError::Connecting`] until the database is reached and migrated, which is
    /// retried with backoff for as long as it takes. So a service starts, and spools, while
    /// its database is down.
    pub fn open_in_background(location: &str, options: OpenOptions) -> Store {
        let store = Store::unopened(location);
        let (location, backend) = (location.to_owned(), store.backend.clone());
        tokio::spawn(async move {
            let mut wait = MIN_OPEN_BACKOFF;
            loop {
                match open_backend(&location, &options).await {
                    Ok(opened) => {
                        let _ = backend.set(opened);
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

    fn unopened(location: &str) -> Store {
        Store {
            backend: Arc::new(OnceLock::new()),
            kind: if is_postgres(location) {
                "postgres"
            } else {
                "sqlite"
            },
            #[cfg(feature = "faults")]
            faults: Vec::new(),
        }
    }

    /// Which kind of store this is (`sqlite` or `postgres`), for the start-up log.
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// Whether the store has been opened (it may still fail, as any database may).
    pub fn is_open(&self) -> bool {
        self.backend.get().is_some()
    }

    /// Why an answer that says stored may not survive a power cut or a crash of the database
    /// server under the store's settings, or `None` when every commit waits for the disk
    /// (and for a PostgreSQL primary's synchronous standbys). `None` too until opened.
    pub fn not_durable(&self) -> Option<&str> {
        match self.backend.get()? {
            Backend::Sqlite(store) => store.not_durable(),
            Backend::Postgres(store) => store.not_durable(),
        }
    }

    /// Whether the store answers a trivial query.
    pub async fn health(&self) -> Result<(), StoreError> {
        dispatch!(self.health())
    }

    /// Records a new instance with the SHA-256 of its API key.
    pub async fn create_instance(&self, id: String, key_hash: Vec<u8>) -> Result<(), StoreError> {
        dispatch!(self.create_instance(id, key_hash))
    }

    /// The instance `id`, if it exists.
    pub async fn instance(&self, id: String) -> Result<Option<InstanceRow>, StoreError> {
        dispatch!(self.instance(id))
    }

    /// Records a new digest of `instance`.
    pub async fn create_digest(
        &self,
        instance: String,
        id: String,
        description: String,
    ) -> Result<(), StoreError> {
        dispatch!(self.create_digest(instance, id, description))
    }

    /// Whether `instance` owns the digest `id`.
    pub async fn digest_exists(&self, instance: String, id: String) -> Result<bool, StoreError> {
        dispatch!(self.digest_exists(instance, id))
    }

    /// Records a new inbox.
    pub async fn create_inbox(&self, inbox: NewInbox) -> Result<(), StoreError> {
        dispatch!(self.create_inbox(inbox))
    }

    /// The inbox `id` of `instance`, if it exists.
    pub async fn inbox(
        &self,
        instance: String,
        id: String,
    ) -> Result<Option<InboxRow>, StoreError> {
        dispatch!(self.inbox(instance, id))
    }

    /// Gives the inbox `id` of `digest` in `instance` the secret `secret`, keeping the one it
    /// replaces as the previous secret from now (the database's now); `false` when there is no
    /// such inbox.
    pub async fn rotate_secret(
        &self,
        instance: String,
        digest: String,
        id: String,
        secret: String,
    ) -> Result<bool, StoreError> {
        dispatch!(self.rotate_secret(instance, digest, id, secret))
    }

    /// Stores a delivery and its commits in one transaction, or nothing if the inbox already
    /// has this delivery id ([`Ingested::Duplicate`]) or, under another id, a delivery of
    /// this replay key ([`Ingested::Replayed`]). The key is taken in the same transaction, for
    /// as long as the delivery is kept: a delivery not stored takes no key, and its sender's
    /// retry is stored.
    pub async fn ingest(
        &self,
        instance: String,
        inbox: InboxRow,
        delivery: Claim,
        commits: Vec<Commit>,
    ) -> Result<Ingested, StoreError> {
        dispatch!(self.ingest(instance, inbox, delivery, commits))
    }

    /// Keeps a refusal of a delivery to the inbox `inbox` of `instance`, pruning the inbox's
    /// oldest beyond `REFUSALS_KEPT_PER_INBOX`; nothing when there is no such inbox. Returns
    /// whether it was kept.
    pub async fn record_refusal(
        &self,
        instance: String,
        inbox: String,
        refusal: RefusedDelivery,
    ) -> Result<bool, StoreError> {
        dispatch!(self.record_refusal(instance, inbox, refusal))
    }

    /// Up to `limit` kept refusals of the inbox `inbox` of `instance`, newest first.
    pub async fn refusals(
        &self,
        instance: String,
        inbox: String,
        limit: u32,
    ) -> Result<Vec<RefusedDeliveryRow>, StoreError> {
        dispatch!(self.refusals(instance, inbox, limit))
    }

    /// Up to `limit` commits of a digest, newest first, older than `before` (a `seq`) if given.
    pub async fn commits(
        &self,
        digest: String,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<StoredCommit>, StoreError> {
        dispatch!(self.commits(digest, before, limit))
    }

    /// Row counts of `instance`.
    pub async fn stats(&self, instance: String) -> Result<Stats, StoreError> {
        dispatch!(self.stats(instance))
    }

    /// Up to `limit` inboxes of every instance, ordered by instance and id: what a node
    /// writes to its file of known inboxes.
    pub async fn inboxes(&self, limit: u32) -> Result<Vec<KnownInbox>, StoreError> {
        dispatch!(self.inboxes(limit))
    }
}

async fn open_backend(location: &str, options: &OpenOptions) -> Result<Backend, StoreError> {
    if is_postgres(location) {
        let ca = options.db_ca.as_deref();
        return Ok(Backend::Postgres(
            postgres::PgStore::open(location, ca).await?,
        ));
    }
    let (path, sync) = (location.to_owned(), options.sqlite_sync);
    let opened = tokio::task::spawn_blocking(move || sqlite::SqliteStore::open(&path, sync))
        .await
        .map_err(|_| StoreError::Stopped)?;
    Ok(Backend::Sqlite(opened?))
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
