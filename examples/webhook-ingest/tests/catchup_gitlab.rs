//! Catch-up against the stand-in GitLab, over TCP: a push made while the service was down is
//! resent and kept exactly once, one already kept is not asked for again, one no resend brings
//! back is asked for three times and no more, and a resend GitLab cannot make (422) is passed
//! over with a warning; GitLab's 5xx, its resend limit (429 with `Retry-After` and
//! `RateLimit-*`) and a 401 are counted on `/metrics` and retried later, nothing lost; the API
//! takes a GitLab inbox's settings and never shows or logs its token.

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use common::catchup::*;
use common::*;
use reqwest::Method;
use serde_json::{json, Value};
use webhook_ingest::catchup::CatchUp;
use webhook_ingest::provider::Provider;
use webhook_ingest::store::Store;

const PROJECT: i64 = 42;
const GITLAB_TOKEN: &str = "glpat-token-for-tests-only";
/// Pushes made while the service is down: more than two of GitLab's pages of 20.
const FAILED_PUSHES: usize = 45;

/// A service on SQLite in memory whose catch-up looks every 200 ms.
async fn service() -> Service {
    service_on_db(":memory:").await
}

/// A service on the store at `db` whose catch-up looks every 200 ms; GitHub's API is never
/// asked here.
async fn service_on_db(db: &str) -> Service {
    let config = webhook_ingest::Config {
        catchup: CatchUp {
            api: "http://127.0.0.1:9".into(),
            every: Duration::from_millis(200),
            backoff: Duration::from_millis(10),
            wrap_store: None,
            node: None,
        },
        ..Service::config(TEST_BODY_LIMIT)
    };
    Service::serve_with(Store::open(db).await.unwrap(), None, config).await
}

fn gitlab_path(fixture: &Fixture) -> String {
    let (inbox, _) = fixture.inbox(Provider::Gitlab);
    format!(
        "/api/{}/digests/{}/inboxes/{inbox}/catchup",
        fixture.instance, fixture.digest
    )
}

async fn give_gitlab(service: &Service, fixture: &Fixture, body: Value) -> Answer {
    let request = service
        .client
        .put(service.url(&gitlab_path(fixture)))
        .bearer_auth(&fixture.key)
        .json(&body);
    service.send(request).await
}

fn settings(gitlab: &GitLabStandIn, token: &str) -> Value {
    json!({ "gitlab_url": gitlab.url(), "project_id": PROJECT, "hook_id": HOOK, "token": token })
}

/// The stand-in GitLab with the GitLab inbox's hook, sending to the service.
async fn gitlab_hook(service: &Service, fixture: &Fixture) -> (Arc<GitLabStandIn>, usize) {
    let gitlab = Arc::new(GitLabStandIn::start().await);
    let (_, secret) = fixture.inbox(Provider::Gitlab);
    let target = service.url(&fixture.hook_path(Provider::Gitlab));
    let hook = gitlab.add_hook(PROJECT, HOOK, GITLAB_TOKEN, target, secret);
    (gitlab, hook)
}

/// Makes `count` pushes of `hook` from [`CLIENTS`] clients at once; their keys.
async fn push_many(
    gitlab: &Arc<GitLabStandIn>,
    hook: usize,
    prefix: &str,
    count: usize,
) -> Vec<String> {
    let keys: Vec<String> = (0..count).map(|n| format!("{prefix}-{n:04}")).collect();
    let mut clients = Vec::new();
    for chunk in keys.chunks(count.div_ceil(CLIENTS)) {
        let (gitlab, chunk) = (gitlab.clone(), chunk.to_vec());
        clients.push(tokio::spawn(async move {
            for key in chunk {
                let status = gitlab
                    .push(hook, &key, named(&gitlab_push(), &key), None)
                    .await;
                assert_eq!(status, 0, "the service is down");
            }
        }));
    }
    for client in clients {
        client.await.unwrap();
    }
    keys
}

