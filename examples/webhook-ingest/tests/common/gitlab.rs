//! A stand-in for GitLab (17.4 and later), on a real TCP port of 127.0.0.1, beside the
//! stand-in GitHub ([`super::github`], whose scripted answers it shares): a project's hook
//! sends pushes to the service with the inbox's secret token, and records each sending as
//! GitLab's hook events do (`response_status` the status as text, or `internal error` when
//! the service could not be reached). Its REST API, under `/api/v4`, lists a hook's events
//! ("List webhook events": newest first, `per_page` 1 to 20, `page`, the `status` filter with
//! its `successful`, `client_failure` and `server_failure`, the next page in `X-Next-Page`)
//! and resends one ("Resend a webhook event": sent again with the same `Idempotency-Key` and a
//! new `X-Gitlab-Event-UUID`, answered 201 with its `response_status`, or 422 when the sending
//! got no answer), with the token in `PRIVATE-TOKEN` or as a bearer token. It answers 401 to a
//! wrong token, keeps the resend limit (five a minute per hook and user) with a 429 and
//! GitLab's `RateLimit-*` and `Retry-After` headers, and can be told to answer the next calls
//! otherwise. An error's body is GitLab's `{"message": …}`. `tests/catchup_gitlab_contract.rs`
//! checks its answers against what GitLab publishes (`tests/fixtures/gitlab-openapi/`).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::github::{now_unix, Scripted};

/// GitLab's largest `per_page` for hook events, and its default.
const MAX_PER_PAGE: usize = 20;
const DEFAULT_PER_PAGE: usize = 20;
/// What GitLab records for a sending that got no answer.
const INTERNAL_ERROR: &str = "internal error";

/// One hook event as GitLab records it.
#[derive(Clone)]
pub struct HookEvent {
    pub id: i64,
    pub idempotency_key: String,
    pub event_uuid: String,
    /// The status as text, or [`INTERNAL_ERROR`].
    pub response_status: String,
    pub body: Arc<Vec<u8>>,
}

struct HookState {
    project: i64,
    id: i64,
    token: String,
    target: String,
    secret: String,
    events: Vec<HookEvent>,
}

#[derive(Default)]
struct Hub {
    hooks: Vec<HookState>,
    next_id: i64,
    script: VecDeque<Scripted>,
    /// The resend limit, when kept: resends a window takes (GitLab's: five a minute per hook
    /// and user), the window, when the current one began and the resends it took.
    resend_limit: Option<(u32, Duration)>,
    window: Option<(Instant, u32)>,
    /// Every API call: its method, path and query.
    calls: Vec<(Method, String)>,
    /// Every resend asked for: hook index and event id.
    resends: Vec<(usize, i64)>,
}

