//! The memo of a thread's last failure: a run of the same failure (a client sending the same
//! bad request, a flood) takes its fingerprint and its series from here instead of hashing
//! its labels twice (`bench-smoke`'s `/handled`, BENCHMARKS.md, "Fourth round").

use super::series::SeriesTable;
use crate::count::failures::fingerprint;
use crate::outcome::Outcome;
use crate::summary::Summary;
use crate::sync::Mutex;

/// What this thread's last failure was found to be, if it can stand for the next one. Its
/// series is checked by its labels ([`SeriesTable::count_again`]), which also finds it gone
/// after the table is emptied; the fingerprint depends on the outcome, the code, the route
/// and the panic site, of which the series checks the code and the route: only a failure
/// without a site is kept.
#[derive(Debug, Default)]
pub(super) struct LastFailure(Option<Found>);

#[derive(Debug, Clone, Copy)]
struct Found {
    outcome: Outcome,
    fingerprint: u64,
    series_at: usize,
}

impl LastFailure {
    /// Counts `summary`'s failure on `route` in the thread's `series` (handed to `shared`
    /// when it is full), and gives its fingerprint: the memo's when the failure is a run of
    /// the last one, else hashed, and this failure is remembered in its place.
    // Inlined into `Ledger::fail`, as it was written there before it moved here.
    #[inline]
    pub(super) fn count(
        &mut self,
        series: &mut SeriesTable,
        shared: &Mutex<SeriesTable>,
        summary: &Summary,
        route: &str,
    ) -> u64 {
        let (code, status) = (summary.code, summary.status.as_u16());
        let again = self.0.filter(|last| {
            last.outcome == summary.outcome
                && summary.site.is_none()
                && series.count_again(last.series_at, route, code, status)
        });
        if let Some(again) = again {
            return again.fingerprint;
        }
        let fingerprint = fingerprint(summary, route);
        let at = series.record_local(route, code, status, shared);
        self.0 = at
            .filter(|_| summary.site.is_none())
            .map(|series_at| Found {
                outcome: summary.outcome,
                fingerprint,
                series_at,
            });
        fingerprint
    }
}
