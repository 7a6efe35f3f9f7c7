//! [`LedgerBuilder`]: the bounds of a ledger, fixed when it is made.

use std::time::Duration;

use super::Ledger;
use crate::config::LedgerLimits;

/// Builds a [`Ledger`] with bounds of its own; [`Ledger::new`] takes the defaults.
///
/// A ledger's bounds are fixed when it is made: every handle on it and every layer counting
/// into it sees the same ones. Give the ledger to a layer with
/// [`FaultLayer::with_ledger`](crate::FaultLayer::with_ledger).
///
/// ```
/// use std::time::Duration;
/// use faultline::{FaultLayer, Ledger};
///
/// let ledger = Ledger::builder()
///     .max_series(128)
///     .report_burst(20, Duration::from_secs(60)) // 20 full events per fingerprint a minute
///     .build();
/// let layer = FaultLayer::with_ledger(ledger.clone());
/// # let _ = layer;
/// let snapshot = ledger.snapshot();
/// assert_eq!((snapshot.started, snapshot.finished()), (0, 0));
/// assert!(snapshot.is_consistent());
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct LedgerBuilder {
    limits: LedgerLimits,
}

impl LedgerBuilder {
    /// Caps the failure series; default
    /// [`DEFAULT_MAX_SERIES`](crate::limits::DEFAULT_MAX_SERIES). Past it, new label sets fold
    /// into one overflow series.
    pub fn max_series(mut self, series: usize) -> Self {
        self.limits.max_series = series;
        self
    }

    /// Caps the route templates counted per route and outcome; default
    /// [`DEFAULT_MAX_ROUTES`](crate::limits::DEFAULT_MAX_ROUTES). Past it, requests of new
    /// routes are counted under the route `~overflow`. Taken as at most
    /// [`MAX_INTERNED_ROUTES`](crate::limits::MAX_INTERNED_ROUTES), the templates one process
    /// interns.
    pub fn max_routes(mut self, routes: usize) -> Self {
        self.limits.max_routes = routes;
        self
    }

    /// Flood control: per fingerprint, at most `events` failure events are written in full
    /// per `window`; the rest are suppressed and counted. Default
    /// [`DEFAULT_REPORTS_PER_WINDOW`](crate::limits::DEFAULT_REPORTS_PER_WINDOW) per
    /// [`DEFAULT_REPORT_WINDOW`](crate::limits::DEFAULT_REPORT_WINDOW).
    pub fn report_burst(mut self, events: u32, window: Duration) -> Self {
        self.limits.reports.per_window = events;
        self.limits.reports.window = window;
        self
    }

    /// Caps the fingerprints under flood control; default
    /// [`DEFAULT_MAX_FINGERPRINTS`](crate::limits::DEFAULT_MAX_FINGERPRINTS). Past it the
    /// least recently seen goes.
    pub fn max_fingerprints(mut self, fingerprints: usize) -> Self {
        self.limits.reports.max_fingerprints = fingerprints;
        self
    }

    /// Caps the error groups; default [`DEFAULT_MAX_GROUPS`](crate::limits::DEFAULT_MAX_GROUPS).
    /// Past it the least recently seen goes.
    pub fn max_groups(mut self, groups: usize) -> Self {
        self.limits.reports.max_groups = groups;
        self
    }

    /// The ledger, empty.
    pub fn build(self) -> Ledger {
        Ledger::with_limits(self.limits)
    }
}
