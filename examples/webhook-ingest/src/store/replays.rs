//! The service's database as the library's replay store: one row per delivery remembered,
//! its [`ReplayKey`] and the moment it may be forgotten, in the SQLite file or in the
//! PostgreSQL database that a fleet's nodes share. Handed to
//! `faultline::webhooks::Intake::replays`, it makes a replay sent to any node of the fleet a
//! repeat, which a memory of one process cannot.
//!
//! Whether a key is new is decided by the database's primary key, in one statement: an insert
//! that writes a row only when none is there or the one there has expired. Of many nodes
//! remembering one key at once, exactly one writes it and is answered [`Seen::First`].
//! Expired rows are deleted a few at a time by the writes themselves, never by a sweep that
//! holds the table.

use std::time::{SystemTime, UNIX_EPOCH};

use faultline::webhooks::{ReplayKey, ReplayStore, Seen};

use super::{Store, StoreError};

/// Expired rows one remembered key deletes at most: more than the one row it may add, so
/// expired rows never pile up faster than they go, and few enough that each delivery's
/// write stays a short range of the expiry index.
pub(super) const PURGED_PER_REMEMBER: i64 = 8;

impl ReplayStore for Store {
    type Error = StoreError;

    async fn remember(&self, key: ReplayKey, until: SystemTime) -> Result<Seen, StoreError> {
        self.remember_at(key, until, SystemTime::now()).await
    }
}

impl Store {
    /// Remembers `key` until `until`, judged at `now`: [`Seen::Repeat`] when a row holds it
    /// and `now` is before its expiry. The [`ReplayStore`] implementation passes the
    /// node's clock; tests pass their own. Times are kept to the millisecond.
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
    /// let until = now + Duration::from_secs(60);
    /// assert_eq!(store.remember_at(key, until, now).await?, Seen::First);
    /// assert_eq!(store.remember_at(key, until, now).await?, Seen::Repeat);
    /// let later = until + Duration::from_secs(60);
    /// assert_eq!(store.remember_at(key, later, until).await?, Seen::First);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn remember_at(
        &self,
        key: ReplayKey,
        until: SystemTime,
        now: SystemTime,
    ) -> Result<Seen, StoreError> {
        let (key, until, now) = (*key.as_bytes(), unix_ms(until), unix_ms(now));
        let first = dispatch!(self.remember_at(key, until, now))?;
        Ok(if first { Seen::First } else { Seen::Repeat })
    }
}

/// `at` in Unix milliseconds, the column's unit; before 1970 is 0, and past `i64` the most.
fn unix_ms(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |since| {
        i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
    })
}
