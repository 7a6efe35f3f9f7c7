//! Catch-up against the stand-in GitHub, over TCP: pushes sent while the service was down are
//! asked for again and stored once; the cursor, the lease and the stored-id check each keep
//! a delivery from being asked twice (each planted bug is caught); GitHub's limits, 5xx and
//! refused credentials are kept; and the credentials never come back out of the API.

mod common;

use std::time::Duration;

use common::*;
use reqwest::Method;
use serde_json::{json, Value};
use webhook_ingest::catchup::{CatchUp, Plant};
use webhook_ingest::provider::Vcs;
use webhook_ingest::store::Store;

const TOKEN: &str = "ghp_token-for-tests-only";
const HOOK: i64 = 7;
/// Pushes sent while the service is down, from this many clients at once.
const FAILED_PUSHES: usize = 120;
const CLIENTS: usize = 12;
/// The time a test gives catch-up to bring every failed push back.
const RECOVERY_BOUND: Duration = Duration::from_secs(30);

fn catchup_config(github: &GitHubStandIn, plant: Option<Plant>) -> CatchUp {
    CatchUp {
        api: github.api(),
        every: Duration::from_millis(200),
        backoff: Duration::from_millis(10),
        plant,
        node: None,
    }
}

async fn service_on(
    store: Store,
    db: Option<std::path::PathBuf>,
    github: &GitHubStandIn,
    plant: Option<Plant>,
) -> Service {
    let config = webhook_ingest::Config {
        catchup: catchup_config(github, plant),
        ..Service::config(TEST_BODY_LIMIT)
    };
    Service::serve_with(store, db, config).await
}

fn catchup_path(fixture: &Fixture) -> String {
    let (inbox, _) = fixture.inbox(Vcs::Github);
    format!(
        "/api/{}/digests/{}/inboxes/{inbox}/catchup",
        fixture.instance, fixture.digest
    )
}

async fn give(service: &Service, fixture: &Fixture, body: Value) -> Answer {
    let request = service
        .client
        .put(service.url(&catchup_path(fixture)))
        .bearer_auth(&fixture.key)
        .json(&body);
    service.send(request).await
}

/// Gives the GitHub inbox the repository hook's catch-up with `token`, which must be taken.
async fn give_repository_hook(service: &Service, fixture: &Fixture, token: &str) -> Answer {
    let body = json!({ "repository": "octo/hello", "hook_id": HOOK, "token": token });
    let given = give(service, fixture, body).await;
    assert_eq!(given.status, 200, "{}", given.text);
    given
}

/// The service's `/metrics`, as text.
async fn metrics_text(service: &Service) -> String {
    let answer = service
        .client
        .get(service.url("/metrics"))
        .send()
        .await
        .unwrap();
    answer.text().await.unwrap()
}

/// Sends `count` pushes of `hook` from [`CLIENTS`] clients at once; their guids.
async fn push_many(
    github: &std::sync::Arc<GitHubStandIn>,
    hook: usize,
    prefix: &str,
    count: usize,
    recorded_as: Option<i64>,
) -> Vec<String> {
    let guids: Vec<String> = (0..count).map(|n| format!("{prefix}-{n:04}")).collect();
    let mut clients = Vec::new();
    for chunk in guids.chunks(count.div_ceil(CLIENTS)) {
        let (github, chunk) = (github.clone(), chunk.to_vec());
        clients.push(tokio::spawn(async move {
            for guid in chunk {
                github
                    .push(hook, &guid, github_push(&[&guid]), recorded_as)
                    .await;
            }
        }));
    }
    for client in clients {
        client.await.unwrap();
    }
    guids
}