/// The sum of the series of `name` whose labels hold `part`.
async fn series_with(service: &Service, name: &str, part: &str) -> f64 {
    let text = metrics_text(service).await;
    text.lines()
        .filter(|line| line.starts_with(&format!("{name}{{")) && line.contains(part))
        .map(|line| line.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_made_while_the_service_was_down_is_resent_and_kept_exactly_once() {
    down_then_resent(service().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_made_while_the_service_was_down_is_resent_and_kept_once_on_postgres() {
    let test = "a_push_made_while_the_service_was_down_is_resent_and_kept_once_on_postgres";
    let Some(url) = test_postgres(test) else {
        return;
    };
    down_then_resent(service_on_db(&url).await).await;
}

/// Pushes kept but recorded failed, then pushes made while the service was down; catch-up
/// given: each of the second resent once, none of the first, all kept once.
async fn down_then_resent(service: Service) {
    let fixture = service.setup().await;
    let (gitlab, hook) = gitlab_hook(&service, &fixture).await;
    // Kept by the service, but recorded failed: GitLab gave up waiting first.
    let late: Vec<String> = (0..3).map(|n| format!("late-{n}")).collect();
    for key in &late {
        gitlab
            .push(hook, key, named(&gitlab_push(), key), Some(0))
            .await;
    }
    gitlab.set_target(hook, closed_port().await);
    let failed = push_many(&gitlab, hook, "down", FAILED_PUSHES).await;
    gitlab.set_target(hook, service.url(&fixture.hook_path(Provider::Gitlab)));
    assert_eq!(deliveries(&service, &fixture).await, late.len() as u64);

    let given = give_gitlab(&service, &fixture, settings(&gitlab, GITLAB_TOKEN)).await;
    assert_eq!(given.status, 200, "{}", given.text);
    let total = (late.len() + FAILED_PUSHES) as u64;
    within_bound(
        "every push made while the service was down kept",
        async || deliveries(&service, &fixture).await == total,
    )
    .await;
    // More rounds: nothing is asked again, nothing kept twice.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(deliveries(&service, &fixture).await, total);
    let events = gitlab.events(hook);
    let resent: Vec<String> = gitlab
        .resends()
        .iter()
        .map(|(_, id)| {
            events
                .iter()
                .find(|e| e.id == *id)
                .unwrap()
                .idempotency_key
                .clone()
        })
        .collect();
    let distinct: HashSet<&String> = resent.iter().collect();
    assert_eq!(
        resent.len(),
        FAILED_PUSHES,
        "each failed push asked for once: {resent:?}"
    );
    assert_eq!(distinct.len(), FAILED_PUSHES);
    assert!(failed.iter().all(|key| distinct.contains(key)));
    assert!(
        late.iter().all(|key| !distinct.contains(key)),
        "a kept push is not asked for"
    );
    assert!(
        gitlab.calls(Method::GET, "/events") >= 3,
        "48 failed events are three of GitLab's pages"
    );
    within_bound("every resend counted recovered", async || {
        series_sum(&service, "webhook_ingest_catchup_recovered_total").await == FAILED_PUSHES as f64
    })
    .await;
    assert_eq!(
        series_sum(&service, "webhook_ingest_catchup_redelivery_asked_total").await,
        FAILED_PUSHES as f64
    );
    assert_eq!(
        series_sum(&service, "webhook_ingest_catchup_found_failed_total").await,
        total as f64
    );
    let shown = shown(&service, &fixture, &gitlab_path(&fixture)).await;
    assert_eq!(shown.body["pending_redeliveries"], 0, "{}", shown.text);
    // The last success, in seconds since the epoch: a pass of this last second or so.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let (inbox, _) = fixture.inbox(Provider::Gitlab);
    let last = series_sum_where(
        &service,
        "webhook_ingest_catchup_last_success_timestamp_seconds",
        &format!("inbox=\"{inbox}\""),
    )
    .await;
    assert!(
        (now - 60.0..=now + 1.0).contains(&last),
        "the last success at {last} s, now {now} s"
    );
}

#[tokio::test]
async fn gitlab_failures_are_counted_and_retried_later_and_nothing_is_lost() {
    let (logs, _guard) = Logs::capture();
    let service = service().await;
    let fixture = service.setup().await;
    let (gitlab, hook) = gitlab_hook(&service, &fixture).await;
    gitlab.set_target(hook, closed_port().await);
    for n in 0..5 {
        let key = format!("first-{n}");
        gitlab
            .push(hook, &key, named(&gitlab_push(), &key), None)
            .await;
    }
    gitlab.set_target(hook, service.url(&fixture.hook_path(Provider::Gitlab)));
    // Three 502s: the first list's every try, so that pass stops; then a limit of two resends
    // a second, which the later passes meet and wait out.
    let bad_gateway = Scripted {
        status: 502,
        headers: Vec::new(),
    };
    gitlab.script(vec![bad_gateway; 3]);
    gitlab.limit_resends(Some((2, Duration::from_secs(1))));
    let given = give_gitlab(&service, &fixture, settings(&gitlab, GITLAB_TOKEN)).await;
    assert_eq!(given.status, 200, "{}", given.text);
    within_bound(
        "the five pushes kept through a 5xx and the limit",
        async || deliveries(&service, &fixture).await == 5,
    )
    .await;
    let gitlab_stopped = |reason: &'static str| {
        let service = &service;
        async move {
            let labels = format!("provider=\"gitlab\",reason=\"{reason}\"");
            series_with(service, "webhook_ingest_catchup_stopped_total", &labels).await
        }
    };
    assert_eq!(gitlab_stopped("unavailable").await, 1.0);
    assert!(
        gitlab_stopped("rate_limited").await >= 1.0,
        "five resends at two a second"
    );
    assert_eq!(
        gitlab.resends().len(),
        5,
        "a limited resend is asked again, not lost"
    );

    // A revoked token: refused once, not asked again, then new credentials bring back what
    // failed meanwhile.
    gitlab.limit_resends(None);
    gitlab.script([Scripted {
        status: 401,
        headers: Vec::new(),
    }]);
    gitlab.set_target(hook, closed_port().await);
    gitlab
        .push(
            hook,
            "while-revoked",
            named(&gitlab_push(), "while-revoked"),
            None,
        )
        .await;
    within_bound("the refusal shows on /health", async || {
        refused_on_health(&service).await == 1
    })
    .await;
    let lists = gitlab.calls(Method::GET, "/events");
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        gitlab.calls(Method::GET, "/events"),
        lists,
        "a refused token is not retried in a loop"
    );
    assert_eq!(gitlab_stopped("refused").await, 1.0);
    assert_eq!(
        series_sum(&service, "webhook_ingest_catchup_refused").await,
        1.0
    );
    let shown = shown(&service, &fixture, &gitlab_path(&fixture)).await;
    assert!(
        shown.body["failing"]
            .as_str()
            .is_some_and(|r| r.starts_with("GitLab answered 401")),
        "{}",
        shown.text
    );
    assert_eq!(
        logs.lines_with("GitLab refuses its credentials"),
        1,
        "{}",
        logs.text()
    );
    gitlab.set_target(hook, service.url(&fixture.hook_path(Provider::Gitlab)));
    give_gitlab(&service, &fixture, settings(&gitlab, GITLAB_TOKEN)).await;
    within_bound(
        "the push made while the token was refused kept",
        async || deliveries(&service, &fixture).await == 6,
    )
    .await;
    assert_eq!(
        series_sum(&service, "webhook_ingest_catchup_refused").await,
        0.0
    );
    assert!(!logs.text().contains(GITLAB_TOKEN), "no token in the log");
}

#[tokio::test]
async fn the_api_takes_a_gitlab_inbox_settings_and_keeps_its_token_secret() {
    let (logs, _guard) = Logs::capture();
    let service = service().await;
    let fixture = service.setup().await;
    let gitlab = GitLabStandIn::start().await;
    let given = give_gitlab(&service, &fixture, settings(&gitlab, GITLAB_TOKEN)).await;
    assert_eq!(given.status, 200, "{}", given.text);
    let hook = json!({ "gitlab_url": gitlab.url(), "project_id": PROJECT, "id": HOOK });
    assert_eq!(given.body["hook"], hook);
    assert_eq!(given.body["auth"], "token");
    let read = shown(&service, &fixture, &gitlab_path(&fixture)).await;
    assert_eq!((read.status, &read.body["hook"]), (200, &hook));
    let trailing = json!({ "gitlab_url": format!("{}/", gitlab.url()), "project_id": PROJECT,
                           "hook_id": HOOK, "token": GITLAB_TOKEN });
    let again = give_gitlab(&service, &fixture, trailing).await;
    assert_eq!(
        again.body["hook"], hook,
        "a trailing slash is the same GitLab"
    );
    let refused = [
        json!({ "project_id": PROJECT, "hook_id": HOOK, "token": GITLAB_TOKEN }),
        json!({ "gitlab_url": "http://gitlab.example.com", "project_id": PROJECT, "hook_id": HOOK, "token": GITLAB_TOKEN }),
        json!({ "gitlab_url": "https://user:pw@gitlab.example.com", "project_id": PROJECT, "hook_id": HOOK, "token": GITLAB_TOKEN }),
        json!({ "gitlab_url": "https://gitlab.example.com/?x=1", "project_id": PROJECT, "hook_id": HOOK, "token": GITLAB_TOKEN }),
        json!({ "gitlab_url": "ftp://gitlab.example.com", "project_id": PROJECT, "hook_id": HOOK, "token": GITLAB_TOKEN }),
        json!({ "gitlab_url": "https://gitlab.example.com", "hook_id": HOOK, "token": GITLAB_TOKEN }),
        json!({ "gitlab_url": "https://gitlab.example.com", "project_id": 0, "hook_id": HOOK, "token": GITLAB_TOKEN }),
        json!({ "gitlab_url": "https://gitlab.example.com", "project_id": PROJECT, "token": GITLAB_TOKEN }),
        json!({ "gitlab_url": "https://gitlab.example.com", "project_id": PROJECT, "hook_id": -3, "token": GITLAB_TOKEN }),
        json!({ "gitlab_url": "https://gitlab.example.com", "project_id": PROJECT, "hook_id": HOOK }),
        json!({ "gitlab_url": "https://gitlab.example.com", "project_id": PROJECT, "hook_id": HOOK, "token": " " }),
        json!({ "app_id": 42, "private_key": "x" }),
    ];
    for body in refused {
        let answer = give_gitlab(&service, &fixture, body.clone()).await;
        answer.assert_problem(422, "invalid-field");
        assert!(!answer.text.contains(GITLAB_TOKEN), "{}", answer.text);
    }
    let https = json!({ "gitlab_url": "https://gitlab.example.com/gitlab", "project_id": PROJECT,
                        "hook_id": HOOK, "token": GITLAB_TOKEN });
    let taken = give_gitlab(&service, &fixture, https).await;
    assert_eq!(
        taken.status, 200,
        "an https GitLab under a path: {}",
        taken.text
    );
    assert_eq!(
        taken.body["hook"]["gitlab_url"],
        "https://gitlab.example.com/gitlab"
    );
    // A GitHub inbox takes no GitLab settings.
    let github = service
        .client
        .put(service.url(&catchup_path(&fixture)))
        .bearer_auth(&fixture.key)
        .json(&settings(&gitlab, GITLAB_TOKEN));
    service
        .send(github)
        .await
        .assert_problem(422, "invalid-field");
    for answer in [&given, &read, &taken] {
        assert!(!answer.text.contains(GITLAB_TOKEN), "{}", answer.text);
    }
    assert!(!logs.text().contains(GITLAB_TOKEN), "no token in the log");
}

/// GitLab answers 422 to a resend it cannot make (its sending got no answer, or the hook's
/// URL changed): the call succeeds, so that the pass goes on, and the event is named in one
/// `WARN` line; a resend GitLab made says nothing.
#[tokio::test]
async fn a_resend_gitlab_cannot_make_is_passed_over_with_a_warning() {
    use webhook_ingest::catchup::client::Client;
    use webhook_ingest::catchup::credentials::{Auth, Hook};
    use webhook_ingest::catchup::gitlab::GitLab;

    let (logs, _guard) = Logs::capture();
    let stand_in = GitLabStandIn::start().await;
    let hook = stand_in.add_hook(PROJECT, HOOK, GITLAB_TOKEN, closed_port().await, "s");
    stand_in.push(hook, "down", gitlab_push(), None).await;
    let id = stand_in.events(hook)[0].id;
    let gitlab = GitLab::new(Client::new(Duration::from_millis(10)));
    let project_hook = Hook::GitLab {
        url: stand_in.url(),
        project: PROJECT,
        id: HOOK,
    };
    let auth = Auth::Token(GITLAB_TOKEN.into());
    let warning = "GitLab cannot resend this hook event (422)";
    let unmade = gitlab.redeliver(&project_hook, &auth, id).await;
    assert!(matches!(unmade, Ok(None)), "{unmade:?}");
    assert_eq!(logs.lines_with(warning), 1, "{}", logs.text());
    assert!(
        logs.text().contains(&format!("event={id}")),
        "{}",
        logs.text()
    );
    let service = service().await;
    let fixture = service.setup().await;
    let (_, secret) = fixture.inbox(Provider::Gitlab);
    let kept = stand_in.add_hook(PROJECT + 1, HOOK, GITLAB_TOKEN, closed_port().await, secret);
    stand_in.push(kept, "kept", gitlab_push(), None).await;
    stand_in.set_target(kept, service.url(&fixture.hook_path(Provider::Gitlab)));
    let kept_hook = Hook::GitLab {
        url: stand_in.url(),
        project: PROJECT + 1,
        id: HOOK,
    };
    let made = gitlab
        .redeliver(&kept_hook, &auth, stand_in.events(kept)[0].id)
        .await;
    assert!(matches!(made, Ok(None)), "{made:?}");
    assert_eq!(deliveries(&service, &fixture).await, 1, "resent and kept");
    assert_eq!(
        logs.lines_with(warning),
        1,
        "a resend made is not warned about"
    );
    assert!(!logs.text().contains(GITLAB_TOKEN), "no token in the log");
}

/// A push whose every resend fails (the hook's receiver gone): each failed resend is a new
/// failed event with the same key, and the push is asked for three times, then no more, the
/// asks remembered from pass to pass.
#[tokio::test]
async fn a_push_no_resend_brings_back_is_asked_for_three_times_then_no_more() {
    let service = service().await;
    let fixture = service.setup().await;
    let (gitlab, hook) = gitlab_hook(&service, &fixture).await;
    gitlab.set_target(hook, closed_port().await);
    gitlab
        .push(hook, "never", named(&gitlab_push(), "never"), None)
        .await;
    let given = give_gitlab(&service, &fixture, settings(&gitlab, GITLAB_TOKEN)).await;
    assert_eq!(given.status, 200, "{}", given.text);
    let max = webhook_ingest::catchup::pass::MAX_ASKS_PER_DELIVERY as usize;
    within_bound("the push asked for three times", async || {
        gitlab.resends().len() >= max
    })
    .await;
    // Passes every 200 ms: a forgotten ask would be asked again within these.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(gitlab.resends().len(), max, "{:?}", gitlab.resends());
    assert_eq!(
        gitlab.events(hook).len(),
        1 + max,
        "each failed resend recorded"
    );
    assert_eq!(deliveries(&service, &fixture).await, 0);
}

/// A 429's `Retry-After` is waited out: the inbox's next call comes after it, not at the next
/// round of the loop.
#[tokio::test]
async fn a_limit_is_waited_out_before_the_next_call() {
    let service = service().await;
    let fixture = service.setup().await;
    let (gitlab, hook) = gitlab_hook(&service, &fixture).await;
    gitlab.set_target(hook, closed_port().await);
    gitlab
        .push(hook, "limited", named(&gitlab_push(), "limited"), None)
        .await;
    gitlab.set_target(hook, service.url(&fixture.hook_path(Provider::Gitlab)));
    gitlab.script([Scripted {
        status: 429,
        headers: vec![("retry-after", "3".into())],
    }]);
    let given = give_gitlab(&service, &fixture, settings(&gitlab, GITLAB_TOKEN)).await;
    assert_eq!(given.status, 200, "{}", given.text);
    let lists = || gitlab.calls(Method::GET, "/events");
    within_bound("the first list answered 429", async || lists() >= 1).await;
    // Seven rounds of the loop, well inside the three seconds asked for.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(lists(), 1, "no call before Retry-After's three seconds");
    within_bound("the push kept after the wait", async || {
        deliveries(&service, &fixture).await == 1
    })
    .await;
}
