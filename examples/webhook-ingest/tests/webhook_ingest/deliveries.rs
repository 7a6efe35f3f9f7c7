//! Deliveries accepted: GitHub's published signature vector, pushes from each provider
//! stored and listed newest first, and events not stored acknowledged and counted.

use serde_json::{json, Value};
use std::time::SystemTime;
use webhook_ingest::provider;
use webhook_ingest::verify::{keys, webhook};

use crate::common::*;

#[test]
fn githubs_published_signature_test_vector() {
    let secret = "It's a Secret to Everybody";
    let body = b"Hello, World!";
    let expected = "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
    assert_eq!(webhook::sign(secret.as_bytes(), body), expected);
    let mut headers = axum::http::HeaderMap::new();
    headers.insert(
        "x-hub-signature-256",
        format!("sha256={expected}").parse().unwrap(),
    );
    let inbox = webhook_ingest::store::InboxRow {
        id: webhook_ingest::ids::InboxId::parse("ib_1").unwrap(),
        digest_id: webhook_ingest::ids::DigestId::parse("dg_1").unwrap(),
        provider: provider::Provider::Github,
        secret: secret.into(),
        previous: None,
    };
    let check = |body: &'static [u8]| {
        let (provider, grace, now) = (inbox.provider, std::time::Duration::ZERO, SystemTime::now());
        keys::verify(&inbox, provider, &headers, &body.into(), grace, now)
    };
    check(body).unwrap();
    assert!(check(b"Hello, World?").is_err());
}

