//! A replay memory's counters reach `/metrics` through the ledger it is given to
//! (`Ledger::export`), no text written by hand: scraped over TCP after the memory, full,
//! forgot keys before their time.

use std::time::SystemTime;

use axum::routing::{get, post};
use axum::Router;
use faultline::webhooks::senders::GitHub;
use faultline::webhooks::{
    Intake, OnRepeat, ReplayMemory, SecretSet, Sender, Verified, REPLAYS_EVICTED, REPLAYS_EXPIRED,
};
use faultline::FaultLayer;

use crate::common::tools::promtool_check_metrics;
use crate::common::Lab;
use crate::sign::signed;

const SECRET: &str = "a secret for the replay metrics";
/// Deliveries sent to a memory of one key: all but the last are evicted by the next.
const DELIVERIES: u64 = 5;

async fn keep(_delivery: Verified<GitHub>) -> &'static str {
    "kept"
}

#[tokio::test]
async fn a_replay_memorys_evictions_are_on_metrics_through_the_ledger() {
    let memory = ReplayMemory::with_capacity(1);
    let intake = Intake::new(GitHub::new(SecretSet::one(SECRET).unwrap()).unwrap())
        .replays(memory.clone(), OnRepeat::Flag);
    let (layer, ledger) = FaultLayer::pair();
    ledger.export(memory.clone());
    let app = Router::new()
        .route("/hooks/github", post(keep))
        .with_state(intake)
        .route("/metrics", get(ledger.metrics_handler()))
        .layer(layer);
    let lab = Lab::serve(app, ledger).await;

    let client = reqwest::Client::new();
    for n in 0..DELIVERIES {
        let body = format!(r#"{{"n":{n}}}"#);
        let mut request = client.post(lab.url("/hooks/github"));
        for (name, value) in signed(Sender::GitHub, SECRET, body.as_bytes(), SystemTime::now()) {
            request = request.header(name, value);
        }
        let answer = request.body(body).send().await.unwrap();
        assert_eq!(answer.status(), 200);
    }
    let metrics = client.get(lab.url("/metrics")).send().await.unwrap();
    let text = metrics.text().await.unwrap();
    let evicted = format!("\n{REPLAYS_EVICTED} {}\n", DELIVERIES - 1);
    assert!(text.contains(&evicted), "{evicted:?} not in:\n{text}");
    assert!(text.contains(&format!("\n# TYPE {REPLAYS_EVICTED} counter\n")));
    assert!(text.contains(&format!("\n{REPLAYS_EXPIRED} 0\n")), "{text}");
    assert_eq!(memory.evicted(), DELIVERIES - 1);
    promtool_check_metrics(&text);
}
