//! The `metrics` facade bridge (cargo feature `metrics`): the ledger's counts and a request
//! duration histogram recorded into whatever recorder the service installed (Prometheus,
//! StatsD, OpenTelemetry, Datadog, …), so that they reach the exporter it already runs.
//!
//! The ledger stays the exact source of truth; this bridge mirrors it as it happens. Its
//! handles are registered once: the started counter, one counter per outcome and per report
//! disposition, the in-flight gauge. The handles whose labels are only known per request (the duration
//! histogram by method, route and status; the error counter by route, code and status) are
//! registered on their first sighting, kept in a bounded table shared by every thread, and
//! cached in a small table of each thread's own: a request looks its handle up there by
//! hashing borrowed labels, so once a label set was seen on a thread it costs no lock and no
//! allocation. Like the ledger's series, the shared tables are capped; past the cap, new
//! label sets fold into [`OVERFLOW_LABEL`] handles.

use std::cell::RefCell;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::LocalKey;

use ::metrics::{Counter, Gauge, Histogram, SharedString, Unit};
use hashbrown::HashTable;
use rustc_hash::FxHasher;

use crate::export::labels::Finished;
use crate::export::prometheus::{STARTED, STARTED_HELP};
use crate::outcome::{Outcome, OVERFLOW_LABEL, UNMATCHED_ROUTE};
use crate::panic::lock;
use crate::sync::Mutex;

/// The name of the duration histogram: OpenTelemetry's `http.server.request.duration`, in
/// seconds. A Prometheus exporter writes it `http_server_request_duration`.
pub const HTTP_DURATION_METRIC: &str = "http.server.request.duration";

/// The bucket boundaries, in seconds, that OpenTelemetry's HTTP semantic conventions advise
/// for [`HTTP_DURATION_METRIC`]. Exporters that render histograms as summaries by default
/// (`metrics-exporter-prometheus`) take them per metric:
/// `PrometheusBuilder::new().set_buckets_for_metric(Matcher::Full(HTTP_DURATION_METRIC.into()), HTTP_DURATION_BUCKETS)`.
pub const HTTP_DURATION_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];

const REQUESTS: &str = "faultline_requests_total";
const ERRORS: &str = "faultline_errors_total";
const REPORTS: &str = "faultline_reports_total";
const IN_FLIGHT: &str = "faultline_in_flight";

/// The handles one thread caches, over every bridge in the process. Past it the thread's
/// cache starts afresh: it only ever refills from the shared tables, so this bounds the
/// memory of a thread without changing a count.
const LOCAL_HANDLES: usize = 1024;

/// Tells the bridges of one process apart in the threads' caches.
static NEXT_BRIDGE: AtomicU64 = AtomicU64::new(0);

/// What one layer records into the facade.
#[derive(Debug)]
pub(crate) struct MetricsBridge {
    id: u64,
    started: Counter,
    requests: Vec<Counter>,
    reported: Counter,
    suppressed: Counter,
    in_flight: Gauge,
    durations: Mutex<Registry<Histogram>>,
    errors: Mutex<Registry<Counter>>,
}

/// The labels of one duration or error handle; `method` is empty for errors, `status` 0 and
/// `code` empty where a request has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Labels<'a> {
    method: &'static str,
    route: &'a str,
    status: u16,
    code: &'static str,
}

#[derive(Debug)]
struct OwnedLabels {
    method: &'static str,
    route: Box<str>,
    status: u16,
    code: &'static str,
}

impl Labels<'_> {
    fn to_owned(self) -> OwnedLabels {
        OwnedLabels {
            method: self.method,
            route: self.route.into(),
            status: self.status,
            code: self.code,
        }
    }

    fn matches(&self, owned: &OwnedLabels) -> bool {
        self.status == owned.status
            && self.code == owned.code
            && self.method == owned.method
            && self.route == &*owned.route
    }

    /// The hash both tables find these labels by, with the bridge's id for the threads'
    /// caches, which serve every bridge in the process.
    fn hash(&self, bridge: u64) -> u64 {
        let mut hasher = FxHasher::default();
        (bridge, self).hash(&mut hasher);
        hasher.finish()
    }
}

