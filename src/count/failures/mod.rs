//! What the ledger keeps of failures besides their series: flood control, which decides
//! whether a failure's event is written and counts every one it holds back, and the error
//! groups, a bounded local record of what failed, how often and when. (The event itself is
//! written by the middleware, through `report`.)
//!
//! A failure's fingerprint is its outcome, code, route template and panic location. Per
//! fingerprint at most `per_window` events are written per window, from all threads
//! together; the rest are suppressed and counted, and the next event written for that
//! fingerprint says how many were suppressed since (those held back by other threads join
//! that tally in batches, see [`flood`]). `failures == reported + suppressed` holds exactly
//! at quiescence.
//!
//! Nothing here takes a process-wide lock per failure: each thread decides and tallies under
//! its own stripe's lock ([`ThreadReports`]), and the shared tables are locked only when a
//! thread meets a fingerprint its cache lacks, when its tallies fill up, or when someone
//! reads the groups.

mod flood;
mod groups;

use std::hash::{Hash, Hasher};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use rustc_hash::{FxHashMap, FxHasher};

pub(crate) use self::flood::Verdict;
use self::flood::{CachedQuotas, Quotas};
pub use self::groups::Group;
use self::groups::{GroupTable, PendingGroups};
use crate::config::ReportLimits;
use crate::panic::lock;
use crate::summary::Summary;
use crate::sync::Mutex;

/// Outcome, code, route template and panic location: what makes two failures the same.
/// FxHash is enough: none of these comes from raw input.
pub(crate) fn fingerprint(summary: &Summary, route: &str) -> u64 {
    let mut hasher = FxHasher::default();
    summary.outcome.hash(&mut hasher);
    summary.code.hash(&mut hasher);
    route.hash(&mut hasher);
    if let Some(site) = &summary.site {
        site.file.hash(&mut hasher);
        site.line.hash(&mut hasher);
    }
    hasher.finish()
}

/// Flood control and error groups, shared by every clone of a layer.
#[derive(Debug)]
pub(crate) struct Reporter {
    per_window: u32,
    window_nanos: u64,
    /// Windows are numbered from here, and failures are timed from here.
    started: Instant,
    /// The wall clock at `started`, in milliseconds since the Unix epoch.
    started_unix_ms: u64,
    quotas: Mutex<Quotas>,
    groups: Mutex<GroupTable>,
}

/// What one thread (one stripe) keeps between hand-overs.
#[derive(Debug, Default)]
pub(crate) struct ThreadReports {
    quotas: CachedQuotas,
    groups: PendingGroups,
}

impl Reporter {
    pub(crate) fn new(limits: ReportLimits) -> Self {
        let nanos = u64::try_from(limits.window.as_nanos()).unwrap_or(u64::MAX);
        Self {
            per_window: limits.per_window,
            window_nanos: nanos.max(1),
            started: Instant::now(),
            started_unix_ms: unix_ms(),
            quotas: Mutex::new(Quotas::new(limits.max_fingerprints)),
            groups: Mutex::new(GroupTable::new(limits.max_groups)),
        }
    }

    /// Tallies one failure in its group and decides whether its event is written; `nanos`
    /// is [`elapsed_nanos`](Self::elapsed_nanos) read for this failure.
    // Inlined into `Ledger::fail`, its one caller: out of line a failure paid the call
    // (ledger-grind's handled row 11,334 → 11,319, BENCHMARKS.md, "Sixth round").
    #[inline]
    pub(crate) fn judge(
        &self,
        local: &mut ThreadReports,
        fingerprint: u64,
        summary: &Summary,
        route: &str,
        nanos: u64,
    ) -> Verdict {
        let now_ms = self.unix_ms_at(nanos);
        if !local.groups.note_known(fingerprint, summary, now_ms) {
            if local.groups.is_full() {
                lock(&self.groups).take(&mut local.groups, true);
            }
            local.groups.note_new(fingerprint, summary, route, now_ms);
        }
        let window = nanos / self.window_nanos;
        local
            .quotas
            .judge(fingerprint, window, self.per_window, &self.quotas)
    }

    /// Takes one thread's tallies into the shared tables, so that a read sees them.
    pub(crate) fn hand_over(&self, local: &mut ThreadReports) {
        lock(&self.groups).take(&mut local.groups, false);
    }

    /// Nanoseconds since the reporter started: one clock read, which both the flood window
    /// and the group times are taken from. A u64 of nanoseconds lasts 584 years.
    pub(crate) fn elapsed_nanos(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// The wall clock `nanos` after the start, in milliseconds since the Unix epoch: the
    /// wall clock read once at the start plus the monotonic time since, so that a failure
    /// reads one clock, not two. A step of the wall clock after the start (a manual reset;
    /// NTP slews, which the monotonic clock follows) does not show in the group times.
    pub(crate) fn unix_ms_at(&self, nanos: u64) -> u64 {
        const NANOS_PER_MS: u64 = 1_000_000;
        self.started_unix_ms.saturating_add(nanos / NANOS_PER_MS)
    }

    #[cfg(all(test, not(loom)))]
    pub(crate) fn fingerprints(&self) -> usize {
        lock(&self.quotas).len()
    }

    /// The error groups, the most frequent first: only what was handed over.
    pub(crate) fn groups(&self) -> Vec<Group> {
        let now_ms = self.unix_ms_at(self.elapsed_nanos());
        lock(&self.groups).to_vec(now_ms)
    }
}

/// Removes and returns the entry seen least recently. A scan, not a list: it runs only when
/// a new fingerprint meets a full table, and fingerprints come from the application's own
/// routes, codes and panic sites, not from raw input.
fn evict_least_recent<K: Copy + Eq + Hash, V>(
    table: &mut FxHashMap<K, V>,
    last_seen: impl Fn(&V) -> u64,
) -> Option<V> {
    let oldest = table
        .iter()
        .min_by_key(|(_, v)| last_seen(v))
        .map(|(k, _)| *k)?;
    table.remove(&oldest)
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
