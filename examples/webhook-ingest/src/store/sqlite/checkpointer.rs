//! The WAL's checkpoints, on a thread and a connection of their own, while the writer goes on
//! appending to the WAL.
//!
//! A checkpoint copies the WAL's pages into the database file and fsyncs both: milliseconds
//! of disk under load. Run inside a commit, as SQLite's auto-checkpoint runs it, every
//! delivery of that batch and of the batches queued behind it waits for it; the benchmark's
//! trace put a checkpoint under 92% of the slowest 1% of deliveries at 64 connections
//! (`BENCHMARKS.md`). A passive checkpoint from another connection takes no lock the writer
//! needs (SQLite's `sqlite3_wal_checkpoint_v2`), so here nobody waits for it.
//!
//! The WAL is written again from its start only when a commit begins with the whole WAL
//! copied; a checkpointer that cannot keep up would let it grow without end. So past
//! [`WAL_LIMIT_FRAMES`] the writer's own commit checkpoints, as before (`writer`): whatever
//! the checkpointer did not copy is copied then, and the WAL is reused from the next commit.

use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::time::Duration;

use rusqlite::hooks::Wal;
use rusqlite::Connection;

use super::trace::{By, Step};
use super::{retry_while_busy, StoreError, BUSY_TIMEOUT};

/// Frames in the WAL from which a commit asks the checkpointer for a checkpoint: SQLite's
/// own default, about 4 MB. Past a checkpoint the WAL is written again from its start, in
/// place, and an fsync of pages written in place costs about half one of pages that grow the
/// file (measured on this machine's ext4: 100 against 160–210 µs), so it stays small.
pub(super) const CHECKPOINT_FRAMES: c_int = 1000;

/// Frames in the WAL from which the writer's commit checkpoints itself, the checkpointer
/// having fallen behind (a reader holding an old snapshot, a disk slower than the writes):
/// the WAL's bound, about 32 MB of pages, past which it grows by one batch at most before it
/// is copied and reused. Under load the checkpointer copies each batch soon after its commit,
/// but the WAL is written again from its start only when a checkpoint ends between two
/// commits, so it grows past one checkpoint's worth while the checkpointer keeps up: the
/// benchmark's trace saw up to 9,300 frames at 64 connections, and at 4,000 the commits ran
/// a checkpoint of their own every few hundred milliseconds.
pub(super) const WAL_LIMIT_FRAMES: c_int = 8 * CHECKPOINT_FRAMES;

/// The pause between two tries of a checkpoint in a commit while the checkpointer runs one:
/// SQLite lets one checkpoint run at a time, refusing the other at once, and the
/// checkpointer's takes milliseconds.
const CHECKPOINT_RETRY: Duration = Duration::from_millis(1);

/// Frames in the WAL from which every commit asks for a checkpoint, not only one in
/// [`CHECKPOINT_FRAMES`]: the WAL is written again from its start only when a checkpoint
/// ends between two commits, and each checkpoint costs two fsyncs that the commits' own
/// fsyncs queue behind, so the checkpointer runs back to back only as the WAL nears its
/// limit (the trace: run after every commit from the start, the commits' fsyncs took 1.4 ms
/// at the median instead of 1.1, and their slowest 1% twice as long).
const CATCH_UP_FRAMES: c_int = WAL_LIMIT_FRAMES / 2;

/// The writer's side of the checkpointer: asks for a checkpoint without waiting for it.
pub(super) struct Checkpointer {
    due: SyncSender<()>,
    /// The WAL's length after the last commit noted, and the frames written since a
    /// checkpoint was last asked for. Hints, on which no answer depends: a stale read asks
    /// once too often or too late, and the limit holds anyway.
    last_frames: AtomicI32,
    written: AtomicI32,
}

impl Checkpointer {
    /// Starts the checkpointer's thread on a connection of its own to the database at `path`.
    pub(super) fn start(path: &str) -> Result<Checkpointer, StoreError> {
        let connection = open(path).map_err(|e| StoreError::Open(e.into()))?;
        let (checkpointer, due) = Checkpointer::new();
        std::thread::Builder::new()
            .name("store-checkpointer".into())
            .spawn(move || run(&connection, due))
            .map_err(StoreError::Spawn)?;
        Ok(checkpointer)
    }

    /// A checkpointer and the requests it is asked, for a thread to take them from.
    pub(super) fn new() -> (Checkpointer, Receiver<()>) {
        // One request waiting is enough: a checkpoint copies everything committed before it.
        let (due, requests) = mpsc::sync_channel(1);
        let (last_frames, written) = (AtomicI32::new(0), AtomicI32::new(0));
        let checkpointer = Checkpointer {
            due,
            last_frames,
            written,
        };
        (checkpointer, requests)
    }