/// The shared, bounded table of one kind of handle: each one's hash, labels and handle.
#[derive(Debug)]
struct Registry<H> {
    max: usize,
    handles: HashTable<(u64, OwnedLabels, H)>,
    overflow: H,
}

impl<H: Clone> Registry<H> {
    fn new(max: usize, overflow: H) -> Self {
        Self {
            max,
            handles: HashTable::new(),
            overflow,
        }
    }

    fn get(&mut self, labels: Labels<'_>, register: impl FnOnce(Labels<'_>) -> H) -> H {
        let hash = labels.hash(0);
        if let Some((_, _, handle)) = self
            .handles
            .find(hash, |(_, owned, _)| labels.matches(owned))
        {
            return handle.clone();
        }
        if self.handles.len() >= self.max {
            return self.overflow.clone();
        }
        let handle = register(labels);
        let entry = (hash, labels.to_owned(), handle.clone());
        self.handles
            .insert_unique(hash, entry, |(hash, _, _)| *hash);
        handle
    }
}

/// One thread's cache of handles, over every bridge: each one's hash, bridge, labels and
/// handle, found by the bridge and the borrowed labels.
struct LocalCache<H> {
    handles: HashTable<(u64, u64, OwnedLabels, H)>,
}

impl<H> Default for LocalCache<H> {
    fn default() -> Self {
        Self {
            handles: HashTable::new(),
        }
    }
}

thread_local! {
    static DURATIONS: RefCell<LocalCache<Histogram>> = RefCell::default();
    static ERROR_COUNTERS: RefCell<LocalCache<Counter>> = RefCell::default();
}

/// Runs `use_handle` on the handle of `labels`: from this thread's cache, else from the
/// shared table (and cached), else registered.
fn with_handle<H: Clone + 'static>(
    local: &'static LocalKey<RefCell<LocalCache<H>>>,
    bridge: u64,
    labels: Labels<'_>,
    shared: &Mutex<Registry<H>>,
    register: fn(Labels<'_>) -> H,
    use_handle: impl Fn(&H),
) {
    let hash = labels.hash(bridge);
    let cached = local.try_with(|cache| {
        let mut cache = cache.borrow_mut();
        let found = cache.handles.find(hash, |(_, b, owned, _)| {
            *b == bridge && labels.matches(owned)
        });
        if let Some((_, _, _, handle)) = found {
            use_handle(handle);
            return None;
        }
        let handle = lock(shared).get(labels, register);
        if cache.handles.len() >= LOCAL_HANDLES {
            *cache = LocalCache::default();
        }
        let entry = (hash, bridge, labels.to_owned(), handle.clone());
        cache
            .handles
            .insert_unique(hash, entry, |(hash, _, _, _)| *hash);
        Some(handle)
    });
    match cached {
        Ok(Some(handle)) => use_handle(&handle),
        Ok(None) => {}
        // The thread is being torn down: no cache, the shared table alone.
        Err(_) => use_handle(&lock(shared).get(labels, register)),
    }
}

impl MetricsBridge {
    /// Describes the metrics and registers the handles known up front, through the recorder
    /// installed now. `max_series` caps each per-request label table, as the ledger's series.
    pub(crate) fn new(max_series: usize) -> Self {
        describe();
        let requests = Outcome::ALL
            .iter()
            .map(|o| ::metrics::counter!(REQUESTS, "outcome" => o.as_str()))
            .collect();
        let overflow = Labels {
            method: OVERFLOW_LABEL,
            route: OVERFLOW_LABEL,
            status: 0,
            code: OVERFLOW_LABEL,
        };
        Self {
            id: NEXT_BRIDGE.fetch_add(1, Ordering::Relaxed),
            started: ::metrics::counter!(STARTED),
            requests,
            reported: ::metrics::counter!(REPORTS, "disposition" => "reported"),
            suppressed: ::metrics::counter!(REPORTS, "disposition" => "suppressed"),
            in_flight: ::metrics::gauge!(IN_FLIGHT),
            durations: Mutex::new(Registry::new(max_series, duration_histogram(overflow))),
            errors: Mutex::new(Registry::new(max_series, error_counter(overflow))),
        }
    }

