//! Group commit on PostgreSQL: a few writer tasks each take every delivery waiting (up to
//! `MAX_BATCH`) into one transaction, each delivery under a savepoint of its own, and answer
//! them all once the commit that holds them has returned, which at `synchronous_commit=on`
//! is once its WAL is flushed.
//!
//! PostgreSQL already shares a WAL flush among commits that arrive together, but a
//! transaction per delivery over the pool's connections brought about 1.5 deliveries to each
//! flush; batches bring 3 at 16 connections and 8 at 64, and PostgreSQL spends less CPU per
//! delivery on fewer transactions (`BENCHMARKS.md`, "Webhook ingestion on PostgreSQL"). The
//! statements of a batch are pipelined on its connection: sent all at once, their answers
//! read as they come.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use deadpool_postgres::{Pool, Transaction};
use futures::FutureExt;
use tokio::sync::{mpsc, oneshot, Mutex};
use tokio_postgres::types::ToSql;
use tokio_postgres::Statement;

use crate::store::Commit;
use crate::store::{InboxRow, Ingested, StoreError};

/// Writer tasks, each with a batch in flight on a connection of its own: while some wait for
/// their commit's WAL flush, another gathers what arrived meanwhile and sends it. Four were
/// ahead of two at 16 and at 64 connections (5,119 and 7,167 deliveries/s against 4,635 and
/// 6,487/s in one run), and leave half the pool to the inbox look-up every delivery makes
/// before it gets here.
pub(super) const WRITERS: usize = 4;
/// Most deliveries in one transaction: at 64 connections batches stay well under it, and a
/// delivery at the head of a batch waits behind at most this many others' inserts.
pub(super) const MAX_BATCH: usize = 64;
/// Deliveries waiting for a writer; past that a delivery is answered busy (503 with
/// `Retry-After`) rather than queued without bound. The SQLite store's queue holds as many.
const QUEUE_DEPTH: usize = 1024;

/// The delivery's claim and its commits in one statement, so that a delivery is one round
/// trip: the claim settles whether it is new by the primary key (a copy that arrives while
/// the first is uncommitted waits on its row), and the commits go in only when it is. A
/// data-modifying `WITH` runs whether or not the outer query reads it, and the foreign key
/// of `commits` is checked at the statement's end, when the claim's row is there.
const CLAIM_AND_INSERT: &str = "
WITH claim AS (
    INSERT INTO deliveries (inbox_id, delivery_id, instance_id, commit_count)
    VALUES ($3, $4, $1, $11)
    ON CONFLICT (inbox_id, delivery_id)
    DO UPDATE SET redeliveries = deliveries.redeliveries + 1
    RETURNING redeliveries
), stored AS (
    INSERT INTO commits (instance_id, digest_id, inbox_id, delivery_id, sha,
                         message, author, timestamp, repository, branch)
    SELECT $1, $2, $3, $4, c.sha, c.message, c.author, c.ts, c.repository, c.branch
    FROM claim, unnest($5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
                       $10::text[]) WITH ORDINALITY
         AS c (sha, message, author, ts, repository, branch, n)
    WHERE claim.redeliveries = 0
    ORDER BY c.n
)
SELECT redeliveries FROM claim";

/// One delivery to store, and where its answer goes.
pub(super) struct Job {
    pub(super) instance: String,
    pub(super) inbox: InboxRow,
    pub(super) delivery_id: String,
    pub(super) commits: Vec<Commit>,
}

type Answer = oneshot::Sender<Result<Ingested, StoreError>>;

/// The queue the writers take their batches from; cheap to clone.
#[derive(Clone)]
pub(super) struct Writers {
    queue: mpsc::Sender<(Job, Answer)>,
}

impl Writers {
    /// Starts `WRITERS` writer tasks on the current runtime, on connections of `pool`.
    pub(super) fn start(pool: Pool) -> Writers {
        let (queue, waiting) = mpsc::channel(QUEUE_DEPTH);
        let waiting = Arc::new(Mutex::new(waiting));
        for _ in 0..WRITERS {
            tokio::spawn(write(pool.clone(), waiting.clone()));
        }
        Writers { queue }
    }

    /// Stores `job` in the next batch, answered once that batch's commit returned.
    pub(super) async fn ingest(&self, job: Job) -> Result<Ingested, StoreError> {
        let (answer, answered) = oneshot::channel();
        self.queue
            .try_send((job, answer))
            .map_err(|full| match full {
                mpsc::error::TrySendError::Full(_) => StoreError::QueueFull,
                mpsc::error::TrySendError::Closed(_) => StoreError::Stopped,
            })?;
        answered.await.map_err(|_| StoreError::Stopped)?
    }
}

