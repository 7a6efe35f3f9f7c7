//! One batch's transaction: its begin and commit, a savepoint for each job after the first
//! to keep its writes, and the rollback of a job that fails or panics, without the others'
//! writes going with it. The writer thread and a job run in place (`writer`) both commit
//! through [`commit_batch`].

use std::panic::{self, AssertUnwindSafe};

use rusqlite::{ffi, Connection};

use super::{Committed, Job, Reply};

/// One transaction for `batch` and its commit; the answers wait for the caller.
pub(super) fn commit_batch(connection: &Connection, batch: Vec<Job>) -> Committed {
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
