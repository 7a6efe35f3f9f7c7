//! What the service's integration tests share: a service on a real TCP port, its setup, and
//! deliveries signed as each provider signs them.
#![allow(dead_code)] // each test crate uses its own part

use std::future::pending;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use faultline::ledger::Snapshot;
use faultline::Ledger;
use serde_json::{json, Value};
use webhook_ingest::store::Store;
use webhook_ingest::webhook;

/// The webhook body limit the test service runs with, small so a 413 costs nothing.
pub const TEST_BODY_LIMIT: usize = 16 * 1024;
/// The bearer token `/errors` asks for in the tests.
pub const ADMIN_TOKEN: &str = "admin-token-for-tests";
/// Copies of one delivery sent at the same moment.
pub const CONCURRENT_COPIES: usize = 20;

/// The environment variable that names a PostgreSQL database for the tests that need one:
/// `load-scripts/fleet/pg-fleet.sh` starts a throwaway server and runs them with it set.
pub const TEST_POSTGRES_ENV: &str = "WEBHOOK_INGEST_TEST_POSTGRES";

/// The PostgreSQL URL the tests may use, or `None`, said on stderr, when none was given.
pub fn test_postgres(test: &str) -> Option<String> {
    let url = std::env::var(TEST_POSTGRES_ENV)
        .ok()
        .filter(|u| !u.is_empty());
    if url.is_none() {
        eprintln!(
            "{test}: not run, no {TEST_POSTGRES_ENV} (load-scripts/fleet/pg-fleet.sh runs it)"
        );
    }
    url
}

/// A running service; aborted, and its database removed, when dropped.
pub struct Service {
    pub addr: SocketAddr,
    pub ledger: Ledger,
    pub store: Store,
    pub client: reqwest::Client,
    pub db: Option<PathBuf>,
    pub task: tokio::task::JoinHandle<()>,
}

impl Service {
    /// On a throwaway in-memory store.
    pub async fn start() -> Self {
        Self::serve(
            Store::open(":memory:").await.unwrap(),
            None,
            TEST_BODY_LIMIT,
        )
        .await
    }

    /// On a fresh file, so reads run on the reader connections beside the writer, in WAL.
    pub async fn start_on_file(name: &str) -> Self {
        Self::start_on_file_with_limit(name, TEST_BODY_LIMIT).await
    }

    /// On a fresh file, taking webhook bodies up to `body_limit` bytes.
    pub async fn start_on_file_with_limit(name: &str, body_limit: usize) -> Self {
        let path = temp_path(name, "db");
        let store = Store::open(path.to_str().unwrap()).await.unwrap();
        Self::serve(store, Some(path), body_limit).await
    }

    /// On the PostgreSQL database at `url`, which every service started on it shares.
    pub async fn start_on_postgres(url: &str, body_limit: usize) -> Self {
        Self::serve(Store::open(url).await.unwrap(), None, body_limit).await
    }

    pub async fn serve(store: Store, db: Option<PathBuf>, body_limit: usize) -> Self {
        Self::serve_spooled(store, db, body_limit, None).await
    }

    /// With `spool` taking what the store cannot, drained by the service's drainer.
    pub async fn serve_spooled(
        store: Store,
        db: Option<PathBuf>,
        body_limit: usize,
        spool: Option<webhook_ingest::spool::Spool>,
    ) -> Self {
        let config = webhook_ingest::Config {
            spool,
            ..Self::config(body_limit)
        };
        Self::serve_with(store, db, config).await
    }

    /// The configuration the tests serve with unless they say otherwise.
    pub fn config(body_limit: usize) -> webhook_ingest::Config {
        webhook_ingest::Config {
            body_limit,
            admin_token: Some(ADMIN_TOKEN.to_owned()),
            ..webhook_ingest::Config::default()
        }
    }

    pub async fn serve_with(
        store: Store,
        db: Option<PathBuf>,
        config: webhook_ingest::Config,
    ) -> Self {
        faultline::install_panic_hook();
        let (app, ledger) = webhook_ingest::app(store.clone(), config);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let limits = webhook_ingest::serve::Limits::default();
            let connections = webhook_ingest::serve::Connections::default();
            webhook_ingest::serve::serve(listener, app, limits, connections, pending()).await;
        });
        Self {
            addr,
            ledger,
            store,
            client: reqwest::Client::new(),
            db,
            task,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Waits until no request is in flight, then takes a snapshot.
    pub async fn quiescent(&self) -> Snapshot {
        let settled = tokio::time::timeout(Duration::from_secs(10), self.ledger.quiescent()).await;
        let snapshot = self.ledger.snapshot();
        assert!(settled.is_ok(), "still in flight: {snapshot:#?}");
        snapshot
    }

    pub async fn send(&self, request: reqwest::RequestBuilder) -> Answer {
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.unwrap();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Answer {
            status,
            headers,
            body,
            text,
        }
    }

    pub async fn post_json(&self, path: &str, key: &str, body: Value) -> Answer {
        self.send(
            self.client
                .post(self.url(path))
                .bearer_auth(key)
                .header("content-type", "application/json")
                .body(body.to_string()),
        )
        .await
    }

    /// An instance, one digest, and one inbox per provider.
    pub async fn setup(&self) -> Fixture {
        let created = self
            .send(self.client.post(self.url("/api/instances")))
            .await;
        assert_eq!(created.status, 201, "{}", created.text);
        let instance = created.str("id");
        let key = created.str("api_key");
        let digest = self
            .post_json(
                &format!("/api/{instance}/digests"),
                &key,
                json!({ "description": "platform team" }),
            )
            .await;
        assert_eq!(digest.status, 201, "{}", digest.text);
        let digest = digest.str("id");
        let mut inboxes = Vec::new();
        for vcs in webhook::Vcs::ALL {
            let inbox = self
                .post_json(
                    &format!("/api/{instance}/digests/{digest}/inboxes"),
                    &key,
                    json!({ "vcs": vcs.as_str(), "name": format!("{vcs} hooks") }),
                )
                .await;
            assert_eq!(inbox.status, 201, "{}", inbox.text);
            assert_eq!(
                inbox.str("url"),
                self.url(&format!(
                    "/api/{instance}/inboxes/{}/commits",
                    inbox.str("id")
                ))
            );
            inboxes.push((vcs, inbox.str("id"), inbox.str("secret")));
        }
        Fixture {
            instance,
            key,
            digest,
            inboxes,
        }
    }

    pub async fn stats(&self, fixture: &Fixture) -> Value {
        let answer = self
            .send(
                self.client
                    .get(self.url(&format!("/api/{}/stats", fixture.instance)))
                    .bearer_auth(&fixture.key),
            )
            .await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        answer.body
    }
}

