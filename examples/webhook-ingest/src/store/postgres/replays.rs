//! Remembered deliveries in PostgreSQL, which every node of a fleet shares (see
//! `store/replays.rs`).

use super::PgStore;
use crate::store::replays::PURGED_PER_REMEMBER;
use crate::store::StoreError;

impl PgStore {
    /// Writes `key` until `until` unless a row holds it past `now`, and deletes a few rows
    /// expired by `now`, in one transaction; whether the key was written.
    pub(in crate::store) async fn remember_at(
        &self,
        key: [u8; 32],
        until: i64,
        now: i64,
    ) -> Result<bool, StoreError> {
        let mut client = self.pool.get().await?;
        // A second node inserting the same key waits on the first's row, then finds it
        // unexpired and writes nothing.
        let remember = client
            .prepare_cached(
                "INSERT INTO replays (key, until_ms) VALUES ($1, $2)
                 ON CONFLICT (key) DO UPDATE SET until_ms = excluded.until_ms
                 WHERE replays.until_ms <= $3",
            )
            .await?;
        // Rows another node is deleting or renewing are skipped, not waited for: no two
        // nodes' purges wait on each other, nor on a key being remembered.
        let purge = client
            .prepare_cached(
                "DELETE FROM replays WHERE key IN (
                     SELECT key FROM replays WHERE until_ms <= $1 LIMIT $2
                     FOR UPDATE SKIP LOCKED)",
            )
            .await?;
        let tx = client.transaction().await?;
        let first = tx.execute(&remember, &[&&key[..], &until, &now]).await? == 1;
        tx.execute(&purge, &[&now, &PURGED_PER_REMEMBER]).await?;
        tx.commit().await?;
        Ok(first)
    }
}
