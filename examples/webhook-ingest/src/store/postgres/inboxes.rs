//! Every inbox in PostgreSQL, for each instance's file of known inboxes.

use super::PgStore;
use crate::store::{InboxRow, KnownInbox, StoreError};

impl PgStore {
    pub(in crate::store) async fn inboxes(
        &self,
        limit: u32,
    ) -> Result<Vec<KnownInbox>, StoreError> {
        let client = self.pool.get().await?;
        let select = client
            .prepare_cached(
                "SELECT id, digest_id, vcs, secret, previous_secret,
                        (extract(epoch FROM now()) * 1000)::bigint - secret_rotated_ms,
                        instance_id
                 FROM inboxes ORDER BY instance_id, id LIMIT $1",
            )
            .await?;
        let rows = client.query(&select, &[&i64::from(limit)]).await?;
        Ok(rows
            .into_iter()
            .map(|row| KnownInbox {
                instance: row.get(6),
                inbox: InboxRow::from_columns(
                    row.get(0),
                    row.get(1),
                    row.get(2),
                    row.get(3),
                    row.get(4),
                    row.get(5),
                ),
            })
            .collect())
    }
}
