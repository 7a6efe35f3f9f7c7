//! The spool over real TCP: what the store cannot take is answered 202 queued, kept on disk,
//! and drained into the store once it answers, each delivery stored once.

mod common;

use common::*;
use serde_json::{json, Value};
use webhook_ingest::ids::{DeliveryId, InboxId, InstanceId};
use webhook_ingest::pipeline::record::SpooledDelivery;
use webhook_ingest::provider::Provider;
use webhook_ingest::spool::RECORD_HEADER_BYTES;
use webhook_ingest::store::Store;
use webhook_ingest::verify::webhook;

async fn spooled_service(name: &str, dir: &SpoolDir, max_bytes: u64) -> Service {
    let db = temp_path(name, "db");
    let store = Store::open(db.to_str().unwrap()).await.unwrap();
    Service::serve_spooled(store, Some(db), TEST_BODY_LIMIT, Some(dir.open(max_bytes))).await
}

/// Waits until the refreshes that followed the fixture's making have listed every inbox, so
/// that each is verified here during an outage.
async fn known_all(service: &Service) {
    until(service, "every inbox known", |health| {
        health["spool"]["known_inboxes"] == Provider::ALL.len()
    })
    .await;
}

#[tokio::test]
async fn a_failing_store_queues_deliveries_and_the_drain_stores_each_once() {
    const PUSHES: usize = 20;
    let dir = SpoolDir::new("queue");
    let service = spooled_service("queue", &dir, 1 << 30).await;
    let fixture = service.setup().await;
    known_all(&service).await;
    let first = github_push(&["seen"]);
    let seen = delivery(&service, &fixture, Provider::Github, "push", "seen", &first);
    assert_eq!(service.send(seen).await.status, 201);

    service.outage.begin();
    let before = service.quiescent().await;
    // GitHub's inbox was seen, GitLab's only listed by the refresh that followed its making:
    // both are checked against the secrets known here.
    let mut tasks = Vec::new();
    for n in 0..PUSHES {
        let body = github_push(&[&format!("q{n}a"), &format!("q{n}b")]);
        let id = format!("queued-{n}");
        tasks.push(tokio::spawn(
            delivery(&service, &fixture, Provider::Github, "push", &id, &body).send(),
        ));
    }
    for task in tasks {
        let response = task.await.unwrap().unwrap();
        assert_eq!(response.status(), 202);
        let body: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
        assert_eq!(body["status"], "queued", "{body}");
    }
    let again = github_push(&["q0a", "q0b"]);
    let twice = delivery(
        &service,
        &fixture,
        Provider::Github,
        "push",
        "queued-0",
        &again,
    );
    assert_eq!(service.send(twice).await.status, 202);
    let gitlab = gitlab_push();
    let unseen = delivery(
        &service,
        &fixture,
        Provider::Gitlab,
        "Push Hook",
        "gl-1",
        &gitlab,
    );
    assert_eq!(service.send(unseen).await.body["status"], "queued");
    service
        .signed(&fixture, Provider::Gitlab, "Push Hook", &gitlab)
        .set("x-gitlab-token", "not-the-secret")
        .assert_problem(401, "bad-signature")
        .await;
    let wrong = github_push(&["w"]);
    let wrong_signature = format!("sha256={}", webhook::sign(b"nope", &wrong));
    service
        .signed(&fixture, Provider::Github, "push", &wrong)
        .set("x-hub-signature-256", wrong_signature)
        .assert_problem(401, "bad-signature")
        .await;

    let down = health(&service).await;
    assert_eq!(
        (down["status"].as_str(), down["store"].as_str()),
        (Some("degraded"), Some("down"))
    );
    assert_eq!(down["spool"]["depth"], PUSHES + 2);
    assert_eq!(down["spool"]["unverified"]["depth"], 0);
    let during = service.quiescent().await;
    assert_eq!(during.ok - before.ok, PUSHES as u64 + 2 + 1);
    assert_eq!(during.failures() - before.failures(), 2);

    service.outage.end();
    let health = drained(&service).await;
    assert_eq!(health["spool"]["drained"], PUSHES + 2);
    assert_eq!(health["spool"]["refused"], 0);
    assert_eq!(
        service.stats(&fixture).await,
        json!({ "digests": 1, "inboxes": 5, "deliveries": 1 + PUSHES + 1,
                "redeliveries": 1, "commits": 1 + 2 * PUSHES + 1 })
    );
    assert_eq!(
        metric(&service, "webhook_ingest_spool_refused_total").await,
        0
    );
    assert_eq!(metric(&service, "webhook_ingest_spool_depth").await, 0);
    for n in 0..PUSHES {
        let body = github_push(&[&format!("q{n}a"), &format!("q{n}b")]);
        let id = format!("queued-{n}");
        let resent = delivery(&service, &fixture, Provider::Github, "push", &id, &body);
        assert_eq!(service.send(resent).await.body["status"], "duplicate");
    }
}