/// One writer: takes every job waiting, up to `MAX_BATCH`, commits them together and answers
/// them, until the queue closes. The lock makes one writer at a time gather, so a batch is
/// whatever arrived while the others were busy.
async fn write(pool: Pool, waiting: Arc<Mutex<mpsc::Receiver<(Job, Answer)>>>) {
    loop {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        {
            let mut waiting = waiting.lock().await;
            if waiting.recv_many(&mut batch, MAX_BATCH).await == 0 {
                return;
            }
        }
        let (jobs, answers): (Vec<Job>, Vec<Answer>) = batch.into_iter().unzip();
        // A panic fails this batch only: its answers drop unsent (the requests get
        // `Stopped`) and the writer takes the next one.
        let Ok(results) = AssertUnwindSafe(commit_batch(&pool, &jobs))
            .catch_unwind()
            .await
        else {
            continue;
        };
        for (answer, result) in answers.into_iter().zip(results) {
            let _ = answer.send(result);
        }
    }
}

/// Stores `jobs` in one transaction and says how each ended. A delivery that fails rolls back
/// to its savepoint alone and gets its error; the others are committed. When the commit (or
/// the connection) fails, every delivery gets that error: none of them is stored.
pub(super) async fn commit_batch(pool: &Pool, jobs: &[Job]) -> Vec<Result<Ingested, StoreError>> {
    // Every batch claims its deliveries' rows in one order, that of their key: two batches
    // that hold copies of the same deliveries then wait for each other in turn, never in a
    // cycle, which PostgreSQL would break only after its deadlock timeout by failing one.
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&n| (&jobs[n].inbox.id, &jobs[n].delivery_id));
    let sorted: Vec<&Job> = order.iter().map(|&n| &jobs[n]).collect();
    match try_commit_batch(pool, &sorted).await {
        Ok(results) => {
            let mut answers: Vec<Option<Result<Ingested, StoreError>>> =
                jobs.iter().map(|_| None).collect();
            for (n, result) in order.into_iter().zip(results) {
                answers[n] = Some(result);
            }
            answers
                .into_iter()
                .map(|answer| answer.unwrap_or(Err(StoreError::Stopped)))
                .collect()
        }
        Err(error) => {
            let error = Arc::new(error);
            jobs.iter()
                .map(|_| Err(StoreError::BatchFailed(error.clone())))
                .collect()
        }
    }
}

async fn try_commit_batch(
    pool: &Pool,
    jobs: &[&Job],
) -> Result<Vec<Result<Ingested, StoreError>>, StoreError> {
    let mut client = pool.get().await?;
    let statement = client.prepare_cached(CLAIM_AND_INSERT).await?;
    let tx = client.transaction().await?;
    #[cfg(test)]
    tests::panic_if_planted(jobs);
    let mut results = Vec::with_capacity(jobs.len());
    // Pipelined from the first delivery not yet settled: when one fails, the transaction
    // refuses every statement after it, so it is rolled back to its savepoint and the rest
    // is sent again.
    while results.len() < jobs.len() {
        let start = results.len();
        let ran = pipeline(&tx, &statement, start, &jobs[start..]).await;
        let settled = ran.iter().take_while(|r| r.is_ok()).count();
        let mut ran = ran.into_iter();
        results.extend(
            ran.by_ref()
                .take(settled)
                .map(|r| r.map_err(StoreError::from)),
        );
        if let Some(Err(failed)) = ran.next() {
            // A connection that broke is every delivery's failure, not this one's.
            if failed.is_closed() || failed.code().is_none() {
                return Err(failed.into());
            }
            tx.batch_execute(&format!(
                "ROLLBACK TO SAVEPOINT {}",
                savepoint(start + settled)
            ))
            .await?;
            results.push(Err(failed.into()));
        }
    }
    tx.commit().await?;
    Ok(results)
}

/// The name of the savepoint of the batch's `n`-th delivery.
fn savepoint(n: usize) -> String {
    format!("delivery_{n}")
}

/// Sends every job's savepoint, statement and release at once, then reads how each went, in
/// order: tokio-postgres sends a request when its future is first polled, and `join_all`
/// polls them in the order given.
async fn pipeline(
    tx: &Transaction<'_>,
    statement: &Statement,
    first: usize,
    jobs: &[&Job],
) -> Vec<Result<Ingested, tokio_postgres::Error>> {
    let steps = jobs.iter().enumerate().map(|(i, job)| async move {
        let name = savepoint(first + i);
        let (begin, release) = (
            format!("SAVEPOINT {name}"),
            format!("RELEASE SAVEPOINT {name}"),
        );
        let (begun, claimed, released) = tokio::join!(
            tx.batch_execute(&begin),
            claim(tx, statement, job),
            tx.batch_execute(&release),
        );
        begun?;
        let claimed = claimed?;
        released?;
        Ok(claimed)
    });
    futures::future::join_all(steps).await
}

