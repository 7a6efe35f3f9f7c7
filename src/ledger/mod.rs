//! The ledger: exact counts of every request's outcome, and a bounded table of failure series.
//!
//! Outcome counters are fixed atomics, so the success path takes no lock. Failures also land
//! in a series labelled by route template, code and status; the table is capped, and label
//! sets past the cap fold into one overflow series so that no input can grow it.

mod series;
mod snapshot;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use axum::response::{IntoResponse, Response};
use http::header::CONTENT_TYPE;

pub use self::series::Series;
use self::series::SeriesTable;
pub use self::snapshot::{Snapshot, PROMETHEUS_TEXT};
use crate::config::{LedgerLimits, ReportLevels};
use crate::outcome::Outcome;
use crate::report::{Group, Reporter};
use crate::request::RequestMeta;
use crate::summary::Summary;

/// A handle on the counts of one [`FaultLayer`](crate::FaultLayer); cheap to clone.
///
/// ```
/// let (layer, ledger) = faultline::FaultLayer::pair();
/// # let _ = layer;
/// let snapshot = ledger.snapshot();
/// assert_eq!(snapshot.started, 0);
/// assert!(snapshot.is_balanced());
/// ```
#[derive(Clone, Debug)]
pub struct Ledger {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    started: AtomicU64,
    in_flight: AtomicU64,
    outcomes: [AtomicU64; 7],
    series: Mutex<SeriesTable>,
    reporter: Reporter,
}

impl Ledger {
    /// An empty ledger with the default caps.
    pub(crate) fn new() -> Self {
        Self::with_limits(LedgerLimits::default())
    }

    pub(crate) fn with_limits(limits: LedgerLimits) -> Self {
        Self {
            inner: Arc::new(Inner {
                started: AtomicU64::new(0),
                in_flight: AtomicU64::new(0),
                outcomes: Default::default(),
                series: Mutex::new(SeriesTable::new(limits.max_series)),
                reporter: Reporter::new(limits.reports),
            }),
        }
    }

    fn series_table(&self) -> std::sync::MutexGuard<'_, SeriesTable> {
        self.inner
            .series
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn limits(&self) -> LedgerLimits {
        LedgerLimits {
            max_series: self.series_table().max,
            reports: self.inner.reporter.limits(),
        }
    }

    /// Changes the limits in place, so every handle on this ledger keeps seeing it. Tables
    /// already past a lowered cap keep what they hold and take nothing new.
    pub(crate) fn set_limits(&self, limits: LedgerLimits) {
        self.series_table().max = limits.max_series;
        self.inner.reporter.set_limits(limits.reports);
    }

    /// Reports a failure (its event, under flood control, and its group).
    pub(crate) fn report(
        &self,
        summary: &Summary,
        meta: &RequestMeta,
        request_id: &str,
        levels: &ReportLevels,
    ) {
        self.inner
            .reporter
            .report(summary, meta, request_id, levels);
    }

    /// The error groups, the most frequent first: a bounded local inbox of what failed.
    pub fn groups(&self) -> Vec<Group> {
        self.inner.reporter.groups()
    }

    pub(crate) fn start(&self) {
        // Relaxed is enough: each counter is exact on its own, and a snapshot taken at
        // quiescence happens after every finish through whatever synchronized with it.
        self.inner.started.fetch_add(1, Ordering::Relaxed);
        self.inner.in_flight.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn finish(&self, outcome: Outcome) {
        self.inner.outcomes[outcome.index()].fetch_add(1, Ordering::Relaxed);
        self.inner.in_flight.fetch_sub(1, Ordering::Relaxed);
    }

    pub(crate) fn record_failure(&self, route: &str, code: &'static str, status: u16) {
        self.series_table().record(route, code, status);
    }

    /// The counts as plain data. Each counter is exact; while requests are in flight the
    /// counters are read one after another, so the invariant holds exactly at quiescence.
    pub fn snapshot(&self) -> Snapshot {
        let outcome = |o: Outcome| self.inner.outcomes[o.index()].load(Ordering::Relaxed);
        // Each read is exact for its counter; the counters are read one after another, so
        // while requests are in flight the sum and `started` may be off by those requests.
        let ok = outcome(Outcome::Ok);
        let handled = outcome(Outcome::Handled);
        let rejected = outcome(Outcome::Rejected);
        let service_error = outcome(Outcome::ServiceError);
        let panicked = outcome(Outcome::Panicked);
        let aborted = outcome(Outcome::Aborted);
        let cancelled = outcome(Outcome::Cancelled);
        let (reported, suppressed) = self.inner.reporter.counts();
        let in_flight = self.inner.in_flight.load(Ordering::Relaxed);
        let started = self.inner.started.load(Ordering::Relaxed);
        let series = self.series_table().to_vec();
        Snapshot {
            started,
            in_flight,
            ok,
            handled,
            rejected,
            service_error,
            panicked,
            aborted,
            cancelled,
            reported,
            suppressed,
            series,
        }
    }

    /// The Prometheus text exposition (format 0.0.4) of a fresh snapshot.
    pub fn render_prometheus(&self) -> String {
        self.snapshot().to_prometheus()
    }

    /// An axum handler serving the exposition, to mount at `/metrics`.
    ///
    /// ```
    /// use axum::{routing::get, Router};
    ///
    /// let (layer, ledger) = faultline::FaultLayer::pair();
    /// let app: Router = Router::new()
    ///     .route("/metrics", get(ledger.metrics_handler()))
    ///     .layer(layer);
    /// # let _ = app;
    /// ```
    pub fn metrics_handler(
        &self,
    ) -> impl FnOnce() -> std::future::Ready<Response> + Clone + Send + Sync + 'static {
        let ledger = self.clone();
        move || {
            let body = ledger.render_prometheus();
            std::future::ready(([(CONTENT_TYPE, PROMETHEUS_TEXT)], body).into_response())
        }
    }
}

