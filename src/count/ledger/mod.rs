//! The ledger: exact counts of every request's outcome, and a bounded table of failure series.
//!
//! Counters are striped ([`counters`]): each thread adds to its own stripe, and a read sums
//! them, so the success path writes no cache line that other cores write. Failures are
//! tallied under the thread's own stripe lock too: its own small series table, its flood
//! control cache and its pending error groups, handed to the shared tables when they fill
//! up or when someone reads. Past the series cap, new label sets fold into one overflow
//! series so that no input can grow the table.

mod budget;
mod builder;
mod counters;
mod exported;
mod memo;
mod quiescent;
mod routes;
mod series;
mod snapshot;
mod unread;

use std::future::Future;
use std::sync::Arc;

use crossbeam_utils::CachePadded;
use http::StatusCode;

use self::budget::History;
pub use self::budget::RouteBudget;
pub use self::builder::LedgerBuilder;
use self::counters::{Counts, Totals};
use self::exported::Exported;
pub use self::exported::{Counter, ExportCounters};
use self::memo::LastFailure;
use self::quiescent::{Quiescent, Waiters};
pub use self::routes::RouteRequests;
use self::routes::{Column, RouteCounts, RouteSlots};
pub use self::series::Series;
use self::series::SeriesTable;
pub use self::snapshot::Snapshot;
pub use self::unread::UnreadBodies;
use self::unread::UnreadCounters;
use crate::config::LedgerLimits;
use crate::count::failures::{Group, Reporter, ThreadReports, Verdict};
use crate::outcome::Outcome;
use crate::panic::lock;
use crate::request::{RequestMeta, RouteKey};
use crate::stripe::{self, ThreadStripe};
use crate::summary::Summary;
use crate::sync::{AtomicU64, Mutex};

/// The label sets one thread counts in its own series table before handing them over.
const SERIES_PER_THREAD: usize = 64;

/// A failure's event that flood control lets through, for the caller to write.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ToReport {
    /// The failure's fingerprint, which the event carries.
    pub(crate) fingerprint: u64,
    /// The failures of that fingerprint held back since its last event.
    pub(crate) suppressed_since: u64,
}

/// A handle on the counts of one [`FaultLayer`](crate::FaultLayer); cheap to clone.
///
/// - Made with [`new`](Self::new), or with other bounds through [`builder`](Self::builder).
/// - Read: the counts at one moment ([`snapshot`](Self::snapshot)), the error groups
///   ([`groups`](Self::groups)), the error budget per route ([`budget`](Self::budget)), and
///   the moment nothing is in flight ([`quiescent`](Self::quiescent)).
/// - Served over HTTP, each as an axum handler: the Prometheus exposition
///   ([`metrics_handler`](Self::metrics_handler)), the error groups as JSON
///   ([`errors_handler`](Self::errors_handler)) and as a page
///   ([`errors_page_handler`](Self::errors_page_handler), and the page alone,
///   [`render_errors_page`](Self::render_errors_page)).
///
/// ```
/// let (layer, ledger) = faultline::FaultLayer::pair();
/// # let _ = layer;
/// let snapshot = ledger.snapshot();
/// assert_eq!((snapshot.started, snapshot.finished(), snapshot.in_flight), (0, 0, 0));
/// assert!(snapshot.is_consistent());
/// ```
// Each group of methods lives beside what it reads: making, counting and reading in this
// file; the error budget in `budget.rs`; the handlers in `src/export/handlers.rs`, above the
// ledger in the module order, since they render what it counts.
#[derive(Clone, Debug)]
pub struct Ledger {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    stripes: Box<[CachePadded<Stripe>]>,
    series: Mutex<SeriesTable>,
    routes: RouteSlots,
    /// The minute of the newest sample in `history`.
    sampled: AtomicU64,
    history: Mutex<History>,
    reporter: Reporter,
    waiters: Waiters,
    unread: UnreadCounters,
    exported: Exported,
}

/// One thread's share of the ledger.
#[derive(Debug)]
struct Stripe {
    counts: Counts,
    routes: RouteCounts,
    failures: Mutex<Failures>,
}

/// What a thread tallies of its failures between hand-overs.
#[derive(Debug)]
struct Failures {
    series: SeriesTable,
    reports: ThreadReports,
    last: LastFailure,
}

impl Default for Ledger {
    fn default() -> Self {
        Self::new()
    }
}

impl Ledger {
    /// An empty ledger with the default bounds; [`Ledger::builder`] sets others.
    pub fn new() -> Self {
        Self::with_limits(LedgerLimits::default())
    }

    /// Sets the bounds of a new ledger: the series cap, flood control, the fingerprint and
    /// group caps.
    pub fn builder() -> LedgerBuilder {
        LedgerBuilder::default()
    }