/// Runs `job`'s claim and inserts: stored, or a duplicate of a delivery already there.
async fn claim(
    tx: &Transaction<'_>,
    statement: &Statement,
    job: &Job,
) -> Result<Ingested, tokio_postgres::Error> {
    let column = |f: fn(&Commit) -> Option<&str>| -> Vec<Option<&str>> {
        job.commits.iter().map(f).collect()
    };
    let shas = column(|c| Some(c.sha.as_str()));
    let messages = column(|c| c.message.as_deref());
    let authors = column(|c| c.author.as_deref());
    let timestamps = column(|c| c.timestamp.as_deref());
    let repositories = column(|c| Some(c.repository.as_str()));
    let branches = column(|c| Some(c.branch.as_str()));
    let count = job.commits.len() as i32;
    let params: [&(dyn ToSql + Sync); 11] = [
        &job.instance,
        &job.inbox.digest_id,
        &job.inbox.id,
        &job.delivery_id,
        &shas,
        &messages,
        &authors,
        &timestamps,
        &repositories,
        &branches,
        &count,
    ];
    let redeliveries: i32 = tx.query_one(statement, &params).await?.get(0);
    Ok(if redeliveries > 0 {
        Ingested::Duplicate
    } else {
        Ingested::Stored(job.commits.len())
    })
}

#[cfg(test)]
mod tests {
    //! On a real PostgreSQL, when `WEBHOOK_INGEST_TEST_POSTGRES` names a database
    //! (`load-scripts/fleet/pg-fleet.sh` starts one and runs these with it set).

    use std::time::{SystemTime, UNIX_EPOCH};

    use std::time::Duration;

    use super::{commit_batch, Job, Writers, MAX_BATCH, QUEUE_DEPTH, WRITERS};
    use crate::provider::Vcs;
    use crate::store::postgres::PgStore;
    use crate::store::Commit;
    use crate::store::{InboxRow, Ingested, NewInbox, StoreError};

    /// A delivery whose id starts so makes its batch panic inside its open transaction.
    const PANICS: &str = "panics-in-its-batch";

    /// The seam of the writer's panic test: no delivery of any other test is named so.
    pub(super) fn panic_if_planted(jobs: &[&Job]) {
        if jobs.iter().any(|job| job.delivery_id.starts_with(PANICS)) {
            panic!("a panic planted in a batch");
        }
    }

    /// A store on the test database and an inbox of an instance of its own, or `None` (said
    /// on stderr) when no database was given.
    async fn store_with_inbox(test: &str) -> Option<(PgStore, String, InboxRow)> {
        let Some(url) = std::env::var("WEBHOOK_INGEST_TEST_POSTGRES")
            .ok()
            .filter(|u| !u.is_empty())
        else {
            // CI's test/tools step sets it: there a missing database is a failure, not a skip.
            let required =
                std::env::var("FAULTLINE_REQUIRE_TOOLS").is_ok_and(|v| !v.is_empty() && v != "0");
            assert!(
                !required,
                "{test}: no WEBHOOK_INGEST_TEST_POSTGRES and FAULTLINE_REQUIRE_TOOLS is set"
            );
            eprintln!("{test}: skipped: PostgreSQL not found, no WEBHOOK_INGEST_TEST_POSTGRES");
            return None;
        };
        let store = PgStore::open(&url, None).await.unwrap();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let id = |kind: &str| format!("{kind}_{test}_{}_{nanos}", std::process::id());
        let (instance, digest, inbox) = (id("in"), id("dg"), id("ib"));
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
            vcs: Vcs::Github,
            name: "widgets".to_owned(),
            secret: "s".to_owned(),
        };
        store.create_inbox(new).await.unwrap();
        let row = store.inbox(instance.clone(), inbox).await.unwrap().unwrap();
        Some((store, instance, row))
    }

    fn job(instance: &str, inbox: &InboxRow, delivery: &str, commits: usize) -> Job {
        Job {
            instance: instance.to_owned(),
            inbox: inbox.clone(),
            delivery_id: delivery.to_owned(),
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
            id: format!("{}-gone", inbox.id),
            ..inbox.clone()
        }
    }

    fn said(results: &[Result<Ingested, StoreError>]) -> Vec<String> {
        results
            .iter()
            .map(|r| match r {
                Ok(Ingested::Stored(n)) => format!("stored {n}"),
                Ok(Ingested::Duplicate) => "duplicate".to_owned(),
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
        let Some((store, instance, inbox)) =
            store_with_inbox("a_panic_fails_its_batch_alone").await
        else {
            return;
        };
        let writers = Writers::start(store.pool.clone());
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
}
