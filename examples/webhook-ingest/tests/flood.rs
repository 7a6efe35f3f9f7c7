//! An unauthenticated flood during an outage, over real TCP: the store down, made-up
//! deliveries to inboxes that never existed fill only the unverified bound and are answered
//! 503 past it; the node restarts while the store is still down; the real senders'
//! deliveries to known inboxes are still verified and acknowledged.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;
use webhook_ingest::provider::Provider;
use webhook_ingest::spool::{unverified, Spool, SpoolConfig, RECORD_HEADER_BYTES};
use webhook_ingest::store::Store;
use webhook_ingest::verify::known;

/// The webhook body limit here: large enough for the flood's oversized bodies.
const BODY_LIMIT: usize = 1 << 20;
/// The unverified spool's bound in the test, small so that a flood fills it in milliseconds.
const UNVERIFIED_BOUND: u64 = 200 * 1024;
/// The per-body cap of unverified deliveries in the test.
const UNVERIFIED_MAX_BODY: usize = 32 * 1024;
/// A flood body under the cap, and one over it.
const SMALL_FLOOD_BODY: usize = 20 * 1024;
const LARGE_FLOOD_BODY: usize = 40 * 1024;
/// Made-up deliveries sent at once before the restart: under the cap, and over it. Sixty,
/// as the measurement that found the hole sent.
const SMALL_FLOOD: usize = 40;
const LARGE_FLOOD: usize = 20;
/// Made-up deliveries after the restart, all under the cap.
const FLOOD_AFTER_RESTART: usize = 20;
/// Real deliveries per provider after the restart.
const REAL_PER_PROVIDER: usize = 10;

async fn serve(store: Store, db: Option<PathBuf>, dir: &Path) -> Service {
    let spool = Spool::open(SpoolConfig::new(dir)).unwrap();
    let unverified = unverified::open(dir, UNVERIFIED_BOUND).unwrap();
    let config = webhook_ingest::Config {
        spool: Some(spool),
        unverified: Some(unverified),
        unverified_max_body: UNVERIFIED_MAX_BODY,
        ..Service::config(BODY_LIMIT)
    };
    Service::serve_with(store, db, config).await
}

/// A GitHub push of exactly `bytes` bytes, its one commit's message padded to fit.
fn padded_push(bytes: usize) -> Vec<u8> {
    let bare = github_push(&["f1"]).len();
    let message = "commit f1";
    let padded = format!("{message}{}", "x".repeat(bytes - bare));
    let body = String::from_utf8(github_push(&["f1"]))
        .unwrap()
        .replace(message, &padded);
    assert_eq!(body.len(), bytes);
    body.into_bytes()
}

/// Sends `count` made-up pushes of `bytes` bytes at once, each to an instance and inbox that
/// never existed, with a well-formed signature of nothing; answers the statuses, sorted.
async fn flood(service: &Service, first: usize, count: usize, bytes: usize) -> Vec<u16> {
    let body = padded_push(bytes);
    let tasks: Vec<_> = (first..first + count)
        .map(|n| {
            // Ids of one length, so that every record takes the same room.
            let path = format!("/api/in_flood{n:04}/inboxes/ib_flood{n:04}/commits");
            let headers = Headers(vec![
                ("content-type", "application/json".to_owned()),
                ("x-github-event", "push".to_owned()),
                ("x-github-delivery", format!("flood-{n:04}")),
                ("x-hub-signature-256", format!("sha256={}", "ab".repeat(32))),
            ]);
            tokio::spawn(post_to(service, &path, headers, &body).send())
        })
        .collect();
    let mut statuses = Vec::new();
    for task in tasks {
        let response = task.await.unwrap().unwrap();
        let status = response.status().as_u16();
        if status == 503 {
            assert!(response.headers().contains_key("retry-after"));
        }
        statuses.push(status);
    }
    statuses.sort_unstable();
    statuses
}

fn count(statuses: &[u16], status: u16) -> usize {
    statuses.iter().filter(|&&s| s == status).count()
}