#[tokio::test]
async fn pushes_from_each_provider_are_stored_and_listed_newest_first() {
    let service = Service::start().await;
    let fixture = service.setup().await;
    let cases = [
        (
            provider::Provider::Github,
            "push",
            github_push(&["gh1", "gh2", "gh3"]),
            3,
        ),
        (provider::Provider::Gitlab, "Push Hook", gitlab_push(), 1),
        (
            provider::Provider::Bitbucket,
            "repo:push",
            bitbucket_push(),
            2,
        ),
        (provider::Provider::Gitea, "push", github_push(&["gt1"]), 1),
        (
            provider::Provider::Forgejo,
            "push",
            github_push(&["fj1"]),
            1,
        ),
    ];
    for (provider, event, body, stored) in &cases {
        let answer = service
            .send(delivery(
                &service,
                &fixture,
                *provider,
                event,
                &format!("{provider}-1"),
                body,
            ))
            .await;
        assert_eq!(answer.status, 201, "{provider}: {}", answer.text);
        assert_eq!(answer.body["stored"], *stored, "{provider}");
    }
    for provider in provider::Provider::ALL {
        let event = match provider {
            provider::Provider::Github => "ping",
            provider::Provider::Bitbucket => "diagnostics:ping",
            // GitLab, Gitea and Forgejo send no ping of their own.
            provider::Provider::Gitlab
            | provider::Provider::Gitea
            | provider::Provider::Forgejo => continue,
        };
        let ping = service
            .send(delivery(
                &service, &fixture, provider, event, "ping-1", b"{}",
            ))
            .await;
        assert_eq!(ping.status, 204, "{provider}: {}", ping.text);
    }

    let list = |query: &str| {
        service.client.get(service.url(&format!(
            "/api/{}/digests/{}/commits{query}",
            fixture.instance, fixture.digest
        )))
    };
    let all = service.send(list("").bearer_auth(&fixture.key)).await;
    assert_eq!(all.status, 200, "{}", all.text);
    let shas: Vec<&str> = all.body["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["sha"].as_str().unwrap())
        .collect();
    assert_eq!(
        shas,
        ["fj1", "gt1", "bb1", "bb2", "gl1", "gh3", "gh2", "gh1"]
    );
    assert_eq!(
        all.body["commits"][4],
        json!({
            "sha": "gl1", "message": "first", "author": "Grace",
            "timestamp": "2026-11-29T10:00:00+01:00", "repository": "acme/gadgets",
            "branch": "develop", "inbox": fixture.inbox(provider::Provider::Gitlab).0,
        })
    );
    assert_eq!(all.body["commits"][2]["branch"], "feature");
    assert_eq!(all.body["commits"][7]["repository"], "acme/widgets");
    assert_eq!(all.body["next_before"], Value::Null);

    // Paged by two: four pages, then an empty one without a cursor.
    let mut seen = Vec::new();
    let mut query = "?page_size=2".to_owned();
    for _ in 0..5 {
        let page = service
            .send(list(&format!("{query}&apiKey={}", fixture.key)))
            .await;
        assert_eq!(page.status, 200, "{}", page.text);
        for commit in page.body["commits"].as_array().unwrap() {
            seen.push(commit["sha"].as_str().unwrap().to_owned());
        }
        match page.body["next_before"].as_i64() {
            Some(before) => query = format!("?page_size=2&before={before}"),
            None => break,
        }
    }
    assert_eq!(seen, shas);
    let huge_page = service
        .send(list("?page_size=100000").bearer_auth(&fixture.key))
        .await;
    assert_eq!(huge_page.status, 200);
    let bad_page = service
        .send(list("?page_size=lots").bearer_auth(&fixture.key))
        .await;
    bad_page.assert_problem(400, "bad-request");

    assert_eq!(
        service.stats(&fixture).await,
        json!({ "digests": 1, "inboxes": 5, "deliveries": 5, "redeliveries": 0, "commits": 8 })
    );
    let snapshot = service.quiescent().await;
    // Ok: setup (2 + 5 inboxes), pushes (5), pings (2), the list (1), its pages (5: a full page carries a
    // cursor, so the fourth is followed by an empty one), the huge page (1) and the stats (1).
    // The bad page is axum's query rejection.
    assert_eq!((snapshot.started, snapshot.ok), (23, 22), "{snapshot:#?}");
    assert_eq!(
        (snapshot.rejected, snapshot.failures()),
        (1, 1),
        "{snapshot:#?}"
    );
}

#[tokio::test]
async fn events_not_stored_are_acknowledged_202_and_counted_per_provider_and_event() {
    use provider::Provider::{Bitbucket, Github, Gitlab};

    let service = Service::start().await;
    let fixture = service.setup().await;
    let before = service.quiescent().await;
    let sent = [
        (Gitlab, "Merge Request Hook", 3),
        (Github, "issues", 2),
        (Bitbucket, "pullrequest:created", 1),
    ];
    let mut requests = 0;
    for (provider, event, times) in sent {
        for n in 0..times {
            let body = br#"{"object_kind":"something"}"#;
            let id = format!("{event}-{n}");
            let headers = provider_headers(&fixture, provider, event, &id, body);
            let answer = service
                .send(post_to(
                    &service,
                    &fixture.hook_path(provider),
                    headers,
                    body,
                ))
                .await;
            assert_eq!(answer.status, 202, "{}", answer.text);
            assert_eq!(answer.body, json!({ "status": "ignored", "event": event }));
            requests += 1;
        }
    }
    let ping = post_to(
        &service,
        &fixture.hook_path(Github),
        provider_headers(&fixture, Github, "ping", "p-1", b"{}"),
        b"{}",
    );
    assert_eq!(service.send(ping).await.status, 204);

    let after = service.quiescent().await;
    assert_eq!(after.ok - before.ok, requests + 1);
    assert_eq!(after.failures(), before.failures());
    assert_eq!(service.stats(&fixture).await["deliveries"], 0);
    let metrics = service
        .send(service.client.get(service.url("/metrics")))
        .await;
    for line in [
        r#"webhook_ingest_ignored_events_total{provider="gitlab",event="Merge Request Hook"} 3"#,
        r#"webhook_ingest_ignored_events_total{provider="github",event="issues"} 2"#,
        r#"webhook_ingest_ignored_events_total{provider="bitbucket",event="pullrequest:created"} 1"#,
    ] {
        assert!(
            metrics.text.contains(line),
            "{line} not in {}",
            metrics.text
        );
    }
    assert!(!metrics.text.contains(r#"event="ping""#));
}
