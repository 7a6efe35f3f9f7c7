//! Scaling across cores, side by side: one `FaultLayer` driven from one thread and from two
//! sharing it, against the same trivial services bare and behind tower-http's
//! `CatchPanicLayer`, all in one run and printed as ratios; then the heap allocations per
//! request of every row, and the cost of one contended atomic add on this machine.
//!
//! ```text
//! cargo bench --bench ledger                        # the full run, about 2 minutes
//! cargo bench --bench ledger -- --quick             # every row with short durations (CI)
//! cargo bench --bench ledger -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! Every request is `service.clone().oneshot(request).now_or_never()`: the clone is what
//! axum's routing does per request, and nothing waits, so a row's time is its service's own.
//! A batch's time is the wall time of all its threads ÷ its requests. The rows take turns:
//! each cell (a row at a thread count) is measured in rounds, every round runs every cell
//! once, so the drift of a shared machine falls on all rows alike. A cell's figure is its
//! best round: other processes only ever add time, and a two-thread round is best when both
//! threads ran at once, contending. The median ÷ best of each cell says how noisy it was.
//! The tables are markdown, to paste into BENCHMARKS.md as they are.

/// Threads released together, shared with the tests.
#[path = "../../tests/common/threads.rs"]
#[allow(dead_code)]
mod threads;

mod allocations;
mod report;
mod settings;

use std::cell::Cell;
use std::convert::Infallible;
use std::future::{ready, Ready};
use std::hint::black_box;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::routing::get;
use axum::{Json, Router};
use faultline::ledger::Outcome;
use faultline::{FaultLayer, Ledger};
use futures::FutureExt;
use http::{Request, Response, StatusCode};
use tower::{Layer, Service, ServiceExt};
use tower_http::catch_panic::CatchPanicLayer;

use threads::hammer;

use crate::allocations::Allocations;
use crate::report::{machine, print_allocations, print_atomics, print_ratios, print_scaling};
use crate::settings::Settings;

/// A service that answers at once with an empty body of `status`.
#[derive(Clone, Copy)]
struct Answer(StatusCode);

impl Service<Request<Body>> for Answer {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Ready<Result<Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<Body>) -> Self::Future {
        let mut response = Response::new(Body::empty());
        *response.status_mut() = self.0;
        ready(Ok(response))
    }
}

/// A handler's error, answered by faultline.
async fn unsupported() -> Result<&'static str, faultline::Error> {
    Err(faultline::Error::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "unsupported-event",
        "event `issues` is not handled here",
    ))
}

/// The same error written by hand: a small JSON 422 built with serde_json.
async fn unsupported_by_hand() -> (StatusCode, Json<serde_json::Value>) {
    (
        StatusCode::UNPROCESSABLE_ENTITY,
        Json(serde_json::json!({
            "error": "event `issues` is not handled here",
            "code": "unsupported-event",
        })),
    )
}

/// One request. Every service here answers at once, and a failure is counted when its
/// answer is made, a success with an empty body when its head is: the response is dropped
/// unread.
fn one<S>(service: &S)
where
    S: Service<Request<Body>> + Clone,
    S::Error: std::fmt::Debug,
{
    let response = service
        .clone()
        .oneshot(Request::new(Body::empty()))
        .now_or_never()
        .expect("the services here are ready at once");
    drop(black_box(
        response.expect("the services here are infallible"),
    ));
}

/// One timed batch: its wall time, and the largest share of it that any of its threads spent
/// runnable but waiting for a CPU, where Linux says so. A two-thread batch whose threads
/// waited did not have two cores to itself.
#[derive(Clone, Copy)]
struct Timed {
    wall: Duration,
    waited: Option<f64>,
}

impl Timed {
    /// This batch as a round of `count` requests (or adds).
    fn per(self, count: u64) -> Round {
        Round {
            ns: self.wall.as_nanos() as f64 / count.max(1) as f64,
            waited: self.waited,
        }
    }
}

