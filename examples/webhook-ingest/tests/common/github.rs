//! A stand-in for GitHub, on a real TCP port of 127.0.0.1: its webhooks send pushes to the
//! service, signed with the inbox's secret, and record each delivery as GitHub records it
//! (failed when the service could not be reached or did not answer 2xx); its REST API lists a
//! hook's deliveries (newest first, `per_page`, cursor pagination through `Link`) and
//! redelivers one, sending it again with the same `X-GitHub-Delivery`, for repository,
//! organization and App hooks. It answers 401 to wrong credentials (an App's JWT is verified
//! with the App's public key), keeps a primary rate limit with GitHub's headers, and can be
//! told to answer the next calls with a secondary limit or a 5xx.
//!
//! `tests/catchup_contract.rs` checks its answers against GitHub's OpenAPI description.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use webhook_ingest::verify::webhook;

/// GitHub's most deliveries per page, and its default.
const MAX_PER_PAGE: usize = 100;
const DEFAULT_PER_PAGE: usize = 30;
/// How long the stand-in waits for the service's answer to a delivery: GitHub's 10 s.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(10);

/// Which hook, as GitHub's paths name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookKind {
    Repository(String, i64),
    Organization(String, i64),
    App,
}

/// What the hook's API calls must carry.
#[derive(Clone)]
pub enum Credential {
    Token(String),
    /// The App's id and its public key in PEM.
    App(i64, String),
}

/// One delivery as GitHub records it.
#[derive(Clone)]
pub struct Record {
    pub id: i64,
    pub guid: String,
    pub status_code: i64,
    pub redelivery: bool,
    pub delivered_at: String,
    pub body: Arc<Vec<u8>>,
}

struct HookState {
    kind: HookKind,
    credential: Credential,
    target: String,
    secret: String,
    records: Vec<Record>,
}

/// An answer the next API call gets instead of its own.
#[derive(Clone)]
pub struct Scripted {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
}

#[derive(Default)]
struct Hub {
    hooks: Vec<HookState>,
    next_id: i64,
    script: VecDeque<Scripted>,
    /// Requests left in the primary window, and when it resets (Unix seconds).
    remaining: i64,
    reset: u64,
    /// How long a list answer takes, so that passes of two nodes overlap.
    list_delay: Duration,
    /// Redeliveries asked for are recorded, not sent.
    hold_redeliveries: bool,
    /// Every API call: its method and path.
    calls: Vec<(Method, String)>,
    /// Every redelivery asked for: hook index and delivery id.
    redeliveries: Vec<(usize, i64)>,
}