/// The running stand-in; stopped when dropped.
pub struct GitLabStandIn {
    pub addr: SocketAddr,
    hub: Arc<Mutex<Hub>>,
    client: reqwest::Client,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for GitLabStandIn {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl GitLabStandIn {
    pub async fn start() -> GitLabStandIn {
        let hub = Arc::new(Mutex::new(Hub {
            next_id: 500,
            ..Hub::default()
        }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap();
        let app = axum::Router::new()
            .fallback(api)
            .with_state((hub.clone(), client.clone()));
        let task = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        GitLabStandIn {
            addr,
            hub,
            client,
            task,
        }
    }

    /// The GitLab's URL, for an inbox's `gitlab_url`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A hook of `project` that sends to `target` with the secret token `secret`, whose API
    /// calls must carry `token`; its index.
    pub fn add_hook(
        &self,
        project: i64,
        id: i64,
        token: &str,
        target: String,
        secret: &str,
    ) -> usize {
        let mut hub = self.hub.lock().unwrap();
        hub.hooks.push(HookState {
            project,
            id,
            token: token.to_owned(),
            target,
            secret: secret.to_owned(),
            events: Vec::new(),
        });
        hub.hooks.len() - 1
    }

    pub fn set_target(&self, hook: usize, target: String) {
        self.hub.lock().unwrap().hooks[hook].target = target;
    }

    /// The next API calls get these answers, in order.
    pub fn script(&self, answers: impl IntoIterator<Item = Scripted>) {
        self.hub.lock().unwrap().script.extend(answers);
    }

    /// Keeps a resend limit of `per_window` resends a `window` from now on (GitLab's is five
    /// a minute); `None`: no limit.
    pub fn limit_resends(&self, limit: Option<(u32, Duration)>) {
        let mut hub = self.hub.lock().unwrap();
        (hub.resend_limit, hub.window) = (limit, None);
    }

    /// Sends a push of the hook as GitLab does, with the idempotency key `key`, and records
    /// it; the status it got (0 when the service could not be reached). `recorded_as`, when
    /// given, is what GitLab records (it gave up waiting whatever the service did later).
    pub async fn push(
        &self,
        hook: usize,
        key: &str,
        body: Vec<u8>,
        recorded_as: Option<i64>,
    ) -> i64 {
        let (target, secret) = {
            let hub = self.hub.lock().unwrap();
            (
                hub.hooks[hook].target.clone(),
                hub.hooks[hook].secret.clone(),
            )
        };
        let body = Arc::new(body);
        let uuid = format!("uuid-{key}-first");
        let status = send(&self.client, &target, &secret, key, &uuid, &body).await;
        record(
            &self.hub,
            hook,
            key,
            uuid,
            body,
            recorded_as.unwrap_or(status),
        );
        status
    }

    pub fn events(&self, hook: usize) -> Vec<HookEvent> {
        self.hub.lock().unwrap().hooks[hook].events.clone()
    }

    pub fn resends(&self) -> Vec<(usize, i64)> {
        self.hub.lock().unwrap().resends.clone()
    }

    /// Every API call so far: its method, and its path with the query.
    pub fn requests(&self) -> Vec<(Method, String)> {
        self.hub.lock().unwrap().calls.clone()
    }

    /// The API calls so far whose path contains `part`.
    pub fn calls(&self, method: Method, part: &str) -> usize {
        let hub = self.hub.lock().unwrap();
        hub.calls
            .iter()
            .filter(|(m, p)| *m == method && p.contains(part))
            .count()
    }
}

/// Sends one push as GitLab's hook does; the status, 0 when the service could not be reached.
async fn send(
    client: &reqwest::Client,
    target: &str,
    secret: &str,
    key: &str,
    uuid: &str,
    body: &[u8],
) -> i64 {
    let sent = client
        .post(target)
        .header("content-type", "application/json")
        .header("user-agent", "GitLab/17.4.0")
        .header("idempotency-key", key)
        .header("x-gitlab-event", "Push Hook")
        .header("x-gitlab-event-uuid", uuid)
        .header("x-gitlab-instance", "https://gitlab.example.com")
        .header(
            "x-gitlab-webhook-uuid",
            "3c5c0404-c866-44bc-a5f6-452bb1bfc76e",
        )
        .header("x-gitlab-token", secret)
        .body(body.to_vec())
        .send()
        .await;
    sent.map_or(0, |answer| i64::from(answer.status().as_u16()))
}

fn record(hub: &Mutex<Hub>, hook: usize, key: &str, uuid: String, body: Arc<Vec<u8>>, status: i64) {
    let mut hub = hub.lock().unwrap();
    hub.next_id += 1;
    let event = HookEvent {
        id: hub.next_id,
        idempotency_key: key.to_owned(),
        event_uuid: uuid,
        response_status: if status == 0 {
            INTERNAL_ERROR.to_owned()
        } else {
            status.to_string()
        },
        body,
    };
    hub.hooks[hook].events.push(event);
}

fn message(status: StatusCode, text: &str) -> Response {
    (status, axum::Json(json!({ "message": text }))).into_response()
}

/// Takes one resend from the limit's window; GitLab's 429 when the window has none left.
fn take_resend(hub: &mut Hub) -> Option<Response> {
    let (per_window, length) = hub.resend_limit?;
    let now = Instant::now();
    let (began, taken) = match hub.window {
        Some((began, taken)) if now < began + length => (began, taken),
        _ => (now, 0),
    };
    if taken >= per_window {
        return Some(limited(per_window, (began + length) - now));
    }
    hub.window = Some((began, taken + 1));
    None
}

/// GitLab's answer to a limited call: 429, `Retry-After` and the `RateLimit-*` headers, and
/// its rate limiter's body, the message an object.
fn limited(limit: u32, left: Duration) -> Response {
    let text = "This endpoint has been requested too many times. Try again later.";
    let body = json!({ "message": { "error": text } });
    let mut response = (StatusCode::TOO_MANY_REQUESTS, axum::Json(body)).into_response();
    let secs = left.as_secs_f64().ceil().max(1.0) as u64;
    for (name, value) in [
        ("retry-after", secs.to_string()),
        ("ratelimit-name", "web_hook_event_resend".to_owned()),
        ("ratelimit-limit", limit.to_string()),
        ("ratelimit-observed", (limit + 1).to_string()),
        ("ratelimit-remaining", "0".to_owned()),
        ("ratelimit-reset", (now_unix() + secs).to_string()),
    ] {
        response.headers_mut().insert(name, value.parse().unwrap());
    }
    response
}

type Shared = (Arc<Mutex<Hub>>, reqwest::Client);

/// Every API call: the route read from the path, the token checked, the limit kept.
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
    let ["api", "v4", "projects", project, "hooks", hook_id, "events", rest @ ..] =
        segments.as_slice()
    else {
        return message(StatusCode::NOT_FOUND, "404 Not Found");
    };
    let (project, hook_id) = (project.parse().unwrap_or(-1), hook_id.parse().unwrap_or(-1));
    let resend = {
        let mut hub = hub.lock().unwrap();
        let asked = uri.path_and_query().map_or(path.clone(), |p| p.to_string());
        hub.calls.push((method.clone(), asked));
        if let Some(scripted) = hub.script.pop_front() {
            let mut response = message(StatusCode::from_u16(scripted.status).unwrap(), "scripted");
            for (name, value) in scripted.headers {
                response.headers_mut().insert(name, value.parse().unwrap());
            }
            return response;
        }
        let Some(hook) = hub
            .hooks
            .iter()
            .position(|h| h.project == project && h.id == hook_id)
        else {
            return message(StatusCode::NOT_FOUND, "404 Not Found");
        };
        if !authorized(&hub.hooks[hook].token, &headers) {
            return message(StatusCode::UNAUTHORIZED, "401 Unauthorized");
        }
        match (&method, rest) {
            (&Method::GET, []) => return list(&hub.hooks[hook], &query),
            (&Method::POST, [event, "resend"]) => {
                if let Some(limited) = take_resend(&mut hub) {
                    return limited;
                }
                let id: i64 = event.parse().unwrap_or(-1);
                let state = &hub.hooks[hook];
                let Some(event) = state.events.iter().find(|e| e.id == id).cloned() else {
                    return message(StatusCode::NOT_FOUND, "404 Not Found");
                };
                let again = (hook, state.target.clone(), state.secret.clone(), event);
                hub.resends.push((hook, id));
                again
            }
            _ => return message(StatusCode::NOT_FOUND, "404 Not Found"),
        }
    };
    // GitLab sends the event again before it answers, with the same key and a new UUID.
    let (hook, target, secret, event) = resend;
    let uuid = format!("uuid-{}-resent-{}", event.idempotency_key, event.id);
    let status = send(
        &client,
        &target,
        &secret,
        &event.idempotency_key,
        &uuid,
        &event.body,
    )
    .await;
    record(&hub, hook, &event.idempotency_key, uuid, event.body, status);
    if status == 0 {
        // GitLab records the sending, then renders its error as a 422.
        let text = format!("Failed to open TCP connection to {target}");
        return message(StatusCode::UNPROCESSABLE_ENTITY, &text);
    }
    let answer = json!({ "response_status": status });
    (StatusCode::CREATED, axum::Json(answer)).into_response()
}

fn authorized(token: &str, headers: &HeaderMap) -> bool {
    let given = headers
        .get("private-token")
        .and_then(|v| v.to_str().ok())
        .or_else(|| {
            headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
        });
    given == Some(token)
}

/// Whether an event's status passes the `status` filter's values.
fn status_passes(status: &str, filter: &[&str]) -> bool {
    let code: Option<u16> = status.parse().ok();
    filter.iter().any(|wanted| match *wanted {
        "successful" => code.is_some_and(|c| (200..300).contains(&c)),
        "client_failure" => code.is_some_and(|c| (400..500).contains(&c)),
        "server_failure" => code.map_or(status == INTERNAL_ERROR, |c| (500..600).contains(&c)),
        code => status == code,
    })
}

/// A page of the hook's events, newest first, as `WebHookLog` entities; 400 for a
/// `per_page` or a `status` GitLab's parameters refuse.
fn list(hook: &HookState, query: &[(String, String)]) -> Response {
    let get = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let per_page = match get("per_page").map(str::parse::<usize>) {
        None => DEFAULT_PER_PAGE,
        Some(Ok(n)) if (1..=MAX_PER_PAGE).contains(&n) => n,
        Some(_) => {
            return message(
                StatusCode::BAD_REQUEST,
                "per_page does not have a valid value",
            )
        }
    };
    let page: usize = get("page").and_then(|p| p.parse().ok()).unwrap_or(1).max(1);
    let filter: Vec<&str> = get("status")
        .map(|s| s.split(',').collect())
        .unwrap_or_default();
    let known = ["successful", "client_failure", "server_failure"];
    if filter
        .iter()
        .any(|f| !known.contains(f) && f.parse::<u16>().is_err())
    {
        return message(
            StatusCode::BAD_REQUEST,
            "status does not have a valid value",
        );
    }
    let mut events: Vec<&HookEvent> = hook
        .events
        .iter()
        .filter(|e| filter.is_empty() || status_passes(&e.response_status, &filter))
        .collect();
    events.sort_by_key(|e| std::cmp::Reverse(e.id));
    let total = events.len();
    let shown: Vec<Value> = events
        .iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .map(|e| item(e))
        .collect();
    let pages = total.div_ceil(per_page).max(1);
    let next = if page < pages {
        (page + 1).to_string()
    } else {
        String::new()
    };
    let mut response = axum::Json(Value::Array(shown)).into_response();
    for (name, value) in [
        ("x-next-page", next),
        ("x-page", page.to_string()),
        ("x-per-page", per_page.to_string()),
        ("x-total", total.to_string()),
        ("x-total-pages", pages.to_string()),
    ] {
        response.headers_mut().insert(name, value.parse().unwrap());
    }
    response
}

/// An event as GitLab's `WebHookLog` entity shows it.
fn item(event: &HookEvent) -> Value {
    let request_data: Value = serde_json::from_slice(&event.body).unwrap_or(Value::Null);
    json!({
        "id": event.id,
        "url": "https://receiver.example/hook",
        "trigger": "push_hooks",
        "request_headers": {
            "Content-Type": "application/json",
            "User-Agent": "GitLab/17.4.0",
            "Idempotency-Key": event.idempotency_key,
            "X-Gitlab-Event": "Push Hook",
            "X-Gitlab-Webhook-UUID": "3c5c0404-c866-44bc-a5f6-452bb1bfc76e",
            "X-Gitlab-Instance": "https://gitlab.example.com",
            "X-Gitlab-Event-UUID": event.event_uuid,
            "X-Gitlab-Token": "[REDACTED]",
        },
        "request_data": request_data,
        "response_headers": {},
        "response_body": "",
        "execution_duration": 0.03,
        "response_status": event.response_status,
        "created_at": "2026-12-03T10:00:00.000Z",
    })
}
