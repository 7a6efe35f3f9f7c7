//! What the drainer checks, over TCP: a spooled delivery is held to the webhook route's rule
//! (the current secret, or the previous one within the grace period), and one refused when
//! drained is listed among the inbox's refused deliveries and never stored.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Value};
use webhook_ingest::provider::Provider;
use webhook_ingest::verify::webhook;

/// A service on a SQLite file with a spool, and the spool's directory, removed when done;
/// with a peer on the same file, another node of the fleet, through which inboxes are
/// made and rotated without the service knowing until its next refresh.
struct Spooled {
    service: Service,
    peer: Service,
    _dir: SpoolDir,
}

async fn spooled(name: &str, secret_grace: Duration) -> Spooled {
    let dir = SpoolDir::new(name);
    let (service, peer) = with_peer(name, &dir.0, |config| webhook_ingest::Config {
        secret_grace,
        ..config
    })
    .await;
    // The first refresh done, what the peer makes after it is unknown to the service until
    // the next one (a minute away).
    until(&service, "refreshed", |h| {
        h["spool"]["inbox_refreshes"].as_u64() >= Some(1)
    })
    .await;
    Spooled {
        service,
        peer,
        _dir: dir,
    }
}

async fn failures(service: &Service, fixture: &Fixture, provider: Provider) -> Value {
    let path = format!(
        "/api/{}/inboxes/{}/failures",
        fixture.instance,
        fixture.inbox(provider).0
    );
    let answer = service
        .send(
            service
                .client
                .get(service.url(&path))
                .bearer_auth(&fixture.key),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.body["failures"].clone()
}

/// Rotates `provider`'s inbox secret and answers the fixture still signing with the old one.
async fn rotate(service: &Service, fixture: &Fixture, provider: Provider) -> String {
    let path = format!(
        "/api/{}/digests/{}/inboxes/{}/secret",
        fixture.instance,
        fixture.digest,
        fixture.inbox(provider).0
    );
    let answer = service
        .send(
            service
                .client
                .post(service.url(&path))
                .bearer_auth(&fixture.key),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.str("secret")
}

#[tokio::test]
async fn a_forged_delivery_spooled_during_an_outage_is_listed_when_drained_never_stored() {
    let spooled = spooled("drain-forged", Duration::from_secs(3600)).await;
    let service = &spooled.service;
    let fixture = spooled.peer.setup().await;
    // Made on the peer and never seen here, so the delivery cannot be checked now.
    service.outage.begin();
    let body = gitlab_push();
    let forged = provider_headers(&fixture, Provider::Gitlab, "Push Hook", "gl-forged", &body)
        .set("x-gitlab-token", "not-the-secret");
    let forged = post_to(service, &fixture.hook_path(Provider::Gitlab), forged, &body);
    let answer = service.send(forged).await;
    assert_eq!(
        (answer.status, answer.str("status")),
        (202, "queued".into())
    );

    service.outage.end();
    let health = drained(service).await;
    assert_eq!(health["spool"]["refused"], 1, "{health}");
    let listed = failures(service, &fixture, Provider::Gitlab).await;
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["delivery"], "gl-forged");
    assert_eq!(listed[0]["status"], 401);
    assert_eq!(listed[0]["code"], "bad-signature");
    assert_eq!(
        service.stats(&fixture).await,
        json!({ "digests": 1, "inboxes": 5, "deliveries": 0, "redeliveries": 0, "commits": 0 })
    );
}

#[tokio::test]
async fn a_spooled_delivery_signed_with_the_previous_secret_is_stored_within_the_grace() {
    let spooled = spooled("drain-rotated", Duration::from_secs(3600)).await;
    let service = &spooled.service;
    let old = spooled.peer.setup().await;
    rotate(&spooled.peer, &old, Provider::Github).await;
    // Unseen inbox: spooled unverified, checked when drained.
    service.outage.begin();
    let body = github_push(&["unseen"]);
    let unseen = delivery(service, &old, Provider::Github, "push", "old-unseen", &body);
    assert_eq!(service.send(unseen).await.str("status"), "queued");
    service.outage.end();
    let health = drained(service).await;
    assert_eq!(health["spool"]["refused"], 0, "{health}");
    // Seen inbox: checked at once against the remembered secrets, previous one included.
    service.outage.begin();
    let body = github_push(&["seen"]);
    let seen = delivery(service, &old, Provider::Github, "push", "old-seen", &body);
    assert_eq!(service.send(seen).await.str("status"), "queued");
    service.outage.end();
    drained(service).await;
    assert_eq!(
        service.stats(&old).await,
        json!({ "digests": 1, "inboxes": 5, "deliveries": 2, "redeliveries": 0, "commits": 2 })
    );
    assert_eq!(failures(service, &old, Provider::Github).await, json!([]));
}

#[tokio::test]
async fn past_the_grace_a_spooled_delivery_signed_with_the_previous_secret_is_refused() {
    let spooled = spooled("drain-expired", Duration::from_millis(200)).await;
    let service = &spooled.service;
    let old = spooled.peer.setup().await;
    rotate(&spooled.peer, &old, Provider::Github).await;
    service.outage.begin();
    let body = github_push(&["late"]);
    let late = delivery(service, &old, Provider::Github, "push", "old-late", &body);
    assert_eq!(service.send(late).await.str("status"), "queued");
    tokio::time::sleep(Duration::from_millis(400)).await;
    service.outage.end();
    let health = drained(service).await;
    assert_eq!(health["spool"]["refused"], 1, "{health}");
    let listed = failures(service, &old, Provider::Github).await;
    assert_eq!(listed[0]["delivery"], "old-late", "{listed}");
    assert_eq!(listed[0]["code"], "bad-signature");
    assert_eq!(service.stats(&old).await["deliveries"], 0);
}

/// A signed GitLab delivery this old when it arrives is inside its five minutes, and outside
/// them once [`ARRIVAL_TO_DRAIN`] has passed.
const NEARLY_STALE_SECS: i64 = 5 * 60 - 3;
/// Longer than the three seconds [`NEARLY_STALE_SECS`] leaves, so that a drain that judged
/// the timestamp at its own time would refuse the delivery.
const ARRIVAL_TO_DRAIN: Duration = Duration::from_secs(4);

#[tokio::test]
async fn spooled_gitea_and_signed_gitlab_deliveries_are_verified_when_drained_as_they_arrived() {
    let spooled = spooled("drain-providers", Duration::from_secs(3600)).await;
    let service = &spooled.service;
    let fixture = spooled.peer.setup().await;
    service.outage.begin();
    let body = github_push(&["gitea-signed"]);
    let signed = delivery(
        service,
        &fixture,
        Provider::Gitea,
        "push",
        "gt-signed",
        &body,
    );
    assert_eq!(service.send(signed).await.str("status"), "queued");
    let body = github_push(&["gitea-forged"]);
    let forged = provider_headers(&fixture, Provider::Gitea, "push", "gt-forged", &body)
        .set("x-gitea-signature", webhook::sign(b"not the secret", &body));
    let forged = post_to(service, &fixture.hook_path(Provider::Gitea), forged, &body);
    assert_eq!(service.send(forged).await.str("status"), "queued");
    let body = gitlab_push();
    let nearly_stale = unix_now(-NEARLY_STALE_SECS);
    let headers = gitlab_signed_headers(&fixture, "gl-signed", nearly_stale, &body);
    let signed = post_to(
        service,
        &fixture.hook_path(Provider::Gitlab),
        headers,
        &body,
    );
    assert_eq!(service.send(signed).await.str("status"), "queued");
    tokio::time::sleep(ARRIVAL_TO_DRAIN).await;
    service.outage.end();

    let health = drained(service).await;
    assert_eq!(health["spool"]["refused"], 1, "{health}");
    let listed = failures(service, &fixture, Provider::Gitea).await;
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["delivery"], "gt-forged");
    assert_eq!(listed[0]["code"], "bad-signature");
    assert_eq!(
        failures(service, &fixture, Provider::Gitlab).await,
        json!([])
    );
    assert_eq!(
        service.stats(&fixture).await,
        json!({ "digests": 1, "inboxes": 5, "deliveries": 2, "redeliveries": 0, "commits": 2 })
    );
}

