//! The webhook ingestion service over real TCP: every route, every bad input, idempotent
//! redelivery under concurrency, and the 503 providers retry.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};
use webhook_ingest::webhook;

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
    webhook::verify(webhook::Vcs::Github, &headers, secret, None, body).unwrap();
    assert!(webhook::verify(
        webhook::Vcs::Github,
        &headers,
        secret,
        None,
        b"Hello, World?"
    )
    .is_err());
}

#[tokio::test]
async fn an_instance_is_looked_up_by_header_or_query_key() {
    let (service, fixture) = Service::with_fixture().await;
    let before = service.ledger.snapshot();
    let instance_path = format!("/api/instances/{}", fixture.instance);
    let by_header = service
        .send(
            service
                .client
                .get(service.url(&instance_path))
                .bearer_auth(&fixture.key),
        )
        .await;
    assert_eq!(by_header.status, 200, "{}", by_header.text);
    assert_eq!(by_header.body["id"], fixture.instance.as_str());
    assert_eq!(by_header.body["digests"], 1);
    assert_eq!(by_header.body["inboxes"], 3);
    let by_query = service
        .send(
            service
                .client
                .get(service.url(&format!("{instance_path}?apiKey={}", fixture.key))),
        )
        .await;
    assert_eq!(by_query.status, 200, "{}", by_query.text);
    let health = service
        .send(service.client.get(service.url("/health")))
        .await;
    assert_eq!(health.status, 200);
    service.assert_counted(&before, 3, 0, 0).await;
}

#[tokio::test]
async fn wrong_or_missing_keys_are_refused_and_shown_only_to_the_admin() {
    let (service, fixture) = Service::with_fixture().await;
    let before = service.ledger.snapshot();
    let instance_path = format!("/api/instances/{}", fixture.instance);
    let wrong_key = "key_wrong_and_secret";
    let bad_key = service
        .send(
            service
                .client
                .get(service.url(&format!("{instance_path}?apiKey={wrong_key}"))),
        )
        .await;
    bad_key.assert_problem(401, "bad-api-key");
    assert_eq!(bad_key.headers["www-authenticate"], "Bearer");
    assert!(!bad_key.text.contains(wrong_key), "{}", bad_key.text);
    let no_key = service
        .send(service.client.get(service.url(&instance_path)))
        .await;
    no_key.assert_problem(401, "bad-api-key");
    let digests = format!("/api/{}/digests", fixture.instance);
    let foreign = service
        .post_json(&digests, "key_someone_else", json!({ "description": "x" }))
        .await;
    foreign.assert_problem(401, "bad-api-key");
    // The error groups and the inbox page: the same groups, behind the same token.
    let mut pages = Vec::new();
    for path in ["/errors", "/errors/inbox"] {
        let refused = service.send(service.client.get(service.url(path))).await;
        assert_eq!(refused.status, 401, "{path}: {}", refused.text);
        let page = service
            .send(
                service
                    .client
                    .get(service.url(path))
                    .bearer_auth(ADMIN_TOKEN),
            )
            .await;
        assert_eq!(page.status, 200, "{path}: {}", page.text);
        pages.push(page);
    }
    let (errors, inbox) = (&pages[0], &pages[1]);
    assert!(errors.text.contains("bad-api-key"), "{}", errors.text);
    assert!(!errors.text.contains(wrong_key), "{}", errors.text);
    assert!(inbox.text.starts_with("<!DOCTYPE html>"));
    assert!(inbox.text.contains("<td class=\"code\">bad-api-key</td>"));
    assert!(!inbox.text.contains(wrong_key));
    // The two pages succeeded; three wrong instance keys, and the two pages asked for
    // without the admin token, are the handlers' own.
    let after = service.assert_counted(&before, 2, 0, 5).await;
    assert_eq!(series_count(&after, "bad-api-key", None), 5);
    assert!(after
        .series
        .iter()
        .all(|s| !s.route.contains(&fixture.instance)));
}

