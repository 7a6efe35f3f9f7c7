//! Two services on one PostgreSQL database, as two nodes of a fleet: copies of one
//! delivery that reach both at the same instant are stored once; and many clients at once on
//! one service, whose group commit stores each delivery once and answers it. Runs when
//! `WEBHOOK_INGEST_TEST_POSTGRES` names a database (`load-scripts/fleet/pg-fleet.sh` starts
//! one and sets it).

mod common;

use common::*;
use serde_json::{json, Value};
use webhook_ingest::provider::Provider;

#[tokio::test]
async fn copies_of_one_delivery_at_two_nodes_at_once_store_it_once() {
    let Some(url) = test_postgres("copies_of_one_delivery_at_two_nodes_at_once_store_it_once")
    else {
        return;
    };
    let fleet = [
        Service::start_on_postgres(&url, TEST_BODY_LIMIT).await,
        Service::start_on_postgres(&url, TEST_BODY_LIMIT).await,
    ];
    let fixture = fleet[0].setup().await;
    let body = github_push(&["p1", "p2", "p3"]);
    let copies: Vec<_> = (0..CONCURRENT_COPIES)
        .map(|i| {
            let service = &fleet[i % fleet.len()];
            let request = delivery(
                service,
                &fixture,
                Provider::Github,
                "push",
                "one-delivery",
                &body,
            );
            tokio::spawn(request.send())
        })
        .collect();
    let mut answers = Vec::new();
    for copy in copies {
        answers.push(status_and_said(copy.await.unwrap().unwrap()).await);
    }
    let stored = answers
        .iter()
        .filter(|a| *a == &(201, "stored".into()))
        .count();
    let duplicates = answers
        .iter()
        .filter(|a| *a == &(200, "duplicate".into()))
        .count();
    assert_eq!(
        (stored, duplicates),
        (1, CONCURRENT_COPIES - 1),
        "{answers:?}"
    );
    // Either node reads what both wrote.
    for service in &fleet {
        assert_eq!(
            service.stats(&fixture).await,
            json!({ "digests": 1, "inboxes": 5, "deliveries": 1,
                    "redeliveries": CONCURRENT_COPIES - 1, "commits": 3 })
        );
    }
    for (n, service) in fleet.iter().enumerate() {
        let snapshot = service.quiescent().await;
        // Its half of the copies, its stats (1), and on the first the setup: all ok.
        let setup = if n == 0 { SETUP_REQUESTS } else { 0 };
        let sent = (CONCURRENT_COPIES / fleet.len()) as u64 + 1 + setup;
        assert_eq!(
            (snapshot.started, snapshot.ok),
            (sent, sent),
            "{snapshot:#?}"
        );
        assert_eq!(snapshot.failures(), 0, "{snapshot:#?}");
    }
}

/// A database whose commits return before their WAL is flushed is found out at start, and
/// `/health` says that a 201 may not survive a crash; at the defaults it says durable.
#[tokio::test]
async fn synchronous_commit_off_is_found_out_and_said_on_health() {
    let Some(url) = test_postgres("synchronous_commit_off_is_found_out_and_said_on_health") else {
        return;
    };
    let separator = if url.contains('?') { '&' } else { '?' };
    let off = format!("{url}{separator}options=-c%20synchronous_commit%3Doff");
    for (url, durable) in [(url, true), (off, false)] {
        let service = Service::start_on_postgres(&url, TEST_BODY_LIMIT).await;
        let health = service
            .send(service.client.get(service.url("/health")))
            .await;
        assert_eq!(health.status, 200, "{}", health.text);
        assert_eq!(health.body["durable"], durable, "{}", health.text);
        let why = health.body["not_durable"].as_str().unwrap_or_default();
        assert_eq!(why.contains("synchronous_commit is off"), !durable, "{why}");
    }
}

/// Parallel clients whose deliveries the store's writers commit in shared transactions.
const PARALLEL_CLIENTS: usize = 64;
/// Deliveries each client sends one after the other.
const DELIVERIES_PER_CLIENT: usize = 5;

/// Sends every client's deliveries at once, each client in turn, and returns each answer's
/// status, `status` field and `stored` count, with the commits its body held.
async fn send_in_parallel(
    service: &Service,
    fixture: &Fixture,
    run: &str,
) -> Vec<(u16, String, u64, u64)> {
    let clients: Vec<_> = (0..PARALLEL_CLIENTS)
        .map(|client| {
            let requests: Vec<_> = (0..DELIVERIES_PER_CLIENT)
                .map(|n| {
                    let commits = (client + n) % 4;
                    let shas: Vec<String> =
                        (0..commits).map(|c| format!("{client}.{n}.{c}")).collect();
                    let shas: Vec<&str> = shas.iter().map(String::as_str).collect();
                    let id = format!("{run}-{client}-{n}");
                    let body = github_push_named(&id, &shas);
                    (
                        delivery(service, fixture, Provider::Github, "push", &id, &body),
                        commits as u64,
                    )
                })
                .collect();
            tokio::spawn(async move {
                let mut answers = Vec::new();
                for (request, commits) in requests {
                    let response = request.send().await.unwrap();
                    let status = response.status().as_u16();
                    let value: Value =
                        serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
                    let said = value["status"].as_str().unwrap_or("").to_owned();
                    answers.push((
                        status,
                        said,
                        value["stored"].as_u64().unwrap_or(u64::MAX),
                        commits,
                    ));
                }
                answers
            })
        })
        .collect();
    let mut answers = Vec::new();
    for client in clients {
        answers.extend(client.await.unwrap());
    }
    answers
}

/// Many clients at once over TCP: every delivery is answered stored with its own commit
/// count, though the writers commit many in one transaction, and stored exactly once; the
/// same deliveries again are every one a duplicate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_deliveries_in_shared_commits_are_each_stored_once() {
    let Some(url) = test_postgres("parallel_deliveries_in_shared_commits_are_each_stored_once")
    else {
        return;
    };
    let service = Service::start_on_postgres(&url, TEST_BODY_LIMIT).await;
    let fixture = service.setup().await;
    let total = (PARALLEL_CLIENTS * DELIVERIES_PER_CLIENT) as u64;
    let first = send_in_parallel(&service, &fixture, "parallel").await;
    let wrong: Vec<_> = first
        .iter()
        .filter(|(status, said, stored, commits)| {
            (*status, said.as_str(), stored) != (201, "stored", commits)
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{} of {total} answered wrong: {wrong:?}",
        wrong.len()
    );
    let commits: u64 = first.iter().map(|a| a.3).sum();
    let again = send_in_parallel(&service, &fixture, "parallel").await;
    let wrong: Vec<_> = again
        .iter()
        .filter(|(status, said, stored, _)| {
            (*status, said.as_str(), *stored) != (200, "duplicate", 0)
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{} of {total} resent answered wrong: {wrong:?}",
        wrong.len()
    );
    assert_eq!(
        service.stats(&fixture).await,
        json!({ "digests": 1, "inboxes": 5, "deliveries": total,
                "redeliveries": total, "commits": commits })
    );
}