#[tokio::test]
async fn a_flood_during_an_outage_fills_only_its_bound_and_real_senders_are_acknowledged() {
    let dir = SpoolDir::new("flood");
    let db = temp_path("flood", "db");
    let store = Store::open(db.to_str().unwrap()).await.unwrap();
    let mut first = serve(store, Some(db), &dir.0).await;
    let fixture = first.setup().await;
    // Known here at once; in the file once the refresh that the making asked for is done.
    let file = dir.0.join(known::KNOWN_INBOXES_FILE);
    let start = Instant::now();
    while known::load(&file).map_or(0, |inboxes| inboxes.len()) != Provider::ALL.len() {
        assert!(
            start.elapsed() < HEALTH_WAIT,
            "the file never held every inbox"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    first.outage.begin();
    let statuses = flood(&first, 0, SMALL_FLOOD, SMALL_FLOOD_BODY).await;
    let large = flood(&first, SMALL_FLOOD, LARGE_FLOOD, LARGE_FLOOD_BODY).await;
    assert_eq!(
        large,
        vec![503; LARGE_FLOOD],
        "past the cap: 503, never a 2xx"
    );
    let taken = count(&statuses, 202);
    assert_eq!(taken + count(&statuses, 503), SMALL_FLOOD, "{statuses:?}");
    let down = health(&first).await;
    let spooled = &down["spool"]["unverified"];
    let bytes = spooled["depth_bytes"].as_u64().unwrap();
    assert_eq!(spooled["depth"], taken as u64, "{down}");
    // Every record is the same size, and the bound took as many as fit, no more.
    let record = bytes / taken as u64;
    assert_eq!(record * taken as u64, bytes, "{down}");
    assert!(record > RECORD_HEADER_BYTES + SMALL_FLOOD_BODY as u64);
    assert_eq!(taken as u64, UNVERIFIED_BOUND / record, "{down}");
    assert_eq!(
        down["spool"]["depth"], 0,
        "the main spool took nothing: {down}"
    );
    let refused = "webhook_ingest_unverified_refused_total";
    let full = metric(&first, &format!("{refused}{{reason=\"full\"}}")).await;
    let too_large = metric(&first, &format!("{refused}{{reason=\"too_large\"}}")).await;
    assert_eq!(
        (full, too_large),
        ((SMALL_FLOOD - taken) as u64, LARGE_FLOOD as u64)
    );
    // /health tells the same counts.
    assert_eq!(
        (
            spooled["refused_full"].as_u64(),
            spooled["refused_too_large"].as_u64()
        ),
        (Some(full), Some(too_large)),
        "{down}"
    );

    // A restart while the store is still down: the known inboxes come from the file, and
    // what the unverified spool holds still counts against its bound.
    let (store, outage) = (first.store.clone(), first.outage.clone());
    let db = first.db.take();
    first.task.abort();
    let _ = (&mut first.task).await;
    drop(first);
    let second = serve(store, db, &dir.0).await;
    let restarted = health(&second).await;
    assert_eq!(restarted["store"], "down", "{restarted}");
    assert_eq!(
        restarted["spool"]["known_inboxes"],
        Provider::ALL.len(),
        "{restarted}"
    );
    let after = flood(&second, 100, FLOOD_AFTER_RESTART, SMALL_FLOOD_BODY).await;
    assert_eq!(after, vec![503; FLOOD_AFTER_RESTART]);

    let mut tasks = Vec::new();
    for n in 0..REAL_PER_PROVIDER {
        let sent = [
            (
                Provider::Github,
                "push",
                github_push(&[&format!("real{n}")]),
            ),
            (Provider::Gitlab, "Push Hook", gitlab_push()),
            (Provider::Bitbucket, "repo:push", bitbucket_push()),
        ];
        for (provider, event, body) in sent {
            let id = format!("real-{provider}-{n}");
            let body = named(&body, &id);
            tasks.push(tokio::spawn(
                delivery(&second, &fixture, provider, event, &id, &body).send(),
            ));
        }
    }
    let real = tasks.len();
    for task in tasks {
        let response = task.await.unwrap().unwrap();
        assert_eq!(response.status(), 202, "a real delivery after the flood");
    }
    second
        .signed(&fixture, Provider::Gitlab, "Push Hook", &gitlab_push())
        .set("x-gitlab-token", "not-the-secret")
        .assert_problem(401, "bad-signature")
        .await;
    let during = health(&second).await;
    assert_eq!(during["spool"]["depth"], real as u64, "{during}");
    assert_eq!(
        during["spool"]["unverified"]["depth_bytes"], bytes,
        "{during}"
    );
    let full = metric(&second, &format!("{refused}{{reason=\"full\"}}")).await;
    assert_eq!(full, FLOOD_AFTER_RESTART as u64);

    // The store is back: the real deliveries are stored, the made-up ones refused.
    outage.end();
    let drained = drained(&second).await;
    assert_eq!(drained["spool"]["refused"], taken as u64, "{drained}");
    let stats = second.stats(&fixture).await;
    assert_eq!(stats["deliveries"], real as u64, "{stats}");
}

#[tokio::test]
async fn an_inbox_made_on_another_node_is_verified_here_after_the_next_refresh() {
    let dir = SpoolDir::new("refresh");
    let (service, peer) = with_peer("refresh", &dir.0, |config| webhook_ingest::Config {
        inbox_refresh: Duration::from_millis(100),
        ..config
    })
    .await;
    until(&service, "refreshed", |h| {
        h["spool"]["inbox_refreshes"].as_u64() >= Some(1)
    })
    .await;
    // Made through the peer: this node learns of it only from a periodic refresh.
    let fixture = peer.setup().await;
    until(&service, "refreshed again", |h| {
        h["spool"]["known_inboxes"] == Provider::ALL.len()
    })
    .await;

    service.outage.begin();
    let body = bitbucket_push();
    let real = delivery(
        &service,
        &fixture,
        Provider::Bitbucket,
        "repo:push",
        "bb-1",
        &body,
    );
    assert_eq!(service.send(real).await.str("status"), "queued");
    service
        .signed(&fixture, Provider::Bitbucket, "repo:push", &body)
        .set("x-hub-signature", format!("sha256={}", "cd".repeat(32)))
        .assert_problem(401, "bad-signature")
        .await;
    let down = health(&service).await;
    assert_eq!(
        (
            &down["spool"]["depth"],
            &down["spool"]["unverified"]["depth"]
        ),
        (&Value::from(1), &Value::from(0)),
        "{down}"
    );
}

#[tokio::test]
async fn an_inbox_first_seen_in_a_delivery_is_written_to_the_file_at_once() {
    let dir = SpoolDir::new("seen");
    let (service, peer) = with_peer("seen", &dir.0, |config| config).await;
    until(&service, "refreshed", |h| {
        h["spool"]["inbox_refreshes"] == 1
    })
    .await;
    let fixture = peer.setup().await;
    let file = dir
        .0
        .join(webhook_ingest::verify::known::KNOWN_INBOXES_FILE);
    assert_eq!(webhook_ingest::verify::known::load(&file).unwrap().len(), 0);

    let body = github_push(&["first"]);
    let push = delivery(&service, &fixture, Provider::Github, "push", "first", &body);
    assert_eq!(service.send(push).await.status, 201);
    // Long before the next period (a minute): the look-up asked for a refresh.
    until(&service, "refreshed after the look-up", |h| {
        h["spool"]["inbox_refreshes"] == 2
    })
    .await;
    assert_eq!(known::load(&file).unwrap().len(), Provider::ALL.len());
}

/// `store`, its inboxes never listed, so that no refresh ever succeeds.
fn no_listing(store: Store) -> Store {
    let (store, outage) = Outage::wrap(store);
    outage.fail("inboxes");
    store
}

#[tokio::test]
async fn an_inbox_made_here_is_verified_at_once_whatever_the_refresh() {
    let dir = SpoolDir::new("made-here");
    let inner = Store::open(":memory:").await.unwrap();
    let config = webhook_ingest::Config {
        spool: Some(Spool::open(SpoolConfig::new(&dir.0)).unwrap()),
        ..Service::config(TEST_BODY_LIMIT)
    };
    let service = Service::serve_with(no_listing(inner), None, config).await;
    let fixture = service.setup().await;
    service.outage.begin();
    let body = gitlab_push();
    service
        .signed(&fixture, Provider::Gitlab, "Push Hook", &body)
        .set("x-gitlab-token", "not-the-secret")
        .assert_problem(401, "bad-signature")
        .await;
    let real = delivery(
        &service,
        &fixture,
        Provider::Gitlab,
        "Push Hook",
        "gl-1",
        &body,
    );
    assert_eq!(service.send(real).await.str("status"), "queued");
    let down = health(&service).await;
    assert_eq!(down["spool"]["inbox_refreshes"], 0, "{down}");
    assert_eq!(down["spool"]["depth"], 1, "{down}");
}

/// An inbox made here, and one rotated here, are in the file of known inboxes before their
/// answer: the node stopped right after it, and started again while the store is down,
/// verifies their deliveries and keeps them in the main spool. No refresh can write the file
/// (the store lists no inboxes), so only the write before the answer puts them there.
#[tokio::test]
async fn an_inbox_made_or_rotated_here_is_known_after_a_restart_right_after_its_answer() {
    let dir = SpoolDir::new("known-before-answer");
    let db = temp_path("known-before-answer", "db");
    let inner = Store::open(db.to_str().unwrap()).await.unwrap();
    let config = webhook_ingest::Config {
        spool: Some(dir.open(1 << 30)),
        ..Service::config(TEST_BODY_LIMIT)
    };
    let mut first = Service::serve_with(no_listing(inner), Some(db), config).await;
    let fixture = first.setup().await;
    let path = format!(
        "/api/{}/digests/{}/inboxes/{}/secret",
        fixture.instance,
        fixture.digest,
        fixture.inbox(Provider::Bitbucket).0
    );
    let rotated = first
        .send(
            first
                .client
                .post(first.url(&path))
                .bearer_auth(&fixture.key),
        )
        .await;
    assert_eq!(rotated.status, 200, "{}", rotated.text);
    // Stopped at once, the store already down for the start that follows.
    let (store, outage, db) = (first.store.clone(), first.outage.clone(), first.db.take());
    first.task.abort();
    let _ = (&mut first.task).await;
    drop(first);
    outage.begin();
    let second = Service::serve_spooled(store, db, TEST_BODY_LIMIT, Some(dir.open(1 << 30))).await;

    let body = github_push(&["after-restart"]);
    let made = delivery(&second, &fixture, Provider::Github, "push", "gh-1", &body);
    assert_eq!(second.send(made).await.str("status"), "queued");
    let mut signed_anew = fixture.inboxes.clone();
    for (provider, _, secret) in &mut signed_anew {
        if *provider == Provider::Bitbucket {
            *secret = rotated.str("secret");
        }
    }
    let signed_anew = Fixture {
        inboxes: signed_anew,
        ..fixture
    };
    let body = bitbucket_push();
    let push = delivery(
        &second,
        &signed_anew,
        Provider::Bitbucket,
        "repo:push",
        "bb-1",
        &body,
    );
    assert_eq!(second.send(push).await.str("status"), "queued");
    second
        .signed(&signed_anew, Provider::Github, "push", &body)
        .set("x-hub-signature-256", format!("sha256={}", "ab".repeat(32)))
        .assert_problem(401, "bad-signature")
        .await;
    let down = health(&second).await;
    assert_eq!(down["spool"]["depth"], 2, "{down}");
    assert_eq!(down["spool"]["unverified"]["depth"], 0, "{down}");
}
