//! Error groups: every failure with the same fingerprint, counted, with when it was first and
//! last seen and its latest bounded summary.
//!
//! Each thread keeps what it saw since its last hand-over in a small table of its own
//! ([`PendingGroups`], under that thread's stripe lock); the shared, bounded table takes
//! those tallies only when a thread's table is full or when someone reads the groups, which
//! first collects every thread's tallies. So counts, first and last seen are exact whenever
//! they are read; the latest summary is the latest of the thread that handed over last.

use rustc_hash::FxHashMap;

use super::evict_least_recent;
use crate::limits::TREND_MINUTES;
use crate::outcome::Outcome;
use crate::summary::Summary;

/// The fingerprints one thread tallies before it hands its tallies over.
const PENDING_PER_THREAD: usize = 16;

const MINUTE_MS: u64 = 60_000;

/// One error group: every failure with the same fingerprint.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Group {
    /// The fingerprint, as 16 hex digits: also the `fault.fingerprint` of the events.
    pub fingerprint: String,
    /// Failures seen since the group was created.
    pub count: u64,
    /// When the group's first failure was seen, in milliseconds since the Unix epoch.
    pub first_seen_ms: u64,
    /// When its latest failure was seen, in milliseconds since the Unix epoch.
    pub last_seen_ms: u64,
    /// The outcome of its failures.
    pub outcome: Outcome,
    /// The status of its latest failure.
    pub status: u16,
    /// The code of its failures.
    pub code: String,
    /// The route template of its failures.
    pub route: String,
    /// The bounded internal message of its latest failure.
    pub message: String,
    /// The bounded source chain of its latest failure.
    pub chain: String,
    /// `file:line` of the panic, for panics seen with the panic hook installed.
    pub location: Option<String>,
    /// Failures per minute over the last [`TREND_MINUTES`] minutes up to the read, the
    /// oldest first; the last is the current minute so far.
    pub per_minute: Vec<u32>,
}

/// Failures per minute, for the last [`TREND_MINUTES`] minutes up to `minute`: a ring, so
/// counting one costs an index and an add, and never allocates.
#[derive(Debug, Clone, Copy)]
struct Trend {
    /// The latest minute counted, in minutes since the Unix epoch.
    minute: u64,
    counts: [u32; TREND_MINUTES],
}

impl Trend {
    fn new(minute: u64) -> Self {
        Self {
            minute,
            counts: [0; TREND_MINUTES],
        }
    }

    fn slot(minute: u64) -> usize {
        (minute % TREND_MINUTES as u64) as usize
    }

    /// Counts `n` failures in `minute`; minutes older than the window are dropped.
    fn add(&mut self, minute: u64, n: u32) {
        if minute > self.minute {
            let gap = (minute - self.minute).min(TREND_MINUTES as u64);
            for m in 1..=gap {
                self.counts[Self::slot(self.minute + m)] = 0;
            }
            self.minute = minute;
        }
        if self.minute - minute < TREND_MINUTES as u64 {
            let count = &mut self.counts[Self::slot(minute)];
            *count = count.saturating_add(n);
        }
    }

    fn merge(&mut self, other: &Trend) {
        for age in 0..TREND_MINUTES as u64 {
            let Some(minute) = other.minute.checked_sub(age) else {
                break;
            };
            let n = other.counts[Self::slot(minute)];
            if n > 0 {
                self.add(minute, n);
            }
        }
    }

    /// The counts of the window that ends at `now_minute`, the oldest first.
    fn window(&self, now_minute: u64) -> Vec<u32> {
        (0..TREND_MINUTES as u64)
            .rev()
            .map(|age| match now_minute.checked_sub(age) {
                Some(m) if m <= self.minute && self.minute - m < TREND_MINUTES as u64 => {
                    self.counts[Self::slot(m)]
                }
                _ => 0,
            })
            .collect()
    }
}

/// What one thread saw of one fingerprint since it last handed over.
#[derive(Debug)]
struct Pending {
    count: u64,
    first_seen_ms: u64,
    last_seen_ms: u64,
    outcome: Outcome,
    status: u16,
    code: &'static str,
    route: Box<str>,
    message: String,
    chain: String,
    location: Option<String>,
    trend: Trend,
}

/// One thread's tallies since it last handed over.
#[derive(Debug, Default)]
pub(super) struct PendingGroups {
    entries: FxHashMap<u64, Pending>,
}

impl PendingGroups {
    /// Tallies one failure of a fingerprint already in the table; false when it is not.
    /// One lookup: the usual case, a fingerprint seen before.
    pub(super) fn note_known(&mut self, fingerprint: u64, summary: &Summary, now_ms: u64) -> bool {
        let Some(pending) = self.entries.get_mut(&fingerprint) else {
            return false;
        };
        pending.note(summary, now_ms);
        true
    }

    /// Tallies the first failure of a fingerprint not in the table.
    pub(super) fn note_new(
        &mut self,
        fingerprint: u64,
        summary: &Summary,
        route: &str,
        now_ms: u64,
    ) {
        let pending = self.entries.entry(fingerprint).or_insert_with(|| Pending {
            count: 0,
            first_seen_ms: now_ms,
            last_seen_ms: now_ms,
            outcome: summary.outcome,
            status: 0,
            code: summary.code,
            route: route.into(),
            message: String::new(),
            chain: String::new(),
            location: summary
                .site
                .as_ref()
                .map(|site| format!("{}:{}", site.file, site.line)),
            trend: Trend::new(now_ms / MINUTE_MS),
        });
        pending.note(summary, now_ms);
    }

