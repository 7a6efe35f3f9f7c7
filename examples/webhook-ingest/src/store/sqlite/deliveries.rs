//! Deliveries and their commits in SQLite: a delivery and its commits are one savepoint of
//! the writer's group commit (`writer.rs`).

use async_trait::async_trait;
use rusqlite::params;

use super::timestamp::Timestamp;
use super::{replays, SqliteStore};
use crate::ids::{DigestId, InstanceId};
use crate::store::{Claim, Commit, Deliveries, InboxRow, Ingested, StoreError, StoredCommit};

#[async_trait]
impl Deliveries for SqliteStore {
    async fn ingest(
        &self,
        instance: InstanceId,
        inbox: InboxRow,
        claim: Claim,
        commits: Vec<Commit>,
    ) -> Result<Ingested, StoreError> {
        let Claim { delivery_id, key } = claim;
        self.write(move |tx| {
            if let Some(key) = &key {
                if !replays::take_for_delivery(tx, key, &inbox.id, &delivery_id)? {
                    return Ok(Ingested::Replayed);
                }
            }
            // The write is one savepoint of the writer's batch, atomic on its own. The
            // conflict is settled inside the transaction by the primary key, not by a
            // look-up before it: that holds whatever reaches the database at the same time.
            // No `RETURNING` (see `replays::take_for_delivery`): the insert says whether it
            // added the row. `received_at` is the same text as the column's default,
            // `'now'` as SQLite formats it, made here at a fraction of the cost (`timestamp`).
            let (inbox_id, delivery) = (&inbox.id, delivery_id.as_str());
            let received_at = Timestamp::now();
            let mut add = tx.prepare_cached(
                "INSERT INTO deliveries (inbox_id, delivery_id, instance_id, commit_count,
                                         received_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (inbox_id, delivery_id) DO NOTHING",
            )?;
            let count = commits.len() as i64;
            let row = params![inbox_id, delivery, instance, count, received_at.as_str()];
            let inserted = add.execute(row)? == 1;
            if !inserted {
                tx.prepare_cached(
                    "UPDATE deliveries SET redeliveries = redeliveries + 1
                     WHERE inbox_id = ?1 AND delivery_id = ?2",
                )?
                .execute(params![inbox_id, delivery])?;
                return Ok(Ingested::Duplicate);
            }
            // No foreign key is checked on these rows, nor on the delivery's
            // (`schema::CHILDREN_CHECKED_BY_THEIR_WRITER`): this is what keeps them, each
            // commit inserted after its delivery, in its transaction, under its key.
            {
                let mut insert = tx.prepare_cached(
                    "INSERT INTO commits (instance_id, digest_id, inbox_id, delivery_id, sha,
                                          message, author, timestamp, repository, branch)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                )?;
                for commit in &commits {
                    insert.execute(params![
                        instance,
                        inbox.digest_id,
                        inbox.id,
                        delivery_id.as_str(),
                        commit.sha,
                        commit.message,
                        commit.author,
                        commit.timestamp,
                        commit.repository,
                        commit.branch,
                    ])?;
                }
            }
            Ok(Ingested::Stored(commits.len()))
        })
        .await
    }

    async fn commits(
        &self,
        digest: DigestId,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<StoredCommit>, StoreError> {
        self.read(move |c| {
            let mut query = c.prepare_cached(
                "SELECT seq, inbox_id, sha, message, author, timestamp, repository, branch
                 FROM commits WHERE digest_id = ?1 AND seq < ?2
                 ORDER BY seq DESC LIMIT ?3",
            )?;
            let rows =
                query.query_map(params![digest, before.unwrap_or(i64::MAX), limit], |row| {
                    Ok(StoredCommit {
                        seq: row.get(0)?,
                        inbox_id: row.get(1)?,
                        commit: Commit {
                            sha: row.get(2)?,
                            message: row.get(3)?,
                            author: row.get(4)?,
                            timestamp: row.get(5)?,
                            repository: row.get(6)?,
                            branch: row.get(7)?,
                        },
                    })
                })?;
            rows.collect()
        })
        .await
    }
}