#[tokio::test]
async fn unknown_instances_and_digests_are_404() {
    let (service, fixture) = Service::with_fixture().await;
    let before = service.ledger.snapshot();
    let unknown = service
        .send(
            service
                .client
                .get(service.url("/api/instances/in_nobody"))
                .bearer_auth(&fixture.key),
        )
        .await;
    unknown.assert_problem(404, "instance-not-found");
    let no_digest = service
        .post_json(
            &format!("/api/{}/digests/dg_nothing/inboxes", fixture.instance),
            &fixture.key,
            json!({ "vcs": "github", "name": "x" }),
        )
        .await;
    no_digest.assert_problem(404, "digest-not-found");
    let commits = service
        .send(
            service
                .client
                .get(service.url(&format!(
                    "/api/{}/digests/dg_nothing/commits",
                    fixture.instance
                )))
                .bearer_auth(&fixture.key),
        )
        .await;
    commits.assert_problem(404, "digest-not-found");
    let after = service.assert_counted(&before, 0, 0, 3).await;
    assert_eq!(series_count(&after, "instance-not-found", None), 1);
    assert_eq!(series_count(&after, "digest-not-found", None), 2);
    assert!(after
        .series
        .iter()
        .all(|s| !s.route.contains(&fixture.instance)));
}

#[tokio::test]
async fn bad_management_bodies_are_refused_and_create_nothing() {
    let (service, fixture) = Service::with_fixture().await;
    let before = service.ledger.snapshot();
    let digests = format!("/api/{}/digests", fixture.instance);
    let empty = service
        .post_json(&digests, &fixture.key, json!({ "description": " " }))
        .await;
    empty.assert_problem(422, "invalid-field");
    let missing = service
        .post_json(&digests, &fixture.key, json!({ "name": "x" }))
        .await;
    assert_eq!(missing.status, 422, "{}", missing.text);
    let not_json = service
        .send(
            service
                .client
                .post(service.url(&digests))
                .bearer_auth(&fixture.key)
                .body("description=x"),
        )
        .await;
    not_json.assert_problem(415, "unsupported-media-type");
    let inboxes = format!(
        "/api/{}/digests/{}/inboxes",
        fixture.instance, fixture.digest
    );
    let svn = service
        .post_json(
            &inboxes,
            &fixture.key,
            json!({ "vcs": "svn", "name": "old" }),
        )
        .await;
    svn.assert_problem(422, "invalid-field");
    assert_eq!(
        service.stats(&fixture).await,
        json!({ "digests": 1, "inboxes": 3, "deliveries": 0, "redeliveries": 0, "commits": 0 })
    );
    // The stats succeeded; the missing member and the form body are axum's rejections, the
    // two invalid fields the handlers' own.
    let after = service.assert_counted(&before, 1, 2, 2).await;
    assert_eq!(series_count(&after, "invalid-field", None), 2);
    assert!(after
        .series
        .iter()
        .all(|s| !s.route.contains(&fixture.instance)));
}

