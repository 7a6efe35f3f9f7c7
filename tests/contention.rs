//! More threads than cores on one layer: a known mix of outcomes from 16 OS threads, and from
//! parallel TCP clients on a multi-thread runtime, must come out exact in every count
//! (outcomes, series, groups, reported + suppressed); and past the series cap, label sets fold
//! into one overflow series without losing a count.

mod common;

use std::io;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::routing::get;
use axum::Router;
use common::threads::{hammer, send};
use common::Lab;
use faultline::ledger::{Outcome, UNMATCHED_ROUTE};
use faultline::{FaultLayer, Ledger};
use http::StatusCode;

/// More OS threads than the cores of the machines this runs on (2), all on one layer.
const THREADS: usize = 16;

/// One kind of request: where it goes, and how it must end.
#[derive(Clone, Copy, Debug)]
struct Kind {
    route: &'static str,
    outcome: Outcome,
    status: u16,
    /// The failure's code; unused for `ok`.
    code: &'static str,
}

impl Kind {
    /// The raw path of request `i` of client `c`: distinct ones for the unmatched route,
    /// which must all fold into its one series.
    fn path(&self, c: usize, i: usize) -> String {
        match self.route {
            UNMATCHED_ROUTE => format!("/missing/{c}/{i}"),
            route => route.to_owned(),
        }
    }
}

const OK: Kind = kind("/ok", Outcome::Ok, 200, "");
const MISSING: Kind = kind(UNMATCHED_ROUTE, Outcome::Rejected, 404, "not-found");
const HOOK: Kind = kind("/hook", Outcome::Handled, 422, "unsupported-event");
const PANIC: Kind = kind("/panic", Outcome::Panicked, 500, "panic");
const PENDING: Kind = kind("/pending", Outcome::Cancelled, 499, "cancelled");
const ABORTED: Kind = kind("/aborted", Outcome::Aborted, 200, "body-aborted");

const fn kind(route: &'static str, outcome: Outcome, status: u16, code: &'static str) -> Kind {
    Kind {
        route,
        outcome,
        status,
        code,
    }
}

async fn hook() -> Result<&'static str, faultline::Error> {
    Err(faultline::Error::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        HOOK.code,
        "event `issues` is not handled here",
    ))
}

async fn panics() -> &'static str {
    panic!("the handler gave up")
}

async fn pending() -> &'static str {
    std::future::pending().await
}

/// A head, a first chunk, then the body fails.
async fn aborted() -> Body {
    Body::from_stream(futures::stream::iter([
        Ok(Bytes::from_static(b"partial")),
        Err(io::Error::other("the disk went away")),
    ]))
}

/// A route per kind, behind `layer`.
fn app(layer: FaultLayer) -> Router {
    Router::new()
        .route(OK.route, get(|| async { "ok" }))
        .route(HOOK.route, get(hook))
        .route(PANIC.route, get(panics))
        .route(PENDING.route, get(pending))
        .route(ABORTED.route, get(aborted))
        .layer(layer)
}

/// What `send` must see for a request of `kind`.
fn answer(kind: &Kind) -> Option<(u16, bool)> {
    match kind.outcome {
        Outcome::Cancelled => None,
        outcome => Some((kind.status, outcome != Outcome::Aborted)),
    }
}

/// Sums what each thread or client sent of each kind.
fn sum<const N: usize>(parts: impl IntoIterator<Item = [u64; N]>) -> [u64; N] {
    parts.into_iter().fold([0; N], |mut total, part| {
        total.iter_mut().zip(part).for_each(|(t, n)| *t += n);
        total
    })
}

/// Checks, at quiescence, that `ledger` counted `sent[k]` requests of `kinds[k]` exactly: in
/// their outcomes, in one series and one group per failing kind, each report written or
/// suppressed.
fn assert_exact(ledger: &Ledger, kinds: &[Kind], sent: &[u64]) {
    let s = ledger.snapshot();
    let sent_as = |outcome: Outcome| -> u64 {
        let of_outcome = kinds.iter().zip(sent).filter(|(k, _)| k.outcome == outcome);
        of_outcome.map(|(_, n)| n).sum()
    };
    assert_eq!(s.started, sent.iter().sum::<u64>(), "{s:#?}");
    for &outcome in Outcome::ALL {
        assert_eq!(s.outcome(outcome), sent_as(outcome), "{outcome:?}: {s:#?}");
    }
    assert_eq!(s.in_flight, 0, "{s:#?}");
    assert_eq!(s.reported + s.suppressed, s.failures(), "{s:#?}");

    let failing: Vec<(&Kind, u64)> = kinds
        .iter()
        .zip(sent.iter().copied())
        .filter(|(k, _)| k.outcome != Outcome::Ok)
        .collect();
    // Each fingerprint's first failure is written: flood control holds back repeats only.
    assert!(s.reported >= failing.len() as u64, "{s:#?}");

    let mut expected: Vec<_> = failing
        .iter()
        .map(|(k, n)| (k.route.to_owned(), k.code.to_owned(), k.status, *n))
        .collect();
    let mut series: Vec<_> = s
        .series
        .iter()
        .map(|x| (x.route.clone(), x.code.clone(), x.status, x.count))
        .collect();
    expected.sort();
    series.sort();
    assert_eq!(series, expected);

    let mut expected: Vec<_> = failing
        .iter()
        .map(|(k, n)| {
            (
                k.outcome.as_str(),
                k.route.to_owned(),
                k.code.to_owned(),
                *n,
            )
        })
        .collect();
    let mut groups: Vec<_> = ledger
        .groups()
        .into_iter()
        .map(|g| (g.outcome.as_str(), g.route, g.code, g.count))
        .collect();
    expected.sort();
    groups.sort();
    assert_eq!(groups, expected);
}