/// How long this thread has been runnable but waiting for a CPU, from Linux's schedstat.
fn run_queue_wait() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns = stat.split_whitespace().nth(1)?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// Runs `work(t)` on threads `0..threads` released together. The wall time is the longest
/// any thread took from the release to its end.
fn together(threads: usize, work: impl Fn(usize) + Sync) -> Timed {
    let timed = hammer(threads, |t| {
        let waiting = run_queue_wait();
        let start = Instant::now();
        work(t);
        let elapsed = start.elapsed();
        let waited = run_queue_wait().zip(waiting).map(|(now, then)| now - then);
        (
            elapsed,
            waited.map(|w| w.as_secs_f64() / elapsed.as_secs_f64()),
        )
    });
    let waited: Option<Vec<f64>> = timed.iter().map(|(_, waited)| *waited).collect();
    Timed {
        wall: timed
            .iter()
            .map(|(elapsed, _)| *elapsed)
            .max()
            .unwrap_or_default(),
        waited: waited.map(|shares| shares.into_iter().fold(0.0, f64::max)),
    }
}

/// The wall time of about `iters` requests split over `threads` threads, and how many
/// requests that was.
fn spread<S>(service: &S, threads: usize, iters: u64) -> (Timed, u64)
where
    S: Service<Request<Body>> + Clone + Sync,
    S::Error: std::fmt::Debug,
{
    let per_thread = iters.div_ceil(threads as u64);
    let time = together(threads, |_| (0..per_thread).for_each(|_| one(service)));
    (time, per_thread * threads as u64)
}

/// One row of the table: a service, and for faultline rows the ledger that must account for
/// every request sent to it.
trait Row {
    fn name(&self) -> &str;
    /// Sends about `iters` requests from `threads` threads; their timing and their count.
    fn run(&self, threads: usize, iters: u64) -> (Timed, u64);
    /// Sends `requests` requests from this thread with the allocation counter on.
    fn count_allocations(&self, requests: u64) -> Allocations;
}

struct Driven<S> {
    name: String,
    service: S,
    tally: Option<Tally>,
}

/// A faultline row's ledger, what each of its requests must end as, and how many were sent.
struct Tally {
    ledger: Ledger,
    outcome: Outcome,
    sent: Cell<u64>,
}

impl Tally {
    /// A `FaultLayer` with a fresh ledger, and its tally, which expects `outcome` of every
    /// request.
    fn layer(outcome: Outcome) -> (FaultLayer, Option<Self>) {
        Self::of(FaultLayer::new(), outcome)
    }

    /// `layer`, and its tally, which expects `outcome` of every request.
    fn of(layer: FaultLayer, outcome: Outcome) -> (FaultLayer, Option<Self>) {
        let tally = Self {
            ledger: layer.ledger(),
            outcome,
            sent: Cell::new(0),
        };
        (layer, Some(tally))
    }

    /// Adds `sent` requests and checks that the ledger accounts for every one exactly.
    fn account(&self, sent: u64, row: &str) {
        self.sent.set(self.sent.get() + sent);
        let sent = self.sent.get();
        let s = self.ledger.snapshot();
        assert_eq!((s.started, s.outcome(self.outcome)), (sent, sent), "{row}");
        // No other outcome, and nothing in flight.
        assert_eq!((s.finished(), s.in_flight), (sent, 0), "{row}: {s:#?}");
        assert_eq!(s.reported + s.suppressed, s.failures(), "{row}: {s:#?}");
        assert_eq!(s.series.iter().map(|s| s.count).sum::<u64>(), s.failures());
        if self.outcome != Outcome::Ok {
            // One fingerprint from every thread: one group holds every failure.
            let counts: Vec<u64> = self.ledger.groups().iter().map(|g| g.count).collect();
            assert_eq!(counts, [sent], "{row}");
        }
    }
}

impl<S> Row for Driven<S>
where
    S: Service<Request<Body>> + Clone + Sync,
    S::Error: std::fmt::Debug,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn run(&self, threads: usize, iters: u64) -> (Timed, u64) {
        let (time, sent) = spread(&self.service, threads, iters);
        if let Some(tally) = &self.tally {
            tally.account(sent, &self.name);
        }
        (time, sent)
    }

    fn count_allocations(&self, requests: u64) -> Allocations {
        let counted = Allocations::of(|| (0..requests).for_each(|_| one(&self.service)));
        if let Some(tally) = &self.tally {
            tally.account(requests, &self.name);
        }
        counted
    }
}

