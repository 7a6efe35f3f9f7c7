//! Exactly once from the sender to the store, over real TCP: a push replayed under fresh
//! delivery ids is stored once, its replays answered 200 `replayed` and counted on
//! `/metrics`, whether the copies come one after another, all at once, to two nodes of a
//! PostgreSQL fleet at once, or during an outage (spooled twice, drained once); and a
//! delivery the service could not store (answered 5xx) takes no key, so its redelivery is
//! stored. The key is what the sender signed, taken in the delivery's own transaction.

mod common;

use common::*;
use serde_json::json;
use webhook_ingest::provider::Provider;
use webhook_ingest::store::Store;

/// The `/metrics` series of replays refused for GitHub.
const GITHUB_REPLAYS: &str = "webhook_ingest_replays_refused_total{provider=\"github\"}";

/// Sends `body` to the GitHub inbox under the delivery id `id`: the status and the answer's
/// `status` (or its problem's code).
async fn push(service: &Service, fixture: &Fixture, id: &str, body: &[u8]) -> (u16, String) {
    let answer = service
        .send(delivery(
            service,
            fixture,
            Provider::Github,
            "push",
            id,
            body,
        ))
        .await;
    let said = answer.body["status"]
        .as_str()
        .or(answer.body["code"].as_str())
        .unwrap_or_default()
        .to_owned();
    (answer.status, said)
}

fn said(status: u16, text: &str) -> (u16, String) {
    (status, text.to_owned())
}

/// A push, its copies under fresh ids, and its sender's redelivery under its own id.
async fn replays_are_stored_once(service: &Service) {
    let fixture = service.setup().await;
    let body = github_push(&["r1", "r2"]);
    assert_eq!(
        push(service, &fixture, "first", &body).await,
        said(201, "stored")
    );
    for fresh in ["fresh-1", "fresh-2"] {
        let replay = push(service, &fixture, fresh, &body).await;
        assert_eq!(replay, said(200, "replayed"));
    }
    let redelivery = push(service, &fixture, "first", &body).await;
    assert_eq!(redelivery, said(200, "duplicate"));
    // Another push is another delivery.
    let other = github_push(&["r3"]);
    assert_eq!(
        push(service, &fixture, "other", &other).await,
        said(201, "stored")
    );
    assert_eq!(
        service.stats(&fixture).await,
        json!({ "digests": 1, "inboxes": 5, "deliveries": 2, "redeliveries": 1, "commits": 3 })
    );
    assert_eq!(metric(service, GITHUB_REPLAYS).await, 2);
}

#[tokio::test]
async fn a_push_replayed_under_fresh_ids_is_stored_once_on_sqlite() {
    replays_are_stored_once(&Service::start_on_file("exactly-once").await).await;
}

#[tokio::test]
async fn a_push_replayed_under_fresh_ids_is_stored_once_on_postgres() {
    let Some(url) = test_postgres("a_push_replayed_under_fresh_ids_is_stored_once_on_postgres")
    else {
        return;
    };
    replays_are_stored_once(&Service::start_on_postgres(&url, TEST_BODY_LIMIT).await).await;
}

/// Copies of one push, each under an id of its own, from many clients at once over
/// `fleet`'s nodes: exactly one stored, every other one replayed, and the counts exact.
async fn copies_at_once_are_stored_once(fleet: &[Service]) {
    let fixture = fleet[0].setup().await;
    let body = github_push(&["c1", "c2", "c3"]);
    let copies: Vec<_> = (0..CONCURRENT_COPIES)
        .map(|i| {
            let service = &fleet[i % fleet.len()];
            let id = format!("copy-{i}");
            let request = delivery(service, &fixture, Provider::Github, "push", &id, &body);
            tokio::spawn(request.send())
        })
        .collect();
    let mut answers = Vec::new();
    for copy in copies {
        answers.push(status_and_said(copy.await.unwrap().unwrap()).await);
    }
    let count = |expected: (u16, &str)| {
        answers
            .iter()
            .filter(|a| **a == said(expected.0, expected.1))
            .count()
    };
    assert_eq!(count((201, "stored")), 1, "{answers:?}");
    assert_eq!(
        count((200, "replayed")),
        CONCURRENT_COPIES - 1,
        "{answers:?}"
    );
    assert_eq!(
        fleet[0].stats(&fixture).await,
        json!({ "digests": 1, "inboxes": 5, "deliveries": 1, "redeliveries": 0, "commits": 3 })
    );
    let mut replays = 0;
    for node in fleet {
        replays += metric(node, GITHUB_REPLAYS).await;
    }
    assert_eq!(replays, CONCURRENT_COPIES as u64 - 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn copies_under_fresh_ids_at_once_are_stored_once_on_sqlite() {
    copies_at_once_are_stored_once(&[Service::start_on_file("exactly-once-at-once").await]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn copies_under_fresh_ids_at_two_nodes_at_once_are_stored_once_on_postgres() {
    let name = "copies_under_fresh_ids_at_two_nodes_at_once_are_stored_once_on_postgres";
    let Some(url) = test_postgres(name) else {
        return;
    };
    let fleet = [
        Service::start_on_postgres(&url, TEST_BODY_LIMIT).await,
        Service::start_on_postgres(&url, TEST_BODY_LIMIT).await,
    ];
    copies_at_once_are_stored_once(&fleet).await;
}

#[tokio::test]
async fn a_redelivery_of_a_push_answered_5xx_is_stored() {
    let service = Service::start_on_file("exactly-once-5xx").await;
    let fixture = service.setup().await;
    let body = github_push(&["f1"]);
    service.outage.begin();
    let (status, _) = push(&service, &fixture, "failed", &body).await;
    assert!((500..600).contains(&status), "{status}");
    service.outage.end();
    // Its sender's redelivery, and a copy under another id: the first is stored.
    assert_eq!(
        push(&service, &fixture, "failed", &body).await,
        said(201, "stored")
    );
    assert_eq!(
        push(&service, &fixture, "again", &body).await,
        said(200, "replayed")
    );
    let stats = service.stats(&fixture).await;
    assert_eq!(
        (stats["deliveries"].as_i64(), stats["commits"].as_i64()),
        (Some(1), Some(1))
    );
}

#[tokio::test]
async fn a_push_spooled_twice_in_an_outage_under_fresh_ids_is_drained_once() {
    let dir = SpoolDir::new("exactly-once-spool");
    let db = temp_path("exactly-once-spool", "db");
    let store = Store::open(db.to_str().unwrap()).await.unwrap();
    let service =
        Service::serve_spooled(store, Some(db), TEST_BODY_LIMIT, Some(dir.open(1 << 30))).await;
    let fixture = service.setup().await;
    until(&service, "every inbox known", |health| {
        health["spool"]["known_inboxes"] == Provider::ALL.len()
    })
    .await;
    let body = github_push(&["s1", "s2"]);
    service.outage.begin();
    for id in ["spooled-1", "spooled-2"] {
        assert_eq!(
            push(&service, &fixture, id, &body).await,
            said(202, "queued")
        );
    }
    service.outage.end();
    let health = drained(&service).await;
    assert_eq!(health["spool"]["drained"], 2);
    assert_eq!(
        service.stats(&fixture).await,
        json!({ "digests": 1, "inboxes": 5, "deliveries": 1, "redeliveries": 0, "commits": 2 })
    );
    assert_eq!(metric(&service, GITHUB_REPLAYS).await, 1);
    // Once drained, a third copy is a replay at the route too.
    let third = push(&service, &fixture, "spooled-3", &body).await;
    assert_eq!(third, said(200, "replayed"));
}
