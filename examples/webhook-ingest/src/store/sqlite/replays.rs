//! Remembered deliveries in SQLite (see `store/replays.rs`).

use rusqlite::params;

use super::SqliteStore;
use crate::store::replays::PURGED_PER_REMEMBER;
use crate::store::StoreError;

impl SqliteStore {
    /// Writes `key` until `until` unless a row holds it past `now`, and deletes a few rows
    /// expired by `now`, in one transaction; whether the key was written.
    pub(in crate::store) async fn remember_at(
        &self,
        key: [u8; 32],
        until: i64,
        now: i64,
    ) -> Result<bool, StoreError> {
        self.write(move |tx| {
            let first = tx
                .prepare_cached(
                    "INSERT INTO replays (key, until_ms) VALUES (?1, ?2)
                     ON CONFLICT (key) DO UPDATE SET until_ms = excluded.until_ms
                     WHERE replays.until_ms <= ?3",
                )?
                .execute(params![&key[..], until, now])?
                == 1;
            tx.prepare_cached(
                "DELETE FROM replays WHERE key IN (
                     SELECT key FROM replays WHERE until_ms <= ?1 LIMIT ?2)",
            )?
            .execute(params![now, PURGED_PER_REMEMBER])?;
            Ok(first)
        })
        .await
    }
}