    pub(crate) fn with_limits(limits: LedgerLimits) -> Self {
        let routes = RouteSlots::new(limits.max_routes);
        let reporter = Reporter::new(limits.reports);
        let minute = budget::minute_at(&reporter, 0);
        let stripe = || {
            CachePadded::new(Stripe {
                counts: Counts::default(),
                routes: RouteCounts::new(routes.slots()),
                failures: Mutex::new(Failures {
                    series: SeriesTable::new(SERIES_PER_THREAD),
                    reports: ThreadReports::default(),
                    last: LastFailure::default(),
                }),
            })
        };
        Self {
            inner: Arc::new(Inner {
                stripes: (0..stripe::count()).map(|_| stripe()).collect(),
                series: Mutex::new(SeriesTable::new(limits.max_series)),
                routes,
                sampled: AtomicU64::new(minute),
                history: Mutex::new(History::new(minute)),
                reporter,
                waiters: Waiters::default(),
                unread: UnreadCounters::default(),
                exported: Exported::default(),
            }),
        }
    }

    /// The calling thread's stripe, and how it writes there.
    fn stripe(&self) -> (&Stripe, ThreadStripe) {
        let here = stripe::this_thread();
        (&self.inner.stripes[here.index], here)
    }

    /// What tells this ledger from every other one alive: the address of its shared state.
    /// Never 0, and its three low bits are 0 (the state's alignment, checked when this
    /// compiles): the thread's note of a counted request keeps three flags there.
    pub(crate) fn id(&self) -> usize {
        const _: () = assert!(std::mem::align_of::<Inner>() >= 8);
        Arc::as_ptr(&self.inner) as usize
    }

    pub(crate) fn start(&self) {
        let (stripe, here) = self.stripe();
        stripe.counts.start(here);
    }

    /// Counts a request that ended in `outcome`; a `Handled` one as the server's failure.
    pub(crate) fn finish(&self, outcome: Outcome, route: RouteKey) {
        self.finish_in(outcome, Column::of(outcome), route);
    }

    /// Counts a request answered with `status`: a handled 4xx counts as the client's.
    // Inlined into the guard's settling of a failure, as `fail` is (BENCHMARKS.md, "Sixth
    // round").
    #[inline]
    pub(crate) fn finish_answered(&self, outcome: Outcome, status: StatusCode, route: RouteKey) {
        self.finish_in(outcome, Column::answered(outcome, status), route);
    }

    // Inlined so that the ok path's column is a constant again: the same code as before the
    // handled answers were told apart (ledger-grind: 1,797 instructions before and after).
    #[inline]
    fn finish_in(&self, outcome: Outcome, column: Column, route: RouteKey) {
        let (stripe, here) = self.stripe();
        stripe.counts.finish(here, outcome);
        stripe
            .routes
            .add(here, self.inner.routes.slot(route), column);
        self.inner.waiters.finished();
    }

    /// Counts a request body an answer left unread: read to its end and the connection
    /// `kept`, or given up on with `connection: close`; `bytes` were read either way.
    pub(crate) fn unread_body(&self, kept: bool, bytes: u64) {
        self.inner.unread.count(kept, bytes);
    }

    /// Requests started and not yet finished, summed over the stripes.
    fn in_flight(&self) -> u64 {
        Totals::sum(self.inner.stripes.iter().map(|s| &s.counts)).in_flight()
    }

