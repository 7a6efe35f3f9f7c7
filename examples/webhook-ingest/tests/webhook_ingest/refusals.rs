//! Deliveries refused, one test per failure family: each case is a correctly signed delivery
//! with one thing changed, and none of them stores anything or leaks a secret.

use webhook_ingest::ids::MAX_ID_BYTES;
use webhook_ingest::provider::Provider;
use webhook_ingest::verify::webhook;

use crate::common::*;

/// The signature of `body` under a secret no inbox has.
fn wrong_signature(body: &[u8]) -> String {
    format!("sha256={}", webhook::sign(b"not the secret", body))
}

#[tokio::test]
async fn deliveries_with_bad_github_signatures_are_refused_and_counted() {
    use Provider::Github;

    let (service, fixture) = Service::with_fixture().await;
    let push = github_push(&["a1"]);
    let wrong = wrong_signature(&push);
    let push_with = |signature: &str| {
        service
            .signed(&fixture, Github, "push", &push)
            .set("x-hub-signature-256", signature)
    };
    let cases = vec![
        push_with(&wrong).refused(
            "wrong github signature",
            401,
            "bad-signature",
            "does not match",
        ),
        push_with("sha256=zz").refused(
            "signature that is not hex",
            401,
            "bad-signature",
            "64 lower-case hex digits",
        ),
        service
            .signed(&fixture, Github, "push", &push)
            .without("x-hub-signature-256")
            .refused(
                "missing github signature",
                401,
                "bad-signature",
                "is missing",
            ),
        service
            .signed(&fixture, Github, "issues", b"{}")
            .set("x-hub-signature-256", &wrong)
            .refused(
                "ignored event with a wrong signature",
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
    use Provider::{Bitbucket, Gitlab};

    let (service, fixture) = Service::with_fixture().await;
    let push = github_push(&["a1"]);
    let cases = vec![
        service
            .signed(&fixture, Bitbucket, "repo:push", &push)
            .set("x-hub-signature", wrong_signature(&push))
            .refused(
                "wrong bitbucket signature",
                401,
                "bad-signature",
                "X-Hub-Signature",
            ),
        service
            .signed(&fixture, Gitlab, "Push Hook", &push)
            .set("x-gitlab-token", "guess")
            .refused("wrong gitlab token", 401, "bad-signature", "X-Gitlab-Token"),
    ];
    let after = assert_refused(&service, &fixture, cases, 0).await;
    assert_eq!(series_count(&after, "bad-signature", Some(HOOK_ROUTE)), 2);
}

#[tokio::test]
async fn malformed_pushes_are_refused_naming_the_missing_field() {
    use Provider::{Bitbucket, Github, Gitlab};

    let (service, fixture) = Service::with_fixture().await;
    let no_commit_id = br#"{"ref":"refs/heads/main","repository":{"full_name":"a/b"},
        "commits":[{"message":"m","timestamp":"t","author":{"name":"n"}}]}"#;
    let no_branch = br#"{"repository":{"full_name":"a/b"},
        "push":{"changes":[{"new":{"type":"branch"},"commits":[]}]}}"#;
    let no_project = br#"{"ref":"x","commits":[]}"#;
    let malformed = "malformed-payload";
    let cases = [
        (
            "github push without a commit id",
            Github,
            "push",
            &no_commit_id[..],
            "`commits[0].id`",
        ),
        (
            "bitbucket push without a branch name",
            Bitbucket,
            "repo:push",
            no_branch,
            "`push.changes[0].new.name`",
        ),
        (
            "gitlab push without a project",
            Gitlab,
            "Push Hook",
            no_project,
            "`project.path_with_namespace`",
        ),
        (
            "push that is not JSON",
            Github,
            "push",
            b"{not json",
            "not valid JSON",
        ),
    ]
    .map(|(name, provider, event, body, detail_has)| {
        service
            .signed(&fixture, provider, event, body)
            .refused(name, 400, malformed, detail_has)
    });
    let after = assert_refused(&service, &fixture, cases.into(), 0).await;
    assert_eq!(series_count(&after, malformed, Some(HOOK_ROUTE)), 4);
}

