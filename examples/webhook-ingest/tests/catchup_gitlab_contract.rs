//! The stand-in GitLab answers as GitLab publishes that it does, and the service asks GitLab as
//! GitLab's OpenAPI description says it may, for the two calls catch-up makes to a project's
//! hook (list its events, resend one). What GitLab publishes is kept in
//! `tests/fixtures/gitlab-openapi/hook-events.json` (`SOURCES.md` says where each part comes
//! from and at which commit): its OpenAPI description (`openapi_v2.yaml`) states the two
//! operations' paths, parameters and statuses but gives no answer a body, so the bodies are
//! checked against the fields the Grape entities the endpoints present expose, with the types
//! their documentation names; an error's body against GitLab's `{"message": …}`.

mod common;

use std::time::Duration;

use common::catchup::{closed_port, is_date_time};
use common::*;
use reqwest::Method;
use serde_json::Value;
use webhook_ingest::catchup::client::Client;
use webhook_ingest::catchup::credentials::{Auth, Hook};
use webhook_ingest::catchup::gitlab::{deliveries_in, GitLab};

const PUBLISHED: &str = include_str!("fixtures/gitlab-openapi/hook-events.json");
const TOKEN: &str = "glpat-contract";
const PROJECT: i64 = 42;
const HOOK: i64 = 7;

fn published() -> Value {
    serde_json::from_str(PUBLISHED).unwrap()
}

/// Where `value` breaks the entity `name`: a field it exposes missing (an entity exposes
/// every field, always), one of another type than its documentation names, or one it does
/// not expose, which would be the stand-in inventing.
fn entity_violations(value: &Value, name: &str, at: &str) -> Vec<String> {
    let entity = published()["entities"][name].clone();
    let fields = entity.as_object().unwrap();
    let Some(object) = value.as_object() else {
        return vec![format!("{at}: {value} is not an object")];
    };
    let mut out = Vec::new();
    for (field, kind) in fields {
        let kind = kind.as_str().unwrap();
        match object.get(field) {
            None => out.push(format!("{at}: exposed `{field}` missing")),
            Some(member) if !fits(member, kind) => {
                out.push(format!("{at}.{field}: {member} is not a {kind}"))
            }
            Some(_) => {}
        }
    }
    for field in object.keys().filter(|field| !fields.contains_key(*field)) {
        out.push(format!("{at}: `{field}` is not exposed by {name}"));
    }
    out
}

/// Whether `value` is of the type a Grape entity's documentation names.
fn fits(value: &Value, kind: &str) -> bool {
    match kind {
        "Integer" => value.is_i64() || value.is_u64(),
        "String" => value.is_string(),
        "Hash" => value.is_object(),
        "number" => value.is_number(),
        "DateTime" => value.as_str().is_some_and(is_date_time),
        other => panic!("a type the checker does not know: {other}"),
    }
}

/// Where an error's body breaks GitLab's (`render_api_error!`): an object holding `message`
/// alone, a text or, for a rate limit, an object of texts.
fn error_violations(body: &Value, at: &str) -> Vec<String> {
    let message = &body["message"];
    let fits = body.as_object().is_some_and(|object| object.len() == 1)
        && (message.is_string()
            || message
                .as_object()
                .is_some_and(|texts| texts.values().all(Value::is_string)));
    if fits {
        Vec::new()
    } else {
        vec![format!("{at}: {body} is not GitLab's error")]
    }
}

/// Checks one answer of `operation`: a status the description declares for it, or the 401
/// GitLab answers any call without a valid token; its body the operation's entity (a list of
/// them for the list) when it succeeded, GitLab's error otherwise.
async fn check(response: reqwest::Response, operation: &str) -> Vec<String> {
    let spec = published()["operations"][operation].clone();
    let status = response.status().as_u16().to_string();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    let declared = spec["statuses"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| *s == status);
    if !declared && status != "401" {
        return vec![format!("{operation}: {status} is not in the description")];
    }
    let entity = spec["entity"].as_str().unwrap();
    match (status.starts_with('2'), spec["list"] == true) {
        (true, true) => match body.as_array() {
            Some(items) => (items.iter().enumerate())
                .flat_map(|(n, item)| entity_violations(item, entity, &format!("{operation}[{n}]")))
                .collect(),
            None => vec![format!("{operation}: {body} is not a list")],
        },
        (true, false) => entity_violations(&body, entity, operation),
        (false, _) => error_violations(&body, &format!("{operation} {status}")),
    }
}

/// Whether a parameter takes `value` as a query or path writes it: an integer within the
/// parameter's minimum and maximum, or values each of its enumeration, comma-separated
/// (GitLab's `status` is split at commas).
fn takes(parameter: &Value, value: &str) -> bool {
    match parameter["type"].as_str() {
        Some("integer") => value.parse::<i64>().is_ok_and(|n| {
            parameter["minimum"].as_i64().is_none_or(|min| n >= min)
                && parameter["maximum"].as_i64().is_none_or(|max| n <= max)
        }),
        Some("array") => {
            let values = parameter["items"]["enum"].as_array().unwrap();
            value
                .split(',')
                .all(|v| values.iter().any(|allowed| allowed == v))
        }
        other => panic!("a parameter type the checker does not know: {other:?}"),
    }
}