    /// Whether a new fingerprint would find no room.
    pub(super) fn is_full(&self) -> bool {
        self.entries.len() >= PENDING_PER_THREAD
    }
}

impl Pending {
    fn note(&mut self, summary: &Summary, now_ms: u64) {
        if self.count == 0 {
            self.first_seen_ms = now_ms;
            self.trend = Trend::new(now_ms / MINUTE_MS);
        }
        self.trend.add(now_ms / MINUTE_MS, 1);
        self.count += 1;
        self.last_seen_ms = now_ms;
        self.status = summary.status.as_u16();
        // A run of one failure repeats its message and chain: compared first, they are copied
        // only when they differ, and `clone_from` then reuses the strings' buffers.
        copy_if_changed(&mut self.message, &summary.message);
        copy_if_changed(&mut self.chain, &summary.chain);
    }
}

/// Makes `held` a copy of `latest`, copying nothing when it already is one.
fn copy_if_changed(held: &mut String, latest: &String) {
    if held != latest {
        held.clone_from(latest);
    }
}

/// The shared, bounded table of groups.
#[derive(Debug, Default)]
pub(super) struct GroupTable {
    pub(super) max: usize,
    /// A logical clock for "least recently seen": one tick per hand-over of a group.
    tick: u64,
    groups: FxHashMap<u64, (Group, u64, Trend)>,
}

impl GroupTable {
    pub(super) fn new(max: usize) -> Self {
        Self {
            max,
            ..Self::default()
        }
    }

    /// Takes one thread's tallies. `empty` drops the thread's entries (its table was full);
    /// otherwise they stay, zeroed, so that their buffers serve again.
    pub(super) fn take(&mut self, pending: &mut PendingGroups, empty: bool) {
        for (&fingerprint, entry) in pending.entries.iter_mut().filter(|(_, e)| e.count > 0) {
            self.merge(fingerprint, entry);
            entry.count = 0;
        }
        if empty {
            pending.entries.clear();
        }
    }

    fn merge(&mut self, fingerprint: u64, pending: &Pending) {
        if self.max == 0 {
            return;
        }
        self.tick += 1;
        let tick = self.tick;
        if let Some((group, seen, trend)) = self.groups.get_mut(&fingerprint) {
            *seen = tick;
            trend.merge(&pending.trend);
            group.count += pending.count;
            group.first_seen_ms = group.first_seen_ms.min(pending.first_seen_ms);
            if pending.last_seen_ms >= group.last_seen_ms {
                group.last_seen_ms = pending.last_seen_ms;
                group.status = pending.status;
                group.message.clone_from(&pending.message);
                group.chain.clone_from(&pending.chain);
            }
            return;
        }
        if self.groups.len() >= self.max {
            evict_least_recent(&mut self.groups, |(_, seen, _)| *seen);
        }
        let group = Group {
            fingerprint: format!("{fingerprint:016x}"),
            count: pending.count,
            first_seen_ms: pending.first_seen_ms,
            last_seen_ms: pending.last_seen_ms,
            outcome: pending.outcome,
            status: pending.status,
            code: pending.code.to_owned(),
            route: pending.route.to_string(),
            message: pending.message.clone(),
            chain: pending.chain.clone(),
            location: pending.location.clone(),
            per_minute: Vec::new(),
        };
        self.groups
            .insert(fingerprint, (group, tick, pending.trend));
    }

    /// The groups, the most frequent first, with their trend up to `now_ms`.
    pub(super) fn to_vec(&self, now_ms: u64) -> Vec<Group> {
        let now_minute = now_ms / MINUTE_MS;
        let mut groups: Vec<Group> = self
            .groups
            .values()
            .map(|(g, _, trend)| Group {
                per_minute: trend.window(now_minute),
                ..g.clone()
            })
            .collect();
        groups.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| b.last_seen_ms.cmp(&a.last_seen_ms))
        });
        groups
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_trend_keeps_the_last_hour_by_minute() {
        let mut trend = Trend::new(1_000);
        trend.add(1_000, 2);
        trend.add(1_010, 3);
        // Out of order within the window still counts; older than the window does not.
        trend.add(1_005, 1);
        trend.add(900, 7);
        let window = trend.window(1_010);
        assert_eq!(window.len(), TREND_MINUTES);
        assert_eq!(window[TREND_MINUTES - 1], 3);
        assert_eq!(window[TREND_MINUTES - 6], 1);
        assert_eq!(window[TREND_MINUTES - 11], 2);
        assert_eq!(window.iter().sum::<u32>(), 6);
        // Read 30 minutes later, the minute 1_000 is still in; 61 minutes later, none is.
        assert_eq!(trend.window(1_040).iter().sum::<u32>(), 6);
        assert_eq!(trend.window(1_071).iter().sum::<u32>(), 0);
        // A jump past the window clears the ring, the new minute alone counts.
        trend.add(2_000, 4);
        assert_eq!(trend.window(2_000).iter().sum::<u32>(), 4);

        let mut merged = Trend::new(2_000);
        merged.add(1_990, 5);
        merged.merge(&trend);
        let window = merged.window(2_000);
        assert_eq!(
            (window[TREND_MINUTES - 1], window[TREND_MINUTES - 11]),
            (4, 5)
        );
    }
}