#[tokio::test]
async fn pushes_from_each_provider_are_stored_and_listed_newest_first() {
    let service = Service::start().await;
    let fixture = service.setup().await;
    let cases = [
        (
            webhook::Vcs::Github,
            "push",
            github_push(&["gh1", "gh2", "gh3"]),
            3,
        ),
        (webhook::Vcs::Gitlab, "Push Hook", gitlab_push(), 1),
        (webhook::Vcs::Bitbucket, "repo:push", bitbucket_push(), 2),
    ];
    for (vcs, event, body, stored) in &cases {
        let answer = service
            .send(delivery(
                &service,
                &fixture,
                *vcs,
                event,
                &format!("{vcs}-1"),
                body,
            ))
            .await;
        assert_eq!(answer.status, 201, "{vcs}: {}", answer.text);
        assert_eq!(answer.body["stored"], *stored, "{vcs}");
    }
    for vcs in webhook::Vcs::ALL {
        let event = match vcs {
            webhook::Vcs::Github => "ping",
            webhook::Vcs::Bitbucket => "diagnostics:ping",
            webhook::Vcs::Gitlab => continue,
        };
        let ping = service
            .send(delivery(&service, &fixture, vcs, event, "ping-1", b"{}"))
            .await;
        assert_eq!(ping.status, 204, "{vcs}: {}", ping.text);
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
    assert_eq!(shas, ["bb1", "bb2", "gl1", "gh3", "gh2", "gh1"]);
    assert_eq!(
        all.body["commits"][2],
        json!({
            "sha": "gl1", "message": "first", "author": "Grace",
            "timestamp": "2026-11-29T10:00:00+01:00", "repository": "acme/gadgets",
            "branch": "develop", "inbox": fixture.inbox(webhook::Vcs::Gitlab).0,
        })
    );
    assert_eq!(all.body["commits"][0]["branch"], "feature");
    assert_eq!(all.body["commits"][5]["repository"], "acme/widgets");
    assert_eq!(all.body["next_before"], Value::Null);

    // Paged by two: three pages, the last one without a cursor.
    let mut seen = Vec::new();
    let mut query = "?page_size=2".to_owned();
    for _ in 0..4 {
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
        json!({ "digests": 1, "inboxes": 3, "deliveries": 3, "redeliveries": 0, "commits": 6 })
    );
    let snapshot = service.quiescent().await;
    assert!(snapshot.is_balanced(), "{snapshot:#?}");
    assert_eq!(snapshot.failures(), 1, "{snapshot:#?}");
}

#[tokio::test]
async fn deliveries_with_bad_github_signatures_are_refused_and_counted() {
    use webhook::Vcs::Github;

    let (service, fixture) = Service::with_fixture().await;
    let push = github_push(&["a1"]);
    let h = |vcs, event, body: &[u8]| provider_headers(&fixture, vcs, event, "d-1", body);
    let send =
        |vcs, headers, body: &[u8]| post_to(&service, &fixture.hook_path(vcs), headers, body);
    let wrong_signature = format!("sha256={}", webhook::sign(b"not the secret", &push));
    let github = |name, value: &str, detail| {
        let headers = h(Github, "push", &push).set("x-hub-signature-256", value);
        (
            name,
            send(Github, headers, &push),
            401,
            "bad-signature",
            detail,
        )
    };
    let cases = vec![
        github("wrong github signature", &wrong_signature, "does not match"),
        github("signature that is not hex", "sha256=zz", "64 hex digits"),
        (
            "missing github signature",
            send(
                Github,
                h(Github, "push", &push).without("x-hub-signature-256"),
                &push,
            ),
            401,
            "bad-signature",
            "is missing",
        ),
        (
            "ignored event with a wrong signature",
            send(
                Github,
                h(Github, "issues", b"{}").set("x-hub-signature-256", &wrong_signature),
                b"{}",
            ),
            401,
            "bad-signature",
            "does not match the body",
        ),
    ];
    let after = assert_refused(&service, &fixture, cases, 0).await;
    assert_eq!(series_count(&after, "bad-signature", Some(HOOK_ROUTE)), 4);
}

#[tokio::test]
async fn a_wrong_bitbucket_signature_or_gitlab_token_is_refused_and_counted() {
    use webhook::Vcs::{Bitbucket, Gitlab};

    let (service, fixture) = Service::with_fixture().await;
    let push = github_push(&["a1"]);
    let h = |vcs, event, body: &[u8]| provider_headers(&fixture, vcs, event, "d-1", body);
    let send =
        |vcs, headers, body: &[u8]| post_to(&service, &fixture.hook_path(vcs), headers, body);
    let wrong_signature = format!("sha256={}", webhook::sign(b"not the secret", &push));
    let cases = vec![
        (
            "wrong bitbucket signature",
            send(
                Bitbucket,
                h(Bitbucket, "repo:push", &push).set("x-hub-signature", &wrong_signature),
                &push,
            ),
            401,
            "bad-signature",
            "X-Hub-Signature",
        ),
        (
            "wrong gitlab token",
            send(
                Gitlab,
                h(Gitlab, "Push Hook", &push).set("x-gitlab-token", "guess"),
                &push,
            ),
            401,
            "bad-signature",
            "X-Gitlab-Token",
        ),
    ];
    let after = assert_refused(&service, &fixture, cases, 0).await;
    assert_eq!(series_count(&after, "bad-signature", Some(HOOK_ROUTE)), 2);
}

#[tokio::test]
async fn malformed_pushes_are_refused_naming_the_missing_field() {
    use webhook::Vcs::{Bitbucket, Github, Gitlab};

    let (service, fixture) = Service::with_fixture().await;
    let send = |vcs, event, body: &[u8]| {
        let headers = provider_headers(&fixture, vcs, event, "d-1", body);
        post_to(&service, &fixture.hook_path(vcs), headers, body)
    };
    let no_commit_id = br#"{"ref":"refs/heads/main","repository":{"full_name":"a/b"},
        "commits":[{"message":"m","timestamp":"t","author":{"name":"n"}}]}"#;
    let no_branch = br#"{"repository":{"full_name":"a/b"},
        "push":{"changes":[{"new":{"type":"branch"},"commits":[]}]}}"#;
    let no_project = br#"{"ref":"x","commits":[]}"#;
    let malformed = "malformed-payload";
    let cases = vec![
        (
            "github push without a commit id",
            send(Github, "push", no_commit_id),
            400,
            malformed,
            "`commits[0].id`",
        ),
        (
            "bitbucket push without a branch name",
            send(Bitbucket, "repo:push", no_branch),
            400,
            malformed,
            "`push.changes[0].new.name`",
        ),
        (
            "gitlab push without a project",
            send(Gitlab, "Push Hook", no_project),
            400,
            malformed,
            "`project.path_with_namespace`",
        ),
        (
            "push that is not JSON",
            send(Github, "push", b"{not json"),
            400,
            malformed,
            "not valid JSON",
        ),
    ];
    let after = assert_refused(&service, &fixture, cases, 0).await;
    assert_eq!(series_count(&after, malformed, Some(HOOK_ROUTE)), 4);
}