    /// Resolves as soon as no request is in flight: every request that started has its
    /// outcome counted, bodies included. For graceful shutdown (stop accepting, then wait
    /// for the ledger to settle before the last scrape or report) and for tests that check
    /// exact totals. It needs no runtime and no timer: the request that finishes last wakes
    /// it; while nobody waits, requests pay one memory fence for it.
    ///
    /// It resolves the first time nothing is in flight, which under a steady stream of new
    /// requests may be never: stop the traffic first, or wrap it in a timeout.
    ///
    /// ```
    /// use axum::{body::Body, http::Request, routing::get, Router};
    /// use tower::ServiceExt;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let (layer, ledger) = faultline::FaultLayer::pair();
    /// let app = Router::new().route("/", get(|| async { "ok" })).layer(layer);
    ///
    /// let response = app.oneshot(Request::get("/").body(Body::empty()).unwrap()).await.unwrap();
    /// // The head is out, the body is not: the request is still in flight.
    /// assert_eq!(ledger.snapshot().in_flight, 1);
    /// tokio::spawn(axum::body::to_bytes(Body::new(response.into_body()), 1024));
    ///
    /// ledger.quiescent().await;
    /// let snapshot = ledger.snapshot();
    /// assert_eq!((snapshot.ok, snapshot.in_flight), (1, 0));
    /// # }
    /// ```
    pub fn quiescent(&self) -> impl Future<Output = ()> + Send + Sync + Unpin + 'static {
        Quiescent {
            ledger: self.clone(),
        }
    }

    /// The cap of the failure series, which the metrics bridges share.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn max_series(&self) -> usize {
        lock(&self.inner.series).max
    }

    /// Counts a failure in its series and its group, and decides with flood control whether
    /// its event is written: the event to write, counted as reported, or `None`, counted as
    /// suppressed. The caller writes the event (it runs the subscriber's code, with no lock of
    /// the ledger held), then counts the request's end with [`finish`](Self::finish).
    // Inlined into the guard's settling of a failure, its one caller outside the tests: with
    // `finish_answered` and the id's header value, a failure's answer pays three calls fewer
    // (ledger-grind's handled row 11,319 → 11,245, BENCHMARKS.md, "Sixth round").
    #[inline]
    pub(crate) fn fail(&self, summary: &Summary, meta: &RequestMeta) -> Option<ToReport> {
        let reporter = &self.inner.reporter;
        let nanos = reporter.elapsed_nanos();
        self.observe_minute(budget::minute_at(reporter, nanos));
        let (stripe, here) = self.stripe();
        let route = meta.route();
        let (fingerprint, verdict) = {
            let mut failures = lock(&stripe.failures);
            let Failures {
                series,
                reports,
                last,
            } = &mut *failures;
            let fingerprint = last.count(series, &self.inner.series, summary, route);
            #[cfg(all(test, not(loom)))]
            assert!(
                !TALLY_PANICS.with(|armed| armed.replace(false)),
                "the tally of this failure panics, as a test asked"
            );
            let verdict = reporter.judge(reports, fingerprint, summary, route, nanos);
            (fingerprint, verdict)
        };
        match verdict {
            Verdict::Suppress => {
                stripe.counts.suppressed(here);
                None
            }
            Verdict::Write { suppressed_since } => {
                stripe.counts.reported(here);
                Some(ToReport {
                    fingerprint,
                    suppressed_since,
                })
            }
        }
    }

    /// Counts as suppressed a failure whose tally by [`fail`](Self::fail) panicked: that
    /// tally stops before it counts the failure reported or suppressed, and its event is not
    /// written, so every failure still counts one or the other.
    pub(crate) fn unjudged(&self) {
        let (stripe, here) = self.stripe();
        stripe.counts.suppressed(here);
    }

    /// Every thread's tallies into the shared tables, so that a read sees them all.
    fn hand_over(&self) {
        for stripe in self.inner.stripes.iter() {
            let mut failures = lock(&stripe.failures);
            failures
                .series
                .hand_over(&mut lock(&self.inner.series), false);
            self.inner.reporter.hand_over(&mut failures.reports);
        }
    }

    /// The error groups, the most frequent first: a bounded local record of what failed.
    /// Counts, first and last seen are exact at quiescence; the latest message is one of the
    /// latest (each thread keeps its own latest until a read gathers them).
    pub fn groups(&self) -> Vec<Group> {
        self.hand_over();
        self.inner.reporter.groups()
    }

    /// Carries `source`'s counters in every snapshot from now on ([`Snapshot::counters`]),
    /// and so on `/metrics` beside the ledger's own; a name that several sources give is
    /// exported once, summed.
    ///
    /// ```
    /// use faultline::ledger::{Counter, ExportCounters};
    ///
    /// struct Cache;
    /// impl ExportCounters for Cache {
    ///     fn counters(&self) -> Vec<Counter> {
    ///         vec![Counter::new("cache_evicted_total", "Entries evicted before their time.", 3)]
    ///     }
    /// }
    ///
    /// let (layer, ledger) = faultline::FaultLayer::pair();
    /// # let _ = layer;
    /// ledger.export(Cache);
    /// assert!(ledger.snapshot().to_prometheus().contains("\ncache_evicted_total 3\n"));
    /// ```
    pub fn export(&self, source: impl ExportCounters) {
        self.inner.exported.add(Arc::new(source));
    }

    /// The counts as plain data. Each stripe's counters are exact; while requests are in
    /// flight they are read one after another, finishes before starts, so every finish read
    /// has its start read ([`Snapshot::is_consistent`]) and the totals are exact at quiescence.
    pub fn snapshot(&self) -> Snapshot {
        self.hand_over();
        let totals = Totals::sum(self.inner.stripes.iter().map(|s| &s.counts));
        let outcome = |o: Outcome| totals.outcome(o);
        let series = lock(&self.inner.series).to_vec();
        let routes = self.route_totals();
        Snapshot {
            started: totals.started,
            in_flight: totals.in_flight(),
            ok: outcome(Outcome::Ok),
            handled: outcome(Outcome::Handled),
            rejected: outcome(Outcome::Rejected),
            service_error: outcome(Outcome::ServiceError),
            panicked: outcome(Outcome::Panicked),
            aborted: outcome(Outcome::Aborted),
            cancelled: outcome(Outcome::Cancelled),
            reported: totals.reported,
            suppressed: totals.suppressed,
            series,
            routes,
            unread_bodies: self.inner.unread.read(),
            counters: self.inner.exported.read(),
        }
    }
}

#[cfg(all(test, not(loom)))]
thread_local! {
    /// Set by a test to make this thread's next tally of a failure ([`Ledger::fail`]) panic
    /// halfway, with its stripe's lock held. The tally runs none of the application's code,
    /// so no request can make it panic; yet the guard's count must survive one (a bug, an
    /// allocation that panics), and only a test that forces it shows that. Compiled into the
    /// unit tests alone: the library as built for anyone else has no such check.
    pub(crate) static TALLY_PANICS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(all(test, loom))]
mod loom_models;
#[cfg(all(test, not(loom)))]
mod tests;
