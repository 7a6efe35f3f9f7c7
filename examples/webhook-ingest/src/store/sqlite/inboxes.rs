//! Inbox rows read from SQLite: one by its id, and every inbox for the node's file of
//! known inboxes. Both select the same leading columns and read them with `inbox_row`.

use std::time::Instant;

use async_trait::async_trait;
use rusqlite::{params, OptionalExtension};

use super::SqliteStore;
use crate::ids::{DigestId, InboxId, InstanceId};
use crate::store::{InboxRow, Inboxes, KnownInbox, NewInbox, StoreError};

/// The columns `inbox_row` reads, in its order; the age of the last rotation is taken by the
/// database's clock, as the PostgreSQL store takes it.
macro_rules! select_inbox {
    ($rest:literal) => {
        concat!(
            "SELECT id, digest_id, vcs, secret, previous_secret,
                    CAST(unixepoch('subsec') * 1000 AS INTEGER) - secret_rotated_ms",
            $rest
        )
    };
}

/// The inbox in the first six columns of a row selected with `select_inbox!`.
fn inbox_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<InboxRow> {
    Ok(InboxRow::from_columns(
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(3)?,
        row.get(4)?,
        row.get(5)?,
    ))
}

impl SqliteStore {
    pub(super) async fn read_inbox(
        &self,
        instance: InstanceId,
        id: InboxId,
    ) -> Result<Option<InboxRow>, StoreError> {
        self.read(move |c| {
            c.prepare_cached(select_inbox!(
                " FROM inboxes WHERE id = ?1 AND instance_id = ?2"
            ))?
            .query_row(params![id, instance], inbox_row)
            .optional()
        })
        .await
    }
}

#[async_trait]
impl Inboxes for SqliteStore {
    async fn create_inbox(&self, inbox: NewInbox) -> Result<(), StoreError> {
        self.write(move |c| {
            c.execute(
                "INSERT INTO inboxes (id, instance_id, digest_id, vcs, name, secret)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    inbox.id,
                    inbox.instance,
                    inbox.digest,
                    inbox.provider.as_str(),
                    inbox.name,
                    inbox.secret
                ],
            )
            .map(drop)
        })
        .await
    }

    async fn inbox(
        &self,
        instance: InstanceId,
        id: InboxId,
    ) -> Result<Option<InboxRow>, StoreError> {
        let generation = match self.shared.kept.get(&instance, &id) {
            Ok(row) => return Ok(Some(row)),
            Err(generation) => generation,
        };
        let read_at = Instant::now();
        let found = self.read_inbox(instance.clone(), id).await?;
        if let Some(row) = &found {
            self.shared.kept.keep(&instance, row, generation, read_at);
        }
        Ok(found)
    }

    async fn rotate_secret(
        &self,
        instance: InstanceId,
        digest: DigestId,
        id: InboxId,
        secret: String,
    ) -> Result<bool, StoreError> {
        let (kept_instance, kept_id) = (instance.clone(), id.clone());
        let rotated = self
            .write(move |c| {
                c.execute(
                    "UPDATE inboxes SET previous_secret = secret, secret = ?1,
                     secret_rotated_ms = CAST(unixepoch('subsec') * 1000 AS INTEGER)
                 WHERE id = ?2 AND instance_id = ?3 AND digest_id = ?4",
                    params![secret, id, instance, digest],
                )
                .map(|updated| updated == 1)
            })
            .await;
        // Committed (or failed, and then possibly committed anyway): the kept row is stale
        // either way.
        self.shared.kept.forget(&kept_instance, &kept_id);
        rotated
    }

    async fn inboxes(&self, limit: u32) -> Result<Vec<KnownInbox>, StoreError> {
        self.read(move |c| {
            c.prepare_cached(select_inbox!(
                ", instance_id FROM inboxes ORDER BY instance_id, id LIMIT ?1"
            ))?
            .query_map([limit], |row| {
                Ok(KnownInbox {
                    instance: row.get(6)?,
                    inbox: inbox_row(row)?,
                })
            })?
            .collect()
        })
        .await
    }
}
