//! On a real PostgreSQL, when `WEBHOOK_INGEST_TEST_POSTGRES` names a database
//! (`load-scripts/fleet/pg-fleet.sh` starts one and runs these with it set).

use std::time::{SystemTime, UNIX_EPOCH};

use std::time::Duration;

use deadpool_postgres::Pool;
use futures::future::BoxFuture;

use super::{commit_batch, Job, Writers, MAX_BATCH, QUEUE_DEPTH, WRITERS};
use crate::ids::{DeliveryId, DigestId, InboxId, InstanceId};
use crate::provider::Provider;
use crate::store::postgres::tests::database_url;
use crate::store::postgres::PgStore;
use crate::store::Commit;
use crate::store::{InboxRow, Inboxes, Ingested, Instances, NewInbox, StoreError};

/// A delivery whose id starts so makes its batch panic inside its open transaction.
const PANICS: &str = "panics-in-its-batch";

/// `commit_batch`, except that a batch holding a delivery named `PANICS…` panics inside a
/// transaction it opened.
fn panicking<'a>(
    pool: &'a Pool,
    jobs: &'a [Job],
) -> BoxFuture<'a, Vec<Result<Ingested, StoreError>>> {
    Box::pin(async move {
        if jobs
            .iter()
            .any(|job| job.claim.delivery_id.as_str().starts_with(PANICS))
        {
            let mut client = pool.get().await.unwrap();
            let _open = client.transaction().await.unwrap();
            panic!("a panic planted in a batch");
        }
        commit_batch(pool, jobs).await
    })
}

/// A store on the test database and an inbox of an instance of its own, or `None` (said
/// on stderr) when no database was given.
async fn store_with_inbox(test: &str) -> Option<(PgStore, InstanceId, InboxRow)> {
    let url = database_url(test)?;
    let store = PgStore::open(&url, None).await.unwrap();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let id = |kind: &str| format!("{kind}_{test}_{}_{nanos}", std::process::id());
    let (instance, digest, inbox) = (
        InstanceId::stored(id("in")),
        DigestId::stored(id("dg")),
        InboxId::stored(id("ib")),
    );
    store
        .create_instance(instance.clone(), vec![0; 32])
        .await
        .unwrap();
    store
        .create_digest(instance.clone(), digest.clone(), test.to_owned())
        .await
        .unwrap();
    let new = NewInbox {
        instance: instance.clone(),
        digest,
        id: inbox.clone(),
        provider: Provider::Github,
        name: "widgets".to_owned(),
        secret: "s".to_owned(),
    };
    store.create_inbox(new).await.unwrap();
    let row = store.inbox(instance.clone(), inbox).await.unwrap().unwrap();
    Some((store, instance, row))
}

fn job(instance: &InstanceId, inbox: &InboxRow, delivery: &str, commits: usize) -> Job {
    Job {
        instance: instance.clone(),
        inbox: inbox.clone(),
        claim: crate::store::Claim::new(DeliveryId::parse(delivery).unwrap(), None, &inbox.id),
        commits: (0..commits)
            .map(|n| Commit {
                sha: format!("{delivery}-{n}"),
                message: Some("m".to_owned()),
                author: None,
                timestamp: None,
                repository: "o/widgets".to_owned(),
                branch: "main".to_owned(),
            })
            .collect(),
    }
}

/// An inbox that does not exist: its delivery breaks the foreign key of `deliveries`.
fn missing_inbox(inbox: &InboxRow) -> InboxRow {
    InboxRow {
        id: InboxId::stored(format!("{}-gone", inbox.id)),
        ..inbox.clone()
    }
}

fn said(results: &[Result<Ingested, StoreError>]) -> Vec<String> {
    results
        .iter()
        .map(|r| match r {
            Ok(Ingested::Stored(n)) => format!("stored {n}"),
            Ok(Ingested::Duplicate) => "duplicate".to_owned(),
            Ok(Ingested::Replayed) => "replayed".to_owned(),
            Err(_) => "failed".to_owned(),
        })
        .collect()
}

/// Deliveries that fail (first, last, two in a row) roll back alone: every other one of
/// the batch is committed, a copy within the batch counted as a redelivery.
#[tokio::test]
async fn a_failing_delivery_rolls_back_alone() {
    let Some((store, instance, inbox)) =
        store_with_inbox("a_failing_delivery_rolls_back_alone").await
    else {
        return;
    };
    let gone = missing_inbox(&inbox);
    let jobs = [
        job(&instance, &gone, "d0", 1),
        job(&instance, &inbox, "d1", 2),
        job(&instance, &gone, "d2", 1),
        job(&instance, &gone, "d3", 1),
        job(&instance, &inbox, "d4", 0),
        job(&instance, &inbox, "d1", 2),
        job(&instance, &inbox, "d5", 3),
        job(&instance, &gone, "d6", 1),
    ];
    let results = commit_batch(&store.pool, &jobs).await;
    assert_eq!(
        said(&results),
        [
            "failed",
            "stored 2",
            "failed",
            "failed",
            "stored 0",
            "duplicate",
            "stored 3",
            "failed"
        ]
    );
    let stats = store.stats(instance).await.unwrap();
    assert_eq!(
        (stats.deliveries, stats.redeliveries, stats.commits),
        (3, 1, 5)
    );
}

