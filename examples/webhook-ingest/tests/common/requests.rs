//! Deliveries signed as each provider signs them, and what the ledger counted of them.

use faultline::ledger::Snapshot;
use webhook_ingest::verify::webhook;

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
