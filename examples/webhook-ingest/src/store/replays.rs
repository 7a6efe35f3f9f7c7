//! The service's database as the library's replay store: one row per delivery reserved or
//! taken, its [`ReplayKey`], whether it is taken, and the moment it may be forgotten (the
//! lease's end while it is reserved), in the SQLite file or in the PostgreSQL database that a
//! fleet's nodes share. Handed to `faultline::webhooks::Intake::replays`, it makes a replay
//! sent to any node of the fleet a repeat, which a memory of one process cannot.
//!
//! Whether a key is free is decided by the database's primary key, in one statement: an
//! insert that writes a row only when none is there or the one there has expired. Of many
//! nodes reserving one key at once, exactly one writes it and is answered [`Seen::First`].
//! Expired rows are deleted a few at a time by the reservations themselves, never by a sweep
//! that holds the table.

use std::time::{SystemTime, UNIX_EPOCH};

use faultline::webhooks::{ReplayKey, ReplayStore, Seen};
use sha2::{Digest, Sha256};

use super::{Store, StoreError};
use crate::ids::{DeliveryId, InboxId};

/// Expired rows one reservation deletes at most: more than the one row it may add, so
/// expired rows never pile up faster than they go, and few enough that each delivery's
/// write stays a short range of the expiry index.
pub(super) const PURGED_PER_REMEMBER: i64 = 8;

/// What a delivery is stored under: the id its sender gave it, and the replay key of what
/// its sender signed (`ReplayKey::of`), scoped to its inbox, so that the same signed bytes
/// sent to two inboxes (two hooks of one repository on one secret) are two deliveries.
/// `None` for a delivery whose key could not be made (a GitLab delivery spooled unverified
/// keeps its token's digest, not the token): it is recognised by its id alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub delivery_id: DeliveryId,
    pub(super) key: Option<[u8; 32]>,
}

impl Claim {
    /// The claim of the delivery `delivery_id` to `inbox`, signed as `key` says.
    pub fn new(delivery_id: DeliveryId, key: Option<ReplayKey>, inbox: &InboxId) -> Claim {
        let key = key.map(|key| {
            let mut digest = Sha256::new();
            digest.update(b"inbox\0");
            digest.update(inbox.as_str().as_bytes());
            digest.update(b"\0");
            digest.update(key.as_bytes());
            digest.finalize().into()
        });
        Claim { delivery_id, key }
    }
}

/// Until when the service's ingest takes a key: as long as it keeps the delivery, which is
/// for good; a reservation's purge never reaches it.
pub(super) const KEPT_WITH_THE_DELIVERY: i64 = i64::MAX;

impl ReplayStore for Store {
    type Error = StoreError;

    async fn reserve(&self, key: ReplayKey, lease: SystemTime) -> Result<Seen, StoreError> {
        self.reserve_at(key, lease, SystemTime::now()).await
    }

    async fn confirm(&self, key: ReplayKey, until: SystemTime) -> Result<(), StoreError> {
        self.confirm_at(key, until).await
    }

    async fn release(&self, key: ReplayKey, lease: SystemTime) -> Result<(), StoreError> {
        self.release_at(key, lease).await
    }
}

/// `at` in Unix milliseconds, the column's unit; before 1970 is 0, and past `i64` the most.
pub(super) fn unix_ms(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |since| {
        i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
    })
}