/// Two batches holding copies of the same deliveries in opposite orders both commit, each
/// delivery stored once and a duplicate once: the claims go in one order, so neither
/// batch waits for the other in a cycle (which PostgreSQL fails as a deadlock).
#[tokio::test]
async fn batches_with_the_same_deliveries_in_opposite_orders_never_deadlock() {
    // Enough that each batch is still claiming when the other starts.
    const DELIVERIES: usize = 400;
    let Some((store, instance, inbox)) =
        store_with_inbox("batches_with_the_same_deliveries_never_deadlock").await
    else {
        return;
    };
    let forward: Vec<Job> = (0..DELIVERIES)
        .map(|n| job(&instance, &inbox, &format!("x{n:03}"), 1))
        .collect();
    let backward: Vec<Job> = (0..DELIVERIES)
        .rev()
        .map(|n| job(&instance, &inbox, &format!("x{n:03}"), 1))
        .collect();
    // Two connections open and idle, so that both batches start at once.
    let (one, two) = tokio::join!(store.pool.get(), store.pool.get());
    drop((one.unwrap(), two.unwrap()));
    let (ahead, behind) = tokio::join!(
        commit_batch(&store.pool, &forward),
        commit_batch(&store.pool, &backward)
    );
    let said_ahead = said(&ahead);
    let mut said_behind = said(&behind);
    said_behind.reverse();
    for (n, pair) in said_ahead.iter().zip(&said_behind).enumerate() {
        let mut pair = [pair.0.as_str(), pair.1.as_str()];
        pair.sort();
        assert_eq!(pair, ["duplicate", "stored 1"], "delivery x{n:03}");
    }
    let stats = store.stats(instance).await.unwrap();
    assert_eq!(
        (stats.deliveries, stats.redeliveries, stats.commits),
        (DELIVERIES as i64, DELIVERIES as i64, DELIVERIES as i64)
    );
}

/// A commit that fails fails every delivery of its batch, and stores none: no answer
/// says stored before the commit that holds it has returned.
#[tokio::test]
async fn a_failed_commit_fails_the_whole_batch() {
    let Some((store, instance, inbox)) =
        store_with_inbox("a_failed_commit_fails_the_whole_batch").await
    else {
        return;
    };
    // Checked at commit only: a delivery whose id says so breaks its batch's commit.
    let client = store.pool.get().await.unwrap();
    client
        .batch_execute(
            "CREATE OR REPLACE FUNCTION refuse_at_commit() RETURNS trigger
                 LANGUAGE plpgsql AS $$
             BEGIN
                 IF NEW.delivery_id LIKE 'refused-at-commit%' THEN
                     RAISE EXCEPTION 'refused at commit';
                 END IF;
                 RETURN NULL;
             END $$;
             DROP TRIGGER IF EXISTS refuse_at_commit ON deliveries;
             CREATE CONSTRAINT TRIGGER refuse_at_commit
                 AFTER INSERT ON deliveries
                 DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
                 EXECUTE FUNCTION refuse_at_commit();",
        )
        .await
        .unwrap();
    let jobs = [
        job(&instance, &inbox, "a", 1),
        job(&instance, &inbox, "refused-at-commit", 1),
        job(&instance, &inbox, "b", 2),
    ];
    let results = commit_batch(&store.pool, &jobs).await;
    assert_eq!(said(&results), ["failed", "failed", "failed"]);
    let stats = store.stats(instance).await.unwrap();
    assert_eq!((stats.deliveries, stats.commits), (0, 0));
}

/// While the writers cannot commit, deliveries past what they hold and the queue's depth
/// are answered `QueueFull` at once, never queued without bound; every one taken is stored
/// once the writers can go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_queue_a_delivery_is_refused_at_once_and_the_rest_are_stored() {
    // Past what the queue and one batch per writer can hold, by a margin.
    const SENT: usize = QUEUE_DEPTH + WRITERS * MAX_BATCH + 200;
    let Some((store, instance, inbox)) =
        store_with_inbox("past_the_queue_a_delivery_is_refused_at_once").await
    else {
        return;
    };
    // Writers of their own on the store's pool, held up by a lock on the deliveries:
    // reads still go, inserts wait for its transaction.
    let writers = Writers::start(store.pool.clone());
    let mut holder = store.pool.get().await.unwrap();
    let lock = holder.transaction().await.unwrap();
    lock.batch_execute("LOCK TABLE deliveries IN EXCLUSIVE MODE")
        .await
        .unwrap();
    let all = futures::future::join_all((0..SENT).map(|n| {
        let job = job(&instance, &inbox, &format!("q{n:04}"), 1);
        let writers = writers.clone();
        async move { writers.ingest(job).await }
    }));
    // `join!` polls `all` first: every delivery is offered to the queue while the lock
    // is held, and the lock goes only after that.
    let (results, ()) = tokio::join!(all, async {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        lock.commit().await.unwrap();
    });
    let stored = results
        .iter()
        .filter(|r| matches!(r, Ok(Ingested::Stored(1))))
        .count();
    let refused = results
        .iter()
        .filter(|r| matches!(r, Err(StoreError::QueueFull)))
        .count();
    assert_eq!(stored + refused, SENT, "{:?}", said(&results));
    assert!(
        (QUEUE_DEPTH..=QUEUE_DEPTH + WRITERS * MAX_BATCH).contains(&stored),
        "{stored} taken of {SENT}"
    );
    let stats = store.stats(instance).await.unwrap();
    assert_eq!(
        (stats.deliveries, stats.commits),
        (stored as i64, stored as i64)
    );
}