/// Waits until `done` holds, at most [`RECOVERY_BOUND`].
async fn until(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + RECOVERY_BOUND;
    while !done().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not within {RECOVERY_BOUND:?}: {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn metric(service: &Service, name: &str) -> f64 {
    let text = metrics_text(service).await;
    text.lines()
        .filter(|line| line.starts_with(name) && line[name.len()..].starts_with('{'))
        .map(|line| line.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum()
}

async fn deliveries(service: &Service, fixture: &Fixture) -> u64 {
    service.stats(fixture).await["deliveries"].as_u64().unwrap()
}

/// The scene every node down: the service made, its inbox given catch-up, then stopped; the
/// stand-in's pushes fail; a few reach a service whose answer GitHub no longer waited for.
struct Outage {
    github: std::sync::Arc<GitHubStandIn>,
    fixture: Fixture,
    hook: usize,
    /// The store's location: a SQLite file, or a PostgreSQL URL.
    db: String,
    failed: Vec<String>,
}

async fn outage(db: String, failed: usize, timed_out_but_stored: usize) -> Outage {
    let github = std::sync::Arc::new(GitHubStandIn::start().await);
    let store = Store::open(&db).await.unwrap();
    let config = webhook_ingest::Config {
        catchup: CatchUp {
            every: Duration::from_secs(3600),
            ..catchup_config(&github, None)
        },
        ..Service::config(TEST_BODY_LIMIT)
    };
    let service = Service::serve_with(store, None, config).await;
    let fixture = service.setup().await;
    let (_, secret) = fixture.inbox(Vcs::Github);
    let target = service.url(&fixture.hook_path(Vcs::Github));
    let credential = Credential::Token(TOKEN.into());
    let hook = github.add_hook(
        HookKind::Repository("octo/hello".into(), HOOK),
        credential,
        target,
        secret.into(),
    );
    // Stored by the service, but recorded failed: GitHub gave up waiting first.
    push_many(&github, hook, "late", timed_out_but_stored, Some(0)).await;
    let given = give_repository_hook(&service, &fixture, TOKEN).await;
    // The round the credentials started, to its end: then the node idles, holding no lease
    // when it is lost (a node lost mid-pass holds its lease until it runs out).
    until("the round the credentials started ends", async || {
        let shown = service
            .send(
                service
                    .client
                    .get(service.url(&catchup_path(&fixture)))
                    .bearer_auth(&fixture.key),
            )
            .await;
        shown.body["last_success_ms"].as_i64() > given.body["last_success_ms"].as_i64()
    })
    .await;
    assert_eq!(
        metric(&service, "webhook_ingest_catchup_found_failed_total").await,
        timed_out_but_stored as f64
    );
    assert!(
        github.redeliveries().is_empty(),
        "nothing asked for what is stored"
    );
    drop(service);
    let failed = push_many(&github, hook, "down", failed, None).await;
    assert!(
        github
            .records(hook)
            .iter()
            .filter(|r| r.status_code == 0)
            .count()
            >= failed.len()
    );
    Outage {
        github,
        fixture,
        hook,
        db,
        failed,
    }
}

impl Outage {
    /// The service started again on the same database, and the hook pointed at it (as the
    /// load balancer in front of a fleet would be). Its first round meets GitHub's primary
    /// limit, spent until a second from now, and waits for the reset: the hook is aimed
    /// meanwhile.
    async fn restart(&self, plant: Option<Plant>) -> Service {
        let limited = self.github.calls(Method::GET, "/");
        self.github.set_rate(0, now_unix() + 1);
        let store = Store::open(&self.db).await.unwrap();
        let service = service_on(store, None, &self.github, plant).await;
        self.github
            .set_target(self.hook, service.url(&self.fixture.hook_path(Vcs::Github)));
        until("the first round meets the limit", async || {
            self.github.calls(Method::GET, "/") > limited
        })
        .await;
        self.github.set_rate(5000, now_unix() + 3600);
        service
    }

    /// Two nodes started again on the same database, each first waiting for the same reset
    /// of the primary limit, so that their passes begin together.
    async fn restart_two(&self, plant: Option<Plant>) -> (Service, Service) {
        let limited = self.github.calls(Method::GET, "/");
        self.github.set_rate(0, now_unix() + 1);
        let mut nodes = Vec::new();
        for _ in 0..2 {
            let store = Store::open(&self.db).await.unwrap();
            nodes.push(service_on(store, None, &self.github, plant).await);
        }
        self.github.set_target(
            self.hook,
            nodes[0].url(&self.fixture.hook_path(Vcs::Github)),
        );
        // Stored by the nodes, but recorded failed: GitHub gave up waiting first.
        push_many(&self.github, self.hook, "late-again", 3, Some(0)).await;
        until("both nodes meet the limit", async || {
            self.github.calls(Method::GET, "/") >= limited + 2
        })
        .await;
        self.github.set_rate(5000, now_unix() + 3600);
        let second = nodes.pop().unwrap();
        (nodes.pop().unwrap(), second)
    }
}

/// A fresh SQLite file's path.
fn sqlite_file(name: &str) -> String {
    temp_path(name, "db").to_str().unwrap().to_owned()
}

/// The SQLite file at `db` and its WAL, gone; nothing for a PostgreSQL URL.
fn remove_sqlite(db: &str) {
    if !webhook_ingest::store::is_postgres(db) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{db}{suffix}"));
        }
    }
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_sent_while_the_service_was_down_are_stored_once_it_is_back() {
    let scene = outage(sqlite_file("catchup-back"), FAILED_PUSHES, 3).await;
    let service = scene.restart(None).await;
    let expected = (FAILED_PUSHES + 3) as u64;
    until("every push stored", async || {
        deliveries(&service, &scene.fixture).await == expected
    })
    .await;
    until("every ask recovered", async || {
        metric(&service, "webhook_ingest_catchup_recovered_total").await == FAILED_PUSHES as f64
    })
    .await;
    let asked = scene.github.redeliveries();
    assert_eq!(
        asked.len(),
        FAILED_PUSHES,
        "one redelivery request per failed push, none for those stored"
    );
    let mut ids: Vec<i64> = asked.iter().map(|(_, id)| *id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), FAILED_PUSHES, "no delivery asked twice");
    assert_eq!(
        metric(&service, "webhook_ingest_catchup_redelivery_asked_total").await,
        FAILED_PUSHES as f64
    );
    assert_eq!(
        metric(&service, "webhook_ingest_catchup_found_failed_total").await,
        FAILED_PUSHES as f64
    );
    // Every redelivery carried the guid of a push that failed, and each guid is stored once.
    let redelivered: Vec<_> = scene
        .github
        .records(scene.hook)
        .into_iter()
        .filter(|r| r.redelivery)
        .collect();
    assert_eq!(redelivered.len(), FAILED_PUSHES);
    assert!(redelivered
        .iter()
        .all(|r| r.status_code == 201 && scene.failed.contains(&r.guid)));
    remove_sqlite(&scene.db);
}

/// Two nodes on one database after the outage, redeliveries held (asked for, not sent), so
/// that only the cursor, the lease and the stored-id check stand between a failed push and a
/// second ask; what went wrong, if anything.
async fn second_asks(db: String, plant: Option<Plant>) -> Option<String> {
    const FAILED: usize = 40;
    let scene = outage(db, FAILED, 3).await;
    scene.github.hold_redeliveries(true);
    // Longer than a round's period: two nodes' passes overlap unless a lease keeps them apart.
    scene.github.set_list_delay(Duration::from_millis(400));
    let (first, second) = scene.restart_two(plant).await;
    until("every failed push asked for", async || {
        scene.github.redeliveries().len() >= FAILED
    })
    .await;
    // Rounds enough for a second ask to show: each node's every 200 ms.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let asked = scene.github.redeliveries().len();
    drop((first, second));
    remove_sqlite(&scene.db);
    (asked != FAILED).then(|| format!("{asked} redelivery requests for {FAILED} failed pushes"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_and_many_rounds_ask_for_each_failed_push_once() {
    assert_eq!(second_asks(sqlite_file("catchup-once"), None).await, None);
}

/// Each guard planted away in turn: the check above must fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cursor_the_lease_and_the_stored_id_check_are_each_needed() {
    for plant in [
        Plant::CursorNotSaved,
        Plant::LeaseIgnored,
        Plant::StoredCheckSkipped,
    ] {
        let caught = second_asks(sqlite_file("catchup-plant"), Some(plant)).await;
        assert!(caught.is_some(), "{plant:?} planted and not caught");
    }
}

/// A port nothing listens on: deliveries to it fail as to a service that is down.
async fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}/down")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn organization_and_app_hooks_are_caught_up_across_pages_through_limits_and_5xx() {
    let github = std::sync::Arc::new(GitHubStandIn::start().await);
    let service = service_on(Store::open(":memory:").await.unwrap(), None, &github, None).await;
    let fixture = service.setup().await;
    let (_, secret) = fixture.inbox(Vcs::Github);
    let target = service.url(&fixture.hook_path(Vcs::Github));
    let public = include_str!("fixtures/catchup/app-key.pub.pem");
    let private = include_str!("fixtures/catchup/app-key.pem");
    let cases = [
        (
            HookKind::Organization("octo-org".into(), 8),
            Credential::Token(TOKEN.into()),
            json!({ "organization": "octo-org", "hook_id": 8, "token": TOKEN }),
        ),
        (
            HookKind::App,
            Credential::App(42, public.into()),
            json!({ "app_id": 42, "private_key": private }),
        ),
    ];
    let mut stored = 0;
    for (n, (kind, credential, body)) in cases.into_iter().enumerate() {
        let hook = github.add_hook(kind, credential, closed_port().await, secret.into());
        // 250 failed pushes: three pages of 100.
        push_many(&github, hook, &format!("hook{n}"), 250, None).await;
        github.set_target(hook, target.clone());
        let lists = github.calls(Method::GET, "/");
        // A secondary limit with Retry-After, then two 5xx: waited for and retried.
        github.script([
            Scripted {
                status: 429,
                headers: vec![("retry-after", "1".into())],
            },
            Scripted {
                status: 502,
                headers: vec![],
            },
            Scripted {
                status: 503,
                headers: vec![],
            },
        ]);
        let given = give(&service, &fixture, body).await;
        assert_eq!(given.status, 200, "{}", given.text);
        stored += 250;
        until("every push of the hook stored", async || {
            deliveries(&service, &fixture).await == stored
        })
        .await;
        assert!(
            github.calls(Method::GET, "/") - lists >= 3 + 3,
            "three pages, after a limit and two 5xx"
        );
    }
    assert_eq!(
        github.redeliveries().len(),
        500,
        "one redelivery request per failed push"
    );
}

#[tokio::test]
async fn refused_credentials_are_reported_once_and_not_asked_again() {
    let (logs, _guard) = Logs::capture();
    let github = std::sync::Arc::new(GitHubStandIn::start().await);
    let service = service_on(Store::open(":memory:").await.unwrap(), None, &github, None).await;
    let fixture = service.setup().await;
    let (_, secret) = fixture.inbox(Vcs::Github);
    let hook = github.add_hook(
        HookKind::Repository("octo/hello".into(), HOOK),
        Credential::Token(TOKEN.into()),
        closed_port().await,
        secret.into(),
    );
    push_many(&github, hook, "revoked", 2, None).await;
    let given = give_repository_hook(&service, &fixture, "ghp_revoked").await;
    assert!(
        !given.text.contains("ghp_revoked"),
        "the token never comes back: {}",
        given.text
    );
    until("the refusal shows on /health", async || {
        let health: Value = service
            .client
            .get(service.url("/health"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        health["catchup"]["refused"]
            .as_array()
            .is_some_and(|r| r.len() == 1)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(
        github.calls(Method::GET, "/"),
        1,
        "a refused token is not retried in a loop"
    );
    assert_eq!(
        logs.text()
            .matches("GitHub refuses its credentials")
            .count(),
        1,
        "said once: {}",
        logs.text()
    );
    assert!(
        !logs.text().contains("ghp_revoked"),
        "no credential in the log"
    );
    assert_eq!(
        metric(&service, "webhook_ingest_catchup_refused").await,
        1.0
    );
    // New credentials: the refusal is forgotten and the pushes come back.
    give_repository_hook(&service, &fixture, TOKEN).await;
    github.set_target(hook, service.url(&fixture.hook_path(Vcs::Github)));
    until("both pushes stored", async || {
        deliveries(&service, &fixture).await == 2
    })
    .await;
    assert_eq!(
        metric(&service, "webhook_ingest_catchup_refused").await,
        0.0
    );
}

#[tokio::test]
async fn the_api_keeps_the_credentials_secret_and_refuses_what_cannot_work() {
    let github = GitHubStandIn::start().await;
    let service = service_on(Store::open(":memory:").await.unwrap(), None, &github, None).await;
    let fixture = service.setup().await;
    let private = include_str!("fixtures/catchup/app-key.pem");
    let shown = give(
        &service,
        &fixture,
        json!({ "app_id": 42, "private_key": private }),
    )
    .await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    assert_eq!(shown.body["hook"], json!({ "app": true }));
    assert_eq!(shown.body["auth"], "app");
    let read = service
        .send(
            service
                .client
                .get(service.url(&catchup_path(&fixture)))
                .bearer_auth(&fixture.key),
        )
        .await;
    assert_eq!(read.status, 200);
    for answer in [&shown, &read] {
        assert!(
            !answer.text.contains("PRIVATE KEY") && !answer.text.contains(&private[40..80]),
            "{}",
            answer.text
        );
    }
    let refused = [
        json!({ "repository": "octo/hello", "token": TOKEN }),
        json!({ "repository": "octo", "hook_id": 1, "token": TOKEN }),
        json!({ "repository": "octo/../x", "hook_id": 1, "token": TOKEN }),
        json!({ "organization": "octo", "hook_id": 1 }),
        json!({ "app_id": 42, "private_key": "not a key" }),
        json!({ "app_id": 42, "private_key": private, "token": TOKEN }),
        json!({ "repository": "octo/hello", "hook_id": -1, "token": TOKEN }),
        json!({ "repository": "octo/hello", "hook_id": 1, "token": " " }),
    ];
    for body in refused {
        give(&service, &fixture, body.clone())
            .await
            .assert_problem(422, "invalid-field");
    }
    let (gitlab, _) = fixture.inbox(Vcs::Gitlab);
    let path = format!(
        "/api/{}/digests/{}/inboxes/{gitlab}/catchup",
        fixture.instance, fixture.digest
    );
    let request = service
        .client
        .put(service.url(&path))
        .bearer_auth(&fixture.key)
        .json(&json!({ "repository": "o/r", "hook_id": 1, "token": TOKEN }));
    service
        .send(request)
        .await
        .assert_problem(422, "invalid-field");
    let wrong_key = service
        .client
        .put(service.url(&catchup_path(&fixture)))
        .bearer_auth("key_wrong")
        .json(&json!({}));
    service
        .send(wrong_key)
        .await
        .assert_problem(401, "bad-api-key");
    let deleted = service
        .send(
            service
                .client
                .delete(service.url(&catchup_path(&fixture)))
                .bearer_auth(&fixture.key),
        )
        .await;
    assert_eq!(deleted.status, 204);
    let gone = service
        .send(
            service
                .client
                .get(service.url(&catchup_path(&fixture)))
                .bearer_auth(&fixture.key),
        )
        .await;
    gone.assert_problem(422, "invalid-field");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_fleet_of_two_asks_for_each_failed_push_once() {
    let Some(url) = test_postgres("a_postgres_fleet_of_two_asks_for_each_failed_push_once") else {
        return;
    };
    assert_eq!(second_asks(url, None).await, None);
}

#[tokio::test]
async fn the_catchup_metrics_pass_promtool() {
    let github = GitHubStandIn::start().await;
    let service = service_on(Store::open(":memory:").await.unwrap(), None, &github, None).await;
    let fixture = service.setup().await;
    give_repository_hook(&service, &fixture, TOKEN).await;
    until("the inbox shows in /metrics", async || {
        let text = metrics_text(&service).await;
        [
            "last_success_timestamp_seconds{",
            "refused{",
            "redelivery_asked_total{",
        ]
        .iter()
        .all(|series| text.contains(&format!("webhook_ingest_catchup_{series}")))
    })
    .await;
    let text = metrics_text(&service).await;
    promtool_check_metrics(&text);
}
