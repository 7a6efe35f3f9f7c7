//! Deliveries signed as each provider signs them, and the refusals they must get.

use faultline::ledger::Snapshot;
use serde_json::json;
use webhook_ingest::webhook;

use super::{Fixture, Service};

/// The headers a provider sends with a delivery, signed with the inbox's secret.
pub fn provider_headers(
    fixture: &Fixture,
    vcs: webhook::Vcs,
    event: &str,
    id: &str,
    body: &[u8],
) -> Headers {
    let (_, secret) = fixture.inbox(vcs);
    let signature = format!("sha256={}", webhook::sign(secret.as_bytes(), body));
    let own = match vcs {
        webhook::Vcs::Github => [
            ("x-github-event", event.to_owned()),
            ("x-github-delivery", id.to_owned()),
            ("x-hub-signature-256", signature),
        ],
        webhook::Vcs::Gitlab => [
            ("x-gitlab-event", event.to_owned()),
            ("idempotency-key", id.to_owned()),
            ("x-gitlab-token", secret.to_owned()),
        ],
        webhook::Vcs::Bitbucket => [
            ("x-event-key", event.to_owned()),
            ("x-request-uuid", id.to_owned()),
            ("x-hub-signature", signature),
        ],
    };
    let mut headers = vec![("content-type", "application/json".to_owned())];
    headers.extend(own);
    Headers(headers)
}

/// Request headers that a case can change one by one (reqwest's builder appends, and the
/// service reads the first value).
pub struct Headers(pub Vec<(&'static str, String)>);

impl Headers {
    pub fn set(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.0.retain(|(n, _)| *n != name);
        self.0.push((name, value.into()));
        self
    }

    pub fn without(mut self, name: &str) -> Self {
        self.0.retain(|(n, _)| *n != name);
        self
    }
}

pub fn post_to(
    service: &Service,
    path: &str,
    headers: Headers,
    body: &[u8],
) -> reqwest::RequestBuilder {
    headers.0.into_iter().fold(
        service.client.post(service.url(path)).body(body.to_vec()),
        |request, (name, value)| request.header(name, value),
    )
}

/// A webhook delivery as the provider sends it.
pub fn delivery(
    service: &Service,
    fixture: &Fixture,
    vcs: webhook::Vcs,
    event: &str,
    id: &str,
    body: &[u8],
) -> reqwest::RequestBuilder {
    let headers = provider_headers(fixture, vcs, event, id, body);
    post_to(service, &fixture.hook_path(vcs), headers, body)
}

/// How many failures with `code` the snapshot counts, over every route, or on `route` only.
pub fn series_count(snapshot: &Snapshot, code: &str, route: Option<&str>) -> u64 {
    snapshot
        .series
        .iter()
        .filter(|s| s.code == code && route.is_none_or(|r| s.route == r))
        .map(|s| s.count)
        .sum()
}

/// The route every webhook delivery is counted under.
pub const HOOK_ROUTE: &str = "/api/{instance}/inboxes/{inbox}/commits";

/// Sends deliveries that must each be refused with `(status, code, detail fragment)`,
/// checks that none leaks an inbox secret and none stored anything, and returns the
/// snapshot after them, every one counted as a failure and `rejected` of them as axum's.
pub async fn assert_refused(
    service: &Service,
    fixture: &Fixture,
    cases: Vec<(&str, reqwest::RequestBuilder, u16, &str, &str)>,
    rejected: u64,
) -> Snapshot {
    let count = cases.len() as u64;
    let before = service.quiescent().await;
    for (name, request, status, code, detail_has) in cases {
        let answer = service.send(request).await;
        assert_eq!(answer.status, status, "{name}: {}", answer.text);
        answer.assert_problem(status, code);
        let detail = answer.body["detail"].as_str().unwrap();
        assert!(detail.contains(detail_has), "{name}: {detail}");
        for (_, _, secret) in &fixture.inboxes {
            assert!(
                !answer.text.contains(secret.as_str()),
                "{name} leaks a secret"
            );
        }
    }
    assert_eq!(
        service.stats(fixture).await,
        json!({ "digests": 1, "inboxes": 3, "deliveries": 0, "redeliveries": 0, "commits": 0 })
    );
    let after = service.quiescent().await;
    assert!(after.is_balanced(), "{after:#?}");
    assert_eq!(after.failures() - before.failures(), count, "{after:#?}");
    assert_eq!(after.rejected - before.rejected, rejected, "{after:#?}");
    after
}