/// A batch that panics (here inside its open transaction) fails its own deliveries,
/// answered at once and never said stored, and its writer takes the next batch: more
/// panics than there are writers, and every delivery after each one is still stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_fails_its_batch_alone_and_the_writers_go_on() {
    let Some((store, instance, inbox)) = store_with_inbox("a_panic_fails_its_batch_alone").await
    else {
        return;
    };
    let writers = Writers::start_with(store.pool.clone(), panicking);
    let answered = Duration::from_secs(10);
    for n in 0..2 * WRITERS {
        let panics = job(&instance, &inbox, &format!("{PANICS}-{n}"), 1);
        let said = tokio::time::timeout(answered, writers.ingest(panics)).await;
        assert!(
            matches!(said, Ok(Err(StoreError::Stopped))),
            "panic {n}: {said:?}"
        );
        let after = job(&instance, &inbox, &format!("after-{n}"), 2);
        let said = tokio::time::timeout(answered, writers.ingest(after)).await;
        assert!(
            matches!(said, Ok(Ok(Ingested::Stored(2)))),
            "after panic {n}: {said:?}"
        );
    }
    let stats = store.stats(instance).await.unwrap();
    assert_eq!(
        (stats.deliveries, stats.commits),
        (2 * WRITERS as i64, 4 * WRITERS as i64)
    );
}

/// The expiry index holds only the keys that expire, not those a delivery takes with it for
/// good, and the purge's plan for any moment (the generic plan of its prepared statement)
/// reads it: a purge without the index's condition scans instead.
#[tokio::test]
async fn the_expiry_index_skips_kept_keys_and_the_purge_reads_it() {
    use crate::store::Replays;
    use faultline::webhooks::ReplayKey;
    let Some((store, instance, inbox)) = store_with_inbox("expiry_index").await else {
        return;
    };
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let mut kept = job(&instance, &inbox, &format!("kept-{nanos}"), 1);
    let kept_key = ReplayKey::from_bytes(unique_bytes(nanos, 1));
    kept.claim =
        crate::store::Claim::new(kept.claim.delivery_id.clone(), Some(kept_key), &inbox.id);
    let stored = commit_batch(&store.pool, std::slice::from_ref(&kept)).await;
    assert_eq!(said(&stored), ["stored 1"]);
    let now = SystemTime::now();
    let expiring = ReplayKey::from_bytes(unique_bytes(nanos, 2));
    store
        .reserve_at(expiring, now + Duration::from_secs(60), now)
        .await
        .unwrap();
    let client = store.pool.get().await.unwrap();
    // The kept key's row is there, and outside the index's condition.
    let key = kept.claim.key.unwrap();
    let row = client
        .query_one(
            "SELECT until_ms < 9223372036854775807 FROM replays WHERE key = $1",
            &[&&key[..]],
        )
        .await
        .unwrap();
    assert!(!row.get::<_, bool>(0), "a kept key expires");
    let predicate: Option<String> = client
        .query_one(
            "SELECT pg_get_expr(indpred, indrelid) FROM pg_index
             WHERE indexrelid = 'replays_by_until'::regclass",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        predicate.as_deref(),
        Some("(until_ms < '9223372036854775807'::bigint)")
    );
    client
        .batch_execute(&format!(
            "SET enable_seqscan = off; SET plan_cache_mode = force_generic_plan;
             PREPARE purge_plan (bigint, bigint) AS {};",
            super::super::replays::PURGE
        ))
        .await
        .unwrap();
    let plan: Vec<String> = client
        .query("EXPLAIN EXECUTE purge_plan (0, 8)", &[])
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    client
        .batch_execute("DEALLOCATE purge_plan; RESET enable_seqscan; RESET plan_cache_mode;")
        .await
        .unwrap();
    assert!(
        plan.iter().any(|step| step.contains("replays_by_until")),
        "{plan:#?}"
    );
}

/// 32 bytes unique to this run and `n`.
fn unique_bytes(nanos: u128, n: u8) -> [u8; 32] {
    let mut bytes = [n; 32];
    bytes[..16].copy_from_slice(&nanos.to_le_bytes());
    bytes[16..20].copy_from_slice(&std::process::id().to_le_bytes());
    bytes
}
