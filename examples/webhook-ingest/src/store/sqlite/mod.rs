//! The SQLite store, the embedded default, kept off the async runtime's threads.
//!
//! Every write goes to one writer thread that owns the only writing connection, through a
//! bounded queue: SQLite admits one writer at a time anyway, and a full queue answers "busy"
//! at once instead of parking requests. The writer commits every job waiting in one
//! transaction (`writer`), and answers none before that commit is on disk. A thread of its
//! own copies the WAL into the database file (`checkpointer`), so that no commit waits for
//! a checkpoint until the WAL reaches its bound. Reads run on
//! tokio's blocking pool over a few read-only connections, which WAL lets proceed beside the
//! writer. A `:memory:` store has a single connection, so its reads queue behind the writer
//! too.

mod catchup;
mod checkpointer;
mod deliveries;
mod ids;
mod inboxes;
mod instances;
mod kept;
mod refusals;
mod replays;
mod schema;
mod syncer;
mod timestamp;
mod trace;
mod writer;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rusqlite::{Connection, ErrorCode, OpenFlags};

use super::{Operations, SqliteSync, StoreError};
use schema::migrate;
use syncer::Reply;
use writer::{copied, Job};

/// Writes waiting for the writer past this many are refused as busy: a few seconds of work at
/// the writer's pace, so a queued request still finishes well inside a provider's timeout
/// (GitHub gives up after 10 s).
const WRITE_QUEUE_DEPTH: usize = 1024;
/// Read-only connections for a file store: one per core of a small machine, plus one.
const READERS: usize = 3;
/// Statements the writer keeps parsed: its own six (`writer::transaction::exec`) and every
/// cached statement of the writes, with room to spare so that none evicts another.
const WRITER_STATEMENTS: usize = 32;
/// How long a connection waits for a lock before reporting busy; WAL makes this rare.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// The pause between two tries of a start that found the file locked: the other node's
/// switch to WAL or migration takes milliseconds.
const BUSY_RETRY: Duration = Duration::from_millis(10);

/// Whether SQLite only waited too long for a lock.
pub(super) fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// A handle on the SQLite store; cheap to clone.
#[derive(Clone)]
pub(super) struct SqliteStore {
    shared: Arc<SqliteHandles>,
}

