//! The service's database as the library's `ReplayStore`: nodes that share the database share
//! what was reserved and taken, many nodes reserving one key at once get exactly one
//! `First`, a key is held until its lease ends and a repeat until its expiry, and a late
//! release frees nothing another node reserved since; behind the library's `Intake`, a replay
//! sent to another node is refused there. The PostgreSQL half runs when
//! `WEBHOOK_INGEST_TEST_POSTGRES` names a database.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use axum::routing::post;
use axum::Router;
use common::{temp_path, test_postgres, Outage};
use faultline::webhooks::senders::GitHub;
use faultline::webhooks::{Intake, OnRepeat, ReplayKey, ReplayStore, SecretSet, Seen, Verified};
use hmac::{KeyInit, Mac};
use webhook_ingest::store::Store;

/// Tasks remembering one key at once, spread over the stores of one database: enough to
/// have many waiting on the database's lock together.
const RACERS: usize = 64;

/// What `PURGED_PER_REMEMBER` is in `store/replays.rs`: the expired rows one write deletes.
const PURGED_PER_REMEMBER: usize = 8;

fn key(n: u8) -> ReplayKey {
    ReplayKey::from_bytes([n; 32])
}

/// A key no earlier run left in a shared database.
fn fresh_key() -> ReplayKey {
    let mut bytes = [0; 32];
    getrandom::fill(&mut bytes).unwrap();
    ReplayKey::from_bytes(bytes)
}

fn in_a_day() -> SystemTime {
    SystemTime::now() + Duration::from_secs(24 * 60 * 60)
}

/// Reserves `key` at `node` and, when it was free, takes it until `until`: a delivery
/// answered 2xx. What the reservation found.
async fn remember(node: &Store, key: ReplayKey, until: SystemTime) -> Seen {
    let seen = node.reserve(key, until).await.unwrap();
    if seen == Seen::First {
        node.confirm(key, until).await.unwrap();
    }
    seen
}

async fn two_nodes_on(location: &str) -> [Store; 2] {
    [
        Store::open(location).await.unwrap(),
        Store::open(location).await.unwrap(),
    ]
}

/// Each node sees the keys the other remembered.
async fn nodes_share_their_keys(nodes: &[Store; 2]) {
    let (a, b) = (fresh_key(), fresh_key());
    assert_eq!(remember(&nodes[0], a, in_a_day()).await, Seen::First);
    assert_eq!(remember(&nodes[1], a, in_a_day()).await, Seen::Repeat);
    assert_eq!(remember(&nodes[1], b, in_a_day()).await, Seen::First);
    assert_eq!(remember(&nodes[0], b, in_a_day()).await, Seen::Repeat);
    assert_eq!(remember(&nodes[0], a, in_a_day()).await, Seen::Repeat);
}

/// Many tasks over both nodes remember one key at once: exactly one is first.
async fn one_of_many_at_once_is_first(nodes: &[Store; 2]) {
    let key = fresh_key();
    let racers: Vec<_> = (0..RACERS)
        .map(|i| {
            let node = nodes[i % nodes.len()].clone();
            tokio::spawn(async move { node.reserve(key, in_a_day()).await })
        })
        .collect();
    let mut firsts = 0;
    for racer in racers {
        if racer.await.unwrap().unwrap() == Seen::First {
            firsts += 1;
        }
    }
    assert_eq!(firsts, 1);
}

/// A database file of this test's own, removed with its WAL when the test ends.
struct TempDb(PathBuf);

impl TempDb {
    fn new(name: &str) -> TempDb {
        TempDb(temp_path(name, "db"))
    }

    fn location(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.0.display()));
        }
    }
}

fn rows(path: &Path) -> usize {
    let connection = rusqlite::Connection::open(path).unwrap();
    let count: i64 = connection
        .query_row("SELECT count(*) FROM replays", [], |row| row.get(0))
        .unwrap();
    usize::try_from(count).unwrap()
}

