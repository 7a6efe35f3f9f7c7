//! Gitea and Forgejo inboxes, and GitLab inboxes signed with Standard Webhooks: stored when
//! signed with the inbox secret, refused and counted otherwise, through the shared verifier.

use webhook_ingest::provider::Provider;
use webhook_ingest::verify::webhook;

use crate::common::*;

/// Past the five minutes GitLab's Standard Webhooks timestamp may be off, either way.
const OUT_OF_WINDOW_SECS: i64 = 6 * 60;

#[tokio::test]
async fn gitea_forgejo_and_signed_gitlab_pushes_are_stored() {
    let (service, fixture) = Service::with_fixture().await;
    for (provider, sha) in [(Provider::Gitea, "gt1"), (Provider::Forgejo, "fj1")] {
        let body = github_push(&[sha]);
        let answer = service
            .send(delivery(&service, &fixture, provider, "push", sha, &body))
            .await;
        assert_eq!(answer.status, 201, "{provider}: {}", answer.text);
        assert_eq!(answer.body["stored"], 1, "{provider}");
    }
    let body = gitlab_push();
    let signed = gitlab_signed_headers(&fixture, "msg_gl1", unix_now(0), &body);
    let answer = service
        .send(post_to(
            &service,
            &fixture.hook_path(Provider::Gitlab),
            signed,
            &body,
        ))
        .await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    // The same inbox still takes its token: the same delivery sent so is verified, then
    // recognized as already stored.
    let answer = service
        .send(delivery(
            &service,
            &fixture,
            Provider::Gitlab,
            "Push Hook",
            "msg_gl1",
            &body,
        ))
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.body["status"], "duplicate");
    assert_eq!(service.stats(&fixture).await["deliveries"], 3);
}

#[tokio::test]
async fn a_wrong_gitea_or_forgejo_signature_is_refused_and_counted() {
    use Provider::{Forgejo, Gitea};

    let (service, fixture) = Service::with_fixture().await;
    let push = github_push(&["a1"]);
    let wrong = webhook::sign(b"not the secret", &push);
    let cases = vec![
        service
            .signed(&fixture, Gitea, "push", &push)
            .set("x-gitea-signature", &wrong)
            .refused(
                "wrong gitea signature",
                401,
                "bad-signature",
                "X-Gitea-Signature",
            ),
        service
            .signed(&fixture, Forgejo, "push", &push)
            .set("x-forgejo-signature", &wrong)
            .refused(
                "wrong forgejo signature",
                401,
                "bad-signature",
                "does not match",
            ),
        service
            .signed(&fixture, Forgejo, "push", &push)
            .without("x-forgejo-signature")
            .refused(
                "missing forgejo signature",
                401,
                "bad-signature",
                "is missing",
            ),
        service
            .signed(&fixture, Gitea, "push", &push)
            .set("x-gitea-signature", format!("sha256={wrong}"))
            .refused(
                "gitea signature with a prefix",
                401,
                "bad-signature",
                "64 lower-case",
            ),
    ];
    let after = assert_refused(&service, &fixture, cases, 0).await;
    assert_eq!(series_count(&after, "bad-signature", Some(HOOK_ROUTE)), 4);
}

#[tokio::test]
async fn a_signed_gitlab_delivery_out_of_its_window_or_forged_is_refused() {
    let (service, fixture) = Service::with_fixture().await;
    let push = gitlab_push();
    let path = fixture.hook_path(Provider::Gitlab);
    let signed_at = |offset| gitlab_signed_headers(&fixture, "msg_1", unix_now(offset), &push);
    let forged = standard_webhooks("whsec_bm90IHRoZSBzZWNyZXQ=", "msg_1", unix_now(0), &push);
    let cases = [
        (
            "six minutes old",
            signed_at(-OUT_OF_WINDOW_SECS),
            "older than",
        ),
        (
            "six minutes ahead",
            signed_at(OUT_OF_WINDOW_SECS),
            "further ahead",
        ),
        (
            "another key",
            signed_at(0).set("webhook-signature", forged[2].1.clone()),
            "does not match",
        ),
        (
            "another id than was signed",
            signed_at(0).set("webhook-id", "msg_2"),
            "does not match",
        ),
    ];
    for (name, headers, detail) in cases {
        let answer = service.send(post_to(&service, &path, headers, &push)).await;
        answer.assert_problem(401, "bad-signature");
        let problem = answer.str("detail");
        assert!(problem.contains(detail), "{name}: {problem}");
        assert!(problem.contains("webhook-"), "{name}: {problem}");
    }
    assert_eq!(service.stats(&fixture).await["deliveries"], 0);
}