    /// Asks for a checkpoint when a commit left `frames` frames in the WAL: once for every
    /// [`CHECKPOINT_FRAMES`] written, and after every commit past [`CATCH_UP_FRAMES`].
    /// Never waits: a request already waiting covers this commit too.
    pub(super) fn note(&self, frames: c_int) {
        if self.due(frames) {
            self.ask();
        }
    }

    /// Whether a commit that left `frames` frames in the WAL is one a checkpoint is due
    /// after (see [`Checkpointer::note`]); it is counted as asked for.
    ///
    /// Every commit is noted, so a WAL shorter than after the commit before was written
    /// again from its start, and holds only this commit's frames. (Counting from the WAL's
    /// length at the last request instead missed the requests of a WAL written again past
    /// that length: one checkpoint per two thresholds.)
    pub(super) fn due(&self, frames: c_int) -> bool {
        let last = self.last_frames.swap(frames, Ordering::Relaxed);
        let now_written = frames - if frames < last { 0 } else { last };
        let written = self
            .written
            .load(Ordering::Relaxed)
            .saturating_add(now_written);
        let due = written >= CHECKPOINT_FRAMES || frames >= CATCH_UP_FRAMES;
        self.written
            .store(if due { 0 } else { written }, Ordering::Relaxed);
        due
    }

    /// Asks the checkpointer's thread for a checkpoint, without waiting.
    pub(super) fn ask(&self) {
        let _ = self.due.try_send(());
    }
}

/// The checkpoint due after a commit run in place, on the writer's connection before anyone
/// commits again; whether it ran. Deliveries that come one at a time commit one after the
/// other, every few hundred microseconds, and the WAL is written again from its start only
/// when a commit begins with the whole WAL copied: the checkpointer's thread, taking
/// milliseconds, never ends between two of them, and so the WAL grew to [`CATCH_UP_FRAMES`]
/// and past it, where the checkpointer ran after every commit, two fsyncs each beside the
/// deliveries' own (at one connection: 160 checkpoints for 3,443 deliveries, the WAL at
/// 6,459 frames). Run here, once per [`CHECKPOINT_FRAMES`] as SQLite's own auto-checkpoint
/// would, the next commit reuses the WAL; one delivery in a few hundred waits for it.
pub(super) fn in_place(connection: &Connection, frames: c_int) -> bool {
    let step = Step::start();
    // The first column says the checkpoint was blocked: the checkpointer's thread is running
    // one, and what is left is left to that thread.
    let blocked = connection.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
        row.get::<_, c_int>(0)
    });
    match blocked {
        Ok(0) => {
            step.checkpointed(By::InPlace, frames);
            true
        }
        Ok(_) => false,
        Err(error) => {
            tracing::debug!(%error, "the WAL checkpoint in place did not run");
            false
        }
    }
}

/// The checkpoint of a commit that left the WAL at `frames`, past [`WAL_LIMIT_FRAMES`]: it
/// waits for a checkpoint the checkpointer is running, then copies whatever is left, so the
/// commit after it writes the WAL again from its start and the bound holds.
///
/// As SQLite's own hook, a checkpoint that fails (a reader in the way, a disk error) only
/// waits for the next commit: an error here would make the commit, which stands, report a
/// failure.
pub(super) fn in_commit(wal: &Wal, frames: c_int) {
    let step = Step::start();
    match retry_while_busy(CHECKPOINT_RETRY, || wal.checkpoint()) {
        Ok(()) => step.checkpointed(By::Writer, frames),
        Err(error) => tracing::debug!(%error, "the WAL checkpoint did not run"),
    }
}

/// The checkpointer's connection: its checkpoints fsync the WAL before they copy it and the
/// database file after (`synchronous=NORMAL`; OFF would skip both, and a power cut could
/// leave the file with pages of a commit the WAL lost).
fn open(path: &str) -> rusqlite::Result<Connection> {
    let connection = Connection::open(path)?;
    connection.busy_timeout(BUSY_TIMEOUT)?;
    connection.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(connection)
}

/// Checkpoints once per request until the writer is gone.
fn run(connection: &Connection, due: Receiver<()>) {
    while due.recv().is_ok() {
        let step = Step::start();
        match checkpoint(connection) {
            Ok(frames) => step.checkpointed(By::Checkpointer, frames),
            // A reader in the way or a disk error: the next request tries again, and the
            // writer's own checkpoint past the limit bounds the WAL meanwhile.
            Err(error) => tracing::debug!(%error, "the WAL checkpoint did not run"),
        }
    }
}

/// A passive checkpoint: copies what no reader still needs, waits for nobody. Returns the
/// WAL's frames when it began.
fn checkpoint(connection: &Connection) -> rusqlite::Result<c_int> {
    connection.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| row.get(1))
}

#[cfg(test)]
mod tests;