/// A fresh path in the temporary directory, unique to this process and moment.
pub fn temp_path(name: &str, extension: &str) -> PathBuf {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    std::env::temp_dir().join(format!(
        "faultline-test-{name}-{}-{nanos}.{extension}",
        std::process::id()
    ))
}

impl Drop for Service {
    fn drop(&mut self) {
        self.task.abort();
        if let Some(path) = &self.db {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
            }
        }
    }
}

pub struct Answer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
    pub text: String,
}

impl Answer {
    pub fn str(&self, member: &str) -> String {
        self.body[member]
            .as_str()
            .unwrap_or_else(|| panic!("no `{member}` in {}", self.text))
            .to_owned()
    }

    /// Checks a problem response: status, code, content type, and the request id echoed.
    pub fn assert_problem(&self, status: u16, code: &str) {
        assert_eq!(self.status, status, "{}", self.text);
        assert_eq!(
            self.headers["content-type"], "application/problem+json",
            "{}",
            self.text
        );
        assert_eq!(self.body["code"], code, "{}", self.text);
        assert_eq!(self.body["status"], status);
        assert_eq!(
            self.headers["x-request-id"].to_str().unwrap(),
            self.body["request_id"].as_str().unwrap()
        );
    }
}

pub struct Fixture {
    pub instance: String,
    pub key: String,
    pub digest: String,
    pub inboxes: Vec<(webhook::Vcs, String, String)>,
}

impl Fixture {
    pub fn inbox(&self, vcs: webhook::Vcs) -> (&str, &str) {
        let (_, id, secret) = self.inboxes.iter().find(|(v, _, _)| *v == vcs).unwrap();
        (id, secret)
    }

    pub fn hook_path(&self, vcs: webhook::Vcs) -> String {
        format!(
            "/api/{}/inboxes/{}/commits",
            self.instance,
            self.inbox(vcs).0
        )
    }
}

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

pub fn github_push(shas: &[&str]) -> Vec<u8> {
    let commits: Vec<Value> = shas
        .iter()
        .map(|sha| {
            json!({
                "id": sha,
                "message": format!("commit {sha}"),
                "timestamp": "2026-11-29T10:00:00Z",
                "author": { "name": "Ada" },
            })
        })
        .collect();
    json!({
        "ref": "refs/heads/main",
        "repository": { "full_name": "acme/widgets" },
        "commits": commits,
    })
    .to_string()
    .into_bytes()
}

pub fn gitlab_push() -> Vec<u8> {
    json!({
        "object_kind": "push",
        "ref": "refs/heads/develop",
        "project": { "path_with_namespace": "acme/gadgets" },
        "commits": [
            { "id": "gl1", "message": "first", "timestamp": "2026-11-29T10:00:00+01:00",
              "author": { "name": "Grace", "email": "grace@example.com" } },
        ],
    })
    .to_string()
    .into_bytes()
}

pub fn bitbucket_push() -> Vec<u8> {
    json!({
        "repository": { "full_name": "acme/gizmos" },
        "push": { "changes": [
            { "new": { "type": "branch", "name": "feature" },
              "commits": [
                { "hash": "bb2", "message": "second", "date": "2026-11-29T10:01:00+00:00",
                  "author": { "raw": "Linus <linus@example.com>" } },
                { "hash": "bb1", "message": "first", "date": "2026-11-29T10:00:00+00:00",
                  "author": { "raw": "Linus <linus@example.com>" } },
              ] },
            { "new": null, "commits": [] },
        ] },
    })
    .to_string()
    .into_bytes()
}

impl Service {
    /// A service on an in-memory store with an instance, a digest and an inbox per provider.
    pub async fn with_fixture() -> (Self, Fixture) {
        let service = Self::start().await;
        let fixture = service.setup().await;
        (service, fixture)
    }

    /// Waits for quiet, checks the ledger balances and that the requests since `before`
    /// ended as exactly `ok`, `rejected` (axum's) and `handled` (the handlers' own).
    pub async fn assert_counted(
        &self,
        before: &Snapshot,
        ok: u64,
        rejected: u64,
        handled: u64,
    ) -> Snapshot {
        let after = self.quiescent().await;
        assert!(after.is_balanced(), "{after:#?}");
        assert_eq!(after.ok - before.ok, ok, "{after:#?}");
        assert_eq!(after.rejected - before.rejected, rejected, "{after:#?}");
        assert_eq!(after.handled - before.handled, handled, "{after:#?}");
        after
    }
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
