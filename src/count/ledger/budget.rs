//! The error budget per route, judged from inside: the error ratio and burn rate over a
//! window of the last hour, from a per-minute history of the per-route totals.
//!
//! The history is a ring of cumulative per-route totals, one sample per minute, taken from
//! the stripes by whoever first sees a new minute on the failure path or on a read. Nothing is
//! added to the success path; a failure adds one relaxed load of the last sampled minute
//! (its minute comes from the clock read that flood control and the error groups take for
//! it: [`minute_at`]), and once a minute one
//! failure takes the sample (the history's lock and the allocation of its vector; no other
//! request waits for it). A ticker thread would sample every minute, but one thread per
//! ledger for a figure that only a failure or a read can change did not earn its place. A minute with neither failures nor
//! reads has no sample: a window then starts at the newest sample at or before its start, so
//! it may cover more than asked, and [`RouteBudget::minutes`] says how much.

use std::collections::VecDeque;
use std::time::Duration;

use super::routes::RouteRequests;
use super::Ledger;
use crate::count::failures::Reporter;
use crate::outcome::Outcome;
use crate::panic::lock;
use crate::sync::{weakenable, Ordering};

/// Minutes of history kept: an hour, and the sample that starts it.
pub(super) const HISTORY_MINUTES: u64 = 60;

/// The per-minute samples of one ledger, oldest first.
#[derive(Debug)]
pub(super) struct History {
    samples: VecDeque<(u64, Vec<RouteRequests>)>,
}

/// One route's error budget over a window, from [`Ledger::budget`](crate::Ledger::budget).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RouteBudget {
    /// The route template, or `~unmatched` / `~overflow`.
    pub route: String,
    /// Requests counted in the window: every outcome but `rejected` and the handled answers
    /// with a 4xx status, the client's mistakes.
    pub requests: u64,
    /// The server's own failures in the window: handled answers with a 5xx status,
    /// `service_error`, `panicked`, `aborted`, and `cancelled`.
    pub failures: u64,
    /// `failures / requests`; 0 with no requests.
    pub ratio: f64,
    /// How fast the budget burns: `ratio / (1 − slo)`. At 1 the budget lasts exactly the
    /// SLO's period; the paging alert fires at 14.4 over an hour.
    pub burn_rate: f64,
    /// The minutes the figures cover: the window asked for, more when no sample fell on its
    /// start, less when the ledger is younger.
    pub minutes: u64,
}

/// The minute since the Unix epoch `nanos` after `reporter` started, on its clock: the wall
/// clock at its start plus the monotonic time since, the clock of the error groups' times.
/// A failure reads that clock once for its flood window, its group and its minute here (two
/// reads before, the wall clock's for the minute: `bench-smoke`'s `/handled`, BENCHMARKS.md,
/// "Fourth round"). A step of the wall clock after the start does not show in the minutes,
/// as it does not in the group times; the history is keyed by this clock alone.
#[cfg(not(loom))]
pub(super) fn minute_at(reporter: &Reporter, nanos: u64) -> u64 {
    const MS_PER_MINUTE: u64 = 60_000;
    reporter.unix_ms_at(nanos) / MS_PER_MINUTE
}

/// Under loom, a fixed minute. A model is explored many times and must take the same path
/// each time: with the clock, an exploration that crossed a minute took the sample and
/// the ones before it had not, and loom stopped on a model that was not deterministic. The
/// model of the sample (`loom_models.rs`) passes its new minute to `observe_minute` itself.
#[cfg(loom)]
pub(super) fn minute_at(_reporter: &Reporter, _nanos: u64) -> u64 {
    0
}

// What spends the budget, as the Prometheus rules judge it by default
// (`deploy/prometheus/generate.py`; `deploy/prometheus/check.sh` holds these to its
// settings): the server's own failures. A client's mistake is left out of the failures and
// the requests alike, so that neither a flood of bad input nor a sender with the wrong
// secret can page anyone, nor dilute the ratio.