/// Long enough for the drainer to fail several attempts: it tries at once, then after 50,
/// 100, 200 and 400 ms.
const OUTAGE: Duration = Duration::from_millis(1200);

#[tokio::test]
async fn the_drainer_says_once_that_the_store_is_down_and_once_that_it_is_back() {
    // The service's tasks run on this test's thread (a current-thread runtime).
    let (logs, _capturing) = Logs::capture();
    let dir = SpoolDir::new("drain-says-once");
    let service = Service::serve_spooled(
        webhook_ingest::store::Store::open(":memory:")
            .await
            .unwrap(),
        None,
        TEST_BODY_LIMIT,
        Some(dir.open(1 << 20)),
    )
    .await;
    let fixture = service.setup().await;
    service.outage.begin();
    let body = github_push(&["down"]);
    let queued = delivery(
        &service,
        &fixture,
        Provider::Github,
        "push",
        "down-1",
        &body,
    );
    assert_eq!(service.send(queued).await.str("status"), "queued");
    tokio::time::sleep(OUTAGE).await;
    service.outage.end();
    drained(&service).await;
    let text = logs.text();
    assert_eq!(
        logs.lines_with("the store cannot take spooled deliveries yet"),
        1,
        "{text}"
    );
    assert_eq!(
        logs.lines_with("the store answers again; draining the spool"),
        1,
        "{text}"
    );
}