fn row<S>(name: String, service: S, tally: Option<Tally>) -> Box<dyn Row>
where
    S: Service<Request<Body>> + Clone + Sync + 'static,
    S::Error: std::fmt::Debug,
{
    Box::new(Driven {
        name,
        service,
        tally,
    })
}

/// The rows of one family, in the order of [`BARE`], [`CATCH_PANIC`], [`FAULTLINE`].
type Family = (&'static str, [Box<dyn Row>; 3]);
const BARE: usize = 0;
const CATCH_PANIC: usize = 1;
const FAULTLINE: usize = 2;

fn families() -> Vec<Family> {
    let answer = |status: StatusCode, outcome: Outcome, label: &str| {
        let answer = Answer(status);
        let name = format!("`Answer({})`", status.as_u16());
        let (layer, tally) = Tally::layer(outcome);
        [
            row(format!("bare {name}"), answer, None),
            row(
                format!("`CatchPanicLayer` → {name}"),
                CatchPanicLayer::new().layer(answer),
                None,
            ),
            row(
                format!("`FaultLayer` → {name} ({label})"),
                layer.layer(answer),
                tally,
            ),
        ]
    };
    let by_hand = || Router::new().route("/", get(unsupported_by_hand));
    let (layer, tally) = Tally::layer(Outcome::Handled);
    let handled = [
        row("`Router` → hand-written 422".into(), by_hand(), None),
        row(
            "`CatchPanicLayer` → `Router` → hand-written 422".into(),
            by_hand().layer(CatchPanicLayer::new()),
            None,
        ),
        row(
            "`FaultLayer` → `Router` → handler `Err` (handled)".into(),
            Router::new().route("/", get(unsupported)).layer(layer),
            tally,
        ),
    ];
    vec![
        ("ok", answer(StatusCode::OK, Outcome::Ok, "ok")),
        (
            "rejected 404",
            answer(StatusCode::NOT_FOUND, Outcome::Rejected, "rejected"),
        ),
        ("handled 422", handled),
    ]
}

/// With the `metrics` feature: the `ok` and `rejected 404` faultline rows again, recording
/// into the `metrics` facade too, through metrics-exporter-prometheus's recorder (what a
/// service exporting to Prometheus installs), so the bridge's cost reads off beside them.
#[cfg(feature = "metrics")]
fn facade_rows() -> Vec<Box<dyn Row>> {
    use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
    let recorder = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full(faultline::metrics::HTTP_DURATION_METRIC.to_owned()),
            faultline::metrics::HTTP_DURATION_BUCKETS,
        )
        .expect("the buckets are not empty")
        .build_recorder();
    metrics::set_global_recorder(recorder).expect("the bench installs the only recorder");
    [
        (StatusCode::OK, Outcome::Ok),
        (StatusCode::NOT_FOUND, Outcome::Rejected),
    ]
    .into_iter()
    .map(|(status, outcome)| {
        let (layer, tally) = Tally::of(FaultLayer::new().record_metrics(), outcome);
        let name = format!(
            "`FaultLayer` + metrics facade → `Answer({})` ({})",
            status.as_u16(),
            outcome.as_str()
        );
        row(name, layer.layer(Answer(status)), tally)
    })
    .collect()
}

#[cfg(not(feature = "metrics"))]
fn facade_rows() -> Vec<Box<dyn Row>> {
    Vec::new()
}

const THREADS: [usize; 2] = [1, 2];

/// Nanoseconds per request (or per add) of one round, and the share of it spent waiting.
#[derive(Clone, Copy)]
struct Round {
    ns: f64,
    waited: Option<f64>,
}

/// A cell's figures: its best round, how long its threads waited for a CPU in that round,
/// and its median round.
#[derive(Clone, Copy, Default)]
struct Figure {
    best: f64,
    waited: Option<f64>,
    median: f64,
}

impl Figure {
    fn of(mut rounds: Vec<Round>) -> Self {
        rounds.sort_by(|a, b| a.ns.total_cmp(&b.ns));
        Self {
            best: rounds[0].ns,
            waited: rounds[0].waited,
            median: rounds[rounds.len() / 2].ns,
        }
    }

