//! Reserved and taken deliveries in SQLite (see `store/replays.rs`).

use rusqlite::{params, Connection};

use super::SqliteStore;
use crate::store::replays::{Found, KEPT_WITH_THE_DELIVERY, PURGED_PER_REMEMBER};
use crate::store::StoreError;

impl SqliteStore {
    /// Reserves `key` until `lease` unless a row holds it past `now`, and deletes a few rows
    /// expired by `now`, in one transaction; what it found.
    pub(in crate::store) async fn reserve_at(
        &self,
        key: [u8; 32],
        lease: i64,
        now: i64,
    ) -> Result<Found, StoreError> {
        self.write(move |tx| {
            let reserved = tx
                .prepare_cached(
                    "INSERT INTO replays (key, until_ms, taken) VALUES (?1, ?2, 0)
                     ON CONFLICT (key) DO UPDATE SET until_ms = excluded.until_ms, taken = 0
                     WHERE replays.until_ms <= ?3",
                )?
                .execute(params![&key[..], lease, now])?
                == 1;
            let found = if reserved {
                Found::Reserved
            } else {
                let taken: bool = tx
                    .prepare_cached("SELECT taken FROM replays WHERE key = ?1")?
                    .query_row(params![&key[..]], |row| row.get(0))?;
                if taken {
                    Found::Taken
                } else {
                    Found::Held
                }
            };
            tx.prepare_cached(
                "DELETE FROM replays WHERE key IN (
                     SELECT key FROM replays WHERE until_ms <= ?1 LIMIT ?2)",
            )?
            .execute(params![now, PURGED_PER_REMEMBER])?;
            Ok(found)
        })
        .await
    }

    /// Takes `key` until `until`, whatever the row held.
    pub(in crate::store) async fn confirm_at(
        &self,
        key: [u8; 32],
        until: i64,
    ) -> Result<(), StoreError> {
        self.write(move |tx| {
            tx.prepare_cached(
                "INSERT INTO replays (key, until_ms, taken) VALUES (?1, ?2, 1)
                 ON CONFLICT (key) DO UPDATE SET until_ms = excluded.until_ms, taken = 1",
            )?
            .execute(params![&key[..], until])?;
            Ok(())
        })
        .await
    }

    /// Deletes `key`'s row if it is still reserved under `lease`.
    pub(in crate::store) async fn release_at(
        &self,
        key: [u8; 32],
        lease: i64,
    ) -> Result<(), StoreError> {
        self.write(move |tx| {
            tx.prepare_cached(
                "DELETE FROM replays WHERE key = ?1 AND taken = 0 AND until_ms = ?2",
            )?
            .execute(params![&key[..], lease])?;
            Ok(())
        })
        .await
    }
}

/// Takes the replay key of the delivery `delivery_id` to `inbox` in `tx`, the delivery's
/// own transaction: whether the key is this delivery's (new, or taken by it before: a
/// redelivery), not another's (a replay under another id). A key a reservation holds or
/// took without naming a delivery becomes this one's.
pub(super) fn take_for_delivery(
    tx: &Connection,
    key: &[u8; 32],
    inbox: &str,
    delivery_id: &str,
) -> rusqlite::Result<bool> {
    let (owner_inbox, owner_delivery): (String, String) = tx
        .prepare_cached(
            "INSERT INTO replays (key, until_ms, taken, inbox_id, delivery_id)
             VALUES (?1, ?2, 1, ?3, ?4)
             ON CONFLICT (key) DO UPDATE SET taken = 1, until_ms = excluded.until_ms,
                 inbox_id = coalesce(replays.inbox_id, excluded.inbox_id),
                 delivery_id = coalesce(replays.delivery_id, excluded.delivery_id)
             RETURNING inbox_id, delivery_id",
        )?
        .query_row(
            params![&key[..], KEPT_WITH_THE_DELIVERY, inbox, delivery_id],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
    Ok(owner_inbox == inbox && owner_delivery == delivery_id)
}
