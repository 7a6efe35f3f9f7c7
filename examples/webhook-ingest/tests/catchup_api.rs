//! Catch-up's hooks, limits and credentials against the stand-in GitHub, over TCP: an
//! organization's and an App's hook caught up across pages, through a secondary limit and
//! 5xx; credentials GitHub refuses reported once and not asked again; the credentials never
//! come back out of the API; the metrics pass promtool.

mod common;

use std::time::Duration;

use common::catchup::*;
use common::*;
use reqwest::Method;
use serde_json::json;
use webhook_ingest::provider::Provider;
use webhook_ingest::store::Store;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn organization_and_app_hooks_are_caught_up_across_pages_through_limits_and_5xx() {
    let github = std::sync::Arc::new(GitHubStandIn::start().await);
    let service = service_on(Store::open(":memory:").await.unwrap(), None, &github, None).await;
    let fixture = service.setup().await;
    let (_, secret) = fixture.inbox(Provider::Github);
    let target = service.url(&fixture.hook_path(Provider::Github));
    let public = include_str!("fixtures/catchup/app-key.pub.pem");
    let private = include_str!("fixtures/catchup/app-key.pem");
    let cases = [
        (
            HookKind::Organization("octo-org".into(), 8),
            Credential::Token(TOKEN.into()),
            json!({ "organization": "octo-org", "hook_id": 8, "token": TOKEN }),
        ),
        (
            HookKind::App,
            Credential::App(42, public.into()),
            json!({ "app_id": 42, "private_key": private }),
        ),
    ];
    let mut stored = 0;
    for (n, (kind, credential, body)) in cases.into_iter().enumerate() {
        let hook = github.add_hook(kind, credential, closed_port().await, secret.into());
        // 250 failed pushes: three pages of 100.
        push_many(&github, hook, &format!("hook{n}"), 250, None).await;
        github.set_target(hook, target.clone());
        let lists = github.calls(Method::GET, "/");
        // A secondary limit with Retry-After, then two 5xx: waited for and retried.
        github.script([
            Scripted {
                status: 429,
                headers: vec![("retry-after", "1".into())],
            },
            Scripted {
                status: 502,
                headers: vec![],
            },
            Scripted {
                status: 503,
                headers: vec![],
            },
        ]);
        let given = give(&service, &fixture, body).await;
        assert_eq!(given.status, 200, "{}", given.text);
        stored += 250;
        within_bound("every push of the hook stored", async || {
            deliveries(&service, &fixture).await == stored
        })
        .await;
        assert!(
            github.calls(Method::GET, "/") - lists >= 3 + 3,
            "three pages, after a limit and two 5xx"
        );
    }
    assert_eq!(
        github.redeliveries().len(),
        500,
        "one redelivery request per failed push"
    );
}