impl Ledger {
    /// An axum handler serving the error groups as JSON, the most frequent first.
    ///
    /// The groups hold internal text (5xx messages, panic text, source chains), which no
    /// client may read: mount it only behind whatever guards your admin routes.
    ///
    /// ```
    /// use axum::{routing::get, Router};
    ///
    /// let (layer, ledger) = faultline::FaultLayer::pair();
    /// let app: Router = Router::new()
    ///     .route("/errors", get(ledger.errors_handler()))
    ///     .layer(layer);
    /// # let _ = app;
    /// ```
    pub fn errors_handler(
        &self,
    ) -> impl FnOnce() -> std::future::Ready<Response> + Clone + Send + Sync + 'static {
        let ledger = self.clone();
        move || {
            let body = ledger.errors_json().to_string();
            std::future::ready(([(CONTENT_TYPE, "application/json")], body).into_response())
        }
    }

    fn errors_json(&self) -> serde_json::Value {
        let snapshot = self.snapshot();
        let groups: Vec<serde_json::Value> = self
            .groups()
            .into_iter()
            .map(|g| {
                serde_json::json!({
                    "fingerprint": g.fingerprint,
                    "count": g.count,
                    "first_seen_ms": g.first_seen_ms,
                    "last_seen_ms": g.last_seen_ms,
                    "outcome": g.outcome.as_str(),
                    "status": g.status,
                    "code": g.code,
                    "route": g.route,
                    "message": g.message,
                    "chain": g.chain,
                    "location": g.location,
                })
            })
            .collect();
        serde_json::json!({
            "failures": snapshot.failures(),
            "reported": snapshot.reported,
            "suppressed": snapshot.suppressed,
            "groups": groups,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_balance_against_started() {
        let ledger = Ledger::new();
        for outcome in Outcome::ALL {
            ledger.start();
            ledger.finish(outcome);
        }
        ledger.start();
        let snapshot = ledger.snapshot();
        assert_eq!(snapshot.started, 8);
        assert_eq!(snapshot.in_flight, 1);
        assert_eq!(snapshot.finished(), 7);
        assert_eq!(snapshot.failures(), 6);
        assert!(snapshot.is_balanced());
    }

    #[test]
    fn series_past_the_cap_fold_into_one_overflow_series() {
        let ledger = Ledger::with_limits(LedgerLimits {
            max_series: 3,
            ..LedgerLimits::default()
        });
        for n in 0..10 {
            let route = format!("/r{n}");
            ledger.record_failure(&route, "c", 400);
            ledger.record_failure(&route, "c", 400);
        }
        let series = ledger.snapshot().series;
        assert_eq!(series.len(), 4);
        assert!(series[..3].iter().all(|s| s.count == 2 && !s.is_overflow()));
        assert!(series[3].is_overflow());
        assert_eq!(series[3].count, 14);
        assert_eq!(series.iter().map(|s| s.count).sum::<u64>(), 20);
        assert_eq!(ledger.series_table().index.len(), 3);
    }

    #[test]
    fn exposition_escapes_label_values() {
        let ledger = Ledger::new();
        ledger.record_failure("/a\"b\\c\nd", "bad-request", 400);
        let text = ledger.render_prometheus();
        assert!(
            text.contains(
                "faultline_errors_total{route=\"/a\\\"b\\\\c\\nd\",code=\"bad-request\",status=\"400\"} 1"
            ),
            "{text}"
        );
        assert!(text.contains("faultline_requests_total{outcome=\"service_error\"} 0"));
        assert!(text.contains("faultline_in_flight 0"));
    }
}
