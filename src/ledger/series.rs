//! The bounded table of failure series, keyed by route template, code and status.

use std::hash::{Hash, Hasher};

use rustc_hash::{FxHashMap, FxHasher};

use crate::outcome::OVERFLOW_LABEL;

/// The count of one failure label set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    /// The route template (`/api/{instance}/digests`), never the raw path;
    /// [`UNMATCHED_ROUTE`] when no route matched, [`OVERFLOW_LABEL`] for the overflow series.
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
    /// Hash of the labels to indexes in `entries`; the labels are compared on lookup, so a
    /// collision costs a comparison, never a miscount.
    pub(super) index: FxHashMap<u64, Vec<usize>>,
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
            index: FxHashMap::default(),
            entries: Vec::new(),
            overflow: 0,
        }
    }

    pub(crate) fn record(&mut self, route: &str, code: &'static str, status: u16) {
        let mut hasher = FxHasher::default();
        (route, code, status).hash(&mut hasher);
        let hash = hasher.finish();
        let known = self.index.get(&hash).and_then(|bucket| {
            bucket.iter().copied().find(|&i| {
                let entry = &self.entries[i];
                entry.status == status && entry.code == code && &*entry.route == route
            })
        });
        if let Some(i) = known {
            self.entries[i].count += 1;
            return;
        }
        // Past the cap nothing new is stored, not even an index bucket.
        if self.entries.len() >= self.max {
            self.overflow += 1;
            return;
        }
        self.index.entry(hash).or_default().push(self.entries.len());
        self.entries.push(Entry {
            route: route.into(),
            code,
            status,
            count: 1,
        });
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
