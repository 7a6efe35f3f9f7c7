//! Deliveries that must be refused: each built from a correctly signed one with one thing
//! changed, sent, and checked against the problem it must get.

use faultline::ledger::Snapshot;
use serde_json::json;
use webhook_ingest::provider::Provider;

use super::{post_to, provider_headers, Fixture, Headers, Service};

/// The delivery id every refused delivery carries: none of them is stored.
const REFUSED_DELIVERY_ID: &str = "d-1";

/// A delivery that must be refused with `status` and `code`, its problem's detail
/// containing `detail_has`.
pub struct RefusalCase<'a> {
    name: &'a str,
    request: reqwest::RequestBuilder,
    status: u16,
    code: &'a str,
    detail_has: &'a str,
}

/// A delivery being built: as `provider` signs `event` with its body, to `provider`'s inbox, until a
/// case changes a header, the body's signature or where it goes.
pub struct Draft<'a> {
    service: &'a Service,
    path: String,
    headers: Headers,
    body: Vec<u8>,
}

impl Service {
    /// `event` with `body` as `provider` sends it to its inbox in `fixture`, signed with the
    /// inbox's secret, for a case to change.
    pub fn signed<'a>(
        &'a self,
        fixture: &Fixture,
        provider: Provider,
        event: &str,
        body: &[u8],
    ) -> Draft<'a> {
        Draft {
            service: self,
            path: fixture.hook_path(provider),
            headers: provider_headers(fixture, provider, event, REFUSED_DELIVERY_ID, body),
            body: body.to_vec(),
        }
    }
}

impl<'a> Draft<'a> {
    /// With header `name` set to `value` in place of what the provider sent.
    pub fn set(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers = self.headers.set(name, value);
        self
    }

    /// Without header `name`.
    pub fn without(mut self, name: &str) -> Self {
        self.headers = self.headers.without(name);
        self
    }

    /// Posted to `path` instead of the signing provider's inbox.
    pub fn to(mut self, path: String) -> Self {
        self.path = path;
        self
    }

    /// Sends it and checks that it is answered the problem `code` with `status`, for a test
    /// that has one refusal to check among deliveries of other kinds.
    pub async fn assert_problem(self, status: u16, code: &str) {
        let request = post_to(self.service, &self.path, self.headers, &self.body);
        self.service
            .send(request)
            .await
            .assert_problem(status, code);
    }

    /// The case named `name`: it must be refused with `status` and `code`, its problem's
    /// detail containing `detail_has`.
    pub fn refused(
        self,
        name: &'a str,
        status: u16,
        code: &'a str,
        detail_has: &'a str,
    ) -> RefusalCase<'a> {
        RefusalCase {
            name,
            request: post_to(self.service, &self.path, self.headers, &self.body),
            status,
            code,
            detail_has,
        }
    }
}

/// Sends deliveries that must each be refused as their case says, checks that none leaks an
/// inbox secret and none stored anything, and returns the snapshot after them, every one
/// counted as a failure and `rejected` of them as axum's.
pub async fn assert_refused(
    service: &Service,
    fixture: &Fixture,
    cases: Vec<RefusalCase<'_>>,
    rejected: u64,
) -> Snapshot {
    let count = cases.len() as u64;
    let before = service.quiescent().await;
    for case in cases {
        let name = case.name;
        let answer = service.send(case.request).await;
        assert_eq!(answer.status, case.status, "{name}: {}", answer.text);
        answer.assert_problem(case.status, case.code);
        let detail = answer.body["detail"].as_str().unwrap();
        assert!(detail.contains(case.detail_has), "{name}: {detail}");
        for (_, _, secret) in &fixture.inboxes {
            assert!(
                !answer.text.contains(secret.as_str()),
                "{name} leaks a secret"
            );
        }
    }
    assert_eq!(
        service.stats(fixture).await,
        json!({ "digests": 1, "inboxes": 5, "deliveries": 0, "redeliveries": 0, "commits": 0 })
    );
    let after = service.quiescent().await;
    // The refusals, and the stats (1, ok).
    assert_eq!(after.started - before.started, count + 1, "{after:#?}");
    assert_eq!(after.ok - before.ok, 1, "{after:#?}");
    assert_eq!(after.failures() - before.failures(), count, "{after:#?}");
    assert_eq!(after.rejected - before.rejected, rejected, "{after:#?}");
    after
}