    /// The share of the best round its threads spent waiting for a CPU, as a percentage.
    fn waited(&self) -> String {
        self.waited
            .map_or("?".to_owned(), |share| format!("{:.0}%", share * 100.0))
    }

    /// How much worse the typical round was than the best: the noise of the cell.
    fn noise(&self) -> f64 {
        self.median / self.best
    }
}

/// Warms a cell up for `warm_up`, and returns its nanoseconds per request then.
fn warm(row: &dyn Row, threads: usize, warm_up: Duration) -> f64 {
    let start = Instant::now();
    let mut iters = 1_000;
    loop {
        let (timed, sent) = row.run(threads, iters);
        let ns = timed.per(sent).ns;
        let left = warm_up.saturating_sub(start.elapsed());
        if left.is_zero() {
            return ns;
        }
        iters = (iters * 2)
            .min((left.as_nanos() as f64 / ns) as u64)
            .max(1_000);
    }
}

/// Every cell, warmed up, then measured in rounds in which every cell takes its turn.
fn measure(rows: &[&dyn Row], settings: &Settings) -> Vec<[Figure; 2]> {
    let cells: Vec<(usize, usize)> = (0..rows.len())
        .flat_map(|r| (0..THREADS.len()).map(move |t| (r, t)))
        .collect();
    let per_round = settings.measurement.as_nanos() as f64 / settings.rounds as f64;
    let iters: Vec<u64> = cells
        .iter()
        .map(|&(r, t)| {
            let ns = warm(rows[r], THREADS[t], settings.warm_up);
            ((per_round / ns) as u64).max(1_000)
        })
        .collect();
    let mut rounds = vec![Vec::new(); cells.len()];
    for round in 0..settings.rounds {
        for k in 0..cells.len() {
            // Each round starts one cell later, so no cell always follows the same one.
            let c = (k + round) % cells.len();
            let (r, t) = cells[c];
            let (timed, sent) = rows[r].run(THREADS[t], iters[c]);
            rounds[c].push(timed.per(sent));
        }
    }
    let mut figures = vec![[Figure::default(); 2]; rows.len()];
    for (&(r, t), rounds) in cells.iter().zip(rounds) {
        figures[r][t] = Figure::of(rounds);
    }
    figures
}

/// Sends `requests` requests to row `index` from one thread, untimed, and names the row on
/// stdout; exits with 3 past the last row. Run twice under callgrind with two counts, the
/// difference of the totals over the difference of the counts is the row's instructions per
/// request, start-up and the ledger checks cancelled out.
fn grind(rows: &[&dyn Row], index: usize, requests: u64) {
    let Some(row) = rows.get(index) else {
        eprintln!("no row {index}: there are {}", rows.len());
        std::process::exit(3);
    };
    row.run(1, requests);
    println!("{}", row.name());
}

fn main() {
    let settings = match Settings::from_args(std::env::args().skip(1)) {
        Ok(settings) => settings,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    if let Some(filter) = &settings.filtered_out {
        println!("ledger: filtered out by `{filter}`");
        return;
    }
    let start = Instant::now();
    let families = families();
    let facade = facade_rows();
    let rows: Vec<&dyn Row> = families
        .iter()
        .flat_map(|(_, rows)| rows.iter().map(|row| &**row))
        .chain(facade.iter().map(|row| &**row))
        .collect();
    if let Some((index, requests)) = settings.grind {
        grind(&rows, index, requests);
        return;
    }
    println!(
        "## Scaling across cores ({} run: per cell {:?} warm-up, {:?} measured in {} rounds; {})\n",
        settings.mode,
        settings.warm_up,
        settings.measurement,
        settings.rounds,
        machine()
    );
    println!(
        "No tracing subscriber is installed: failure events are disabled, as behind a log \
         filter; flood control still judges and counts each one. Every faultline row's \
         ledger is checked after every batch: every request started and counted under its \
         outcome, no other outcome, nothing in flight, reported + suppressed == failures, \
         one group."
    );
    let figures = measure(&rows, &settings);
    print_scaling(&rows, &figures, settings.rounds);
    print_ratios(&families, &figures);
    print_allocations(&rows, settings.counted_requests);
    print_atomics(&settings);
    println!("\nTook {:.0} s.", start.elapsed().as_secs_f64());
}
