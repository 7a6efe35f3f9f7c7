//! Two services on one PostgreSQL database, as two instances of a fleet: copies of one
//! delivery that reach both at the same instant are stored once. Runs when
//! `WEBHOOK_INGEST_TEST_POSTGRES` names a database (`load-scripts/fleet/pg-fleet.sh` starts
//! one and sets it).

mod common;

use common::*;
use serde_json::{json, Value};
use webhook_ingest::verify::webhook::Vcs;

#[tokio::test]
async fn copies_of_one_delivery_at_two_instances_at_once_store_it_once() {
    let Some(url) = test_postgres("copies_of_one_delivery_at_two_instances_at_once_store_it_once")
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
                Vcs::Github,
                "push",
                "one-delivery",
                &body,
            );
            tokio::spawn(request.send())
        })
        .collect();
    let mut answers = Vec::new();
    for copy in copies {
        let response = copy.await.unwrap().unwrap();
        let status = response.status().as_u16();
        let value: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
        answers.push((status, value["status"].as_str().unwrap_or("").to_owned()));
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
    // Either instance reads what both wrote.
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
