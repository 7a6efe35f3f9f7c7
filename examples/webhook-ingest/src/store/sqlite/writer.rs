//! The writer thread's group commit: every job waiting when the last commit ended goes into
//! one transaction, each after the first under a savepoint of its own, and one commit holds
//! them all. No job
//! is answered before that commit is durable: the syncer (`syncer`) fsyncs the WAL for every
//! batch committed since its last fsync, and answers them then, while the writer commits the
//! next batch; when no job waits for a next batch, the writer fsyncs and answers itself.
//!
//! So a delivery pays for an fsync only while the disk is idle: under load, one fsync
//! acknowledges every delivery that arrived while the previous one was flushed. A job that
//! finds the store idle, while deliveries come one at a time, skips the writer thread and the
//! syncer both: it commits and fsyncs on the caller's thread ([`Writer::try_in_place`]).

use std::cell::Cell;
use std::ffi::c_int;
use std::fs::File;
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError, TryLockError};

use rusqlite::hooks::Wal;
use rusqlite::{ffi, Connection};
use tokio::runtime::RuntimeFlavor;

use super::checkpointer::{self, Checkpointer, WAL_LIMIT_FRAMES};
use super::syncer::{self, Committed, Reply};
use super::trace::{By, Step};

/// Most jobs in one transaction. The queue holds up to 1,024 jobs; at this size a batch is a
/// few milliseconds of inserts, so the first job of a batch is not kept waiting behind a
/// whole queue's worth of others before its commit, and one fsync still acknowledges hundreds
/// of deliveries under load.
pub(super) const MAX_BATCH: usize = 256;

/// A job: runs on the writer's connection inside the batch's transaction, and says whether
/// its changes are kept (false rolls its savepoint back) and how to answer.
pub(super) type Job = Box<dyn FnOnce(&Connection) -> (bool, Reply) + Send>;

/// How the writer makes its commits durable.
pub(super) struct Durability {
    /// The WAL, for the fsync of a job run in place.
    pub(super) wal: File,
    /// The syncer, which fsyncs while the writer thread runs the next batch.
    pub(super) syncer: Sender<Committed>,
}

/// The store's one writing connection, shared by the writer thread and by a job run in place
/// ([`Writer::try_in_place`]).
pub(super) struct Writer {
    connection: Mutex<Connection>,
    /// `None` for a store that does not wait for the disk.
    durability: Option<Durability>,
    /// `None` for a store in memory, which has no WAL.
    checkpointer: Option<Checkpointer>,
    /// Jobs handed to the store and not yet answered (or given up by their request). Only a
    /// hint of whether the store is idle, on which no answer depends: a stale read costs at
    /// most one job run in place beside a batch, with an fsync of its own.
    active: AtomicUsize,
    /// A commit run in place found the WAL at its limit and left the checkpoint to the writer
    /// thread: the next job goes there, whose commit checkpoints.
    checkpoint_due: AtomicBool,
    /// The last commit held one job, and no job has found the store busy since: deliveries
    /// come one at a time. Cleared as soon as one job finds another in flight, so that under
    /// load the first job of a round, which finds the store idle only because the last group
    /// commit was just answered, joins the next group commit too instead of blocking its
    /// tokio worker for an fsync of its own while the rest of the round queues behind it.
    /// A hint like `active`: a stale read costs one job's path, never an answer.
    alone: AtomicBool,
}

/// A job counted in [`Writer::active`] until this drops.
pub(super) struct Active<'a>(&'a AtomicUsize);

impl Drop for Active<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Writer {
    pub(super) fn new(
        connection: Connection,
        durability: Option<Durability>,
        checkpointer: Option<Checkpointer>,
    ) -> Writer {
        Writer {
            connection: Mutex::new(connection),
            durability,
            checkpointer,
            active: AtomicUsize::new(0),
            checkpoint_due: AtomicBool::new(false),
            alone: AtomicBool::new(true),
        }
    }

