//! Deliveries signed as each provider signs them, and what the ledger counted of them.

use faultline::ledger::Snapshot;
use webhook_ingest::provider;
use webhook_ingest::verify::webhook;

use super::{Fixture, Service};

/// The headers a provider sends with a delivery, signed with the inbox's secret.
pub fn provider_headers(
    fixture: &Fixture,
    provider: provider::Provider,
    event: &str,
    id: &str,
    body: &[u8],
) -> Headers {
    let (_, secret) = fixture.inbox(provider);
    let signature = format!("sha256={}", webhook::sign(secret.as_bytes(), body));
    let own = match provider {
        provider::Provider::Github => [
            ("x-github-event", event.to_owned()),
            ("x-github-delivery", id.to_owned()),
            ("x-hub-signature-256", signature),
        ],
        provider::Provider::Gitlab => [
            ("x-gitlab-event", event.to_owned()),
            ("idempotency-key", id.to_owned()),
            ("x-gitlab-token", secret.to_owned()),
        ],
        provider::Provider::Bitbucket => [
            ("x-event-key", event.to_owned()),
            ("x-request-uuid", id.to_owned()),
            ("x-hub-signature", signature),
        ],
        // Gitea's formula: the hex HMAC-SHA256 of the body, no prefix.
        provider::Provider::Gitea => [
            ("x-gitea-event", event.to_owned()),
            ("x-gitea-delivery", id.to_owned()),
            ("x-gitea-signature", webhook::sign(secret.as_bytes(), body)),
        ],
        provider::Provider::Forgejo => [
            ("x-forgejo-event", event.to_owned()),
            ("x-forgejo-delivery", id.to_owned()),
            (
                "x-forgejo-signature",
                webhook::sign(secret.as_bytes(), body),
            ),
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
    provider: provider::Provider,
    event: &str,
    id: &str,
    body: &[u8],
) -> reqwest::RequestBuilder {
    let headers = provider_headers(fixture, provider, event, id, body);
    post_to(service, &fixture.hook_path(provider), headers, body)
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

/// The Standard Webhooks headers GitLab sends with a signing token: `body` signed with the
/// inbox's `whsec_` secret as delivery `id` at `timestamp` (Unix seconds), by the
/// specification's formula, the base64 HMAC-SHA256 of `id.timestamp.body`.
pub fn standard_webhooks(
    secret: &str,
    id: &str,
    timestamp: u64,
    body: &[u8],
) -> [(&'static str, String); 3] {
    use base64::Engine;
    use hmac::{KeyInit, Mac};

    let encoded = secret.strip_prefix("whsec_").expect("a signing token");
    let key = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .unwrap();
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    let tag = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    [
        ("webhook-id", id.to_owned()),
        ("webhook-timestamp", timestamp.to_string()),
        ("webhook-signature", format!("v1,{tag}")),
    ]
}

/// Seconds since the Unix epoch, `offset` seconds from now.
pub fn unix_now(offset: i64) -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    now.checked_add_signed(offset).unwrap()
}

/// The headers of a GitLab delivery signed with Standard Webhooks instead of its token.
pub fn gitlab_signed_headers(fixture: &Fixture, id: &str, timestamp: u64, body: &[u8]) -> Headers {
    let (_, secret) = fixture.inbox(provider::Provider::Gitlab);
    let signed = standard_webhooks(secret, id, timestamp, body);
    let mut headers = provider_headers(fixture, provider::Provider::Gitlab, "Push Hook", id, body)
        .without("x-gitlab-token");
    for (name, value) in signed {
        headers = headers.set(name, value);
    }
    headers
}

/// A response's status and what it says: its `status` member, or a problem's whole body
/// when it is not an answer, so that a failure names its code.
pub async fn status_and_said(response: reqwest::Response) -> (u16, String) {
    let status = response.status().as_u16();
    let value: serde_json::Value =
        serde_json::from_slice(&response.bytes().await.unwrap()).unwrap_or_default();
    let said = value["status"]
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned);
    (status, said)
}