/// Where a request (`method`, its path and query) breaks `operation` as
/// the description states it: another method or path, a path parameter it refuses, a query
/// parameter it does not declare or a value it does not take.
fn request_violations(method: &Method, asked: &str, operation: &str) -> Vec<String> {
    let spec = published()["operations"][operation].clone();
    let parameters = spec["parameters"].as_array().unwrap().clone();
    let parameter = |name: &str, place: &str| {
        (parameters.iter()).find(|p| p["name"] == name && p["in"] == place)
    };
    let mut out = Vec::new();
    if method.as_str() != spec["method"] {
        out.push(format!("{asked}: {method} is not {operation}'s method"));
    }
    let (path, query) = asked.split_once('?').unwrap_or((asked, ""));
    let template: Vec<&str> = spec["path"].as_str().unwrap().split('/').collect();
    let segments: Vec<&str> = path.split('/').collect();
    if template.len() != segments.len() {
        out.push(format!("{asked}: not the path of {operation}"));
        return out;
    }
    for (wanted, given) in template.iter().zip(&segments) {
        match wanted.strip_prefix('{').and_then(|w| w.strip_suffix('}')) {
            Some(name) if !takes(parameter(name, "path").unwrap(), given) => {
                out.push(format!("{asked}: path parameter `{name}` refuses {given}"))
            }
            None if wanted != given => out.push(format!("{asked}: {given} where {wanted}")),
            _ => {}
        }
    }
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        match parameter(name, "query") {
            Some(declared) if takes(declared, value) => {}
            Some(_) => out.push(format!("{asked}: `{name}` refuses {value}")),
            None => out.push(format!(
                "{asked}: `{name}` is not a parameter of {operation}"
            )),
        }
    }
    out
}

/// A receiver that answers 200 to every push: the sending of a resend that succeeds.
async fn receiver() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().fallback(|| async { "ok" });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/hook")
}

/// A stand-in GitLab whose hook has `failed` events that got no answer, then one kept; the
/// hook's index.
async fn gitlab_with_events(failed: usize) -> (GitLabStandIn, usize) {
    let gitlab = GitLabStandIn::start().await;
    let hook = gitlab.add_hook(PROJECT, HOOK, TOKEN, closed_port().await, "glsecret");
    for n in 0..failed {
        let key = format!("failed-{n}");
        gitlab
            .push(hook, &key, named(&gitlab_push(), &key), None)
            .await;
    }
    gitlab.push(hook, "kept", gitlab_push(), Some(200)).await;
    (gitlab, hook)
}

#[test]
fn the_service_reads_the_documentations_example() {
    let published = published();
    let example = published["example"].to_string();
    let read = deliveries_in(example.as_bytes()).unwrap();
    assert_eq!(read.len(), 1);
    assert_eq!(
        (read[0].id, read[0].guid.as_str(), read[0].status_code),
        (1, "3a427872-00df-429c-9bc9-a9475de2efe4", 200)
    );
    assert!(read[0].succeeded());
    // The documentation's example is older than the entity's `created_at`, and otherwise fits.
    assert_eq!(
        entity_violations(&published["example"][0], "WebHookLog", "example"),
        ["example: exposed `created_at` missing"]
    );
    let resend = &published["resend_example"];
    assert!(entity_violations(resend, "RetryWebhookEvent", "resend").is_empty());
}

#[test]
fn the_checks_find_a_wrong_type_a_missing_field_an_invented_one_and_a_refused_request() {
    let item = |edit: fn(&mut Value)| {
        let mut example = published()["example"][0].clone();
        example["created_at"] = "2026-12-03T10:00:00.000Z".into();
        edit(&mut example);
        entity_violations(&example, "WebHookLog", "item").len()
    };
    assert_eq!(item(|_| {}), 0);
    assert_eq!(item(|v| v["response_status"] = 500.into()), 1);
    assert_eq!(item(|v| v["created_at"] = "yesterday".into()), 1);
    assert_eq!(item(|v| v["request_headers"] = "{}".into()), 1);
    assert_eq!(item(|v| drop(v.as_object_mut().unwrap().remove("id"))), 1);
    assert_eq!(item(|v| v["idempotency_key"] = "k".into()), 1);
    let error = |body: Value| error_violations(&body, "error").len();
    assert_eq!(error(serde_json::json!({ "message": "404 Not found" })), 0);
    assert_eq!(
        error(serde_json::json!({ "message": { "error": "slow" } })),
        0
    );
    assert_eq!(error(serde_json::json!({ "error": "404 Not found" })), 1);
    let list = |asked: &str| request_violations(&Method::GET, asked, "list").len();
    let events = "/api/v4/projects/42/hooks/7/events";
    assert_eq!(
        list(&format!(
            "{events}?per_page=20&status=500,server_failure&page=3"
        )),
        0
    );
    assert_eq!(list(&format!("{events}?per_page=100")), 1, "20 at most");
    assert_eq!(list(&format!("{events}?per_page=0")), 1);
    assert_eq!(list(&format!("{events}?status=failed")), 1);
    assert_eq!(list(&format!("{events}?cursor=abc")), 1);
    assert_eq!(list("/api/v4/projects/acme%2Fgadgets/hooks/7/events"), 1);
    assert_eq!(list("/api/v4/groups/42/hooks/7/events"), 1);
    let resend = "/api/v4/projects/42/hooks/7/events/9/resend";
    assert_eq!(request_violations(&Method::POST, resend, "resend").len(), 0);
    assert_eq!(request_violations(&Method::GET, resend, "resend").len(), 1);
}

