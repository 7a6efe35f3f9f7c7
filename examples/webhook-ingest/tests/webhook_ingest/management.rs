//! The management API: instances looked up by key, wrong keys and unknown ids refused, bad
//! bodies creating nothing, and the error pages behind the admin token.

use serde_json::json;
use webhook_ingest::ids::MAX_ID_BYTES;

use crate::common::*;

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
    assert_eq!(by_header.body["inboxes"], 5);
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
        json!({ "digests": 1, "inboxes": 5, "deliveries": 0, "redeliveries": 0, "commits": 0 })
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

/// A path id of another shape than an id (too long, a space) names nothing: 404 with the
/// code of its kind, and only once the API key is checked, as for any id that does not exist.
#[tokio::test]
async fn path_ids_of_another_shape_are_unknown_once_the_key_is_checked() {
    let (service, fixture) = Service::with_fixture().await;
    let long = "i".repeat(MAX_ID_BYTES + 1);
    let (instance, digest) = (&fixture.instance, &fixture.digest);
    let get = |path: String, key: &str| {
        let request = service.client.get(service.url(&path)).bearer_auth(key);
        service.send(request)
    };
    let cases = [
        (format!("/api/instances/{long}"), 404, "instance-not-found"),
        (format!("/api/{long}/stats"), 404, "instance-not-found"),
        (
            format!("/api/{instance}/digests/dg%20x/commits"),
            404,
            "digest-not-found",
        ),
        (
            format!("/api/{instance}/digests/{long}/commits"),
            404,
            "digest-not-found",
        ),
        (
            format!("/api/{instance}/inboxes/{long}/failures"),
            404,
            "inbox-not-found",
        ),
        (
            format!("/api/{instance}/digests/{digest}/inboxes/ib%20x/catchup"),
            404,
            "inbox-not-found",
        ),
    ];
    for (path, status, code) in &cases {
        get(path.clone(), &fixture.key)
            .await
            .assert_problem(*status, code);
        // The key first: a wrong one is 401 whatever the ids after the instance.
        if !path.starts_with(&format!("/api/{long}")) && !path.contains("/instances/") {
            let wrong = get(path.clone(), "key_wrong").await;
            wrong.assert_problem(401, "bad-api-key");
        }
    }
    let rotate = format!("/api/{instance}/digests/{digest}/inboxes/{long}/secret");
    let rotated = service.post_json(&rotate, &fixture.key, json!({})).await;
    rotated.assert_problem(404, "inbox-not-found");
}
