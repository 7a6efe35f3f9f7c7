//! Rotating an inbox's secret over TCP: the new secret passes at once, the previous one for
//! the grace period and not after it, only the instance's key may rotate, and neither secret
//! reaches a log line.

mod common;

use std::time::Duration;

use common::*;
use serde_json::json;
use webhook_ingest::provider::Provider;
use webhook_ingest::store::Store;

/// Short enough to wait out in a test, long enough that the checks made within it finish
/// first on a loaded machine.
const GRACE: Duration = Duration::from_secs(2);

impl Service {
    async fn rotate(&self, fixture: &Fixture, provider: Provider, key: &str) -> Answer {
        let path = format!(
            "/api/{}/digests/{}/inboxes/{}/secret",
            fixture.instance,
            fixture.digest,
            fixture.inbox(provider).0
        );
        self.send(self.client.post(self.url(&path)).bearer_auth(key))
            .await
    }
}

/// The fixture with `provider`'s inbox secret replaced, so deliveries are signed with `secret`.
fn signing_with(fixture: &Fixture, provider: Provider, secret: &str) -> Fixture {
    let inboxes = fixture
        .inboxes
        .iter()
        .map(|(v, id, s)| {
            (
                *v,
                id.clone(),
                if *v == provider { secret } else { s }.to_owned(),
            )
        })
        .collect();
    Fixture {
        instance: fixture.instance.clone(),
        key: fixture.key.clone(),
        digest: fixture.digest.clone(),
        inboxes,
    }
}

async fn push(service: &Service, fixture: &Fixture, provider: Provider, id: &str) -> Answer {
    let (event, body) = match provider {
        Provider::Github | Provider::Gitea | Provider::Forgejo => ("push", github_push(&[id])),
        // Each push a delivery of its own, not a replay of the one before.
        Provider::Gitlab => ("Push Hook", named(&gitlab_push(), id)),
        Provider::Bitbucket => ("repo:push", named(&bitbucket_push(), id)),
    };
    service
        .send(delivery(service, fixture, provider, event, id, &body))
        .await
}

#[tokio::test]
async fn the_previous_secret_passes_for_the_grace_period_and_not_after() {
    let config = webhook_ingest::Config {
        secret_grace: GRACE,
        ..Service::config(TEST_BODY_LIMIT)
    };
    let store = Store::open(":memory:").await.unwrap();
    let service = Service::serve_with(store, None, config).await;
    let old = service.setup().await;
    let mut rotated = Vec::new();
    for provider in Provider::ALL {
        let answer = service.rotate(&old, provider, &old.key).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        assert_eq!(answer.body["id"], old.inbox(provider).0);
        assert_eq!(answer.body["previous_secret_valid_for_secs"], 2);
        let secret = answer.str("secret");
        // A GitLab inbox's secret is a Standard Webhooks signing token too.
        let form = if provider == Provider::Gitlab {
            "whsec_"
        } else {
            "whs_"
        };
        assert!(
            secret.starts_with(form) && secret != old.inbox(provider).1,
            "{secret}"
        );
        rotated.push((provider, secret));
    }
    for (provider, secret) in &rotated {
        let new = signing_with(&old, *provider, secret);
        let within = push(&service, &old, *provider, &format!("{provider}-old-within")).await;
        assert_eq!(within.status, 201, "{provider}: {}", within.text);
        let fresh = push(&service, &new, *provider, &format!("{provider}-new-within")).await;
        assert_eq!(fresh.status, 201, "{provider}: {}", fresh.text);
    }
    tokio::time::sleep(GRACE + Duration::from_millis(200)).await;
    for (provider, secret) in &rotated {
        let new = signing_with(&old, *provider, secret);
        let after = push(&service, &old, *provider, &format!("{provider}-old-after")).await;
        after.assert_problem(401, "bad-signature");
        let fresh = push(&service, &new, *provider, &format!("{provider}-new-after")).await;
        assert_eq!(fresh.status, 201, "{provider}: {}", fresh.text);
    }
    let stats = service.stats(&old).await;
    let providers = Provider::ALL.len() as u64;
    assert_eq!(stats["deliveries"], 3 * providers, "{stats}");
    let snapshot = service.quiescent().await;
    // Setup, a rotation and four pushes per provider, and the stats (1); the refusals, one
    // per provider, are handled 4xx.
    let ok = SETUP_REQUESTS + providers + 3 * providers + 1;
    assert_eq!(
        (snapshot.ok, snapshot.handled),
        (ok, providers),
        "{snapshot:#?}"
    );
    assert_eq!(
        (snapshot.started, snapshot.finished()),
        (ok + providers, ok + providers),
        "{snapshot:#?}"
    );
}

