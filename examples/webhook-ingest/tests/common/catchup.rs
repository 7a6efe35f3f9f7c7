//! What the catch-up tests share (`tests/catchup.rs`, `tests/catchup_api.rs`, the contract
//! checks): a service whose catch-up asks the stand-in GitHub ([`super::github`]) every
//! 200 ms, its inbox given catch-up credentials, pushes sent from parallel clients, waits
//! with a bound, and the date-time check of both providers' descriptions.

use std::time::Duration;

use serde_json::{json, Value};
use webhook_ingest::catchup::CatchUp;
use webhook_ingest::provider::Provider;
use webhook_ingest::store::Store;

use super::plants::Plant;
use super::{github_push, Answer, Fixture, GitHubStandIn, Service, TEST_BODY_LIMIT};

pub const TOKEN: &str = "ghp_token-for-tests-only";
pub const HOOK: i64 = 7;
/// The parallel clients pushes are sent from.
pub const CLIENTS: usize = 12;
/// The time a test gives catch-up to bring every failed push back: a pass takes well under a
/// second here, and the bound leaves room for a CI machine's two cores busy with every test
/// binary at once.
pub const RECOVERY_BOUND: Duration = Duration::from_secs(60);

/// Catch-up asking `github` every 200 ms, with `plant` planted if one is given.
pub fn catchup_config(github: &GitHubStandIn, plant: Option<Plant>) -> CatchUp {
    CatchUp {
        api: github.api(),
        every: Duration::from_millis(200),
        backoff: Duration::from_millis(10),
        wrap_store: plant.map(Plant::wrap_store),
        node: None,
    }
}

pub async fn service_on(
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

pub fn catchup_path(fixture: &Fixture) -> String {
    let (inbox, _) = fixture.inbox(Provider::Github);
    format!(
        "/api/{}/digests/{}/inboxes/{inbox}/catchup",
        fixture.instance, fixture.digest
    )
}

pub async fn give(service: &Service, fixture: &Fixture, body: Value) -> Answer {
    let request = service
        .client
        .put(service.url(&catchup_path(fixture)))
        .bearer_auth(&fixture.key)
        .json(&body);
    service.send(request).await
}

/// Gives the GitHub inbox the repository hook's catch-up with `token`, which must be taken.
pub async fn give_repository_hook(service: &Service, fixture: &Fixture, token: &str) -> Answer {
    let body = json!({ "repository": "octo/hello", "hook_id": HOOK, "token": token });
    let given = give(service, fixture, body).await;
    assert_eq!(given.status, 200, "{}", given.text);
    given
}

/// How many inboxes `/health` lists as refused by their provider.
pub async fn refused_on_health(service: &Service) -> usize {
    let health: Value = service
        .client
        .get(service.url("/health"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    health["catchup"]["refused"].as_array().map_or(0, Vec::len)
}

/// The catch-up at `path` as `GET` shows it.
pub async fn shown(service: &Service, fixture: &Fixture, path: &str) -> Answer {
    let request = service
        .client
        .get(service.url(path))
        .bearer_auth(&fixture.key);
    service.send(request).await
}

/// The service's `/metrics`, as text.
pub async fn metrics_text(service: &Service) -> String {
    let answer = service
        .client
        .get(service.url("/metrics"))
        .send()
        .await
        .unwrap();
    answer.text().await.unwrap()
}

/// Sends `count` pushes of `hook` from [`CLIENTS`] clients at once; their guids.
pub async fn push_many(
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
pub async fn within_bound(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + RECOVERY_BOUND;
    while !done().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not within {RECOVERY_BOUND:?}: {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The sum of the series of `name` on the service's `/metrics`.
pub async fn series_sum(service: &Service, name: &str) -> f64 {
    series_sum_where(service, name, "").await
}

/// The sum of the series of `name` whose labels hold `label` (`inbox="ID"`): on a PostgreSQL
/// database shared with other tests, the service also works their inboxes.
pub async fn series_sum_where(service: &Service, name: &str, label: &str) -> f64 {
    let text = metrics_text(service).await;
    text.lines()
        .filter(|line| line.starts_with(name) && line[name.len()..].starts_with('{'))
        .filter(|line| line.contains(label))
        .map(|line| line.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum()
}

pub async fn deliveries(service: &Service, fixture: &Fixture) -> u64 {
    service.stats(fixture).await["deliveries"].as_u64().unwrap()
}

/// A port nothing listens on: deliveries to it fail as to a service that is down.
pub async fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}/down")
}

/// RFC 3339 as GitHub writes it (`2019-06-03T00:57:16Z`) and GitLab
/// (`2012-05-28T04:42:42-07:00`, `2026-12-03T10:00:00.000Z`).
pub fn is_date_time(text: &str) -> bool {
    let bytes = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| {
        range
            .clone()
            .all(|i| bytes.get(i).is_some_and(u8::is_ascii_digit))
    };
    bytes.len() >= 20
        && digits(0..4)
        && bytes[4] == b'-'
        && digits(5..7)
        && bytes[7] == b'-'
        && digits(8..10)
        && bytes[10] == b'T'
        && digits(11..13)
        && bytes[13] == b':'
        && digits(14..16)
        && bytes[16] == b':'
        && digits(17..19)
        && (text.ends_with('Z') || text[19..].contains(['+', '-']))
}
