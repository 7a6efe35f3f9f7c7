//! Reserved and taken deliveries in SQLite (see `store/replays.rs`).

use std::time::SystemTime;

use async_trait::async_trait;
use faultline::webhooks::{ReplayKey, Seen};
use rusqlite::{params, Connection};

use super::SqliteStore;
use crate::ids::{DeliveryId, InboxId};
use crate::store::replays::{unix_ms, KEPT_WITH_THE_DELIVERY, PURGED_PER_REMEMBER};
use crate::store::Replays;
use crate::store::StoreError;

/// Deletes a few rows expired by `?1`, at most `?2`. The second condition is always true of
/// an expired row (`?1` is a moment, never `i64::MAX`); it is the expiry index's own
/// (`schema::EXPIRING_REPLAYS_INDEXED`), which SQLite must find in the query to read that
/// partial index instead of the whole table.
pub(super) const PURGE: &str = "DELETE FROM replays WHERE key IN (
     SELECT key FROM replays WHERE until_ms <= ?1 AND until_ms < 9223372036854775807 LIMIT ?2)";

#[async_trait]
impl Replays for SqliteStore {
    /// Reserves `key` until `lease` unless a row holds it past `now`, and deletes a few rows
    /// expired by `now`, in one transaction; what it found.
    async fn reserve_at(
        &self,
        key: ReplayKey,
        lease: SystemTime,
        now: SystemTime,
    ) -> Result<Seen, StoreError> {
        let (key, lease, now) = (*key.as_bytes(), unix_ms(lease), unix_ms(now));
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
                Seen::First
            } else {
                let taken: bool = tx
                    .prepare_cached("SELECT taken FROM replays WHERE key = ?1")?
                    .query_row(params![&key[..]], |row| row.get(0))?;
                if taken {
                    Seen::Repeat
                } else {
                    Seen::Held
                }
            };
            tx.prepare_cached(PURGE)?
                .execute(params![now, PURGED_PER_REMEMBER])?;
            Ok(found)
        })
        .await
    }

    /// Takes `key` until `until`, whatever the row held.
    async fn confirm_at(&self, key: ReplayKey, until: SystemTime) -> Result<(), StoreError> {
        let (key, until) = (*key.as_bytes(), unix_ms(until));
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
    async fn release_at(&self, key: ReplayKey, lease: SystemTime) -> Result<(), StoreError> {
        let (key, lease) = (*key.as_bytes(), unix_ms(lease));
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
    inbox: &InboxId,
    delivery_id: &DeliveryId,
) -> rusqlite::Result<bool> {
    // A new key, as nearly every delivery's is, is one insert. No `RETURNING`: SQLite keeps a
    // statement's returned rows in a b-tree of its own, made and dropped per statement, which
    // cost more than the look-up below on the rare key that was there
    // (`load-scripts/bench/ingest-grind.sh`).
    let inserted =
        tx.prepare_cached(
            "INSERT INTO replays (key, until_ms, taken, inbox_id, delivery_id)
             VALUES (?1, ?2, 1, ?3, ?4)
             ON CONFLICT (key) DO NOTHING",
        )?
        .execute(params![
            &key[..],
            KEPT_WITH_THE_DELIVERY,
            inbox,
            delivery_id.as_str()
        ])? == 1;
    if inserted {
        return Ok(true);
    }
    tx.prepare_cached(
        "UPDATE replays SET taken = 1, until_ms = ?2,
             inbox_id = coalesce(inbox_id, ?3), delivery_id = coalesce(delivery_id, ?4)
         WHERE key = ?1",
    )?
    .execute(params![
        &key[..],
        KEPT_WITH_THE_DELIVERY,
        inbox,
        delivery_id.as_str()
    ])?;
    let (owner_inbox, owner_delivery): (String, String) = tx
        .prepare_cached("SELECT inbox_id, delivery_id FROM replays WHERE key = ?1")?
        .query_row(params![&key[..]], |row| Ok((row.get(0)?, row.get(1)?)))?;
    Ok(owner_inbox == inbox.as_str() && owner_delivery == delivery_id.as_str())
}