/// Whether `rejected` (made without a fault: axum's rejections, 404 and 405 fallbacks, the
/// body limit) counts: no, these are the client's mistakes.
const COUNT_REJECTED: bool = false;
/// Whether a handled answer with a 4xx status counts: no, the handler judged the request the
/// client's mistake (a bad signature, a malformed payload).
const COUNT_HANDLED_4XX: bool = false;
/// Whether `cancelled` counts: yes. A webhook sender whose timeout ran out cannot be told
/// from a person closing a tab, and the first is the service being too slow.
const COUNT_CANCELLED: bool = true;

/// A route's (requests, failures) by the definition above.
fn counted(route: &RouteRequests) -> (u64, u64) {
    let (mut requests, mut failures) = (0, 0);
    for &outcome in Outcome::ALL {
        let n = route.outcome(outcome);
        // (requests, failures) of `outcome`; exhaustive, so a new outcome must be judged.
        let (counts, fails) = match outcome {
            Outcome::Ok => (n, 0),
            Outcome::Handled if COUNT_HANDLED_4XX => (n, n),
            Outcome::Handled => (route.handled_5xx(), route.handled_5xx()),
            Outcome::Rejected if COUNT_REJECTED => (n, n),
            Outcome::Cancelled if COUNT_CANCELLED => (n, n),
            Outcome::Rejected | Outcome::Cancelled => (0, 0),
            Outcome::ServiceError | Outcome::Panicked | Outcome::Aborted => (n, n),
        };
        requests += counts;
        failures += fails;
    }
    (requests, failures)
}

impl History {
    /// A history that starts at `minute` with nothing counted.
    pub(super) fn new(minute: u64) -> Self {
        Self {
            samples: VecDeque::from([(minute, Vec::new())]),
        }
    }

    /// The minute of the newest sample.
    pub(super) fn newest(&self) -> u64 {
        self.samples.back().map_or(0, |s| s.0)
    }

    /// Keeps `routes` as the sample of `minute`, dropping samples past the hour.
    pub(super) fn record(&mut self, minute: u64, routes: Vec<RouteRequests>) {
        if minute <= self.newest() {
            return;
        }
        self.samples.push_back((minute, routes));
        while self
            .samples
            .front()
            .is_some_and(|s| s.0 + HISTORY_MINUTES < minute)
        {
            self.samples.pop_front();
        }
    }

    /// The budget of every route over `window`, ending at `now` with the totals `current`;
    /// the fastest burning first.
    pub(super) fn budget(
        &self,
        current: &[RouteRequests],
        slo: f64,
        window: Duration,
        now: u64,
    ) -> Vec<RouteBudget> {
        let window = (window.as_secs() / 60).clamp(1, HISTORY_MINUTES);
        let start = now.saturating_sub(window);
        let (since, base) = self
            .samples
            .iter()
            .rev()
            .find(|s| s.0 <= start)
            .or(self.samples.front())
            .map_or((now, &[][..]), |(m, routes)| (*m, &routes[..]));
        let allowed = 1.0 - slo;
        let mut budgets: Vec<RouteBudget> = current
            .iter()
            .map(|route| {
                let (requests, failures) = counted(route);
                let (was_requests, was_failures) = base
                    .iter()
                    .find(|b| b.route == route.route)
                    .map_or((0, 0), counted);
                let requests = requests.saturating_sub(was_requests);
                let failures = failures.saturating_sub(was_failures);
                let ratio = if requests == 0 {
                    0.0
                } else {
                    failures as f64 / requests as f64
                };
                RouteBudget {
                    route: route.route.clone(),
                    requests,
                    failures,
                    ratio,
                    burn_rate: if allowed > 0.0 { ratio / allowed } else { 0.0 },
                    minutes: now.saturating_sub(since),
                }
            })
            .filter(|b| b.requests > 0)
            .collect();
        budgets.sort_by(|a, b| {
            b.burn_rate
                .total_cmp(&a.burn_rate)
                .then_with(|| a.route.cmp(&b.route))
        });
        budgets
    }
}