    /// Counts a job handed to the writer thread until the returned guard drops, once its
    /// answer came (or its request went).
    pub(super) fn enter(&self) -> Active<'_> {
        self.active.fetch_add(1, Ordering::Relaxed);
        Active(&self.active)
    }

    /// Runs `job` on the calling thread as a batch of its own, commit and fsync included, when
    /// the store is idle (no other job handed to it and not yet answered) and deliveries come
    /// one at a time (`alone`). Else gives the job back, to be queued for the group commit.
    ///
    /// A lone delivery so skips two hand-offs between threads, to the writer and back, each
    /// the wake-up of a sleeping thread, which on this path cost more than its inserts. It
    /// shares its fsync with no one either way: a job that finds another in flight always
    /// joins the next group commit, so under load nothing runs here.
    ///
    /// The job blocks its tokio worker for one commit and one fsync, on a multi-threaded
    /// runtime only, one job at a time: the other workers keep serving, and every job that
    /// arrives meanwhile goes to the writer thread. `block_in_place` would move this worker's
    /// other tasks away first, but that hand-off cost more CPU per delivery than the two
    /// wake-ups saved (`BENCHMARKS.md`).
    pub(super) fn try_in_place(&self, job: Job) -> Result<(), Job> {
        let multi_thread = tokio::runtime::Handle::try_current()
            .is_ok_and(|runtime| runtime.runtime_flavor() == RuntimeFlavor::MultiThread);
        if !multi_thread || self.checkpoint_due.load(Ordering::Relaxed) {
            return Err(job);
        }
        if !self.alone.load(Ordering::Relaxed) {
            // Its commit tells, by its size, whether the next job may run in place.
            return Err(job);
        }
        if self
            .active
            .compare_exchange(0, 1, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            self.alone.store(false, Ordering::Relaxed);
            return Err(job);
        }
        let _active = Active(&self.active);
        let connection = match self.connection.try_lock() {
            Ok(connection) => connection,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            // A batch of jobs whose requests went is still running.
            Err(TryLockError::WouldBlock) => return Err(job),
        };
        let step = Step::start();
        let committed = InPlace::commit(&connection, job);
        let frames = WAL_FRAMES.with(|frames| frames.replace(0));
        step.committed(By::InPlace, 1, frames);
        if committed.left_checkpoint {
            // Past the WAL's limit: milliseconds of disk, left to the writer thread.
            self.checkpoint_due.store(true, Ordering::Relaxed);
        } else if let Some(checkpointer) = &self.checkpointer {
            // Before the next commit, so that it reuses the WAL; its fsync of the WAL makes
            // this commit durable too, and the fsync below finds nothing left to flush.
            let due = checkpointer.due(frames);
            if due && !checkpointer::in_place(&connection, frames) {
                checkpointer.ask();
            }
        }
        drop(connection);
        self.sync_here(committed.batch, By::InPlace);
        Ok(())
    }

    /// Asks the checkpointer for a checkpoint if the commit just made on this thread left
    /// the WAL long enough for one; returns the WAL's length in frames.
    fn ask_for_checkpoint(&self) -> c_int {
        let frames = WAL_FRAMES.with(|frames| frames.replace(0));
        if let Some(checkpointer) = &self.checkpointer {
            checkpointer.note(frames);
        }
        frames
    }

    /// Answers `committed` once it is durable, an fsync run here: nothing would overlap it.
    fn sync_here(&self, committed: Committed, by: By) {
        let synced = match &self.durability {
            Some(durability) => {
                let step = Step::start();
                let synced = syncer::sync(&durability.wal);
                step.synced(by, 1, committed.replies.len());
                synced
            }
            None => Ok(()),
        };
        committed.answer(synced.as_ref().map(|_| ()));
    }

    /// Hands `committed` to the syncer, whose fsync covers every batch committed since its
    /// last while the writer thread commits the next (at once for a store that does not wait
    /// for the disk).
    fn hand_to_syncer(&self, committed: Committed) {
        let Some(durability) = &self.durability else {
            committed.answer(Ok(()));
            return;
        };
        if let Err(unsent) = durability.syncer.send(committed) {
            let gone = io::Error::other("the store's syncer stopped");
            unsent.0.answer(Err(&gone));
        }
    }
}

