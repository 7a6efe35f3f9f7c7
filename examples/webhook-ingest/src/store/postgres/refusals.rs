//! Refused deliveries in PostgreSQL: kept per inbox, pruned to the newest, listed newest first.

use super::PgStore;
use crate::ids::{InboxId, InstanceId};
use crate::store::Refusals;
use crate::store::{RefusedDelivery, RefusedDeliveryRow, StoreError, REFUSALS_KEPT_PER_INBOX};
use async_trait::async_trait;

#[async_trait]
impl Refusals for PgStore {
    async fn record_refusal(
        &self,
        instance: InstanceId,
        inbox: InboxId,
        refusal: RefusedDelivery,
    ) -> Result<bool, StoreError> {
        let mut client = self.pool.get().await?;
        // Only for an inbox of this instance: a refusal of anything else is not kept.
        let insert = client
            .prepare_cached(
                "INSERT INTO refusals (instance_id, inbox_id, delivery_id, status, code)
                 SELECT $1::text, id, $3::text, $4::int, $5::text FROM inboxes WHERE id = $2 AND instance_id = $1",
            )
            .await?;
        let prune = client
            .prepare_cached(
                "DELETE FROM refusals WHERE inbox_id = $1 AND seq <= (
                     SELECT seq FROM refusals WHERE inbox_id = $1
                     ORDER BY seq DESC LIMIT 1 OFFSET $2)",
            )
            .await?;
        let tx = client.transaction().await?;
        let status = i32::from(refusal.status);
        let kept = tx
            .execute(
                &insert,
                &[
                    &instance.as_str(),
                    &inbox.as_str(),
                    &refusal.delivery,
                    &status,
                    &refusal.code,
                ],
            )
            .await?
            == 1;
        if kept {
            tx.execute(&prune, &[&inbox.as_str(), &REFUSALS_KEPT_PER_INBOX])
                .await?;
        }
        tx.commit().await?;
        Ok(kept)
    }

    async fn refusals(
        &self,
        instance: InstanceId,
        inbox: InboxId,
        limit: u32,
    ) -> Result<Vec<RefusedDeliveryRow>, StoreError> {
        let client = self.pool.get().await?;
        let select = client
            .prepare_cached(
                "SELECT delivery_id, status, code, refused_at FROM refusals
                 WHERE inbox_id = $1 AND instance_id = $2 ORDER BY seq DESC LIMIT $3",
            )
            .await?;
        let rows = client
            .query(
                &select,
                &[&inbox.as_str(), &instance.as_str(), &i64::from(limit)],
            )
            .await?;
        Ok(rows
            .into_iter()
            .map(|row| RefusedDeliveryRow {
                refusal: RefusedDelivery {
                    delivery: row.get(0),
                    status: u16::try_from(row.get::<_, i32>(1)).unwrap_or(0),
                    code: row.get(2),
                },
                refused_at: row.get(3),
            })
            .collect())
    }
}
