//! The thread that makes commits durable: it fsyncs the WAL once for every batch the writer
//! committed since its last fsync, and only then answers their jobs.
//!
//! The writer commits at `synchronous=NORMAL`, which writes the WAL without syncing it, and
//! hands each committed batch here; an `fdatasync` of the WAL that begins after a commit
//! returned makes that commit as durable as `synchronous=FULL` would have (SQLite syncs the
//! WAL's header itself when it starts reusing the file, and before every checkpoint). The
//! gain is the overlap: the writer runs the next batch while the disk flushes the last, so
//! neither the disk nor the writer waits for the other under load.

use std::fs::File;
use std::io;
use std::sync::mpsc::Receiver;

use rusqlite::ffi;

use super::trace::{By, Step};

/// What a job leaves for after the commit: it sends the job's answer, given how the commit
/// ended, so that a success is never answered before it is durable.
pub(super) type Reply = Box<dyn FnOnce(Result<(), &rusqlite::Error>) + Send>;

/// A batch the writer committed (or failed to), waiting for its answers.
pub(super) struct Committed {
    pub(super) replies: Vec<Reply>,
    pub(super) result: rusqlite::Result<()>,
}

impl Committed {
    /// Answers every job of the batch: with the commit's error, else the sync's, else success.
    pub(super) fn answer(self, synced: Result<(), &io::Error>) {
        let failed = match (&self.result, synced) {
            (Err(_), _) | (Ok(()), Ok(())) => None,
            (Ok(()), Err(error)) => Some(sync_failed(error)),
        };
        let outcome = match (&self.result, &failed) {
            (Err(error), _) | (Ok(()), Some(error)) => Err(error),
            (Ok(()), None) => Ok(()),
        };
        for reply in self.replies {
            reply(outcome);
        }
    }
}

/// Syncs and answers until the writer is gone and every committed batch is answered.
pub(super) fn run(wal: File, committed: Receiver<Committed>) {
    while let Ok(first) = committed.recv() {
        // Every batch committed by now is in the WAL's written pages: one fdatasync covers
        // them all.
        let mut round = vec![first];
        round.extend(committed.try_iter());
        let step = Step::start();
        let synced = sync(&wal);
        let jobs = round.iter().map(|batch| batch.replies.len()).sum();
        step.synced(By::Syncer, round.len(), jobs);
        for batch in round {
            batch.answer(synced.as_ref().map(|_| ()));
        }
    }
}

/// One fdatasync of the WAL; a failure is logged here, and its jobs are told.
pub(super) fn sync(wal: &File) -> io::Result<()> {
    let synced = wal.sync_data();
    if let Err(error) = &synced {
        // The pages that failed to reach the disk may now be marked clean: the jobs are told
        // the store failed, so a delivery goes to the spool instead of being acknowledged as
        // stored.
        tracing::error!(%error, "fsync of the store's WAL failed");
    }
    synced
}

fn sync_failed(error: &io::Error) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        ffi::Error::new(ffi::SQLITE_IOERR_FSYNC),
        Some(format!("fsync of the WAL failed: {error}")),
    )
}