/// The writer thread: runs batches until the last sender is dropped and the queue is
/// drained. Each committed batch is answered once an fsync of the WAL that began after its
/// commit has returned (at once, by a store that does not wait for the disk).
///
/// A job that arrived during a commit starts the next batch while the syncer flushes the
/// last one. With none waiting, the writer flushes the batch itself: nothing would overlap
/// the flush, and the syncer's wake-up is one more thread hand-off on the way to the answer.
/// That is the common case under load with a fixed number of senders (each waits for its
/// answer before it sends again), where every hand-off waits for a core.
pub(super) fn run(writer: Arc<Writer>, jobs: Receiver<Job>) {
    let mut waiting = None;
    while let Some(first) = waiting.take().or_else(|| jobs.recv().ok()) {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        batch.push(first);
        batch.extend(jobs.try_iter().take(MAX_BATCH - 1));
        let (jobs_in_batch, step) = (batch.len(), Step::start());
        let lone = jobs_in_batch == 1;
        let connection = writer
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let committed = commit_batch(&connection, batch);
        drop(connection);
        step.committed(By::Writer, jobs_in_batch, writer.ask_for_checkpoint());
        // This commit ran the checkpoint a commit in place left (`checkpoint_hook`).
        writer.checkpoint_due.store(false, Ordering::Relaxed);
        writer.alone.store(lone, Ordering::Relaxed);
        waiting = jobs.try_recv().ok();
        match waiting {
            Some(_) => writer.hand_to_syncer(committed),
            None => writer.sync_here(committed, By::Writer),
        }
    }
}

thread_local! {
    /// The WAL's length in frames after this thread's last commit, for the checkpointer
    /// (`Writer::ask_for_checkpoint`).
    static WAL_FRAMES: Cell<c_int> = const { Cell::new(0) };
    /// Set while this thread commits a job in place; its commit's checkpoint, if due, is
    /// left to the writer thread and noted here.
    static IN_PLACE: Cell<Option<bool>> = const { Cell::new(None) };
}

/// The WAL hook of the writing connection, in place of SQLite's auto-checkpoint: it notes
/// the WAL's length for the checkpointer (`checkpointer`), and checkpoints in the commit
/// only past [`WAL_LIMIT_FRAMES`], the checkpointer having fallen behind. That checkpoint is
/// milliseconds of disk, which a commit run in place would spend blocking its tokio worker:
/// that commit leaves it to the writer thread instead.
pub(super) fn checkpoint_hook(wal: &Wal, frames: c_int) -> rusqlite::Result<()> {
    WAL_FRAMES.with(|noted| noted.set(frames));
    if frames < WAL_LIMIT_FRAMES {
        return Ok(());
    }
    let left = IN_PLACE.with(|in_place| {
        let marked = in_place.get().is_some();
        if marked {
            in_place.set(Some(true));
        }
        marked
    });
    if left {
        return Ok(());
    }
    checkpointer::in_commit(wal, frames);
    Ok(())
}

/// A job committed as a batch of its own on the calling thread.
struct InPlace {
    batch: Committed,
    /// Its commit found a checkpoint due and left it (`checkpoint_hook`).
    left_checkpoint: bool,
}

impl InPlace {
    fn commit(connection: &Connection, job: Job) -> InPlace {
        /// Clears the mark however the commit ends.
        struct Marked;
        impl Drop for Marked {
            fn drop(&mut self) {
                IN_PLACE.with(|in_place| in_place.set(None));
            }
        }
        IN_PLACE.with(|in_place| in_place.set(Some(false)));
        let marked = Marked;
        let batch = commit_batch(connection, vec![job]);
        let left_checkpoint = IN_PLACE.with(Cell::get) == Some(true);
        drop(marked);
        InPlace {
            batch,
            left_checkpoint,
        }
    }
}

/// One transaction for `batch` and its commit; the answers wait for the caller.
fn commit_batch(connection: &Connection, batch: Vec<Job>) -> Committed {
    let mut replies: Vec<Reply> = Vec::with_capacity(batch.len());
    let mut open = begin(connection);
    // Whether a job of the open transaction kept its writes: until one has, a job that fails
    // takes the whole transaction with it, which loses no other job's work.
    let mut kept_any = false;
    for job in batch {
        if let Err(error) = &open {
            // Not run: its answer sender drops with it, and the request is told the store
            // failed. Nothing of it was written.
            tracing::warn!(%error, "the store's writer could not open a transaction");
            drop(job);
            open = begin(connection);
            continue;
        }
        let alone = if kept_any { Alone::No } else { Alone::Yes };
        kept_any |= run_job(connection, job, &mut replies, alone);
        if connection.is_autocommit() {
            // The transaction was rolled back, by SQLite (a full disk, an I/O error) or for
            // a job that failed alone in it: what the jobs before wrote is gone, so they are
            // answered with a failure (a job that failed keeps its own error).
            let lost = transaction_lost();
            for reply in replies.drain(..) {
                reply(Err(&lost));
            }
            open = begin(connection);
            kept_any = false;
        }
    }
    let committed = match open {
        Ok(()) => exec(connection, "COMMIT"),
        Err(error) => Err(error),
    };
    if committed.is_err() && !connection.is_autocommit() {
        rollback(connection);
    }
    Committed {
        replies,
        result: committed,
    }
}

