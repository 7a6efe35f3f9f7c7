//! Reserved and taken deliveries in PostgreSQL, which every node of a fleet shares (see
//! `store/replays.rs`).

use std::time::SystemTime;

use super::PgStore;
use crate::store::replays::{unix_ms, PURGED_PER_REMEMBER};
use crate::store::Replays;
use crate::store::StoreError;
use async_trait::async_trait;
use faultline::webhooks::{ReplayKey, Seen};

/// Deletes a few rows expired by `$1`, at most `$2`. The second condition is always true of
/// an expired row (`$1` is a moment, never `i64::MAX`); it is the expiry index's own
/// (`schema::EXPIRING_REPLAYS_INDEXED`), which the planner must find in the query to read
/// that partial index in a plan made for any `$1`. Rows another node is deleting or renewing
/// are skipped, not waited for: no two nodes' purges wait on each other, nor on a key being
/// reserved.
pub(super) const PURGE: &str = "DELETE FROM replays WHERE key IN (
     SELECT key FROM replays WHERE until_ms <= $1 AND until_ms < 9223372036854775807 LIMIT $2
     FOR UPDATE SKIP LOCKED)";

#[async_trait]
impl Replays for PgStore {
    /// Reserves `key` until `lease` unless a row holds it past `now`, and deletes a few rows
    /// expired by `now`, in one transaction; what it found.
    async fn reserve_at(
        &self,
        key: ReplayKey,
        lease: SystemTime,
        now: SystemTime,
    ) -> Result<Seen, StoreError> {
        let (key, lease, now) = (*key.as_bytes(), unix_ms(lease), unix_ms(now));
        let mut client = self.pool.get().await?;
        // A second node inserting the same key waits on the first's row, then finds it
        // unexpired, writes nothing, and reads whether it is taken or held.
        let reserve = client
            .prepare_cached(
                "INSERT INTO replays (key, until_ms, taken) VALUES ($1, $2, false)
                 ON CONFLICT (key) DO UPDATE SET until_ms = excluded.until_ms, taken = false
                 WHERE replays.until_ms <= $3",
            )
            .await?;
        let taken = client
            .prepare_cached("SELECT taken FROM replays WHERE key = $1")
            .await?;
        let purge = client.prepare_cached(PURGE).await?;
        let tx = client.transaction().await?;
        let found = if tx.execute(&reserve, &[&&key[..], &lease, &now]).await? == 1 {
            Seen::First
        } else {
            // The row the insert conflicted with; deleted since by a purge, it is free
            // again, and the copy's retry will find it so.
            match tx.query_opt(&taken, &[&&key[..]]).await? {
                Some(row) if row.get::<_, bool>(0) => Seen::Repeat,
                _ => Seen::Held,
            }
        };
        tx.execute(&purge, &[&now, &PURGED_PER_REMEMBER]).await?;
        tx.commit().await?;
        Ok(found)
    }

    /// Takes `key` until `until`, whatever the row held.
    async fn confirm_at(&self, key: ReplayKey, until: SystemTime) -> Result<(), StoreError> {
        let (key, until) = (*key.as_bytes(), unix_ms(until));
        let client = self.pool.get().await?;
        let confirm = client
            .prepare_cached(
                "INSERT INTO replays (key, until_ms, taken) VALUES ($1, $2, true)
                 ON CONFLICT (key) DO UPDATE SET until_ms = excluded.until_ms, taken = true",
            )
            .await?;
        client.execute(&confirm, &[&&key[..], &until]).await?;
        Ok(())
    }

    /// Deletes `key`'s row if it is still reserved under `lease`.
    async fn release_at(&self, key: ReplayKey, lease: SystemTime) -> Result<(), StoreError> {
        let (key, lease) = (*key.as_bytes(), unix_ms(lease));
        let client = self.pool.get().await?;
        let release = client
            .prepare_cached("DELETE FROM replays WHERE key = $1 AND NOT taken AND until_ms = $2")
            .await?;
        client.execute(&release, &[&&key[..], &lease]).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
