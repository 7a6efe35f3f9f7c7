//! Every inbox in SQLite, for the instance's file of known inboxes.

use super::SqliteStore;
use crate::store::{InboxRow, KnownInbox, StoreError};

impl SqliteStore {
    pub(in crate::store) async fn inboxes(
        &self,
        limit: u32,
    ) -> Result<Vec<KnownInbox>, StoreError> {
        self.read(move |c| {
            c.prepare_cached(
                "SELECT id, digest_id, vcs, secret, previous_secret,
                        CAST(unixepoch('subsec') * 1000 AS INTEGER) - secret_rotated_ms,
                        instance_id
                 FROM inboxes ORDER BY instance_id, id LIMIT ?1",
            )?
            .query_map([limit], |row| {
                Ok(KnownInbox {
                    instance: row.get(6)?,
                    inbox: InboxRow::from_columns(
                        row.get(0)?,
                        row.get(1)?,
                        row.get(2)?,
                        row.get(3)?,
                        row.get(4)?,
                        row.get(5)?,
                    ),
                })
            })?
            .collect()
        })
        .await
    }
}
