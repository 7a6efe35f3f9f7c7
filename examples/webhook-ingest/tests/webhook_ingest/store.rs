//! The store under pressure: copies of one delivery at once stored once, a failing store
//! answered 503 and the redelivery landing, a stalled write holding up nothing else, and
//! concurrent pushes and reads on a file all landing.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use webhook_ingest::provider;

use crate::common::*;

#[tokio::test]
async fn twenty_copies_of_one_delivery_at_once_store_it_once() {
    let service = Service::start_on_file("duplicates").await;
    let fixture = service.setup().await;
    let body = github_push(&["c1", "c2"]);
    let copies: Vec<_> = (0..CONCURRENT_COPIES)
        .map(|_| {
            let request = delivery(
                &service,
                &fixture,
                provider::Provider::Github,
                "push",
                "the-same-delivery",
                &body,
            );
            tokio::spawn(request.send())
        })
        .collect();
    let mut created = 0;
    let mut duplicates = 0;
    for copy in copies {
        let response = copy.await.unwrap().unwrap();
        let status = response.status().as_u16();
        let value: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
        match status {
            201 => created += 1,
            200 => {
                assert_eq!(value["status"], "duplicate");
                duplicates += 1;
            }
            other => panic!("unexpected {other}: {value}"),
        }
    }
    assert_eq!((created, duplicates), (1, CONCURRENT_COPIES - 1));
    assert_eq!(
        service.stats(&fixture).await,
        json!({ "digests": 1, "inboxes": 5, "deliveries": 1,
                "redeliveries": CONCURRENT_COPIES - 1, "commits": 2 })
    );
    let snapshot = service.quiescent().await;
    // Setup, the copies and the stats (1), every one ok.
    let sent = SETUP_REQUESTS + CONCURRENT_COPIES as u64 + 1;
    assert_eq!(
        (snapshot.started, snapshot.ok),
        (sent, sent),
        "{snapshot:#?}"
    );
    assert_eq!(snapshot.failures(), 0, "{snapshot:#?}");
}

#[tokio::test]
async fn a_failing_store_answers_503_with_retry_after_and_the_redelivery_lands() {
    let service = Service::start_on_file("failing").await;
    let fixture = service.setup().await;
    let body = github_push(&["r1"]);
    let send = || {
        delivery(
            &service,
            &fixture,
            provider::Provider::Github,
            "push",
            "retry-1",
            &body,
        )
    };

    service.outage.begin();
    let failed = service.send(send()).await;
    failed.assert_problem(503, "store-unavailable");
    assert!(failed.headers.contains_key("retry-after"));
    assert!(
        !failed.text.contains("switched"),
        "internal text leaked: {}",
        failed.text
    );
    let health = service
        .send(service.client.get(service.url("/health")))
        .await;
    health.assert_problem(503, "store-unavailable");
    service.outage.end();

    assert_eq!(service.stats(&fixture).await["commits"], 0);
    let retried = service.send(send()).await;
    assert_eq!(retried.status, 201, "{}", retried.text);
    assert_eq!(service.stats(&fixture).await["commits"], 1);
    let snapshot = service.quiescent().await;
    let unavailable: u64 = snapshot
        .series
        .iter()
        .filter(|s| s.code == "store-unavailable" && s.status == 503)
        .map(|s| s.count)
        .sum();
    assert_eq!(unavailable, 2);
}

#[tokio::test(flavor = "current_thread")]
async fn a_write_waiting_on_the_database_holds_up_no_other_request() {
    // One runtime thread: had the store worked on it, the stalled write would stall
    // everything else too.
    let service = Service::start_on_file("stalled").await;
    let fixture = service.setup().await;
    let blocker = rusqlite::Connection::open(service.db.as_ref().unwrap()).unwrap();
    blocker.execute_batch("BEGIN IMMEDIATE").unwrap();

    let body = github_push(&["s1", "s2"]);
    let push = tokio::spawn(
        delivery(
            &service,
            &fixture,
            provider::Provider::Github,
            "push",
            "stalled-1",
            &body,
        )
        .send(),
    );
    // Long enough for the push to reach the writer and wait there on the lock.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !push.is_finished(),
        "the push should be waiting on the lock"
    );

    let asked = Instant::now();
    let metrics = service
        .send(service.client.get(service.url("/metrics")))
        .await;
    assert_eq!(metrics.status, 200);
    let instance = service
        .send(
            service
                .client
                .get(service.url(&format!("/api/instances/{}", fixture.instance)))
                .bearer_auth(&fixture.key),
        )
        .await;
    assert_eq!(instance.status, 200, "{}", instance.text);
    assert!(
        asked.elapsed() < Duration::from_secs(2),
        "{:?}",
        asked.elapsed()
    );
    assert!(!push.is_finished(), "the push should still be waiting");

    blocker.execute_batch("ROLLBACK").unwrap();
    let response = push.await.unwrap().unwrap();
    assert_eq!(response.status(), 201);
    assert_eq!(service.stats(&fixture).await["commits"], 2);
}

#[tokio::test]
async fn concurrent_pushes_and_reads_on_a_file_store_all_land() {
    const PUSHES: usize = 20;
    let service = Service::start_on_file("concurrent").await;
    let fixture = service.setup().await;
    let mut tasks = Vec::new();
    for n in 0..PUSHES {
        let (a, b) = (format!("p{n}a"), format!("p{n}b"));
        let body = github_push(&[&a, &b]);
        let id = format!("concurrent-{n}");
        tasks.push(tokio::spawn(
            delivery(
                &service,
                &fixture,
                provider::Provider::Github,
                "push",
                &id,
                &body,
            )
            .send(),
        ));
        tasks.push(tokio::spawn(
            service
                .client
                .get(service.url(&format!(
                    "/api/{}/digests/{}/commits",
                    fixture.instance, fixture.digest
                )))
                .bearer_auth(&fixture.key)
                .send(),
        ));
    }
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.push(task.await.unwrap().unwrap().status().as_u16());
    }
    assert_eq!(statuses.iter().filter(|&&s| s == 201).count(), PUSHES);
    assert_eq!(statuses.iter().filter(|&&s| s == 200).count(), PUSHES);
    let stats = service.stats(&fixture).await;
    assert_eq!(stats["deliveries"], PUSHES);
    assert_eq!(stats["commits"], 2 * PUSHES);
    let snapshot = service.quiescent().await;
    // Setup, the pushes and reads, and the stats (1), every one ok.
    let sent = SETUP_REQUESTS + 2 * PUSHES as u64 + 1;
    assert_eq!(
        (snapshot.started, snapshot.ok),
        (sent, sent),
        "{snapshot:#?}"
    );
    assert_eq!(snapshot.failures(), 0, "{snapshot:#?}");
}
