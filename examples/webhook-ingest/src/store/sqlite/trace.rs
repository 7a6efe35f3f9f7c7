//! The store's trace: what the writer did and when, one `tracing` event per commit, per
//! fsync and per WAL checkpoint, for the ingestion benchmark's picture of latency over time
//! (`load-scripts/bench/ingest.sh --trace`, `BENCHMARKS.md`).
//!
//! Off unless the log filter enables [`TARGET`] at TRACE (`RUST_LOG=info,store_trace=trace`).
//! Off, a traced step costs one look at the callsite's cached interest: [`Step::start`] reads
//! no clock, and no event is built.
//!
//! Each event carries `at_us`, the wall clock in microseconds since the Unix epoch when the
//! step began (the clock the benchmark's client stamps its requests with), and the step's
//! duration in microseconds.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// The target of the trace's events, short so that a filter names it easily.
pub(super) const TARGET: &str = "store_trace";

/// Who ran a traced step.
#[derive(Clone, Copy)]
pub(super) enum By {
    /// The writer thread.
    Writer,
    /// The syncer thread.
    Syncer,
    /// A request's own thread, the store being idle (`Writer::try_in_place`).
    InPlace,
    /// The checkpointer thread, on a connection of its own.
    Checkpointer,
}

impl By {
    fn name(self) -> &'static str {
        match self {
            By::Writer => "writer",
            By::Syncer => "syncer",
            By::InPlace => "in_place",
            By::Checkpointer => "checkpointer",
        }
    }
}

/// A step being timed: `None` while the trace is off.
pub(super) struct Step(Option<(Instant, u64)>);

impl Step {
    /// Starts timing a step, if the trace is on.
    pub(super) fn start() -> Step {
        if !tracing::enabled!(target: TARGET, tracing::Level::TRACE) {
            return Step(None);
        }
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_micros() as u64);
        Step(Some((Instant::now(), wall)))
    }

    fn took(&self) -> Option<(u64, u64)> {
        self.0
            .map(|(started, at)| (at, started.elapsed().as_micros() as u64))
    }

    /// A commit of `jobs` jobs has ended, leaving `wal_frames` frames in the WAL.
    pub(super) fn committed(self, by: By, jobs: usize, wal_frames: i32) {
        if let Some((at_us, commit_us)) = self.took() {
            tracing::trace!(
                target: TARGET,
                by = by.name(),
                at_us,
                commit_us,
                jobs,
                wal_frames,
                "commit"
            );
        }
    }

    /// An fsync of the WAL that answers `jobs` jobs of `batches` commits has returned.
    pub(super) fn synced(self, by: By, batches: usize, jobs: usize) {
        if let Some((at_us, fsync_us)) = self.took() {
            tracing::trace!(
                target: TARGET,
                by = by.name(),
                at_us,
                fsync_us,
                batches,
                jobs,
                "fsync"
            );
        }
    }

    /// A checkpoint of a WAL of `frames` frames has returned.
    pub(super) fn checkpointed(self, by: By, frames: i32) {
        if let Some((at_us, checkpoint_us)) = self.took() {
            tracing::trace!(
                target: TARGET,
                by = by.name(),
                at_us,
                checkpoint_us,
                frames,
                "checkpoint"
            );
        }
    }
}