#[tokio::test]
async fn refused_credentials_are_reported_once_and_not_asked_again() {
    let (logs, _guard) = Logs::capture();
    let github = std::sync::Arc::new(GitHubStandIn::start().await);
    let service = service_on(Store::open(":memory:").await.unwrap(), None, &github, None).await;
    let fixture = service.setup().await;
    let (_, secret) = fixture.inbox(Provider::Github);
    let hook = github.add_hook(
        HookKind::Repository("octo/hello".into(), HOOK),
        Credential::Token(TOKEN.into()),
        closed_port().await,
        secret.into(),
    );
    push_many(&github, hook, "revoked", 2, None).await;
    let given = give_repository_hook(&service, &fixture, "ghp_revoked").await;
    assert!(
        !given.text.contains("ghp_revoked"),
        "the token never comes back: {}",
        given.text
    );
    within_bound("the refusal shows on /health", async || {
        refused_on_health(&service).await == 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(
        github.calls(Method::GET, "/"),
        1,
        "a refused token is not retried in a loop"
    );
    assert_eq!(
        logs.text()
            .matches("GitHub refuses its credentials")
            .count(),
        1,
        "said once: {}",
        logs.text()
    );
    assert!(
        !logs.text().contains("ghp_revoked"),
        "no credential in the log"
    );
    assert_eq!(
        series_sum(&service, "webhook_ingest_catchup_refused").await,
        1.0
    );
    // New credentials: the refusal is forgotten and the pushes come back.
    give_repository_hook(&service, &fixture, TOKEN).await;
    github.set_target(hook, service.url(&fixture.hook_path(Provider::Github)));
    within_bound("both pushes stored", async || {
        deliveries(&service, &fixture).await == 2
    })
    .await;
    assert_eq!(
        series_sum(&service, "webhook_ingest_catchup_refused").await,
        0.0
    );
}

#[tokio::test]
async fn the_api_keeps_the_credentials_secret_and_refuses_what_cannot_work() {
    let (logs, _guard) = Logs::capture();
    let github = GitHubStandIn::start().await;
    let service = service_on(Store::open(":memory:").await.unwrap(), None, &github, None).await;
    let fixture = service.setup().await;
    let (_, secret) = fixture.inbox(Provider::Github);
    let public = include_str!("fixtures/catchup/app-key.pub.pem");
    let private = include_str!("fixtures/catchup/app-key.pem");
    github.add_hook(
        HookKind::App,
        Credential::App(42, public.into()),
        closed_port().await,
        secret.into(),
    );
    let given = give(
        &service,
        &fixture,
        json!({ "app_id": 42, "private_key": private }),
    )
    .await;
    assert_eq!(given.status, 200, "{}", given.text);
    assert_eq!(given.body["hook"], json!({ "app": true }));
    assert_eq!(given.body["auth"], "app");
    let read = shown(&service, &fixture, &catchup_path(&fixture)).await;
    assert_eq!(read.status, 200);
    for answer in [&given, &read] {
        assert!(
            !answer.text.contains("PRIVATE KEY") && !answer.text.contains(&private[40..80]),
            "{}",
            answer.text
        );
    }
    within_bound("a pass asks with the App's JWT", async || {
        github.calls(Method::GET, "/app/hook/deliveries") >= 1
    })
    .await;
    let refused = [
        json!({ "repository": "octo/hello", "token": TOKEN }),
        json!({ "repository": "octo", "hook_id": 1, "token": TOKEN }),
        json!({ "repository": "octo/../x", "hook_id": 1, "token": TOKEN }),
        json!({ "organization": "octo", "hook_id": 1 }),
        json!({ "app_id": 42, "private_key": "not a key" }),
        json!({ "app_id": 42, "private_key": private, "token": TOKEN }),
        json!({ "repository": "octo/hello", "hook_id": -1, "token": TOKEN }),
        json!({ "repository": "octo/hello", "hook_id": 1, "token": " " }),
    ];
    for body in refused {
        give(&service, &fixture, body.clone())
            .await
            .assert_problem(422, "invalid-field");
    }
    let (gitlab, _) = fixture.inbox(Provider::Gitlab);
    let path = format!(
        "/api/{}/digests/{}/inboxes/{gitlab}/catchup",
        fixture.instance, fixture.digest
    );
    let request = service
        .client
        .put(service.url(&path))
        .bearer_auth(&fixture.key)
        .json(&json!({ "repository": "o/r", "hook_id": 1, "token": TOKEN }));
    service
        .send(request)
        .await
        .assert_problem(422, "invalid-field");
    let wrong_key = service
        .client
        .put(service.url(&catchup_path(&fixture)))
        .bearer_auth("key_wrong")
        .json(&json!({}));
    service
        .send(wrong_key)
        .await
        .assert_problem(401, "bad-api-key");
    let deleted = service
        .send(
            service
                .client
                .delete(service.url(&catchup_path(&fixture)))
                .bearer_auth(&fixture.key),
        )
        .await;
    assert_eq!(deleted.status, 204);
    let gone = shown(&service, &fixture, &catchup_path(&fixture)).await;
    gone.assert_problem(422, "invalid-field");
    // A pass asked with the App's JWT, and every refused body carried a token or the key:
    // none of them, nor the JWT (base64url of JSON, `eyJ…`), is in a log line.
    let text = logs.text();
    assert!(text.contains("catch-up credentials given"), "{text}");
    for secret in ["PRIVATE KEY", &private[40..80], TOKEN, "eyJ"] {
        assert!(!text.contains(secret), "{secret} in the log: {text}");
    }
}

#[tokio::test]
async fn the_catchup_metrics_pass_promtool() {
    let github = GitHubStandIn::start().await;
    let service = service_on(Store::open(":memory:").await.unwrap(), None, &github, None).await;
    let fixture = service.setup().await;
    give_repository_hook(&service, &fixture, TOKEN).await;
    within_bound("the inbox shows in /metrics", async || {
        let text = metrics_text(&service).await;
        [
            "last_success_timestamp_seconds{",
            "refused{",
            "redelivery_asked_total{",
        ]
        .iter()
        .all(|series| text.contains(&format!("webhook_ingest_catchup_{series}")))
    })
    .await;
    let text = metrics_text(&service).await;
    promtool_check_metrics(&text);
}