impl Ledger {
    /// The per-route totals, summed over the stripes.
    pub(super) fn route_totals(&self) -> Vec<RouteRequests> {
        self.inner
            .routes
            .collect(self.inner.stripes.iter().map(|s| &s.routes))
    }

    /// Samples the per-route totals into the history if `minute` has none yet. Of the
    /// threads that see a new minute, one takes the sample; the rest pay one relaxed load.
    pub(super) fn observe_minute(&self, minute: u64) {
        let last = self.inner.sampled.load(Ordering::Relaxed);
        if minute > last
            && self
                .inner
                .sampled
                .compare_exchange(
                    weakenable!(SampleComparesWrongMinute: last, weakened: minute),
                    minute,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok()
        {
            let routes = self.route_totals();
            lock(&self.inner.history).record(minute, routes);
        }
    }

    /// The error budget of every route with requests over the last `window` (a whole number
    /// of minutes, at most an hour): its error ratio, and how fast it burns the budget of an
    /// objective of `slo` (0.999 for 99.9%), the fastest first. The budget is spent by the
    /// server's own failures only, as the Prometheus rules in `deploy/prometheus` count by
    /// default: a handled answer with a 5xx status, `service_error`, `panicked`, `aborted` and
    /// `cancelled`. The client's mistakes, `rejected` and the handled answers with a 4xx
    /// status, are left out of the failures and the requests alike.
    ///
    /// ```
    /// use std::time::Duration;
    /// use axum::{body::Body, http::{Request, StatusCode}, routing::get, Router};
    /// use tower::ServiceExt;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let (layer, ledger) = faultline::FaultLayer::pair();
    /// let app = Router::new()
    ///     .route("/ok", get(|| async { "ok" }))
    ///     .route("/down", get(|| async {
    ///         Err::<(), _>(faultline::Error::new(StatusCode::BAD_GATEWAY, "upstream", "down"))
    ///     }))
    ///     .layer(layer);
    /// for path in ["/ok", "/ok", "/ok", "/down"] {
    ///     let request = Request::get(path).body(Body::empty()).unwrap();
    ///     let response = app.clone().oneshot(request).await.unwrap();
    ///     axum::body::to_bytes(response.into_body(), 1024).await.unwrap();
    /// }
    /// let budget = ledger.budget(0.999, Duration::from_secs(3600));
    /// assert_eq!(budget[0].route, "/down");
    /// assert_eq!((budget[0].requests, budget[0].failures), (1, 1));
    /// assert!((budget[0].burn_rate - 1000.0).abs() < 1e-6);
    /// assert_eq!((budget[1].route.as_str(), budget[1].ratio), ("/ok", 0.0));
    /// # }
    /// ```
    pub fn budget(&self, slo: f64, window: Duration) -> Vec<RouteBudget> {
        self.budget_at(slo, window, self.minute_now())
    }

    /// The current minute since the Unix epoch, on the reporter's clock ([`minute_at`]).
    pub(super) fn minute_now(&self) -> u64 {
        let reporter = &self.inner.reporter;
        minute_at(reporter, reporter.elapsed_nanos())
    }

    fn budget_at(&self, slo: f64, window: Duration, now: u64) -> Vec<RouteBudget> {
        self.observe_minute(now);
        let current = self.route_totals();
        lock(&self.inner.history).budget(&current, slo, window, now)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use http::StatusCode;

    use super::*;
    use crate::count::ledger::Ledger;
    use crate::request::{InternedRoute, RouteKey};

    /// The budget's minute, read through the reporter's clock, is the wall clock's minute
    /// since the Unix epoch (to within the one it may turn into between the reads).
    #[test]
    fn the_budgets_minute_is_the_wall_clocks() {
        use std::time::{SystemTime, UNIX_EPOCH};
        let wall = || {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_secs()
                / 60
        };
        let ledger = Ledger::new();
        let before = wall();
        let minute = ledger.minute_now();
        let after = wall();
        assert!(
            (before..=after + 1).contains(&minute),
            "{before} {minute} {after}"
        );
    }

    fn count(ledger: &Ledger, text: &'static str, outcome: Outcome, status: u16, n: u64) {
        let key = RouteKey::Interned(InternedRoute {
            text,
            index: 1 + text.len() as u16,
        });
        let status = StatusCode::from_u16(status).unwrap();
        for _ in 0..n {
            ledger.start();
            ledger.finish_answered(outcome, status, key);
        }
    }

    fn figures(budget: &[RouteBudget]) -> Vec<(&str, u64, u64, u64)> {
        budget
            .iter()
            .map(|b| (b.route.as_str(), b.requests, b.failures, b.minutes))
            .collect()
    }

    #[test]
    fn ratios_and_burn_rates_over_windows_from_the_per_minute_history() {
        let ledger = Ledger::new();
        let start = lock(&ledger.inner.history).newest();
        count(&ledger, "/a", Outcome::Ok, 200, 900);
        ledger.observe_minute(start + 1);
        count(&ledger, "/a", Outcome::Ok, 200, 90);
        count(&ledger, "/a", Outcome::Handled, 503, 10);
        // Client mistakes count for nothing, whether a handler or axum judged them so; a
        // client gone away does count.
        count(&ledger, "/a", Outcome::Handled, 401, 30);
        count(&ledger, "/a", Outcome::Handled, 400, 10);
        count(&ledger, "/a", Outcome::Rejected, 400, 50);
        count(&ledger, "/bb", Outcome::Ok, 200, 1);
        count(&ledger, "/bb", Outcome::Cancelled, 499, 1);

        let minute = ledger.budget_at(0.999, Duration::from_secs(60), start + 2);
        assert_eq!(figures(&minute), [("/bb", 2, 1, 1), ("/a", 100, 10, 1)]);
        assert!((minute[1].ratio - 0.1).abs() < 1e-12);
        assert!((minute[1].burn_rate - 100.0).abs() < 1e-9);
        assert!((minute[0].burn_rate - 500.0).abs() < 1e-9);

        let hour = ledger.budget_at(0.999, Duration::from_secs(3600), start + 2);
        assert_eq!(figures(&hour), [("/bb", 2, 1, 2), ("/a", 1000, 10, 2)]);
        assert!((hour[1].ratio - 0.01).abs() < 1e-12);
        assert!((hour[1].burn_rate - 10.0).abs() < 1e-9);
    }

    #[test]
    fn the_ring_keeps_an_hour_and_a_window_with_no_sample_at_its_start_says_so() {
        let mut history = History::new(0);
        let routes = |ok: u64, handled: u64| {
            vec![RouteRequests {
                route: "/a".to_owned(),
                outcomes: [ok, handled, 0, 0, 0, 0, 0],
                handled_4xx: 0,
            }]
        };
        for minute in 1..=90 {
            history.record(minute, routes(minute * 10, minute));
        }
        assert_eq!(history.samples.len(), 61);
        assert_eq!(history.samples.front().unwrap().0, 30);
        // Five minutes back from 91: the sample of minute 86.
        let five = history.budget(&routes(910, 91), 0.99, Duration::from_secs(300), 91);
        assert_eq!(figures(&five), [("/a", 55, 5, 5)]);
        // More than an hour asked: an hour given.
        let day = history.budget(&routes(910, 91), 0.99, Duration::from_secs(86_400), 91);
        assert_eq!(figures(&day), [("/a", 660, 60, 60)]);
        // Samples missing since minute 80: the window starts there.
        let mut sparse = History::new(0);
        sparse.record(80, routes(800, 80));
        let late = sparse.budget(&routes(910, 91), 0.99, Duration::from_secs(300), 91);
        assert_eq!(figures(&late), [("/a", 121, 11, 11)]);
    }
}
