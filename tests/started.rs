//! `faultline_requests_started_total` on `/metrics`, reconciled over TCP with the outcomes a
//! test's own clients saw: parallel clients, requests held in flight during a scrape, the
//! scrape counting itself, and the exposition checked by `promtool check metrics` (Debian
//! package `prometheus`).

mod common;

use std::sync::Arc;

use axum::routing::get;
use faultline::ledger::Outcome;
use faultline::FaultLayer;
use tokio::sync::Semaphore;

/// Clients sending at once, each on its own connections.
const CLIENTS: u64 = 16;
/// What each client sends: path, count, expected status, and the outcome that status means.
const MIX: [(&str, u64, u16, Outcome); 4] = [
    ("/ok", 12, 200, Outcome::Ok),
    ("/handled", 5, 422, Outcome::Handled),
    ("/missing", 4, 404, Outcome::Rejected),
    ("/panic", 3, 500, Outcome::Panicked),
];
/// Requests held inside the handler while `/metrics` is scraped: in flight for certain, until
/// the test lets them go.
const HELD: u64 = 4;

/// The value of the sample `series` (name and labels, as written) in `exposition`.
fn sample(exposition: &str, series: &str) -> u64 {
    exposition
        .lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no sample {series} in\n{exposition}"))
        .parse()
        .unwrap()
}

/// Where `outcome` stands in `Outcome::ALL`, the order of the tallies below.
fn slot(outcome: Outcome) -> usize {
    Outcome::ALL.iter().position(|&o| o == outcome).unwrap()
}

/// What a scrape says of the requests: started, each outcome (in `Outcome::ALL`'s order), in
/// flight.
fn counts(exposition: &str) -> (u64, Vec<u64>, u64) {
    let outcomes = Outcome::ALL
        .iter()
        .map(|o| {
            let series = format!("faultline_requests_total{{outcome=\"{}\"}}", o.as_str());
            sample(exposition, &series)
        })
        .collect();
    (
        sample(exposition, "faultline_requests_started_total"),
        outcomes,
        sample(exposition, "faultline_in_flight"),
    )
}

async fn explode() -> &'static str {
    panic!("on purpose")
}

async fn scrape(client: &reqwest::Client, lab: &common::Lab) -> String {
    let response = client.get(lab.url("/metrics")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    response.text().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn started_on_metrics_reconciles_with_the_outcomes_sent() {
    let (layer, ledger) = FaultLayer::pair();
    let gate = Arc::new(Semaphore::new(0));
    let held = gate.clone();
    let app = common::ok_and_handled("bad")
        .route("/panic", get(explode))
        .route(
            "/held",
            get(move || async move {
                held.acquire().await.unwrap().forget();
                "let go"
            }),
        )
        .route("/metrics", get(ledger.metrics_handler()))
        .layer(layer);
    let lab = Arc::new(common::Lab::serve(app, ledger).await);

    // The clients' own tally: one count per outcome, from the statuses they got.
    let clients = (0..CLIENTS).map(|_| {
        let lab = lab.clone();
        tokio::spawn(async move {
            let client = reqwest::Client::new();
            let mut tally = [0_u64; Outcome::ALL.len()];
            for (path, count, status, outcome) in MIX {
                for _ in 0..count {
                    let response = client.get(lab.url(path)).send().await.unwrap();
                    assert_eq!(response.status().as_u16(), status, "{path}");
                    response.bytes().await.unwrap();
                    tally[slot(outcome)] += 1;
                }
            }
            tally
        })
    });
    let mut sent = [0_u64; Outcome::ALL.len()];
    for tally in futures::future::join_all(clients).await {
        for (total, n) in sent.iter_mut().zip(tally.unwrap()) {
            *total += n;
        }
    }
    let sent_total: u64 = sent.iter().sum();
    assert_eq!(sent_total, CLIENTS * MIX.iter().map(|m| m.1).sum::<u64>());

    // Requests in flight during a scrape: started, and no outcome yet.
    let holders: Vec<_> = (0..HELD)
        .map(|_| {
            let url = lab.url("/held");
            tokio::spawn(async move { reqwest::get(url).await.unwrap().text().await.unwrap() })
        })
        .collect();
    lab.wait_for(|s| s.in_flight == HELD).await;
    let client = reqwest::Client::new();
    let exposition = scrape(&client, &lab).await;
    let (started, outcomes, in_flight) = counts(&exposition);
    // The scrape is in flight while it is answered.
    assert_eq!(started, sent_total + HELD + 1, "{exposition}");
    assert_eq!(outcomes, sent, "{exposition}");
    assert_eq!(in_flight, HELD + 1, "{exposition}");
    assert_eq!(started - outcomes.iter().sum::<u64>(), in_flight);
    common::tools::promtool_check_metrics(&exposition);

    gate.add_permits(HELD as usize);
    for holder in holders {
        assert_eq!(holder.await.unwrap(), "let go");
    }
    lab.quiescent().await;
    // Quiescent but for this scrape: the first scrape and the held requests counted ok.
    let exposition = scrape(&client, &lab).await;
    let (started, outcomes, in_flight) = counts(&exposition);
    assert_eq!(started, sent_total + HELD + 2, "{exposition}");
    let mut finished = sent;
    finished[slot(Outcome::Ok)] += HELD + 1;
    assert_eq!(outcomes, finished, "{exposition}");
    assert_eq!((started - outcomes.iter().sum::<u64>(), in_flight), (1, 1));

    // And once this scrape has finished too: every start has its outcome.
    let snapshot = lab.quiescent().await;
    assert_eq!(snapshot.started, sent_total + HELD + 2);
    assert_eq!(snapshot.started, snapshot.finished());
    assert_eq!(snapshot.ok, finished[slot(Outcome::Ok)] + 1);
}
