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
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError, TryLockError};

use rusqlite::hooks::Wal;
use rusqlite::{ffi, Connection};
use tokio::runtime::RuntimeFlavor;

mod transaction;

use super::checkpointer::{self, Checkpointer, WAL_LIMIT_FRAMES};
use super::syncer::{self, Committed, Reply};
use super::trace::{By, Step};
use transaction::commit_batch;

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