#[tokio::test]
async fn a_restart_cuts_a_torn_tail_and_drains_what_was_acknowledged() {
    let dir = SpoolDir::new("restart");
    let mut first = spooled_service("restart", &dir, 1 << 30).await;
    let fixture = first.setup().await;
    known_all(&first).await;
    first.outage.begin();
    for n in 0..5 {
        let body = github_push(&[&format!("r{n}")]);
        let id = format!("restart-{n}");
        let answer = first
            .send(delivery(
                &first,
                &fixture,
                Provider::Github,
                "push",
                &id,
                &body,
            ))
            .await;
        assert_eq!(answer.status, 202, "{}", answer.text);
    }
    // The node goes away; a crash left half a record at the spool's end.
    let (store, outage) = (first.store.clone(), first.outage.clone());
    let db = first.db.take();
    first.task.abort();
    let _ = (&mut first.task).await;
    drop(first);
    let segment = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "seg"))
        .unwrap();
    let whole = std::fs::metadata(&segment).unwrap().len();
    let mut torn = std::fs::read(&segment).unwrap()[..30].to_vec();
    torn.truncate(23);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&segment)
        .unwrap();
    std::io::Write::write_all(&mut file, &torn).unwrap();
    drop(file);

    outage.end();
    let second = Service::serve_spooled(store, db, TEST_BODY_LIMIT, Some(dir.open(1 << 30))).await;
    let health = drained(&second).await;
    assert_eq!(health["spool"]["cut"], 1);
    assert_eq!(health["spool"]["cut_bytes"], 23);
    assert_eq!(health["spool"]["drained"], 5);
    assert!(std::fs::metadata(&segment).map_or(0, |m| m.len()) <= whole);
    assert_eq!(metric(&second, "webhook_ingest_spool_cut_total").await, 1);
    let stats = second.stats(&fixture).await;
    assert_eq!(
        (stats["deliveries"].as_u64(), stats["commits"].as_u64()),
        (Some(5), Some(5))
    );
}