#[tokio::test]
async fn deliveries_from_the_wrong_provider_or_with_bad_headers_are_refused() {
    use webhook::Vcs::{Github, Gitlab};

    let (service, fixture) = Service::with_fixture().await;
    let push = github_push(&["a1"]);
    let h = || provider_headers(&fixture, Github, "push", "d-1", &push);
    let send =
        |vcs, headers, body: &[u8]| post_to(&service, &fixture.hook_path(vcs), headers, body);
    let cases = vec![
        (
            "no provider header",
            send(Github, h().without("x-github-event"), &push),
            400,
            "unknown-provider",
            "X-GitHub-Event",
        ),
        (
            "github event to the gitlab inbox",
            send(Gitlab, h(), &push),
            400,
            "wrong-provider",
            "receives gitlab webhooks, not github",
        ),
        (
            "delivery id far too long",
            send(Github, h().set("x-github-delivery", "x".repeat(500)), &push),
            400,
            "bad-delivery-id",
            "X-GitHub-Delivery",
        ),
        (
            "unknown inbox",
            post_to(
                &service,
                &format!("/api/{}/inboxes/ib_nothing/commits", fixture.instance),
                h(),
                &push,
            ),
            404,
            "inbox-not-found",
            "ib_nothing",
        ),
    ];
    assert_refused(&service, &fixture, cases, 0).await;
}

#[tokio::test]
async fn deliveries_over_the_size_limit_or_not_json_are_refused() {
    let (service, fixture) = Service::with_fixture().await;
    let push = github_push(&["a1"]);
    let too_big = vec![b' '; TEST_BODY_LIMIT + 1];
    let github = webhook::Vcs::Github;
    let form = provider_headers(&fixture, github, "push", "d-1", &push)
        .set("content-type", "application/x-www-form-urlencoded");
    let big = provider_headers(&fixture, github, "push", "d-1", &too_big);
    let cases = vec![
        (
            "form-encoded push",
            post_to(&service, &fixture.hook_path(github), form, &push),
            415,
            "unsupported-media-type",
            "application/json",
        ),
        (
            "over the body limit",
            post_to(&service, &fixture.hook_path(github), big, &too_big),
            413,
            "payload-too-large",
            "",
        ),
    ];
    // Only the 413 is axum's.
    let after = assert_refused(&service, &fixture, cases, 1).await;
    assert_eq!(
        series_count(&after, "payload-too-large", Some(HOOK_ROUTE)),
        1
    );
}

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
                webhook::Vcs::Github,
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
        json!({ "digests": 1, "inboxes": 3, "deliveries": 1,
                "redeliveries": CONCURRENT_COPIES - 1, "commits": 2 })
    );
    let snapshot = service.quiescent().await;
    assert!(snapshot.is_balanced(), "{snapshot:#?}");
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
            webhook::Vcs::Github,
            "push",
            "retry-1",
            &body,
        )
    };

    service.store.set_failing(true);
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
    service.store.set_failing(false);

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
            webhook::Vcs::Github,
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
            delivery(&service, &fixture, webhook::Vcs::Github, "push", &id, &body).send(),
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
    assert!(snapshot.is_balanced(), "{snapshot:#?}");
    assert_eq!(snapshot.failures(), 0, "{snapshot:#?}");
}

#[tokio::test]
async fn events_not_stored_are_acknowledged_202_and_counted_per_provider_and_event() {
    use webhook::Vcs::{Bitbucket, Github, Gitlab};

    let service = Service::start().await;
    let fixture = service.setup().await;
    let before = service.quiescent().await;
    let sent = [
        (Gitlab, "Merge Request Hook", 3),
        (Github, "issues", 2),
        (Bitbucket, "pullrequest:created", 1),
    ];
    let mut requests = 0;
    for (vcs, event, times) in sent {
        for n in 0..times {
            let body = br#"{"object_kind":"something"}"#;
            let id = format!("{event}-{n}");
            let headers = provider_headers(&fixture, vcs, event, &id, body);
            let answer = service
                .send(post_to(&service, &fixture.hook_path(vcs), headers, body))
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
