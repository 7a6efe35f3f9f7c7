//! Catch-up against the stand-in GitHub, over TCP: pushes sent while the service was down are
//! asked for again and stored once, on SQLite and on a PostgreSQL fleet of two; the cursor,
//! the lease and the stored-id check each keep a delivery from being asked twice (each planted
//! bug is caught). `tests/catchup_api.rs` has the hooks, the limits and the credentials.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::catchup::*;
use common::plants::Plant;
use common::*;
use reqwest::Method;
use webhook_ingest::catchup::CatchUp;
use webhook_ingest::ids::InboxId;
use webhook_ingest::provider::Provider;
use webhook_ingest::store::catchup::PassEnd;
use webhook_ingest::store::{Front, Operations, Store, StoreError};

/// Pushes sent while the service is down.
const FAILED_PUSHES: usize = 120;

/// The scene every node down: the service made, its inbox given catch-up, then stopped; the
/// stand-in's pushes fail; a few reach a service whose answer GitHub no longer waited for.
struct Outage {
    github: Arc<GitHubStandIn>,
    fixture: Fixture,
    hook: usize,
    /// The store's location: a SQLite file, or a PostgreSQL URL.
    db: String,
    failed: Vec<String>,
}

async fn outage(db: String, failed: usize, timed_out_but_stored: usize) -> Outage {
    let github = Arc::new(GitHubStandIn::start().await);
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
    let (_, secret) = fixture.inbox(Provider::Github);
    let target = service.url(&fixture.hook_path(Provider::Github));
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
    within_bound("the round the credentials started ends", async || {
        let now = shown(&service, &fixture, &catchup_path(&fixture)).await;
        now.body["last_success_ms"].as_i64() > given.body["last_success_ms"].as_i64()
    })
    .await;
    assert_eq!(
        series_sum(&service, "webhook_ingest_catchup_found_failed_total").await,
        timed_out_but_stored as f64
    );
    assert!(
        github.redeliveries().is_empty(),
        "nothing asked for what is stored"
    );
    service.stop().await;
    let failed = push_many(&github, hook, "down", failed, None).await;
    let records = github.records(hook);
    let down = |guid: &String| {
        records
            .iter()
            .any(|r| &r.guid == guid && r.status_code == 0)
    };
    assert!(
        failed.iter().all(down),
        "every push sent while the service was down failed"
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
        self.github.set_target(
            self.hook,
            service.url(&self.fixture.hook_path(Provider::Github)),
        );
        within_bound("the first round meets the limit", async || {
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
            nodes[0].url(&self.fixture.hook_path(Provider::Github)),
        );
        // Stored by the nodes, but recorded failed: GitHub gave up waiting first.
        push_many(&self.github, self.hook, "late-again", 3, Some(0)).await;
        within_bound("both nodes meet the limit", async || {
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
    within_bound("every push stored", async || {
        deliveries(&service, &scene.fixture).await == expected
    })
    .await;
    within_bound("every ask recovered", async || {
        series_sum(&service, "webhook_ingest_catchup_recovered_total").await == FAILED_PUSHES as f64
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
        series_sum(&service, "webhook_ingest_catchup_redelivery_asked_total").await,
        FAILED_PUSHES as f64
    );
    assert_eq!(
        series_sum(&service, "webhook_ingest_catchup_found_failed_total").await,
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
    within_bound("every failed push asked for", async || {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_fleet_of_two_asks_for_each_failed_push_once() {
    let Some(url) = test_postgres("a_postgres_fleet_of_two_asks_for_each_failed_push_once") else {
        return;
    };
    assert_eq!(second_asks(url, None).await, None);
}

/// Another node's whole pass over one inbox, played just before this node's first
/// `take_lease`: between the round's read of the inbox's row and the lease, which is where
/// a fleet's second node can fall.
struct Overtaken {
    inner: Store,
    inbox: InboxId,
    /// The failed pushes the other node asked for, and the newest delivery id it listed.
    asked: Vec<String>,
    newest: i64,
    /// This node's calls to `take_lease`, the first of which the other node's pass precedes.
    leases_taken: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl Front for Overtaken {
    async fn through(&self, operation: &'static str) -> Result<&dyn Operations, StoreError> {
        if operation == "take_lease" && self.leases_taken.fetch_add(1, Ordering::SeqCst) == 0 {
            let (inbox, other, ttl) = (self.inbox.clone(), "other-node".to_owned(), 60_000);
            let held = self
                .inner
                .take_lease(inbox.clone(), other.clone(), ttl)
                .await?;
            assert!(held.is_some(), "the other node takes the free lease");
            for guid in &self.asked {
                self.inner.record_ask(inbox.clone(), guid.clone()).await?;
            }
            let moved = self
                .inner
                .advance_cursor(inbox.clone(), other.clone(), self.newest, ttl)
                .await?;
            assert!(moved);
            self.inner
                .end_pass(inbox, other, PassEnd::Succeeded)
                .await?;
        }
        Ok(&*self.inner)
    }

    fn behind(&self) -> Option<&dyn Operations> {
        Some(&*self.inner)
    }
}

/// A node whose round read the inbox's cursor before another node's pass moved it takes
/// the cursor the lease finds, and asks GitHub for nothing that pass covered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_starts_from_the_cursor_its_lease_found_not_the_one_its_round_read() {
    const FAILED: usize = 20;
    let scene = outage(sqlite_file("catchup-overtaken"), FAILED, 1).await;
    scene.github.hold_redeliveries(true);
    let records = scene.github.records(scene.hook);
    let leases_taken = Arc::new(AtomicUsize::new(0));
    let store = Store::open(&scene.db)
        .await
        .unwrap()
        .wrapped(|inner| Overtaken {
            inner,
            inbox: InboxId::parse(scene.fixture.inbox(Provider::Github).0).unwrap(),
            asked: scene.failed.clone(),
            newest: records.iter().map(|r| r.id).max().unwrap(),
            leases_taken: leases_taken.clone(),
        });
    let service = service_on(store, None, &scene.github, None).await;
    // Three leases: the pass the other node's preceded has ended, and another after it.
    within_bound("two rounds after the other node's pass", async || {
        leases_taken.load(Ordering::SeqCst) >= 3
    })
    .await;
    let asked = scene.github.redeliveries().len();
    drop(service);
    remove_sqlite(&scene.db);
    assert_eq!(
        asked, 0,
        "asked GitHub again for what the other node's pass asked"
    );
}
