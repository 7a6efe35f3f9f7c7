//! Inbox rows read from PostgreSQL: one by its id, and every inbox for each node's file
//! of known inboxes. Both select the same leading columns and read them with `inbox_row`.

use async_trait::async_trait;
use tokio_postgres::Row;

use super::PgStore;
use crate::ids::{DigestId, InboxId, InstanceId};
use crate::store::{InboxRow, Inboxes, KnownInbox, NewInbox, StoreError};

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

#[async_trait]
impl Inboxes for PgStore {
    async fn create_inbox(&self, inbox: NewInbox) -> Result<(), StoreError> {
        let client = self.pool.get().await?;
        let insert = client
            .prepare_cached(
                "INSERT INTO inboxes (id, instance_id, digest_id, vcs, name, secret)
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .await?;
        let provider = inbox.provider.as_str();
        client
            .execute(
                &insert,
                &[
                    &inbox.id.as_str(),
                    &inbox.instance.as_str(),
                    &inbox.digest.as_str(),
                    &provider,
                    &inbox.name,
                    &inbox.secret,
                ],
            )
            .await?;
        Ok(())
    }

    async fn rotate_secret(
        &self,
        instance: InstanceId,
        digest: DigestId,
        id: InboxId,
        secret: String,
    ) -> Result<bool, StoreError> {
        let client = self.pool.get().await?;
        let update = client
            .prepare_cached(
                "UPDATE inboxes SET previous_secret = secret, secret = $1,
                     secret_rotated_ms = (extract(epoch FROM now()) * 1000)::bigint
                 WHERE id = $2 AND instance_id = $3 AND digest_id = $4",
            )
            .await?;
        let updated = client
            .execute(
                &update,
                &[&secret, &id.as_str(), &instance.as_str(), &digest.as_str()],
            )
            .await?;
        Ok(updated == 1)
    }

    async fn inbox(
        &self,
        instance: InstanceId,
        id: InboxId,
    ) -> Result<Option<InboxRow>, StoreError> {
        let client = self.pool.get().await?;
        let select = client
            .prepare_cached(select_inbox!(
                " FROM inboxes WHERE id = $1 AND instance_id = $2"
            ))
            .await?;
        Ok(client
            .query_opt(&select, &[&id.as_str(), &instance.as_str()])
            .await?
            .map(|row| inbox_row(&row)))
    }

    async fn inboxes(&self, limit: u32) -> Result<Vec<KnownInbox>, StoreError> {
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
                instance: InstanceId::stored(row.get(6)),
                inbox: inbox_row(&row),
            })
            .collect())
    }
}