#[tokio::test]
async fn deliveries_from_the_wrong_provider_or_with_bad_headers_are_refused() {
    use Provider::{Github, Gitlab};

    let (service, fixture) = Service::with_fixture().await;
    let push = github_push(&["a1"]);
    let github_push = || service.signed(&fixture, Github, "push", &push);
    let cases = vec![
        github_push().without("x-github-event").refused(
            "no provider header",
            400,
            "unknown-provider",
            "X-GitHub-Event",
        ),
        github_push().to(fixture.hook_path(Gitlab)).refused(
            "github event to the gitlab inbox",
            400,
            "wrong-provider",
            "receives gitlab webhooks, not github",
        ),
        github_push()
            .set("x-github-delivery", "x".repeat(500))
            .refused(
                "delivery id far too long",
                400,
                "bad-delivery-id",
                "X-GitHub-Delivery",
            ),
        github_push()
            .to(format!(
                "/api/{}/inboxes/ib_nothing/commits",
                fixture.instance
            ))
            .refused("unknown inbox", 404, "inbox-not-found", "ib_nothing"),
    ];
    assert_refused(&service, &fixture, cases, 0).await;
}

#[tokio::test]
async fn deliveries_over_the_size_limit_or_not_json_are_refused() {
    use Provider::Github;

    let (service, fixture) = Service::with_fixture().await;
    let push = github_push(&["a1"]);
    let too_big = vec![b' '; TEST_BODY_LIMIT + 1];
    let cases = vec![
        service
            .signed(&fixture, Github, "push", &push)
            .set("content-type", "application/x-www-form-urlencoded")
            .refused(
                "form-encoded push",
                415,
                "unsupported-media-type",
                "application/json",
            ),
        service.signed(&fixture, Github, "push", &too_big).refused(
            "over the body limit",
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

/// A path id of another shape than an id (too long, a space) names no inbox: it is answered
/// as an inbox that does not exist, after the checks that come before the inbox's (the
/// content type), and a body too large is still axum's 413; nothing is kept for it.
#[tokio::test]
async fn path_ids_of_another_shape_are_unknown_inboxes_checked_in_the_usual_order() {
    use Provider::Github;

    let (service, fixture) = Service::with_fixture().await;
    let push = github_push(&["a1"]);
    let too_big = vec![b' '; TEST_BODY_LIMIT + 1];
    let long = "i".repeat(MAX_ID_BYTES + 1);
    let (inbox, _) = fixture.inbox(Github);
    let to_inbox = |id: &str| format!("/api/{}/inboxes/{id}/commits", fixture.instance);
    let signed = |body: &[u8]| service.signed(&fixture, Github, "push", body);
    let cases = vec![
        signed(&push).to(to_inbox(&long)).refused(
            "inbox id too long",
            404,
            "inbox-not-found",
            &long,
        ),
        signed(&push).to(to_inbox("ib%20x")).refused(
            "inbox id with a space",
            404,
            "inbox-not-found",
            "ib x",
        ),
        signed(&push)
            .to(format!("/api/{long}/inboxes/{inbox}/commits"))
            .refused("instance id too long", 404, "inbox-not-found", inbox),
        signed(&push)
            .to(to_inbox("ib%20x"))
            .set("content-type", "text/plain")
            .refused(
                "not JSON, to an inbox id with a space",
                415,
                "unsupported-media-type",
                "application/json",
            ),
        signed(&too_big).to(to_inbox(&long)).refused(
            "over the body limit",
            413,
            "payload-too-large",
            "",
        ),
    ];
    let after = assert_refused(&service, &fixture, cases, 1).await;
    assert_eq!(series_count(&after, "inbox-not-found", Some(HOOK_ROUTE)), 3);
    for (_, inbox, _) in &fixture.inboxes {
        let path = format!("/api/{}/inboxes/{inbox}/failures", fixture.instance);
        let request = service
            .client
            .get(service.url(&path))
            .bearer_auth(&fixture.key);
        let listed = service.send(request).await;
        assert_eq!(listed.body["failures"], serde_json::json!([]), "{inbox}");
    }
}
