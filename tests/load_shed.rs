//! Load shedding that limits the whole service, over real TCP with many parallel
//! connections. axum turns the router into a service per connection and builds the layers
//! `Router::layer` put on its handlers anew each time, so a limit that lives in the layer's
//! service, as `ConcurrencyLimitLayer`'s semaphore does, limits each connection on its own; a
//! limit that lives in the layer, as `GlobalConcurrencyLimitLayer`'s does, limits them all.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use common::Lab;
use faultline::FaultLayer;
use tokio::sync::{mpsc, watch};
use tower::limit::{ConcurrencyLimitLayer, GlobalConcurrencyLimitLayer};
use tower::load_shed::LoadShedLayer;
use tower::ServiceBuilder;

/// Requests the service runs at once.
const LIMIT: usize = 4;

/// Parallel clients, each on a connection of its own: several times the limit.
const CLIENTS: usize = 24;

/// How long the test waits for what it expects before it gives up.
const PATIENCE: Duration = Duration::from_secs(20);

/// Handlers that count themselves in and wait for the gate to open.
#[derive(Clone)]
struct Gate {
    entered: Arc<AtomicUsize>,
    open: watch::Receiver<bool>,
}

impl Gate {
    fn new() -> (Self, watch::Sender<bool>) {
        let (open_tx, open) = watch::channel(false);
        let gate = Self {
            entered: Arc::default(),
            open,
        };
        (gate, open_tx)
    }

    fn routes(&self) -> Router {
        let gate = self.clone();
        Router::new().route(
            "/work",
            get(move || {
                let mut gate = gate.clone();
                async move {
                    gate.entered.fetch_add(1, Ordering::SeqCst);
                    let _ = gate.open.wait_for(|open| *open).await;
                    "done"
                }
            }),
        )
    }

    async fn wait_until_entered(&self, n: usize) {
        let waited = tokio::time::timeout(PATIENCE, async {
            while self.entered.load(Ordering::SeqCst) < n {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
        waited.await.expect("handlers never entered");
    }
}

/// Starts `CLIENTS` requests to `/work`, each on a connection of its own; their statuses and
/// bodies arrive on the receiver as they finish.
fn start_clients(lab: &Lab) -> mpsc::Receiver<(u16, reqwest::header::HeaderMap, Vec<u8>)> {
    let (tx, rx) = mpsc::channel(CLIENTS);
    for _ in 0..CLIENTS {
        let (tx, url) = (tx.clone(), lab.url("/work"));
        tokio::spawn(async move {
            let response = reqwest::Client::new().get(url).send().await.unwrap();
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            let body = response.bytes().await.unwrap().to_vec();
            let _ = tx.send((status, headers, body)).await;
        });
    }
    rx
}

/// Where the concurrency limit lives.
enum Limit {
    /// `GlobalConcurrencyLimitLayer`: one semaphore in the layer, shared by every service.
    Global,
    /// `ConcurrencyLimitLayer`: a semaphore per service the layer builds.
    PerService,
}

/// A served gate behind faultline, load shedding and a limit, with `CLIENTS` requests sent.
struct Run {
    gate: Gate,
    open: watch::Sender<bool>,
    lab: Lab,
    answers: mpsc::Receiver<(u16, reqwest::header::HeaderMap, Vec<u8>)>,
}

async fn run(limit: Limit) -> Run {
    let (gate, open) = Gate::new();
    let (layer, ledger) = FaultLayer::pair();
    let shedding = ServiceBuilder::new()
        .layer(layer)
        .layer(LoadShedLayer::new());
    let routes = gate.routes();
    let app = match limit {
        Limit::Global => routes.layer(shedding.layer(GlobalConcurrencyLimitLayer::new(LIMIT))),
        Limit::PerService => routes.layer(shedding.layer(ConcurrencyLimitLayer::new(LIMIT))),
    };
    let lab = Lab::serve(app, ledger).await;
    let answers = start_clients(&lab);
    Run {
        gate,
        open,
        lab,
        answers,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_global_limit_inside_the_layer_sheds_exactly_the_excess_as_counted_503s() {
    let Run {
        gate,
        open,
        lab,
        mut answers,
    } = run(Limit::Global).await;

    // The handlers that got in hold every permit until the gate opens, so every other
    // request is shed, and the shed answers are the first to arrive.
    for _ in 0..CLIENTS - LIMIT {
        let answer = tokio::time::timeout(PATIENCE, answers.recv()).await;
        let (status, headers, body) = answer.expect("shed answers arrive").unwrap();
        let problem = common::problem(status, &headers, &body);
        assert_eq!(status, 503);
        assert_eq!(problem["code"], "overloaded");
    }
    gate.wait_until_entered(LIMIT).await;
    assert_eq!(gate.entered.load(Ordering::SeqCst), LIMIT);
    assert_eq!(lab.ledger.snapshot().in_flight, LIMIT as u64);

    open.send(true).unwrap();
    for _ in 0..LIMIT {
        let answer = tokio::time::timeout(PATIENCE, answers.recv()).await;
        let (status, _, body) = answer.expect("admitted answers arrive").unwrap();
        assert_eq!((status, body.as_slice()), (200, &b"done"[..]));
    }
    let s = lab.quiescent().await;
    assert_eq!(s.started, CLIENTS as u64);
    assert_eq!(
        (s.ok, s.service_error),
        (LIMIT as u64, (CLIENTS - LIMIT) as u64)
    );
    assert_eq!((s.finished(), s.in_flight), (CLIENTS as u64, 0), "{s:#?}");
    let overloaded = s.series.iter().find(|series| series.code == "overloaded");
    assert_eq!(
        overloaded.map(|series| (series.route.as_str(), series.status, series.count)),
        Some(("/work", 503, (CLIENTS - LIMIT) as u64))
    );
}

/// Why the README says "global": the per-service limit admits every connection's request.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_per_service_limit_under_router_layer_limits_each_connection_alone() {
    let Run {
        gate,
        open,
        lab,
        mut answers,
    } = run(Limit::PerService).await;
    // Every request gets in, though only LIMIT should have.
    gate.wait_until_entered(CLIENTS).await;
    open.send(true).unwrap();
    for _ in 0..CLIENTS {
        let answer = tokio::time::timeout(PATIENCE, answers.recv()).await;
        assert_eq!(answer.expect("answers arrive").unwrap().0, 200);
    }
    let s = lab.quiescent().await;
    assert_eq!((s.ok, s.service_error), (CLIENTS as u64, 0));
}