const MIX: [Kind; 6] = [OK, MISSING, HOOK, PANIC, PENDING, ABORTED];
const REQUESTS_PER_THREAD: usize = 1_200;

#[test]
fn sixteen_threads_mixing_every_outcome_are_counted_exactly() {
    faultline::install_panic_hook();
    let (layer, ledger) = FaultLayer::pair();
    let app = app(layer);
    let sent = hammer(THREADS, |t| {
        let mut sent = [0_u64; MIX.len()];
        for i in 0..REQUESTS_PER_THREAD {
            let k = (t + i) % MIX.len();
            let path = MIX[k].path(t, i);
            assert_eq!(send(&app, &path), answer(&MIX[k]), "{path}");
            sent[k] += 1;
        }
        sent
    });
    let sent = sum(sent);
    assert_eq!(
        sent.iter().sum::<u64>(),
        (THREADS * REQUESTS_PER_THREAD) as u64
    );
    assert_exact(&ledger, &MIX, &sent);
}

/// One request over TCP, read to its end: the status, and whether the body was whole; `None`
/// if the connection ended before a head.
async fn fetch(client: &reqwest::Client, url: &str) -> Option<(u16, bool)> {
    let response = client.get(url).send().await.ok()?;
    let status = response.status().as_u16();
    Some((status, response.bytes().await.is_ok()))
}

/// Over TCP a client cannot drop a request at a chosen point, so no cancellations.
const TCP_MIX: [Kind; 5] = [OK, MISSING, HOOK, PANIC, ABORTED];
const CLIENTS: usize = 32;
const REQUESTS_PER_CLIENT: usize = 100;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_tcp_clients_on_four_workers_are_counted_exactly() {
    let (layer, ledger) = FaultLayer::pair();
    let lab = Arc::new(Lab::serve(app(layer), ledger).await);
    let barrier = Arc::new(tokio::sync::Barrier::new(CLIENTS));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let (lab, barrier) = (lab.clone(), barrier.clone());
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                barrier.wait().await;
                let mut sent = [0_u64; TCP_MIX.len()];
                for i in 0..REQUESTS_PER_CLIENT {
                    let k = (c + i) % TCP_MIX.len();
                    let path = TCP_MIX[k].path(c, i);
                    let answered = fetch(&client, &lab.url(&path)).await;
                    // hyper may hold a short head back with its body, and then drop both.
                    let headless_abort = answered.is_none() && TCP_MIX[k].route == ABORTED.route;
                    assert!(headless_abort || answered == answer(&TCP_MIX[k]), "{path}");
                    sent[k] += 1;
                }
                sent
            })
        })
        .collect();
    let sent = sum(futures::future::join_all(clients)
        .await
        .into_iter()
        .map(Result::unwrap));
    assert_eq!(
        sent.iter().sum::<u64>(),
        (CLIENTS * REQUESTS_PER_CLIENT) as u64
    );
    lab.quiescent().await;
    assert_exact(&lab.ledger, &TCP_MIX, &sent);
}

#[test]
fn past_the_series_cap_label_sets_fold_into_one_overflow_series() {
    const ROUTES: usize = 10;
    const MAX_SERIES: usize = 4;
    const PER_THREAD: usize = 300;
    let ledger = Ledger::builder().max_series(MAX_SERIES).build();
    let layer = FaultLayer::with_ledger(ledger.clone());
    let app = (0..ROUTES)
        .fold(Router::new(), |app, r| {
            app.route(&format!("/r{r}"), get(hook))
        })
        .layer(layer);
    let sent = hammer(THREADS, |t| {
        let mut sent = [0_u64; ROUTES];
        for i in 0..PER_THREAD {
            let r = (t + i) % ROUTES;
            assert_eq!(send(&app, &format!("/r{r}")), answer(&HOOK));
            sent[r] += 1;
        }
        sent
    });
    let sent = sum(sent);
    let total: u64 = sent.iter().sum();
    let s = ledger.snapshot();
    assert_eq!((s.started, s.handled), (total, total), "{s:#?}");
    assert_eq!((s.finished(), s.in_flight), (total, 0), "{s:#?}");
    assert_eq!(s.reported + s.suppressed, total, "{s:#?}");

    // At most the cap, plus the one overflow series; together they count every failure.
    let (overflow, kept): (Vec<_>, Vec<_>) = s.series.iter().partition(|x| x.is_overflow());
    assert!(
        !kept.is_empty() && kept.len() <= MAX_SERIES,
        "{:#?}",
        s.series
    );
    assert_eq!(overflow.len(), 1, "{:#?}", s.series);
    assert_eq!(s.series.iter().map(|x| x.count).sum::<u64>(), total);
    for series in kept {
        let r: usize = series.route.strip_prefix("/r").unwrap().parse().unwrap();
        assert_eq!((series.code.as_str(), series.status), (HOOK.code, 422));
        assert!(0 < series.count && series.count <= sent[r], "{series:?}");
    }

    // The groups are bounded separately (`limits::DEFAULT_MAX_GROUPS`): one per route, each exact.
    let mut groups: Vec<_> = ledger
        .groups()
        .into_iter()
        .map(|g| (g.route, g.count))
        .collect();
    let mut expected: Vec<_> = (0..ROUTES).map(|r| (format!("/r{r}"), sent[r])).collect();
    groups.sort();
    expected.sort();
    assert_eq!(groups, expected);
}
