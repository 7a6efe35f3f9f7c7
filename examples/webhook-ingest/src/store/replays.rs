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
    pub delivery_id: String,
    pub(super) key: Option<[u8; 32]>,
}

impl Claim {
    /// The claim of the delivery `delivery_id` to `inbox`, signed as `key` says.
    pub fn new(delivery_id: String, key: Option<ReplayKey>, inbox: &str) -> Claim {
        let key = key.map(|key| {
            let mut digest = Sha256::new();
            digest.update(b"inbox\0");
            digest.update(inbox.as_bytes());
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

/// What a backend found of a key it was asked to reserve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Found {
    Reserved,
    Held,
    Taken,
}

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

impl Store {
    /// Reserves `key` until `lease`, judged at `now`: [`Seen::Held`] while a reservation's
    /// lease has not ended, [`Seen::Repeat`] while the key is taken, else [`Seen::First`].
    /// The [`ReplayStore`] implementation passes the node's clock; tests pass their own.
    /// Times are kept to the millisecond.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::{Duration, SystemTime};
    /// use faultline::webhooks::senders::GitHub;
    /// use faultline::webhooks::{Intake, OnRepeat, ReplayKey, SecretSet, Seen};
    /// use webhook_ingest::store::Store;
    ///
    /// let store = Store::open(":memory:").await?;
    /// // Every node on one database shares this guard.
    /// let _intake = Intake::new(GitHub::new(SecretSet::one("the inbox's secret")?)?)
    ///     .replays(store.clone(), OnRepeat::Refuse);
    ///
    /// let (key, now) = (ReplayKey::from_bytes([7; 32]), SystemTime::now());
    /// let (lease, until) = (now + Duration::from_secs(60), now + Duration::from_secs(600));
    /// assert_eq!(store.reserve_at(key, lease, now).await?, Seen::First);
    /// assert_eq!(store.reserve_at(key, lease, now).await?, Seen::Held);
    /// store.confirm_at(key, until).await?;
    /// assert_eq!(store.reserve_at(key, lease, now).await?, Seen::Repeat);
    /// let later = until + Duration::from_secs(60);
    /// assert_eq!(store.reserve_at(key, later, until).await?, Seen::First);
    /// store.release_at(key, later).await?;
    /// assert_eq!(store.reserve_at(key, later, until).await?, Seen::First);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn reserve_at(
        &self,
        key: ReplayKey,
        lease: SystemTime,
        now: SystemTime,
    ) -> Result<Seen, StoreError> {
        let (key, lease, now) = (*key.as_bytes(), unix_ms(lease), unix_ms(now));
        Ok(match dispatch!(self.reserve_at(key, lease, now))? {
            Found::Reserved => Seen::First,
            Found::Held => Seen::Held,
            Found::Taken => Seen::Repeat,
        })
    }

    /// Takes `key` until `until`, whatever its row held: its delivery was answered 2xx.
    pub async fn confirm_at(&self, key: ReplayKey, until: SystemTime) -> Result<(), StoreError> {
        let (key, until) = (*key.as_bytes(), unix_ms(until));
        dispatch!(self.confirm_at(key, until))
    }

    /// Frees `key` if it is still reserved under `lease`: its delivery was answered
    /// otherwise, or not at all.
    pub async fn release_at(&self, key: ReplayKey, lease: SystemTime) -> Result<(), StoreError> {
        let (key, lease) = (*key.as_bytes(), unix_ms(lease));
        dispatch!(self.release_at(key, lease))
    }
}

/// `at` in Unix milliseconds, the column's unit; before 1970 is 0, and past `i64` the most.
fn unix_ms(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |since| {
        i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
    })
}
