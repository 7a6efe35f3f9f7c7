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
use futures::future::BoxFuture;
use futures::FutureExt;
use tokio::sync::{mpsc, oneshot, Mutex};
use tokio_postgres::types::ToSql;
use tokio_postgres::Statement;

use crate::ids::InstanceId;
use crate::store::replays::{Claim, KEPT_WITH_THE_DELIVERY};
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
/// trip: the replay key is taken first (`$12`, none for a delivery without one), and names
/// the delivery that holds it, which a copy under another id waits on and then reads; the
/// claim settles whether the delivery is new by the primary key (a copy that arrives while
/// the first is uncommitted waits on its row), only when the key is this delivery's; and the
/// commits go in only when it is new. A data-modifying `WITH` runs whether or not the outer
/// query reads it, and the foreign key of `commits` is checked at the statement's end, when
/// the claim's row is there. No row back: a replay under another id.
const CLAIM_AND_INSERT: &str = "
WITH key AS (
    INSERT INTO replays (key, until_ms, taken, inbox_id, delivery_id)
    SELECT $12::bytea, $13, true, $3, $4 WHERE $12::bytea IS NOT NULL
    ON CONFLICT (key) DO UPDATE SET taken = true, until_ms = excluded.until_ms,
        inbox_id = coalesce(replays.inbox_id, excluded.inbox_id),
        delivery_id = coalesce(replays.delivery_id, excluded.delivery_id)
    RETURNING inbox_id, delivery_id
), claim AS (
    INSERT INTO deliveries (inbox_id, delivery_id, instance_id, commit_count)
    SELECT $3, $4, $1, $11
    WHERE NOT EXISTS (
        SELECT 1 FROM key WHERE (key.inbox_id, key.delivery_id) IS DISTINCT FROM ($3, $4))
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
    pub(super) instance: InstanceId,
    pub(super) inbox: InboxRow,
    pub(super) claim: Claim,
    pub(super) commits: Vec<Commit>,
}

type Answer = oneshot::Sender<Result<Ingested, StoreError>>;

/// How a writer commits a batch, answering each of its jobs.
pub(super) type CommitWith =
    for<'a> fn(&'a Pool, &'a [Job]) -> BoxFuture<'a, Vec<Result<Ingested, StoreError>>>;

/// The queue the writers take their batches from; cheap to clone.
#[derive(Clone)]
pub(super) struct Writers {
    queue: mpsc::Sender<(Job, Answer)>,
}

impl Writers {
    /// Starts `WRITERS` writer tasks on the current runtime, on connections of `pool`.
    pub(super) fn start(pool: Pool) -> Writers {
        Writers::start_with(pool, |pool, jobs| Box::pin(commit_batch(pool, jobs)))
    }

    /// `start`, the writers committing each batch with `commit`: `commit_batch`, or in the
    /// writer's tests one that fails as the test needs.
    pub(super) fn start_with(pool: Pool, commit: CommitWith) -> Writers {
        let (queue, waiting) = mpsc::channel(QUEUE_DEPTH);
        let waiting = Arc::new(Mutex::new(waiting));
        for _ in 0..WRITERS {
            tokio::spawn(write(pool.clone(), waiting.clone(), commit));
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
async fn write(pool: Pool, waiting: Arc<Mutex<mpsc::Receiver<(Job, Answer)>>>, commit: CommitWith) {
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
        let Ok(results) = AssertUnwindSafe(commit(&pool, &jobs)).catch_unwind().await else {
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
    order.sort_by_key(|&n| (&jobs[n].inbox.id, jobs[n].claim.delivery_id.as_str()));
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
    let key = job.claim.key.as_ref().map(|key| &key[..]);
    let params: [&(dyn ToSql + Sync); 13] = [
        &job.instance.as_str(),
        &job.inbox.digest_id.as_str(),
        &job.inbox.id.as_str(),
        &job.claim.delivery_id.as_str(),
        &shas,
        &messages,
        &authors,
        &timestamps,
        &repositories,
        &branches,
        &count,
        &key,
        &KEPT_WITH_THE_DELIVERY,
    ];
    let Some(claimed) = tx.query_opt(statement, &params).await? else {
        return Ok(Ingested::Replayed);
    };
    let redeliveries: i32 = claimed.get(0);
    Ok(if redeliveries > 0 {
        Ingested::Duplicate
    } else {
        Ingested::Stored(job.commits.len())
    })
}

#[cfg(test)]
mod tests;
