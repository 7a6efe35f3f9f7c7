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
use crate::outcome::Outcome;
use crate::summary::Summary;

/// The fingerprints one thread tallies before it hands its tallies over.
const PENDING_PER_THREAD: usize = 16;

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
}

/// One thread's tallies since it last handed over.
#[derive(Debug, Default)]
pub(super) struct PendingGroups {
    entries: FxHashMap<u64, Pending>,
}

impl PendingGroups {
    /// Tallies one failure.
    pub(super) fn note(&mut self, fingerprint: u64, summary: &Summary, route: &str, now_ms: u64) {
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
        });
        if pending.count == 0 {
            pending.first_seen_ms = now_ms;
        }
        pending.count += 1;
        pending.last_seen_ms = now_ms;
        pending.status = summary.status.as_u16();
        // `clone_from` reuses the strings' buffers: no allocation once an entry exists.
        pending.message.clone_from(&summary.message);
        pending.chain.clone_from(&summary.chain);
    }

    /// Whether a new fingerprint would find no room.
    pub(super) fn is_full(&self, fingerprint: u64) -> bool {
        self.entries.len() >= PENDING_PER_THREAD && !self.entries.contains_key(&fingerprint)
    }
}

/// The shared, bounded table of groups.
#[derive(Debug, Default)]
pub(super) struct GroupTable {
    pub(super) max: usize,
    /// A logical clock for "least recently seen": one tick per hand-over of a group.
    tick: u64,
    groups: FxHashMap<u64, (Group, u64)>,
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
        if let Some((group, seen)) = self.groups.get_mut(&fingerprint) {
            *seen = tick;
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
            evict_least_recent(&mut self.groups, |(_, seen)| *seen);
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
        };
        self.groups.insert(fingerprint, (group, tick));
    }

    /// The groups, the most frequent first.
    pub(super) fn to_vec(&self) -> Vec<Group> {
        let mut groups: Vec<Group> = self.groups.values().map(|(g, _)| g.clone()).collect();
        groups.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| b.last_seen_ms.cmp(&a.last_seen_ms))
        });
        groups
    }
}