/// Two nodes on one PostgreSQL database: a rotation made at one holds at the other, grace
/// included, since the grace is measured from the rotation's time in the database. Runs when
/// `WEBHOOK_INGEST_TEST_POSTGRES` names a database.
#[tokio::test]
async fn a_rotation_at_one_node_of_a_fleet_holds_at_another() {
    let Some(url) = test_postgres("a_rotation_at_one_node_of_a_fleet_holds_at_another") else {
        return;
    };
    let config = || webhook_ingest::Config {
        secret_grace: GRACE,
        ..Service::config(TEST_BODY_LIMIT)
    };
    let fleet = [
        Service::serve_with(Store::open(&url).await.unwrap(), None, config()).await,
        Service::serve_with(Store::open(&url).await.unwrap(), None, config()).await,
    ];
    let old = fleet[0].setup().await;
    let answer = fleet[0].rotate(&old, Provider::Github, &old.key).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let new = signing_with(&old, Provider::Github, &answer.str("secret"));
    let within = push(&fleet[1], &old, Provider::Github, "fleet-old-within").await;
    assert_eq!(within.status, 201, "{}", within.text);
    tokio::time::sleep(GRACE + Duration::from_millis(200)).await;
    push(&fleet[1], &old, Provider::Github, "fleet-old-after")
        .await
        .assert_problem(401, "bad-signature");
    let fresh = push(&fleet[1], &new, Provider::Github, "fleet-new-after").await;
    assert_eq!(fresh.status, 201, "{}", fresh.text);
    // The first: setup and the rotation (1). The second: two pushes stored and one
    // refused, a handled 401.
    for (service, (ok, handled)) in fleet.iter().zip([(SETUP_REQUESTS + 1, 0), (2, 1)]) {
        let snapshot = service.quiescent().await;
        assert_eq!(
            (snapshot.ok, snapshot.handled),
            (ok, handled),
            "{snapshot:#?}"
        );
        assert_eq!(snapshot.started, ok + handled, "{snapshot:#?}");
        assert_eq!(snapshot.finished(), ok + handled, "{snapshot:#?}");
    }
}

#[tokio::test]
async fn only_the_instances_key_rotates_and_only_its_own_inboxes() {
    let service = Service::start().await;
    let fixture = service.setup().await;
    let other = service.setup().await;
    service
        .rotate(&fixture, Provider::Github, "key_wrong")
        .await
        .assert_problem(401, "bad-api-key");
    service
        .rotate(&fixture, Provider::Github, &other.key)
        .await
        .assert_problem(401, "bad-api-key");
    let foreign_inbox = Fixture {
        inboxes: other.inboxes.clone(),
        ..signing_with(&fixture, Provider::Github, "unused")
    };
    service
        .rotate(&foreign_inbox, Provider::Github, &fixture.key)
        .await
        .assert_problem(404, "inbox-not-found");
    let foreign_digest = Fixture {
        digest: other.digest.clone(),
        ..signing_with(&fixture, Provider::Github, "unused")
    };
    service
        .rotate(&foreign_digest, Provider::Github, &fixture.key)
        .await
        .assert_problem(404, "digest-not-found");
    // Nothing was rotated: the original secret still passes with no grace involved.
    let answer = push(&service, &fixture, Provider::Github, "after-refusals").await;
    assert_eq!(answer.status, 201, "{}", answer.text);
}

/// The binary at trace level: neither secret nor the API key is in its output.
#[test]
fn no_secret_reaches_the_log() {
    let mut command = binary();
    command
        .args(["--port", "0", "--db", ":memory:"])
        .env("RUST_LOG", "trace");
    let running = Running::start(command);
    let addr = running.addr();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let secrets = runtime.block_on(async {
        let client = reqwest::Client::new();
        let url = |path: &str| format!("http://{addr}{path}");
        let json = |r: reqwest::Response| async {
            serde_json::from_slice::<serde_json::Value>(&r.bytes().await.unwrap()).unwrap()
        };
        let created = json(client.post(url("/api/instances")).send().await.unwrap()).await;
        let (instance, key) = (
            created["id"].as_str().unwrap(),
            created["api_key"].as_str().unwrap(),
        );
        let post = |path: String, body: serde_json::Value| {
            client
                .post(url(&path))
                .bearer_auth(key)
                .header("content-type", "application/json")
                .body(body.to_string())
                .send()
        };
        let digest = json(
            post(
                format!("/api/{instance}/digests"),
                json!({"description": "d"}),
            )
            .await
            .unwrap(),
        )
        .await;
        let digest = digest["id"].as_str().unwrap();
        let inbox = json(
            post(
                format!("/api/{instance}/digests/{digest}/inboxes"),
                json!({"vcs": "gitlab", "name": "n"}),
            )
            .await
            .unwrap(),
        )
        .await;
        let (inbox_id, old) = (
            inbox["id"].as_str().unwrap(),
            inbox["secret"].as_str().unwrap(),
        );
        let rotated = json(
            post(
                format!("/api/{instance}/digests/{digest}/inboxes/{inbox_id}/secret"),
                json!({}),
            )
            .await
            .unwrap(),
        )
        .await;
        let new = rotated["secret"].as_str().unwrap();
        for token in [old, new, "whs_wrong"] {
            client
                .post(url(&format!("/api/{instance}/inboxes/{inbox_id}/commits")))
                .header("content-type", "application/json")
                .header("x-gitlab-event", "Push Hook")
                .header("x-gitlab-token", token)
                .body(gitlab_push())
                .send()
                .await
                .unwrap();
        }
        [key.to_owned(), old.to_owned(), new.to_owned()]
    });
    // SIGTERM, so the log writer flushes before the process ends.
    let log = running.terminate().stderr;
    assert!(log.contains("inbox secret rotated"), "{log}");
    assert!(log.contains("final ledger"), "{log}");
    for secret in secrets {
        assert!(!log.contains(&secret), "{secret} in {log}");
    }
}