/// The running stand-in; stopped when dropped.
pub struct GitHubStandIn {
    pub addr: SocketAddr,
    hub: Arc<Mutex<Hub>>,
    client: reqwest::Client,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for GitHubStandIn {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

impl GitHubStandIn {
    pub async fn start() -> GitHubStandIn {
        let hub = Arc::new(Mutex::new(Hub {
            next_id: 1000,
            remaining: 5000,
            reset: now_unix() + 3600,
            ..Hub::default()
        }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = reqwest::Client::builder()
            .timeout(DELIVERY_TIMEOUT)
            .build()
            .unwrap();
        let state = (hub.clone(), client.clone());
        let app = axum::Router::new().fallback(api).with_state(state);
        let task = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        GitHubStandIn {
            addr,
            hub,
            client,
            task,
        }
    }

    /// The API's root, for `CatchUp::api`.
    pub fn api(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A hook that sends to `target` signed with `secret`; its index.
    pub fn add_hook(
        &self,
        kind: HookKind,
        credential: Credential,
        target: String,
        secret: String,
    ) -> usize {
        let mut hub = self.hub.lock().unwrap();
        hub.hooks.push(HookState {
            kind,
            credential,
            target,
            secret,
            records: Vec::new(),
        });
        hub.hooks.len() - 1
    }

    /// Where the hook sends from now on.
    pub fn set_target(&self, hook: usize, target: String) {
        self.hub.lock().unwrap().hooks[hook].target = target;
    }

    pub fn set_list_delay(&self, delay: Duration) {
        self.hub.lock().unwrap().list_delay = delay;
    }

    pub fn hold_redeliveries(&self, hold: bool) {
        self.hub.lock().unwrap().hold_redeliveries = hold;
    }

    /// The next API calls get these answers, in order.
    pub fn script(&self, answers: impl IntoIterator<Item = Scripted>) {
        self.hub.lock().unwrap().script.extend(answers);
    }

    /// Requests left in the primary window, which resets at `reset` (Unix seconds).
    pub fn set_rate(&self, remaining: i64, reset: u64) {
        let mut hub = self.hub.lock().unwrap();
        (hub.remaining, hub.reset) = (remaining, reset);
    }

    /// Sends a push of the hook as GitHub does and records it; the status it got (0 when the
    /// service could not be reached), or `recorded_as` when given (GitHub gave up waiting
    /// whatever the service did later).
    pub async fn push(
        &self,
        hook: usize,
        guid: &str,
        body: Vec<u8>,
        recorded_as: Option<i64>,
    ) -> i64 {
        let body = Arc::new(body);
        let (target, secret) = {
            let hub = self.hub.lock().unwrap();
            (
                hub.hooks[hook].target.clone(),
                hub.hooks[hook].secret.clone(),
            )
        };
        let status = send(&self.client, &target, &secret, guid, &body).await;
        record(
            &self.hub,
            hook,
            guid,
            body,
            recorded_as.unwrap_or(status),
            false,
        );
        status
    }

    pub fn records(&self, hook: usize) -> Vec<Record> {
        self.hub.lock().unwrap().hooks[hook].records.clone()
    }

    pub fn redeliveries(&self) -> Vec<(usize, i64)> {
        self.hub.lock().unwrap().redeliveries.clone()
    }

    /// The API calls so far whose path starts with `prefix`.
    pub fn calls(&self, method: Method, prefix: &str) -> usize {
        let hub = self.hub.lock().unwrap();
        hub.calls
            .iter()
            .filter(|(m, p)| *m == method && p.starts_with(prefix))
            .count()
    }
}

/// Sends one delivery; the status the service answered, 0 when it could not be reached.
async fn send(
    client: &reqwest::Client,
    target: &str,
    secret: &str,
    guid: &str,
    body: &[u8],
) -> i64 {
    let signature = format!("sha256={}", webhook::sign(secret.as_bytes(), body));
    let sent = client
        .post(target)
        .header("content-type", "application/json")
        .header("x-github-event", "push")
        .header("x-github-delivery", guid)
        .header("x-hub-signature-256", signature)
        .body(body.to_vec())
        .send()
        .await;
    sent.map_or(0, |answer| i64::from(answer.status().as_u16()))
}

fn record(
    hub: &Mutex<Hub>,
    hook: usize,
    guid: &str,
    body: Arc<Vec<u8>>,
    status_code: i64,
    redelivery: bool,
) {
    let mut hub = hub.lock().unwrap();
    hub.next_id += 1;
    let id = hub.next_id;
    let delivered_at = "2026-12-03T10:00:00Z".to_owned();
    let record = Record {
        id,
        guid: guid.to_owned(),
        status_code,
        redelivery,
        delivered_at,
        body,
    };
    hub.hooks[hook].records.push(record);
}

type Shared = (Arc<Mutex<Hub>>, reqwest::Client);

/// Every API call: the route read from the path, the credentials checked, the rate limit
/// kept.
async fn api(
    State((hub, client)): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Query(query): Query<Vec<(String, String)>>,
    _body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (hook_kind, rest) = match segments.as_slice() {
        ["repos", owner, repo, "hooks", id, rest @ ..] => (
            HookKind::Repository(format!("{owner}/{repo}"), id.parse().unwrap_or(-1)),
            rest,
        ),
        ["orgs", org, "hooks", id, rest @ ..] => (
            HookKind::Organization(org.to_string(), id.parse().unwrap_or(-1)),
            rest,
        ),
        ["app", "hook", rest @ ..] => (HookKind::App, rest),
        _ => return not_found(),
    };
    let rest: Vec<String> = rest.iter().map(|s| s.to_string()).collect();
    let (answer, list_delay) = {
        let mut hub = hub.lock().unwrap();
        hub.calls.push((method.clone(), path.clone()));
        if let Some(scripted) = hub.script.pop_front() {
            let mut response = (StatusCode::from_u16(scripted.status).unwrap(), axum::Json(json!({ "message": "scripted", "documentation_url": "https://docs.github.com/rest" }))).into_response();
            for (name, value) in scripted.headers {
                response.headers_mut().insert(name, value.parse().unwrap());
            }
            return response;
        }
        let Some(hook) = hub.hooks.iter().position(|h| h.kind == hook_kind) else {
            return not_found();
        };
        if !authorized(&hub.hooks[hook].credential, &headers) {
            return with_rate(&hub, (StatusCode::UNAUTHORIZED, axum::Json(json!({ "message": "Bad credentials", "documentation_url": "https://docs.github.com/rest", "status": "401" }))).into_response());
        }
        if hub.remaining <= 0 {
            let limited = (StatusCode::FORBIDDEN, axum::Json(json!({ "message": "API rate limit exceeded", "documentation_url": "https://docs.github.com/rest" }))).into_response();
            return with_rate(&hub, limited);
        }
        hub.remaining -= 1;
        let answer = match (method.clone(), rest.as_slice()) {
            (Method::GET, [d]) if d == "deliveries" => list(&hub, hook, &path, &query),
            (Method::POST, [d, id, a]) if d == "deliveries" && a == "attempts" => {
                redeliver(&mut hub, hook, id)
            }
            _ => Err(Box::new(not_found())),
        };
        (answer, hub.list_delay)
    };
    match answer {
        Ok(Answer::List(response)) => {
            tokio::time::sleep(list_delay).await;
            response
        }
        Ok(Answer::Redeliver(response, Some(send_again))) => {
            let (hub2, client2) = (hub.clone(), client.clone());
            tokio::spawn(async move {
                let (hook, target, secret, guid, body) = send_again;
                let status = send(&client2, &target, &secret, &guid, &body).await;
                record(&hub2, hook, &guid, body, status, true);
            });
            response
        }
        Ok(Answer::Redeliver(response, None)) => response,
        Err(response) => *response,
    }
}

type SendAgain = (usize, String, String, String, Arc<Vec<u8>>);

enum Answer {
    List(Response),
    Redeliver(Response, Option<SendAgain>),
}

fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        axum::Json(
            json!({ "message": "Not Found", "documentation_url": "https://docs.github.com/rest" }),
        ),
    )
        .into_response()
}

fn with_rate(hub: &Hub, mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert("x-ratelimit-limit", "5000".parse().unwrap());
    headers.insert(
        "x-ratelimit-remaining",
        hub.remaining.max(0).to_string().parse().unwrap(),
    );
    headers.insert("x-ratelimit-reset", hub.reset.to_string().parse().unwrap());
    headers.insert("x-ratelimit-resource", "core".parse().unwrap());
    response
}

fn authorized(credential: &Credential, headers: &HeaderMap) -> bool {
    let Some(bearer) = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    match credential {
        Credential::Token(token) => bearer == token,
        Credential::App(id, public) => {
            let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
            validation.set_required_spec_claims(&["exp", "iat", "iss"]);
            validation.set_issuer(&[id.to_string()]);
            let key = jsonwebtoken::DecodingKey::from_rsa_pem(public.as_bytes()).unwrap();
            jsonwebtoken::decode::<Value>(bearer, &key, &validation)
                .is_ok_and(|token| app_jwt_times_fit(&token.claims))
        }
    }
}

/// The longest an App's JWT may live from now, as GitHub refuses one "too far in the future".
const APP_JWT_MAX_SECS: u64 = 10 * 60;

/// GitHub's rules for an App's JWT beyond its signature and expiry ("Generating a JSON Web
/// Token (JWT) for a GitHub App"): issued in the past, and expiring within ten minutes.
fn app_jwt_times_fit(claims: &Value) -> bool {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let (Some(iat), Some(exp)) = (claims["iat"].as_u64(), claims["exp"].as_u64()) else {
        return false;
    };
    iat <= now && exp <= now + APP_JWT_MAX_SECS
}

/// A page of the hook's deliveries, newest first, from after the cursor.
fn list(
    hub: &Hub,
    hook: usize,
    path: &str,
    query: &[(String, String)],
) -> Result<Answer, Box<Response>> {
    let get = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let per_page = get("per_page")
        .and_then(|n| n.parse().ok())
        .unwrap_or(DEFAULT_PER_PAGE)
        .clamp(1, MAX_PER_PAGE);
    let before = match get("cursor") {
        Some(cursor) => cursor.strip_prefix("v1_").and_then(|id| id.parse::<i64>().ok()).ok_or_else(|| {
            Box::new((StatusCode::UNPROCESSABLE_ENTITY, axum::Json(json!({ "message": "Validation Failed", "documentation_url": "https://docs.github.com/rest" }))).into_response())
        })?,
        None => i64::MAX,
    };
    let mut records: Vec<&Record> = hub.hooks[hook]
        .records
        .iter()
        .filter(|r| r.id < before)
        .collect();
    records.sort_by_key(|r| std::cmp::Reverse(r.id));
    let page: Vec<Value> = records
        .iter()
        .take(per_page)
        .map(|r| item(r, &hub.hooks[hook].kind))
        .collect();
    let mut response = axum::Json(Value::Array(page)).into_response();
    if records.len() > per_page {
        let last = records[per_page - 1].id;
        let link =
            format!("<http://stand-in{path}?per_page={per_page}&cursor=v1_{last}>; rel=\"next\"");
        response.headers_mut().insert("link", link.parse().unwrap());
    }
    Ok(Answer::List(with_rate(hub, response)))
}

/// A delivery as GitHub's `hook-delivery-item` shows it.
fn item(record: &Record, kind: &HookKind) -> Value {
    let status = match record.status_code {
        0 => "failed to connect".to_owned(),
        200..=299 => "OK".to_owned(),
        code => format!("Invalid HTTP Response: {code}"),
    };
    json!({
        "id": record.id,
        "guid": record.guid,
        "delivered_at": record.delivered_at,
        "redelivery": record.redelivery,
        "duration": 0.03,
        "status": status,
        "status_code": record.status_code,
        "event": "push",
        "action": null,
        "installation_id": if *kind == HookKind::App { json!(77) } else { Value::Null },
        "repository_id": 4242,
        "throttled_at": null,
    })
}

/// Asks for a redelivery: 202, and the delivery is sent again unless redeliveries are held.
fn redeliver(hub: &mut Hub, hook: usize, id: &str) -> Result<Answer, Box<Response>> {
    let id: i64 = id.parse().map_err(|_| Box::new(not_found()))?;
    let record = hub.hooks[hook]
        .records
        .iter()
        .find(|r| r.id == id)
        .cloned()
        .ok_or_else(|| Box::new(not_found()))?;
    hub.redeliveries.push((hook, id));
    let response = with_rate(
        hub,
        (StatusCode::ACCEPTED, axum::Json(json!({}))).into_response(),
    );
    let state = &hub.hooks[hook];
    let again = (!hub.hold_redeliveries).then(|| {
        (
            hook,
            state.target.clone(),
            state.secret.clone(),
            record.guid,
            record.body,
        )
    });
    Ok(Answer::Redeliver(response, again))
}
