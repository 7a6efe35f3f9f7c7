//! Inbox rows read from PostgreSQL: one by its id, and every inbox for each node's file
//! of known inboxes. Both select the same leading columns and read them with `inbox_row`.

use tokio_postgres::Row;

use super::PgStore;
use crate::store::{InboxRow, KnownInbox, StoreError};

/// The columns `inbox_row` reads, in its order; the age of the last rotation is taken by the
/// database's clock, so that every node of a fleet agrees on it.
macro_rules! select_inbox {
    ($rest:literal) => {
        concat!(
            "SELECT id, digest_id, vcs, secret, previous_secret,
                    (extract(epoch FROM now()) * 1000)::bigint - secret_rotated_ms",
            $rest
        )
    };
}

/// The inbox in the first six columns of a row selected with `select_inbox!`.
fn inbox_row(row: &Row) -> InboxRow {
    InboxRow::from_columns(
        row.get(0),
        row.get(1),
        row.get(2),
        row.get(3),
        row.get(4),
        row.get(5),
    )
}

impl PgStore {
    pub(in crate::store) async fn inbox(
        &self,
        instance: String,
        id: String,
    ) -> Result<Option<InboxRow>, StoreError> {
        let client = self.pool.get().await?;
        let select = client
            .prepare_cached(select_inbox!(
                " FROM inboxes WHERE id = $1 AND instance_id = $2"
            ))
            .await?;
        Ok(client
            .query_opt(&select, &[&id, &instance])
            .await?
            .map(|row| inbox_row(&row)))
    }

    pub(in crate::store) async fn inboxes(
        &self,
        limit: u32,
    ) -> Result<Vec<KnownInbox>, StoreError> {
        let client = self.pool.get().await?;
        let select = client
            .prepare_cached(select_inbox!(
                ", instance_id FROM inboxes ORDER BY instance_id, id LIMIT $1"
            ))
            .await?;
        let rows = client.query(&select, &[&i64::from(limit)]).await?;
        Ok(rows
            .into_iter()
            .map(|row| KnownInbox {
                instance: row.get(6),
                inbox: inbox_row(&row),
            })
            .collect())
    }
}
