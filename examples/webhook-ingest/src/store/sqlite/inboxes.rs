//! Inbox rows read from SQLite: one by its id, and every inbox for the node's file of
//! known inboxes. Both select the same leading columns and read them with `inbox_row`.

use rusqlite::OptionalExtension;

use super::SqliteStore;
use crate::store::{InboxRow, KnownInbox, StoreError};

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
        instance: String,
        id: String,
    ) -> Result<Option<InboxRow>, StoreError> {
        self.read(move |c| {
            c.prepare_cached(select_inbox!(
                " FROM inboxes WHERE id = ?1 AND instance_id = ?2"
            ))?
            .query_row([id, instance], inbox_row)
            .optional()
        })
        .await
    }

    pub(in crate::store) async fn inboxes(
        &self,
        limit: u32,
    ) -> Result<Vec<KnownInbox>, StoreError> {
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
