//! Deliveries and their commits in PostgreSQL: a delivery and its commits go through the
//! group commit (`writer.rs`).

use async_trait::async_trait;

use super::{writer, PgStore};
use crate::ids::{DigestId, InstanceId};
use crate::store::{Claim, Commit, Deliveries, InboxRow, Ingested, StoreError, StoredCommit};

#[async_trait]
impl Deliveries for PgStore {
    /// Stores a delivery in the next group commit ([`writer`]).
    async fn ingest(
        &self,
        instance: InstanceId,
        inbox: InboxRow,
        claim: Claim,
        commits: Vec<Commit>,
    ) -> Result<Ingested, StoreError> {
        self.writers
            .ingest(writer::Job {
                instance,
                inbox,
                claim,
                commits,
            })
            .await
    }

    async fn commits(
        &self,
        digest: DigestId,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<StoredCommit>, StoreError> {
        let client = self.pool.get().await?;
        let select = client
            .prepare_cached(
                "SELECT seq, inbox_id, sha, message, author, timestamp, repository, branch
                 FROM commits WHERE digest_id = $1 AND seq < $2
                 ORDER BY seq DESC LIMIT $3",
            )
            .await?;
        let rows = client
            .query(
                &select,
                &[
                    &digest.as_str(),
                    &before.unwrap_or(i64::MAX),
                    &i64::from(limit),
                ],
            )
            .await?;
        Ok(rows
            .into_iter()
            .map(|row| StoredCommit {
                seq: row.get(0),
                inbox_id: row.get(1),
                commit: Commit {
                    sha: row.get(2),
                    message: row.get(3),
                    author: row.get(4),
                    timestamp: row.get(5),
                    repository: row.get(6),
                    branch: row.get(7),
                },
            })
            .collect())
    }
}
