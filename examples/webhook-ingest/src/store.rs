//! The SQLite store, kept off the async runtime's threads.
//!
//! Every write goes to one writer thread that owns the only writing connection, through a
//! bounded queue: SQLite admits one writer at a time anyway, and a full queue answers "busy"
//! at once instead of parking requests. Reads run on tokio's blocking pool over a few
//! read-only connections, which WAL lets proceed beside the writer. A `:memory:` store has a
//! single connection, so its reads queue behind the writer too.

use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior};

use crate::webhook::{Commit, Vcs};

/// Writes waiting for the writer past this many are refused as busy: a few seconds of work at
/// the writer's pace, so a queued request still finishes well inside a provider's timeout
/// (GitHub gives up after 10 s).
const WRITE_QUEUE_DEPTH: usize = 1024;
/// Read-only connections for a file store: one per core of a small machine, plus one.
const READERS: usize = 3;
/// How long a connection waits for a lock before reporting busy; WAL makes this rare.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS instances (
    id TEXT PRIMARY KEY,
    key_hash BLOB NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE TABLE IF NOT EXISTS digests (
    id TEXT PRIMARY KEY,
    instance_id TEXT NOT NULL REFERENCES instances (id),
    description TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX IF NOT EXISTS digests_by_instance ON digests (instance_id);
CREATE TABLE IF NOT EXISTS inboxes (
    id TEXT PRIMARY KEY,
    instance_id TEXT NOT NULL REFERENCES instances (id),
    digest_id TEXT NOT NULL REFERENCES digests (id),
    vcs TEXT NOT NULL,
    name TEXT NOT NULL,
    secret TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX IF NOT EXISTS inboxes_by_instance ON inboxes (instance_id);
-- One row per delivery accepted; the primary key is what makes redelivery idempotent.
CREATE TABLE IF NOT EXISTS deliveries (
    inbox_id TEXT NOT NULL REFERENCES inboxes (id),
    delivery_id TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    commit_count INTEGER NOT NULL,
    redeliveries INTEGER NOT NULL DEFAULT 0,
    received_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (inbox_id, delivery_id)
);
CREATE INDEX IF NOT EXISTS deliveries_by_instance ON deliveries (instance_id);
CREATE TABLE IF NOT EXISTS commits (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    instance_id TEXT NOT NULL,
    digest_id TEXT NOT NULL,
    inbox_id TEXT NOT NULL,
    delivery_id TEXT NOT NULL,
    sha TEXT NOT NULL,
    message TEXT NOT NULL,
    author TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    repository TEXT NOT NULL,
    branch TEXT NOT NULL,
    FOREIGN KEY (inbox_id, delivery_id) REFERENCES deliveries (inbox_id, delivery_id)
);
CREATE INDEX IF NOT EXISTS commits_by_digest ON commits (digest_id, seq);
CREATE INDEX IF NOT EXISTS commits_by_instance ON commits (instance_id);
";

/// Why the store could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the writer's queue is full")]
    QueueFull,
    #[error("sqlite failed")]
    Sqlite(#[from] rusqlite::Error),
    #[error("the store is switched to fail")]
    Switched,
    #[error("the store's worker stopped before answering")]
    Stopped,
    #[error("opening the store failed")]
    Open(#[source] rusqlite::Error),
    #[error("starting the store's writer thread failed")]
    Spawn(#[source] std::io::Error),
}

impl StoreError {
    /// Whether the failure is only contention, which clears within a second.
    pub fn is_busy(&self) -> bool {
        match self {
            StoreError::QueueFull => true,
            StoreError::Sqlite(e) => matches!(
                e.sqlite_error_code(),
                Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
            ),
            _ => false,
        }
    }
}

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// A handle on the store; cheap to clone.
#[derive(Clone)]
pub struct Store {
    shared: Arc<Shared>,
}

struct Shared {
    writer: SyncSender<Job>,
    readers: Vec<Mutex<Connection>>,
    next_reader: AtomicUsize,
    failing: AtomicBool,
}

/// An instance as stored: the API key only as its SHA-256.
pub struct InstanceRow {
    pub id: String,
    pub key_hash: Vec<u8>,
    pub created_at: String,
}

pub struct InboxRow {
    pub id: String,
    pub digest_id: String,
    pub vcs: Vcs,
    pub secret: String,
}

pub struct StoredCommit {
    pub seq: i64,
    pub inbox_id: String,
    pub commit: Commit,
}

/// What became of a delivery.
#[derive(Debug, PartialEq, Eq)]
pub enum Ingested {
    Stored(usize),
    Duplicate,
}

/// Row counts of one instance, for the load scripts' reconciliation.
#[derive(Debug, Default, serde::Serialize)]
pub struct Stats {
    pub digests: i64,
    pub inboxes: i64,
    pub deliveries: i64,
    pub redeliveries: i64,
    pub commits: i64,
}

impl Store {
    /// Opens (creating if needed) the store at `path`; `:memory:` makes a throwaway one.
    pub fn open(path: &str) -> Result<Store, StoreError> {
        let in_memory = path == ":memory:";
        let writer = Connection::open(path).map_err(StoreError::Open)?;
        writer
            .busy_timeout(BUSY_TIMEOUT)
            .and_then(|()| {
                if !in_memory {
                    writer.pragma_update(None, "journal_mode", "WAL")?;
                    // In WAL mode NORMAL loses no committed data on a crash of the process,
                    // only possibly the last transactions on a power loss.
                    writer.pragma_update(None, "synchronous", "NORMAL")?;
                }
                writer.pragma_update(None, "foreign_keys", "ON")?;
                writer.execute_batch(SCHEMA)
            })
            .map_err(StoreError::Open)?;
        let readers = if in_memory {
            Vec::new()
        } else {
            (0..READERS)
                .map(|_| open_reader(Path::new(path)).map(Mutex::new))
                .collect::<Result<_, _>>()
                .map_err(StoreError::Open)?
        };
        let (sender, jobs) = mpsc::sync_channel::<Job>(WRITE_QUEUE_DEPTH);
        std::thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || {
                let mut connection = writer;
                // Ends when the last `Store` is dropped and the queue is drained.
                for job in jobs {
                    // A job that panics loses its own answer (its request gets a 503) and rolls
                    // its transaction back as it unwinds; the writer goes on with the next.
                    let _ = panic::catch_unwind(AssertUnwindSafe(|| job(&mut connection)));
                }
            })
            .map_err(StoreError::Spawn)?;
        Ok(Store {
            shared: Arc::new(Shared {
                writer: sender,
                readers,
                next_reader: AtomicUsize::new(0),
                failing: AtomicBool::new(false),
            }),
        })
    }

    /// Makes every later operation fail with a store error (or work again), so tests and
    /// `--fail-store` can see what providers see when the database is down.
    pub fn set_failing(&self, failing: bool) {
        self.shared.failing.store(failing, Ordering::Relaxed);
    }

    /// Runs `work` on the writer thread, in the order of arrival.
    async fn write<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        if self.shared.failing.load(Ordering::Relaxed) {
            return Err(StoreError::Switched);
        }
        let (answer, answered) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |connection| {
            // The receiver is gone only if the request was cancelled; the write stands.
            let _ = answer.send(work(connection));
        });
        self.shared.writer.try_send(job).map_err(|e| match e {
            TrySendError::Full(_) => StoreError::QueueFull,
            TrySendError::Disconnected(_) => StoreError::Stopped,
        })?;
        Ok(answered.await.map_err(|_| StoreError::Stopped)??)
    }

    /// Runs `work` on a read-only connection on tokio's blocking pool.
    async fn read<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        if self.shared.readers.is_empty() {
            return self.write(move |connection| work(connection)).await;
        }
        if self.shared.failing.load(Ordering::Relaxed) {
            return Err(StoreError::Switched);
        }
        let shared = Arc::clone(&self.shared);
        let result = tokio::task::spawn_blocking(move || {
            let n = shared.next_reader.fetch_add(1, Ordering::Relaxed) % shared.readers.len();
            let connection = shared.readers[n]
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            work(&connection)
        })
        .await
        .map_err(|_| StoreError::Stopped)?;
        Ok(result?)
    }

    pub async fn health(&self) -> Result<(), StoreError> {
        self.read(|c| c.query_row("SELECT 1", [], |_| Ok(()))).await
    }

    pub async fn create_instance(&self, id: String, key_hash: Vec<u8>) -> Result<(), StoreError> {
        self.write(move |c| {
            c.execute(
                "INSERT INTO instances (id, key_hash) VALUES (?1, ?2)",
                params![id, key_hash],
            )
            .map(drop)
        })
        .await
    }

    pub async fn instance(&self, id: String) -> Result<Option<InstanceRow>, StoreError> {
        self.read(move |c| {
            c.prepare_cached("SELECT id, key_hash, created_at FROM instances WHERE id = ?1")?
                .query_row([id], |row| {
                    Ok(InstanceRow {
                        id: row.get(0)?,
                        key_hash: row.get(1)?,
                        created_at: row.get(2)?,
                    })
                })
                .optional()
        })
        .await
    }

    pub async fn create_digest(
        &self,
        instance: String,
        id: String,
        description: String,
    ) -> Result<(), StoreError> {
        self.write(move |c| {
            c.execute(
                "INSERT INTO digests (id, instance_id, description) VALUES (?1, ?2, ?3)",
                params![id, instance, description],
            )
            .map(drop)
        })
        .await
    }

    pub async fn digest_exists(&self, instance: String, id: String) -> Result<bool, StoreError> {
        self.read(move |c| {
            c.prepare_cached("SELECT 1 FROM digests WHERE id = ?1 AND instance_id = ?2")?
                .exists([id, instance])
        })
        .await
    }

    pub async fn create_inbox(
        &self,
        instance: String,
        digest: String,
        id: String,
        vcs: Vcs,
        name: String,
        secret: String,
    ) -> Result<(), StoreError> {
        self.write(move |c| {
            c.execute(
                "INSERT INTO inboxes (id, instance_id, digest_id, vcs, name, secret)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![id, instance, digest, vcs.as_str(), name, secret],
            )
            .map(drop)
        })
        .await
    }

    pub async fn inbox(
        &self,
        instance: String,
        id: String,
    ) -> Result<Option<InboxRow>, StoreError> {
        self.read(move |c| {
            c.prepare_cached(
                "SELECT id, digest_id, vcs, secret FROM inboxes WHERE id = ?1 AND instance_id = ?2",
            )?
            .query_row([id, instance], |row| {
                let vcs: String = row.get(2)?;
                Ok(InboxRow {
                    id: row.get(0)?,
                    digest_id: row.get(1)?,
                    // Written only from `Vcs::as_str`, so always one of the three.
                    vcs: Vcs::parse(&vcs).unwrap_or(Vcs::Github),
                    secret: row.get(3)?,
                })
            })
            .optional()
        })
        .await
    }

    /// Stores a delivery and its commits in one transaction, or nothing if the inbox already
    /// has this delivery id.
    pub async fn ingest(
        &self,
        instance: String,
        inbox: InboxRow,
        delivery_id: String,
        commits: Vec<Commit>,
    ) -> Result<Ingested, StoreError> {
        self.write(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            // The conflict is settled inside the transaction by the primary key, not by a
            // look-up before it: that holds whatever reaches the database at the same time.
            let redeliveries: i64 = tx
                .prepare_cached(
                    "INSERT INTO deliveries (inbox_id, delivery_id, instance_id, commit_count)
                     VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (inbox_id, delivery_id)
                     DO UPDATE SET redeliveries = redeliveries + 1
                     RETURNING redeliveries",
                )?
                .query_row(
                    params![inbox.id, delivery_id, instance, commits.len() as i64],
                    |row| row.get(0),
                )?;
            if redeliveries > 0 {
                tx.commit()?;
                return Ok(Ingested::Duplicate);
            }
            {
                let mut insert = tx.prepare_cached(
                    "INSERT INTO commits (instance_id, digest_id, inbox_id, delivery_id, sha,
                                          message, author, timestamp, repository, branch)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                )?;
                for commit in &commits {
                    insert.execute(params![
                        instance,
                        inbox.digest_id,
                        inbox.id,
                        delivery_id,
                        commit.sha,
                        commit.message,
                        commit.author,
                        commit.timestamp,
                        commit.repository,
                        commit.branch,
                    ])?;
                }
            }
            tx.commit()?;
            Ok(Ingested::Stored(commits.len()))
        })
        .await
    }

    /// Up to `limit` commits of a digest, newest first, older than `before` (a `seq`) if given.
    pub async fn commits(
        &self,
        digest: String,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<StoredCommit>, StoreError> {
        self.read(move |c| {
            let mut query = c.prepare_cached(
                "SELECT seq, inbox_id, sha, message, author, timestamp, repository, branch
                 FROM commits WHERE digest_id = ?1 AND seq < ?2
                 ORDER BY seq DESC LIMIT ?3",
            )?;
            let rows =
                query.query_map(params![digest, before.unwrap_or(i64::MAX), limit], |row| {
                    Ok(StoredCommit {
                        seq: row.get(0)?,
                        inbox_id: row.get(1)?,
                        commit: Commit {
                            sha: row.get(2)?,
                            message: row.get(3)?,
                            author: row.get(4)?,
                            timestamp: row.get(5)?,
                            repository: row.get(6)?,
                            branch: row.get(7)?,
                        },
                    })
                })?;
            rows.collect()
        })
        .await
    }

    pub async fn stats(&self, instance: String) -> Result<Stats, StoreError> {
        self.read(move |c| {
            c.prepare_cached(
                "SELECT
                    (SELECT count(*) FROM digests WHERE instance_id = ?1),
                    (SELECT count(*) FROM inboxes WHERE instance_id = ?1),
                    (SELECT count(*) FROM deliveries WHERE instance_id = ?1),
                    (SELECT coalesce(sum(redeliveries), 0) FROM deliveries WHERE instance_id = ?1),
                    (SELECT count(*) FROM commits WHERE instance_id = ?1)",
            )?
            .query_row([instance], |row| {
                Ok(Stats {
                    digests: row.get(0)?,
                    inboxes: row.get(1)?,
                    deliveries: row.get(2)?,
                    redeliveries: row.get(3)?,
                    commits: row.get(4)?,
                })
            })
        })
        .await
    }
}

fn open_reader(path: &Path) -> rusqlite::Result<Connection> {
    let connection = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    connection.busy_timeout(BUSY_TIMEOUT)?;
    Ok(connection)
}
