//! The ledger: exact counts of every request's outcome, and a bounded table of failure series.
//!
//! Outcome counters are fixed atomics, so the success path takes no lock. Failures also land
//! in a series labelled by route template, code and status; the table is capped, and label
//! sets past the cap fold into one overflow series so that no input can grow it.

use std::fmt::Write as _;
use std::hash::{Hash, Hasher};

use rustc_hash::{FxHashMap, FxHasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use axum::response::{IntoResponse, Response};
use http::header::CONTENT_TYPE;

use crate::report::{Group, ReportLevels, ReportLimits, Reporter};
use crate::request::RequestMeta;
use crate::summary::Summary;

/// Default cap on the number of failure series: far above what an application's routes times
/// its codes reach, far below what a scrape should carry.
pub const DEFAULT_MAX_SERIES: usize = 512;

/// The route, code and status labels of the series that label sets past the cap fold into.
pub const OVERFLOW_LABEL: &str = "~overflow";

/// The route label of failures that matched no route (axum's fallback, or a layer placed
/// outside the router, where the route template is not known).
pub const UNMATCHED_ROUTE: &str = "~unmatched";

/// How a request ended. Every request that enters the layer ends in exactly one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Outcome {
    /// 2xx or 3xx, no fault attached, body sent to the end.
    Ok,
    /// A handler returned `Err`; status, code and message came from the error.
    Handled,
    /// A 4xx or 5xx made without a fault: axum's rejections, fallbacks, other layers.
    Rejected,
    /// The inner service returned `Err` instead of a response (timeout, overload, …).
    ServiceError,
    /// A panic while calling or polling the inner service or building the response.
    Panicked,
    /// The head was sent, then the body failed or panicked while streaming.
    Aborted,
    /// The response was dropped before it was complete: the client went away.
    Cancelled,
}

impl Outcome {
    /// Every outcome, in the order of the exposition.
    pub const ALL: [Outcome; 7] = [
        Outcome::Ok,
        Outcome::Handled,
        Outcome::Rejected,
        Outcome::ServiceError,
        Outcome::Panicked,
        Outcome::Aborted,
        Outcome::Cancelled,
    ];

    /// The `outcome` label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Handled => "handled",
            Outcome::Rejected => "rejected",
            Outcome::ServiceError => "service_error",
            Outcome::Panicked => "panicked",
            Outcome::Aborted => "aborted",
            Outcome::Cancelled => "cancelled",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

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

/// The bounds a ledger is built with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LedgerLimits {
    pub(crate) max_series: usize,
    pub(crate) reports: ReportLimits,
}

impl Default for LedgerLimits {
    fn default() -> Self {
        Self {
            max_series: DEFAULT_MAX_SERIES,
            reports: ReportLimits::default(),
        }
    }
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

/// The media type of the Prometheus text exposition, version 0.0.4.
pub const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The ledger's counts at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Snapshot {
    /// Requests that entered the layer.
    pub started: u64,
    /// Requests started and not yet finished (a streaming body counts until its end).
    pub in_flight: u64,
    /// See [`Outcome::Ok`].
    pub ok: u64,
    /// See [`Outcome::Handled`].
    pub handled: u64,
    /// See [`Outcome::Rejected`].
    pub rejected: u64,
    /// See [`Outcome::ServiceError`].
    pub service_error: u64,
    /// See [`Outcome::Panicked`].
    pub panicked: u64,
    /// See [`Outcome::Aborted`].
    pub aborted: u64,
    /// See [`Outcome::Cancelled`].
    pub cancelled: u64,
    /// Failure events written in full.
    pub reported: u64,
    /// Failure events held back by flood control, and counted here instead.
    pub suppressed: u64,
    /// Failure series, sorted by route, code and status; the overflow series last, if any.
    pub series: Vec<Series>,
}

impl Snapshot {
    /// The count of one outcome.
    pub fn outcome(&self, outcome: Outcome) -> u64 {
        match outcome {
            Outcome::Ok => self.ok,
            Outcome::Handled => self.handled,
            Outcome::Rejected => self.rejected,
            Outcome::ServiceError => self.service_error,
            Outcome::Panicked => self.panicked,
            Outcome::Aborted => self.aborted,
            Outcome::Cancelled => self.cancelled,
        }
    }

    /// Requests that reached an outcome.
    pub fn finished(&self) -> u64 {
        Outcome::ALL.iter().map(|&o| self.outcome(o)).sum()
    }

    /// Requests that ended in anything but [`Outcome::Ok`].
    pub fn failures(&self) -> u64 {
        self.finished() - self.ok
    }

    /// Whether `started == ok + handled + rejected + service_error + panicked + aborted +
    /// cancelled + in_flight`. Always true at quiescence.
    pub fn is_balanced(&self) -> bool {
        self.started == self.finished() + self.in_flight
    }

    /// The Prometheus text exposition (format 0.0.4) of this snapshot.
    pub fn to_prometheus(&self) -> String {
        let mut out = String::with_capacity(1024 + self.series.len() * 96);
        out.push_str(
            "# HELP faultline_requests_total Requests that passed the fault layer, by outcome.\n\
             # TYPE faultline_requests_total counter\n",
        );
        for outcome in Outcome::ALL {
            let _ = writeln!(
                out,
                "faultline_requests_total{{outcome=\"{}\"}} {}",
                outcome.as_str(),
                self.outcome(outcome)
            );
        }
        let _ = write!(
            out,
            "# HELP faultline_in_flight Requests started and not yet finished.\n\
             # TYPE faultline_in_flight gauge\n\
             faultline_in_flight {}\n",
            self.in_flight
        );
        let _ = write!(
            out,
            "# HELP faultline_reports_total Failure events, written or held back by flood control.\n\
             # TYPE faultline_reports_total counter\n\
             faultline_reports_total{{disposition=\"reported\"}} {}\n\
             faultline_reports_total{{disposition=\"suppressed\"}} {}\n",
            self.reported, self.suppressed
        );
        out.push_str(
            "# HELP faultline_errors_total Failed requests by route template, error code and status.\n\
             # TYPE faultline_errors_total counter\n",
        );
        for series in &self.series {
            out.push_str("faultline_errors_total{route=\"");
            push_label_value(&mut out, &series.route);
            out.push_str("\",code=\"");
            push_label_value(&mut out, &series.code);
            out.push_str("\",status=\"");
            if series.is_overflow() {
                out.push_str(OVERFLOW_LABEL);
            } else {
                let _ = write!(out, "{}", series.status);
            }
            let _ = writeln!(out, "\"}} {}", series.count);
        }
        out
    }
}

/// Escapes a label value as the text format asks: backslash, double quote and newline.
fn push_label_value(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

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
struct SeriesTable {
    max: usize,
    /// Hash of the labels to indexes in `entries`; the labels are compared on lookup, so a
    /// collision costs a comparison, never a miscount.
    index: FxHashMap<u64, Vec<usize>>,
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
    fn new(max: usize) -> Self {
        Self {
            max,
            index: FxHashMap::default(),
            entries: Vec::new(),
            overflow: 0,
        }
    }

    fn record(&mut self, route: &str, code: &'static str, status: u16) {
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

    fn to_vec(&self) -> Vec<Series> {
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