#[tokio::test]
async fn two_nodes_on_one_sqlite_file_share_their_keys() {
    let db = TempDb::new("replays-shared");
    let nodes = two_nodes_on(db.location()).await;
    nodes_share_their_keys(&nodes).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_of_many_remembering_a_key_at_once_on_sqlite_is_first() {
    let db = TempDb::new("replays-race");
    let nodes = two_nodes_on(db.location()).await;
    one_of_many_at_once_is_first(&nodes).await;
    assert_eq!(rows(&db.0), 1);
}

/// A key is held until its lease ends, a repeat until its expiry, then first again; a release
/// frees only the reservation of its own lease, never a key taken. Judged from the real
/// time, with fresh keys, so that tests sharing a database neither see these rows nor delete
/// them.
async fn a_key_lasts_until_its_expiry(store: &Store) {
    let (one, two) = (fresh_key(), fresh_key());
    let start = SystemTime::now();
    let at = |ms| start + Duration::from_millis(ms);
    let reserve = |key, lease, now| store.reserve_at(key, lease, now);
    assert_eq!(reserve(one, at(1_000), start).await.unwrap(), Seen::First);
    assert_eq!(reserve(one, at(2_000), at(999)).await.unwrap(), Seen::Held);
    // The lease ended: the holder died, and the key is free again.
    assert_eq!(
        reserve(one, at(2_000), at(1_000)).await.unwrap(),
        Seen::First
    );
    // A late release of the first lease frees nothing; the second one's does.
    store.release_at(one, at(1_000)).await.unwrap();
    assert_eq!(
        reserve(one, at(3_000), at(1_500)).await.unwrap(),
        Seen::Held
    );
    store.release_at(one, at(2_000)).await.unwrap();
    assert_eq!(
        reserve(one, at(3_000), at(1_500)).await.unwrap(),
        Seen::First
    );
    // Taken until its expiry, and no release frees it.
    store.confirm_at(one, at(10_000)).await.unwrap();
    store.release_at(one, at(3_000)).await.unwrap();
    assert_eq!(
        reserve(one, at(20_000), at(9_999)).await.unwrap(),
        Seen::Repeat
    );
    assert_eq!(
        reserve(one, at(20_000), at(10_000)).await.unwrap(),
        Seen::First
    );
    assert_eq!(
        reserve(two, at(20_000), at(19_999)).await.unwrap(),
        Seen::First
    );
}

#[tokio::test]
async fn a_key_is_held_until_its_lease_and_a_repeat_until_its_expiry() {
    a_key_lasts_until_its_expiry(&Store::open(":memory:").await.unwrap()).await;
}

#[tokio::test]
async fn a_key_is_held_until_its_lease_and_a_repeat_until_its_expiry_on_postgres() {
    let name = "a_key_is_held_until_its_lease_and_a_repeat_until_its_expiry_on_postgres";
    let Some(url) = test_postgres(name) else {
        return;
    };
    a_key_lasts_until_its_expiry(&Store::open(&url).await.unwrap()).await;
}

#[tokio::test]
async fn expired_rows_are_deleted_a_few_per_write() {
    let db = TempDb::new("replays-purge");
    let store = Store::open(db.location()).await.unwrap();
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
    let (soon, later) = (
        start + Duration::from_secs(1),
        start + Duration::from_secs(60),
    );
    let expiring = 2 * PURGED_PER_REMEMBER + 4;
    for n in 0..expiring {
        let n = u8::try_from(n).unwrap();
        assert_eq!(
            store.reserve_at(key(n), soon, start).await.unwrap(),
            Seen::First
        );
    }
    assert_eq!(rows(&db.0), expiring);
    // Past their expiry, each write adds its key and deletes at most a few expired ones.
    let after = soon + Duration::from_secs(1);
    let mut expected = expiring;
    for n in 200..203 {
        store.reserve_at(key(n), later, after).await.unwrap();
        let expired = expected - usize::from(n - 200);
        expected = expected + 1 - expired.min(PURGED_PER_REMEMBER);
        assert_eq!(rows(&db.0), expected);
    }
    // Every expired row is gone; the live ones stay.
    assert_eq!(expected, 3);
    assert_eq!(
        store.reserve_at(key(201), later, after).await.unwrap(),
        Seen::Held
    );
}

#[tokio::test]
async fn two_nodes_on_one_postgres_database_share_their_keys() {
    let Some(url) = test_postgres("two_nodes_on_one_postgres_database_share_their_keys") else {
        return;
    };
    nodes_share_their_keys(&two_nodes_on(&url).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_of_many_remembering_a_key_at_once_on_postgres_is_first() {
    let Some(url) = test_postgres("one_of_many_remembering_a_key_at_once_on_postgres_is_first")
    else {
        return;
    };
    one_of_many_at_once_is_first(&two_nodes_on(&url).await).await;
}

const GITHUB_SECRET: &str = "the inbox's secret";

/// A node of a fleet as any team's receiver writes it with the library: one GitHub route
/// whose intake remembers in `store` and refuses a repeat, under the layer that answers
/// every refusal. Answers its address and its task.
async fn guarded_node(store: Store) -> (String, tokio::task::JoinHandle<()>) {
    let intake = Intake::new(GitHub::new(SecretSet::one(GITHUB_SECRET).unwrap()).unwrap())
        .replays(store, OnRepeat::Refuse);
    let app = Router::new()
        .route(
            "/hooks/github",
            post(|_: Verified<GitHub>| async { "kept" }),
        )
        .with_state(intake)
        .layer(faultline::FaultLayer::pair().0);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks/github", listener.local_addr().unwrap());
    let task = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, task)
}

/// A signed GitHub push under the delivery id `id`: the signature covers the body only.
async fn github_push(url: &str, id: &str, body: &str) -> reqwest::Response {
    let mut mac =
        <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(GITHUB_SECRET.as_bytes()).unwrap();
    mac.update(body.as_bytes());
    let tag: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("x-github-event", "push")
        .header("x-github-delivery", id)
        .header("x-hub-signature-256", format!("sha256={tag}"))
        .body(body.to_owned())
        .send()
        .await
        .unwrap()
}

/// [`github_push`], again while a copy is in hand (the first's confirm, which runs on
/// after its answer, has not landed yet): the first answer of another kind.
async fn github_push_settled(url: &str, id: &str, body: &str) -> reqwest::Response {
    for _ in 0..100 {
        let response = github_push(url, id, body).await;
        if response.status() != 503 {
            return response;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("still in progress after a second")
}

/// The `code` of a problem body.
async fn code(response: reqwest::Response) -> String {
    let problem: serde_json::Value =
        serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    problem["code"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_replay_under_a_fresh_id_to_another_node_is_refused_there() {
    let db = TempDb::new("replays-fleet");
    let [a, b] = two_nodes_on(db.location()).await;
    let ((url_a, task_a), (url_b, task_b)) = (guarded_node(a).await, guarded_node(b).await);
    let body = r#"{"ref":"refs/heads/main","commits":[]}"#;
    assert_eq!(github_push(&url_a, "delivery-1", body).await.status(), 200);
    // The same signed bytes under a new id, at the other node: GitHub signs no id.
    let replayed = github_push_settled(&url_b, "delivery-2", body).await;
    assert_eq!(replayed.status(), 409);
    assert_eq!(code(replayed).await, "webhook-replayed");
    let again = github_push_settled(&url_a, "delivery-3", body).await;
    assert_eq!(again.status(), 409);
    let other = r#"{"ref":"refs/heads/next","commits":[]}"#;
    assert_eq!(github_push(&url_b, "delivery-4", other).await.status(), 200);
    task_a.abort();
    task_b.abort();
}

#[tokio::test]
async fn a_store_that_cannot_answer_gets_the_delivery_retried_later() {
    let (store, outage) = Outage::wrap(Store::open(":memory:").await.unwrap());
    let (url, task) = guarded_node(store).await;
    let body = r#"{"ref":"refs/heads/main","commits":[]}"#;
    outage.begin();
    let refused = github_push(&url, "delivery-1", body).await;
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().contains_key("retry-after"));
    assert_eq!(code(refused).await, "webhook-replays-unavailable");
    outage.end();
    // Nothing was remembered by the failed attempt: the retry is the first.
    assert_eq!(github_push(&url, "delivery-1", body).await.status(), 200);
    task.abort();
}
