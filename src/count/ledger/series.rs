//! The bounded table of failure series, keyed by route template, code and status.
//!
//! The same table serves twice: each thread counts into a small one of its own (under its
//! stripe's lock), and hands its counts to the shared one, which holds the cap and the
//! overflow series, when its own is full or when a snapshot is taken.

use std::hash::{Hash, Hasher};

use hashbrown::HashTable;
use rustc_hash::FxHasher;

use crate::outcome::OVERFLOW_LABEL;
use crate::panic::lock;
use crate::sync::{weakenable, Mutex};

/// A table with no room for new labels.
#[derive(Debug)]
struct Full;

/// The count of one failure label set.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Series {
    /// The route template (`/api/{instance}/digests`), never the raw path;
    /// [`UNMATCHED_ROUTE`](crate::ledger::UNMATCHED_ROUTE) when no route matched,
    /// [`OVERFLOW_LABEL`] for the overflow series.
    pub route: String,
    /// The failure's stable code.
    pub code: String,
    /// The response status (499 for cancellations); 0 for the overflow series.
    pub status: u16,
    /// Failures counted under these labels.
    pub count: u64,
}

impl Series {
    /// Whether this is the series that label sets past the cap fold into.
    pub fn is_overflow(&self) -> bool {
        self.status == 0 && self.route == OVERFLOW_LABEL
    }
}

/// Hashed with FxHash, which has no defence against chosen collisions: the labels come from
/// the application's route templates and codes, never from raw input.
#[derive(Debug)]
pub(crate) struct SeriesTable {
    pub(crate) max: usize,
    /// Each entry's labels' hash and its index in `entries`, found by the borrowed labels.
    pub(super) index: HashTable<(u64, usize)>,
    entries: Vec<Entry>,
    overflow: u64,
}

#[derive(Debug)]
struct Entry {
    route: Box<str>,
    code: &'static str,
    status: u16,
    count: u64,
}

impl SeriesTable {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            max,
            index: HashTable::new(),
            entries: Vec::new(),
            overflow: 0,
        }
    }

    /// Counts `n` failures under these labels; refuses (and counts nothing) when they are
    /// new and the table is full.
    fn add(&mut self, route: &str, code: &'static str, status: u16, n: u64) -> Result<usize, Full> {
        let mut hasher = FxHasher::default();
        (route, code, status).hash(&mut hasher);
        let hash = hasher.finish();
        let entries = &self.entries;
        let known = self.index.find(hash, |&(_, i)| {
            let entry = &entries[i];
            entry.status == status && entry.code == code && &*entry.route == route
        });
        if let Some(&(_, i)) = known {
            self.entries[i].count += n;
            return Ok(i);
        }
        // Past the cap nothing new is stored, not even an index slot.
        if self.entries.len() >= self.max {
            return Err(Full);
        }
        self.index
            .insert_unique(hash, (hash, self.entries.len()), |&(hash, _)| hash);
        self.entries.push(Entry {
            route: route.into(),
            code,
            status,
            count: n,
        });
        Ok(self.entries.len() - 1)
    }

    /// Counts one more failure in the series at `at` (where [`record_local`](Self::record_local)
    /// counted one), if it is still the series of these labels: the code compared by address
    /// (equal addresses are equal texts), the route by text. False, counting nothing, when the
    /// table was emptied since or the labels differ.
    pub(crate) fn count_again(
        &mut self,
        at: usize,
        route: &str,
        code: &'static str,
        status: u16,
    ) -> bool {
        match self.entries.get_mut(at) {
            Some(entry)
                if entry.status == status
                    && std::ptr::eq(entry.code, code)
                    && *entry.route == *route =>
            {
                entry.count += 1;
                true
            }
            _ => false,
        }
    }

    /// Counts `n` failures under these labels, or under the overflow series past the cap.
    pub(crate) fn record(&mut self, route: &str, code: &'static str, status: u16, n: u64) {
        if self.add(route, code, status, n).is_err() {
            self.overflow += n;
        }
    }

    /// Counts one failure in a thread's own table, first handing the table's counts to
    /// `shared` when it is full. Returns where its series is in this table.
    pub(crate) fn record_local(
        &mut self,
        route: &str,
        code: &'static str,
        status: u16,
        shared: &Mutex<SeriesTable>,
    ) -> Option<usize> {
        match self.add(route, code, status, 1) {
            Ok(at) => Some(at),
            Err(Full) => {
                self.hand_over(&mut lock(shared), true);
                self.record(route, code, status, 1);
                None
            }
        }
    }

    /// Moves this table's counts into `shared`. `empty` drops the entries too; otherwise they
    /// stay, zeroed, so that the next failures under them allocate nothing.
    pub(crate) fn hand_over(&mut self, shared: &mut SeriesTable, empty: bool) {
        for entry in self.entries.iter_mut().filter(|e| e.count > 0) {
            shared.record(&entry.route, entry.code, entry.status, entry.count);
            entry.count = weakenable!(HandOverKeepsCounts: 0, weakened: entry.count);
        }
        shared.overflow += std::mem::take(&mut self.overflow);
        if empty {
            self.entries.clear();
            self.index.clear();
        }
    }

    pub(crate) fn to_vec(&self) -> Vec<Series> {
        let mut series: Vec<Series> = self
            .entries
            .iter()
            .map(|e| Series {
                route: e.route.to_string(),
                code: e.code.to_string(),
                status: e.status,
                count: e.count,
            })
            .collect();
        series.sort_by(|a, b| (&a.route, &a.code, a.status).cmp(&(&b.route, &b.code, b.status)));
        if self.overflow > 0 {
            series.push(Series {
                route: OVERFLOW_LABEL.to_string(),
                code: OVERFLOW_LABEL.to_string(),
                status: 0,
                count: self.overflow,
            });
        }
        series
    }
}