fn begin(connection: &Connection) -> rusqlite::Result<()> {
    // IMMEDIATE: the write lock is taken now, so no statement of the batch meets a busy
    // database halfway through.
    exec(connection, "BEGIN IMMEDIATE")
}

/// Runs one of the writer's fixed statements, parsed once and kept in the connection's cache
/// (`WRITER_STATEMENTS`): a delivery alone in its batch runs two of them (begin, commit), one
/// in a batch with others four (and savepoint, release), and parsing each anew was a
/// measurable part of its time on the writer.
fn exec(connection: &Connection, sql: &str) -> rusqlite::Result<()> {
    connection.prepare_cached(sql)?.execute([]).map(drop)
}

/// Whether a job is the only one of its transaction with writes to keep: then a failure
/// rolls the whole transaction back and the job needs no savepoint of its own.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Alone {
    Yes,
    No,
}

/// Runs one job, under a savepoint of its own when other jobs of the transaction kept their
/// writes, so that a job that fails or panics rolls back alone; whether it kept its writes.
///
/// A job alone in its transaction (every job of a batch of one, as at one connection, and
/// the first of every batch) runs without one: its failure rolls back the transaction,
/// which holds nothing else. A savepoint costs its two statements and a copy of every page
/// the job changes into the statement journal, about a tenth of a lone delivery's
/// instructions (`BENCHMARKS.md`, "the 1-connection figure, instructions cut").
fn run_job(connection: &Connection, job: Job, replies: &mut Vec<Reply>, alone: Alone) -> bool {
    if alone == Alone::No && exec(connection, "SAVEPOINT job").is_err() {
        return false;
    }
    let ran = panic::catch_unwind(AssertUnwindSafe(|| job(connection)));
    let kept = matches!(ran, Ok((true, _)));
    // In autocommit mode the savepoint went with the whole transaction, which the caller
    // answers for.
    if !connection.is_autocommit() {
        // A panicking job drops its answer sender as it unwinds: its request is told the
        // store failed, and nothing it wrote stays.
        match alone {
            Alone::Yes if !kept => rollback(connection),
            Alone::Yes => {}
            Alone::No => end_savepoint(connection, kept),
        }
    }
    if let Ok((_, reply)) = ran {
        replies.push(reply);
    }
    kept
}

/// Ends a job's savepoint, keeping its writes or not. A savepoint that cannot be ended
/// leaves the job's writes in an unknown state inside the batch: the whole transaction goes,
/// and the caller answers every job of it with a failure, rather than commit what this job
/// was told it lost.
fn end_savepoint(connection: &Connection, kept: bool) {
    let rolled_back = || exec(connection, "ROLLBACK TO job");
    let ended = match kept {
        true => Ok(()),
        false => rolled_back(),
    }
    .and_then(|()| exec(connection, "RELEASE job"));
    if ended.is_err() && !connection.is_autocommit() {
        rollback(connection);
    }
}

/// Rolls the open transaction back; the caller sees it gone (`is_autocommit`).
fn rollback(connection: &Connection) {
    let _ = exec(connection, "ROLLBACK");
}

/// The error of a job whose writes went with a transaction SQLite rolled back.
fn transaction_lost() -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        ffi::Error::new(ffi::SQLITE_ABORT),
        Some("the transaction holding this write was rolled back".into()),
    )
}

/// A copy of a commit's error for each job it failed (rusqlite's errors are not `Clone`),
/// keeping SQLite's code, which tells busy from broken.
pub(super) fn copied(error: &rusqlite::Error) -> rusqlite::Error {
    match error {
        rusqlite::Error::SqliteFailure(code, message) => {
            rusqlite::Error::SqliteFailure(*code, message.clone())
        }
        other => rusqlite::Error::SqliteFailure(
            ffi::Error::new(ffi::SQLITE_ERROR),
            Some(other.to_string()),
        ),
    }
}

#[cfg(test)]
mod tests;