struct SqliteHandles {
    queue: SyncSender<Job>,
    writer: Arc<writer::Writer>,
    /// Why a commit may return before it is durable, or `None` when it waits for the disk.
    not_durable: Option<&'static str>,
    readers: Vec<Mutex<Connection>>,
    next_reader: AtomicUsize,
    kept: kept::KeptInboxes,
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path`; `:memory:` makes a throwaway one.
    /// `sync` says whether a commit waits for the disk.
    pub(super) fn open(path: &str, sync: SqliteSync) -> Result<SqliteStore, StoreError> {
        let in_memory = path == ":memory:";
        let mut writer = Connection::open(path).map_err(|e| StoreError::Open(e.into()))?;
        writer.set_prepared_statement_cache_capacity(WRITER_STATEMENTS);
        writer
            .busy_timeout(BUSY_TIMEOUT)
            .and_then(|()| retry_while_busy(BUSY_RETRY, || set_up(&mut writer, in_memory)))
            .map_err(|e| StoreError::Open(e.into()))?;
        let readers = if in_memory {
            Vec::new()
        } else {
            (0..READERS)
                .map(|_| open_reader(Path::new(path)).map(Mutex::new))
                .collect::<Result<_, _>>()
                .map_err(|e| StoreError::Open(e.into()))?
        };
        let syncer = match (in_memory, sync) {
            (false, SqliteSync::Full) => Some(start_syncer(path)?),
            _ => None,
        };
        let checkpointer = match in_memory {
            false => Some(checkpointer::Checkpointer::start(path)?),
            true => None,
        };
        let writer = Arc::new(writer::Writer::new(writer, syncer, checkpointer));
        let (queue, jobs) = mpsc::sync_channel::<Job>(WRITE_QUEUE_DEPTH);
        let thread = Arc::clone(&writer);
        std::thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || writer::run(thread, jobs))
            .map_err(StoreError::Spawn)?;
        Ok(SqliteStore {
            shared: Arc::new(SqliteHandles {
                queue,
                writer,
                not_durable: not_durable(in_memory, sync),
                readers,
                next_reader: AtomicUsize::new(0),
                kept: kept::KeptInboxes::default(),
            }),
        })
    }

    /// Runs `work` as one atomic part of the next group commit, in the order of arrival: on
    /// the writer thread, or in place when nothing else waits (`Writer::try_in_place`);
    /// answers once that commit is durable. An error of `work` rolls back
    /// what it wrote, and only that.
    async fn write<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |connection| {
            let done = work(connection);
            let kept = done.is_ok();
            let reply: Reply = Box::new(move |commit| {
                let answered = match (done, commit) {
                    (Ok(value), Ok(())) => Ok(value),
                    (Ok(_), Err(error)) => Err(copied(error)),
                    (Err(error), _) => Err(error),
                };
                // The receiver is gone only if the request was cancelled; the write stands.
                let _ = answer.send(answered);
            });
            (kept, reply)
        });
        let Err(job) = self.shared.writer.try_in_place(job) else {
            return Ok(answered.await.map_err(|_| StoreError::Stopped)??);
        };
        let _active = self.shared.writer.enter();
        self.shared.queue.try_send(job).map_err(|e| match e {
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
}

#[async_trait]
impl Operations for SqliteStore {
    async fn health(&self) -> Result<(), StoreError> {
        self.read(|c| c.query_row("SELECT 1", [], |_| Ok(()))).await
    }

    fn not_durable(&self) -> Option<&str> {
        self.shared.not_durable
    }
}

/// The syncer's thread, on the WAL of the database at `path`, which the migrations created
/// and the store's open connections keep (SQLite removes it only when the last one closes).
fn start_syncer(path: &str) -> Result<writer::Durability, StoreError> {
    let open =
        || std::fs::File::open(format!("{path}-wal")).map_err(|e| StoreError::Open(e.into()));
    let (wal, writers_wal) = (open()?, open()?);
    let (sender, committed) = mpsc::channel();
    std::thread::Builder::new()
        .name("store-syncer".into())
        .spawn(move || syncer::run(wal, committed))
        .map_err(StoreError::Spawn)?;
    Ok(writer::Durability {
        wal: writers_wal,
        syncer: sender,
    })
}

/// Why commits of a store opened so may return before they are durable.
fn not_durable(in_memory: bool, sync: SqliteSync) -> Option<&'static str> {
    match (in_memory, sync) {
        (true, _) => Some("the store is in memory: everything is lost when the process ends"),
        (false, SqliteSync::Normal) => Some(
            "sqlite synchronous=NORMAL: a commit returns before the WAL is fsynced, so a \
             power cut or a kernel crash can lose acknowledged deliveries",
        ),
        (false, SqliteSync::Full) => None,
    }
}

/// The writer's settings and the schema, on a connection just opened.
fn set_up(writer: &mut Connection, in_memory: bool) -> rusqlite::Result<()> {
    if !in_memory {
        writer.pragma_update(None, "journal_mode", "WAL")?;
        // NORMAL: a commit writes the WAL and does not wait for the disk; the syncer's fsync
        // does, for every batch at once (`syncer`).
        writer.pragma_update(None, "synchronous", "NORMAL")?;
        writer.wal_hook(Some(writer::checkpoint_hook));
    }
    writer.pragma_update(None, "foreign_keys", "ON")?;
    migrate(writer)
}

/// Runs `step` again, `pause` after each try, while SQLite answers busy, for up to
/// [`BUSY_TIMEOUT`], where SQLite calls no busy handler itself: switching a new file to WAL
/// takes an exclusive lock without waiting for it, so nodes opening one new file at once would
/// otherwise fail their start; and a checkpoint is refused at once while another runs.
fn retry_while_busy<T>(
    pause: Duration,
    mut step: impl FnMut() -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    let deadline = Instant::now() + BUSY_TIMEOUT;
    loop {
        match step() {
            Err(error) if is_busy(&error) && Instant::now() < deadline => {
                std::thread::sleep(pause);
            }
            done => return done,
        }
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

#[cfg(test)]
mod tests;