#[tokio::test]
async fn every_answer_of_the_stand_in_fits_what_gitlab_publishes() {
    let (gitlab, hook) = gitlab_with_events(3).await;
    let client = reqwest::Client::new();
    let call = |method: Method, rest: &str, token: &str| {
        let url = format!("{}/api/v4/projects/{PROJECT}/hooks/{rest}", gitlab.url());
        client
            .request(method, url)
            .header("private-token", token)
            .send()
    };
    let events = format!("{HOOK}/events");
    let mut broken = Vec::new();
    let mut answer =
        async |method: Method, rest: &str, token: &str, operation: &str, status: u16| {
            let response = call(method, rest, token).await.unwrap();
            if response.status() != status {
                broken.push(format!("{rest}: {} where {status}", response.status()));
            }
            broken.extend(check(response, operation).await);
        };
    let failed = "status=client_failure,server_failure";
    answer(
        Method::GET,
        &format!("{events}?per_page=2&{failed}"),
        TOKEN,
        "list",
        200,
    )
    .await;
    answer(
        Method::GET,
        &format!("{events}?per_page=2&{failed}&page=2"),
        TOKEN,
        "list",
        200,
    )
    .await;
    answer(Method::GET, &events, TOKEN, "list", 200).await;
    answer(
        Method::GET,
        &format!("{events}?per_page=21"),
        TOKEN,
        "list",
        400,
    )
    .await;
    answer(
        Method::GET,
        &format!("{events}?status=failed"),
        TOKEN,
        "list",
        400,
    )
    .await;
    answer(Method::GET, &events, "wrong", "list", 401).await;
    answer(Method::GET, "8/events", TOKEN, "list", 404).await;
    let id = gitlab.events(hook)[0].id;
    let resend = format!("{events}/{id}/resend");
    answer(Method::POST, &resend, TOKEN, "resend", 422).await;
    gitlab.set_target(hook, receiver().await);
    answer(Method::POST, &resend, TOKEN, "resend", 201).await;
    answer(
        Method::POST,
        &format!("{events}/999999/resend"),
        TOKEN,
        "resend",
        404,
    )
    .await;
    gitlab.limit_resends(Some((1, Duration::from_secs(60))));
    answer(Method::POST, &resend, TOKEN, "resend", 201).await;
    answer(Method::POST, &resend, TOKEN, "resend", 429).await;
    assert!(
        broken.is_empty(),
        "the stand-in drifted from what GitLab publishes: {broken:#?}"
    );
}

#[tokio::test]
async fn the_services_requests_fit_gitlabs_description() {
    // More failed events than a page of 20 holds, so that the next page is asked for.
    let (stand_in, hook) = gitlab_with_events(23).await;
    stand_in.set_target(hook, receiver().await);
    let gitlab = GitLab::new(Client::new(Duration::from_millis(10)));
    let project_hook = Hook::GitLab {
        url: stand_in.url(),
        project: PROJECT,
        id: HOOK,
    };
    let auth = Auth::Token(TOKEN.into());
    let first = gitlab.deliveries(&project_hook, &auth, None).await;
    let next = first.as_ref().ok().and_then(|(page, _)| page.next.clone());
    let second = gitlab
        .deliveries(&project_hook, &auth, next.as_deref())
        .await;
    let newest = first
        .as_ref()
        .ok()
        .and_then(|(page, _)| page.deliveries.first().map(|d| d.id));
    let resent = gitlab
        .redeliver(&project_hook, &auth, newest.unwrap_or(-1))
        .await;
    let requests = stand_in.requests();
    let broken: Vec<String> = (requests.iter())
        .flat_map(|(method, asked)| {
            let operation = if asked.ends_with("/resend") {
                "resend"
            } else {
                "list"
            };
            request_violations(method, asked, operation)
        })
        .collect();
    assert!(
        broken.is_empty(),
        "the service asks what GitLab's description refuses: {broken:#?}"
    );
    assert_eq!(requests.len(), 3, "{requests:?}");
    let (first, _) = first.unwrap();
    assert_eq!(
        (first.deliveries.len(), first.next.as_deref()),
        (20, Some("2"))
    );
    let (second, _) = second.unwrap();
    assert_eq!(
        (second.deliveries.len(), second.next),
        (3, None),
        "the kept one not listed"
    );
    assert!(resent.is_ok());
    assert_eq!(stand_in.resends(), [(hook, newest.unwrap())]);
}
