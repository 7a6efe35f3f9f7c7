//! Refused deliveries in SQLite: kept per inbox, pruned to the newest, listed newest first.

use async_trait::async_trait;
use rusqlite::params;

use super::SqliteStore;
use crate::ids::{InboxId, InstanceId};
use crate::store::Refusals;
use crate::store::{RefusedDelivery, RefusedDeliveryRow, StoreError, REFUSALS_KEPT_PER_INBOX};

#[async_trait]
impl Refusals for SqliteStore {
    async fn record_refusal(
        &self,
        instance: InstanceId,
        inbox: InboxId,
        refusal: RefusedDelivery,
    ) -> Result<bool, StoreError> {
        self.write(move |tx| {
            // Only for an inbox of this instance: a refusal of anything else is not kept.
            let kept =
                tx.prepare_cached(
                    "INSERT INTO refusals (instance_id, inbox_id, delivery_id, status, code)
                     SELECT ?1, id, ?3, ?4, ?5 FROM inboxes WHERE id = ?2 AND instance_id = ?1",
                )?
                .execute(params![
                    instance,
                    inbox,
                    refusal.delivery,
                    refusal.status,
                    refusal.code
                ])? == 1;
            if kept {
                tx.prepare_cached(
                    "DELETE FROM refusals WHERE inbox_id = ?1 AND seq <= (
                         SELECT seq FROM refusals WHERE inbox_id = ?1
                         ORDER BY seq DESC LIMIT 1 OFFSET ?2)",
                )?
                .execute(params![inbox, REFUSALS_KEPT_PER_INBOX])?;
            }
            Ok(kept)
        })
        .await
    }

    async fn refusals(
        &self,
        instance: InstanceId,
        inbox: InboxId,
        limit: u32,
    ) -> Result<Vec<RefusedDeliveryRow>, StoreError> {
        self.read(move |c| {
            let mut query = c.prepare_cached(
                "SELECT delivery_id, status, code, refused_at FROM refusals
                 WHERE inbox_id = ?1 AND instance_id = ?2 ORDER BY seq DESC LIMIT ?3",
            )?;
            let rows = query.query_map(params![inbox, instance, limit], |row| {
                Ok(RefusedDeliveryRow {
                    refusal: RefusedDelivery {
                        delivery: row.get(0)?,
                        status: row.get(1)?,
                        code: row.get(2)?,
                    },
                    refused_at: row.get(3)?,
                })
            })?;
            rows.collect()
        })
        .await
    }
}