    pub(crate) fn start(&self) {
        self.started.increment(1);
        self.in_flight.increment(1.0);
    }

    /// Counts the request's outcome and records its duration; a failure is counted in its
    /// error series too.
    pub(crate) fn finish(&self, finished: &Finished<'_>) {
        self.in_flight.decrement(1.0);
        self.requests[finished.outcome.index()].increment(1);
        let seconds = finished.started_at.elapsed().as_secs_f64();
        let code = finished.error_type.unwrap_or("");
        let labels = Labels {
            method: finished.method,
            route: finished.route.unwrap_or(UNMATCHED_ROUTE),
            status: finished.sent_status().unwrap_or(0),
            code,
        };
        with_handle(
            &DURATIONS,
            self.id,
            labels,
            &self.durations,
            duration_histogram,
            |h| h.record(seconds),
        );
        if finished.error_type.is_some() {
            let labels = Labels {
                method: "",
                status: finished.status,
                ..labels
            };
            with_handle(
                &ERROR_COUNTERS,
                self.id,
                labels,
                &self.errors,
                error_counter,
                |c| c.increment(1),
            );
        }
    }

    /// Counts a failure event as written (`true`) or held back by flood control.
    pub(crate) fn report(&self, written: bool) {
        if written {
            self.reported.increment(1);
        } else {
            self.suppressed.increment(1);
        }
    }
}

fn describe() {
    ::metrics::describe_counter!(STARTED, STARTED_HELP);
    ::metrics::describe_counter!(
        REQUESTS,
        "Requests that passed the fault layer, by outcome."
    );
    ::metrics::describe_counter!(
        ERRORS,
        "Failed requests by route template, error code and status."
    );
    ::metrics::describe_counter!(
        REPORTS,
        "Failure events, written or held back by flood control."
    );
    ::metrics::describe_gauge!(IN_FLIGHT, "Requests started and not yet finished.");
    ::metrics::describe_histogram!(
        HTTP_DURATION_METRIC,
        Unit::Seconds,
        "Duration of HTTP server requests."
    );
}

/// A status label: the number, or the overflow label for the overflow handles.
fn status_label(labels: &Labels<'_>) -> SharedString {
    if labels.route == OVERFLOW_LABEL && labels.status == 0 {
        SharedString::const_str(OVERFLOW_LABEL)
    } else {
        SharedString::from(labels.status.to_string())
    }
}

fn duration_histogram(labels: Labels<'_>) -> Histogram {
    let mut pairs = vec![
        ::metrics::Label::from_static_parts("http.request.method", labels.method),
        ::metrics::Label::new("http.route", labels.route.to_owned()),
    ];
    if labels.status != 0 || labels.route == OVERFLOW_LABEL {
        pairs.push(::metrics::Label::new(
            "http.response.status_code",
            status_label(&labels),
        ));
    }
    if !labels.code.is_empty() {
        pairs.push(::metrics::Label::from_static_parts(
            "error.type",
            labels.code,
        ));
    }
    ::metrics::histogram!(HTTP_DURATION_METRIC, pairs)
}

fn error_counter(labels: Labels<'_>) -> Counter {
    let pairs = vec![
        ::metrics::Label::new("route", labels.route.to_owned()),
        ::metrics::Label::from_static_parts("code", labels.code),
        ::metrics::Label::new("status", status_label(&labels)),
    ];
    ::metrics::counter!(ERRORS, pairs)
}