#[tokio::test]
async fn a_service_whose_database_is_unreachable_starts_and_spools() {
    let password = "pw-never-shown";
    let url = format!("postgres://ingest:{password}@127.0.0.1:1/hooks");
    let dir = SpoolDir::new("unreachable");
    let store = Store::open_in_background(&url, Default::default());
    let service =
        Service::serve_spooled(store, None, TEST_BODY_LIMIT, Some(dir.open(1 << 30))).await;
    let down = health(&service).await;
    assert_eq!(down["store"], "down", "{down}");
    assert!(!down.to_string().contains(password));
    // Whether a commit waits for the disk is read from the database once it is reached.
    assert_eq!(down["durable"], serde_json::Value::Null, "{down}");

    // No inbox can be looked up: the delivery is checked for form now and spooled
    // unverified (in the spool of its own), to be checked against its secret once the store
    // answers.
    let body = github_push(&["u1"]);
    let signature = format!("sha256={}", webhook::sign(b"the inbox secret", &body));
    let request = service
        .client
        .post(service.url("/api/in_someone/inboxes/ib_something/commits"))
        .header("content-type", "application/json")
        .header("x-github-event", "push")
        .header("x-github-delivery", "while-down-1")
        .header("x-hub-signature-256", signature)
        .body(body.clone());
    let answer = service.send(request).await;
    assert_eq!(answer.status, 202, "{}", answer.text);
    assert_eq!(
        answer.body,
        json!({ "status": "queued", "delivery": "while-down-1" })
    );
    let unsigned = service
        .client
        .post(service.url("/api/in_someone/inboxes/ib_something/commits"))
        .header("content-type", "application/json")
        .header("x-github-event", "push")
        .body(body);
    service
        .send(unsigned)
        .await
        .assert_problem(401, "bad-signature");
    let api = service
        .send(service.client.post(service.url("/api/instances")))
        .await;
    api.assert_problem(503, "store-unavailable");
    assert!(!api.text.contains(password));
    let spooled = health(&service).await;
    assert_eq!(spooled["spool"]["depth"], 0, "{spooled}");
    assert_eq!(spooled["spool"]["unverified"]["depth"], 1, "{spooled}");
}

#[tokio::test]
async fn past_the_spool_bound_a_delivery_gets_503_with_retry_after_and_is_counted() {
    let dir = SpoolDir::new("bound");
    // Room for three of these deliveries, not four: ids are of fixed length (a prefix and 16
    // hex digits), and so is each record.
    let record = SpooledDelivery {
        instance: InstanceId::parse(&format!("in_{:016}", 0)).unwrap(),
        inbox: InboxId::parse(&format!("ib_{:016}", 0)).unwrap(),
        provider: Provider::Github,
        event: "push".into(),
        delivery: DeliveryId::parse("bound-0").unwrap(),
        proof: None,
        // As the service writes it: the arrival time is 8 bytes whatever it is.
        received: Some(std::time::SystemTime::now()),
        // And so is the replay key of a delivery verified before it was spooled.
        key: Some([0; 32]),
        body: github_push(&["b0"]),
    };
    let record_bytes = RECORD_HEADER_BYTES + record.encode().len() as u64;
    let service = spooled_service("bound", &dir, 4 * record_bytes - 1).await;
    let fixture = service.setup().await;
    let seen = github_push(&["b"]);
    assert_eq!(
        service
            .send(delivery(
                &service,
                &fixture,
                Provider::Github,
                "push",
                "b",
                &seen
            ))
            .await
            .status,
        201
    );
    service.outage.begin();
    let mut statuses = Vec::new();
    for n in 0..5 {
        let body = github_push(&[&format!("b{n}")]);
        let id = format!("bound-{n}");
        let answer = service
            .send(delivery(
                &service,
                &fixture,
                Provider::Github,
                "push",
                &id,
                &body,
            ))
            .await;
        if answer.status == 503 {
            answer.assert_problem(503, "spool-full");
            assert!(answer.headers.contains_key("retry-after"));
        }
        statuses.push(answer.status);
    }
    assert_eq!(statuses, [202, 202, 202, 503, 503]);
    assert_eq!(
        health(&service).await["spool"]["depth_bytes"],
        3 * record_bytes
    );
    assert_eq!(metric(&service, "webhook_ingest_spool_full_total").await, 2);
    let snapshot = service.quiescent().await;
    let full: u64 = snapshot
        .series
        .iter()
        .filter(|s| s.code == "spool-full" && s.status == 503)
        .map(|s| s.count)
        .sum();
    assert_eq!(full, 2);

    service.outage.end();
    drained(&service).await;
    assert_eq!(service.stats(&fixture).await["deliveries"], 4);
}
