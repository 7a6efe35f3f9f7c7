//! [`ReplayMemory`]: the replay store of one process, bounded by count and by time.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use crate::webhooks::replay::{ReplayKey, ReplayStore, Seen};

/// Keys one [`ReplayMemory`] holds unless told otherwise: a day of deliveries at one a
/// second (86,400) fits, in about 12 MB when full (a key, its expiry and its place in the
/// order: about 120 bytes each). Past it, the oldest is forgotten and counted.
pub const DEFAULT_REPLAY_CAPACITY: usize = 100_000;

/// How far the order may outgrow the keys before its stale entries are dropped: twice
/// keeps the memory bounded and the sweep, a pass over the order, rare (once per
/// `capacity` re-remembered keys at most).
const STALE_FACTOR: usize = 2;

/// Remembers verified deliveries in this process, for one inbox or several: at most
/// `capacity` keys, each until the moment it was given. Past the capacity, the key
/// remembered first is forgotten before its time, and counted ([`evicted`]); a replay of
/// it would then pass. Cheap to clone: clones share one memory.
///
/// One lock guards it, held for a hash lookup and an insert per verified delivery: next
/// to the HMAC over the body that each delivery costs before it, the lock is not what a
/// receiver waits on. A fleet shares a [`ReplayStore`] of its own instead.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use faultline::webhooks::{ReplayKey, ReplayMemory, Seen};
///
/// let memory = ReplayMemory::with_capacity(1);
/// let now = SystemTime::now();
/// let (a, b) = (ReplayKey::from_bytes([1; 32]), ReplayKey::from_bytes([2; 32]));
/// let later = now + Duration::from_secs(60);
/// assert_eq!(memory.remember_at(a, later, now), Seen::First);
/// assert_eq!(memory.remember_at(a, later, now), Seen::Repeat);
/// assert_eq!(memory.remember_at(b, later, now), Seen::First); // `a` is forgotten early
/// assert_eq!(memory.evicted(), 1);
/// ```
///
/// [`evicted`]: ReplayMemory::evicted
#[derive(Clone)]
pub struct ReplayMemory {
    shared: Arc<Shared>,
}

struct Shared {
    capacity: usize,
    table: Mutex<Table>,
    evicted: AtomicU64,
    expired: AtomicU64,
}

/// Each key's expiry, and the keys in the order they were remembered. A key remembered
/// again after it expired is in `order` twice; the entry whose expiry is not the key's
/// own is skipped when it comes up, and all such are dropped at once when `order` reaches
/// [`STALE_FACTOR`] times the capacity. So `until.len() <= capacity` and
/// `order.len() <= STALE_FACTOR * capacity`.
#[derive(Default)]
struct Table {
    until: HashMap<ReplayKey, SystemTime>,
    order: VecDeque<(ReplayKey, SystemTime)>,
}

impl ReplayMemory {
    /// A memory of [`DEFAULT_REPLAY_CAPACITY`] keys.
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_REPLAY_CAPACITY)
    }

    /// A memory of at most `capacity` keys (at least one).
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            shared: Arc::new(Shared {
                capacity: capacity.max(1),
                table: Mutex::default(),
                evicted: AtomicU64::new(0),
                expired: AtomicU64::new(0),
            }),
        }
    }

    /// Remembers `key` until `until`, judged at `now`: [`Seen::Repeat`] when it is
    /// remembered and `now` is before its expiry. For tests and for callers with a clock
    /// of their own; the [`ReplayStore`] implementation reads the system clock.
    pub fn remember_at(&self, key: ReplayKey, until: SystemTime, now: SystemTime) -> Seen {
        let mut table = self
            .shared
            .table
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.forget_expired(&mut table, now);
        if let Some(&expiry) = table.until.get(&key) {
            if expiry > now {
                return Seen::Repeat;
            }
            // Its place in the order stays behind, and is skipped when it comes up.
            table.until.remove(&key);
            self.shared.expired.fetch_add(1, Ordering::Relaxed);
        }
        while table.until.len() >= self.shared.capacity {
            let Some((oldest, expiry)) = table.order.pop_front() else {
                break;
            };
            self.forget(&mut table, oldest, expiry, now);
        }
        if table.order.len() >= STALE_FACTOR * self.shared.capacity {
            let Table { until, order } = &mut *table;
            order.retain(|(key, expiry)| until.get(key) == Some(expiry));
        }
        table.until.insert(key, until);
        table.order.push_back((key, until));
        Seen::First
    }

    /// Forgets the keys at the front of the order whose time has come.
    fn forget_expired(&self, table: &mut Table, now: SystemTime) {
        while let Some(&(key, expiry)) = table.order.front() {
            if expiry > now {
                break;
            }
            table.order.pop_front();
            self.forget(table, key, expiry, now);
        }
    }

    /// Forgets `key` if `expiry` is still its own, counting whether it was due.
    fn forget(&self, table: &mut Table, key: ReplayKey, expiry: SystemTime, now: SystemTime) {
        if table.until.get(&key) != Some(&expiry) {
            return;
        }
        table.until.remove(&key);
        let counter = if expiry > now {
            &self.shared.evicted
        } else {
            &self.shared.expired
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Keys forgotten before their time because the memory was full: each is a delivery
    /// whose replay would pass. Worth an alert when it grows; raise the capacity, or
    /// shorten the window.
    pub fn evicted(&self) -> u64 {
        self.shared.evicted.load(Ordering::Relaxed)
    }

    /// Keys forgotten at their time.
    pub fn expired(&self) -> u64 {
        self.shared.expired.load(Ordering::Relaxed)
    }

    /// Keys held now, some of which may have expired and not yet been dropped.
    pub fn len(&self) -> usize {
        self.shared
            .table
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .until
            .len()
    }

    /// Whether it holds no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most keys it holds.
    pub fn capacity(&self) -> usize {
        self.shared.capacity
    }
}

impl Default for ReplayMemory {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for ReplayMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayMemory")
            .field("capacity", &self.shared.capacity)
            .field("evicted", &self.evicted())
            .field("expired", &self.expired())
            .finish_non_exhaustive()
    }
}

impl ReplayStore for ReplayMemory {
    type Error = Infallible;

    async fn remember(&self, key: ReplayKey, until: SystemTime) -> Result<Seen, Infallible> {
        Ok(self.remember_at(key, until, SystemTime::now()))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::time::Duration;

    use super::*;

    fn key(n: u8) -> ReplayKey {
        ReplayKey::from_bytes([n; 32])
    }

    #[test]
    fn a_key_is_a_repeat_until_its_expiry_then_first_again_and_counted_expired() {
        let memory = ReplayMemory::with_capacity(8);
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let until = now + Duration::from_secs(10);
        assert_eq!(memory.remember_at(key(1), until, now), Seen::First);
        let before = until - Duration::from_nanos(1);
        assert_eq!(memory.remember_at(key(1), until, before), Seen::Repeat);
        assert_eq!(memory.remember_at(key(1), until, until), Seen::First);
        assert_eq!(
            (memory.expired(), memory.evicted(), memory.len()),
            (1, 0, 1)
        );
    }

    #[test]
    fn past_the_capacity_the_oldest_is_forgotten_and_counted_evicted() {
        let memory = ReplayMemory::with_capacity(3);
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let until = now + Duration::from_secs(10);
        for n in 0..5 {
            assert_eq!(memory.remember_at(key(n), until, now), Seen::First);
        }
        assert_eq!((memory.evicted(), memory.len()), (2, 3));
        assert_eq!(memory.remember_at(key(4), until, now), Seen::Repeat);
        assert_eq!(memory.remember_at(key(2), until, now), Seen::Repeat);
        // The first two were evicted: they pass again, each evicting another.
        assert_eq!(memory.remember_at(key(0), until, now), Seen::First);
        assert_eq!(memory.evicted(), 3);
    }

    #[test]
    fn a_key_remembered_again_after_expiry_is_not_forgotten_by_its_old_place() {
        let memory = ReplayMemory::with_capacity(2);
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let short = start + Duration::from_secs(1);
        let long = start + Duration::from_secs(100);
        memory.remember_at(key(1), long, start);
        memory.remember_at(key(2), short, start);
        // Key 2 expired; remembered again, its old place must not take the new one away.
        assert_eq!(memory.remember_at(key(2), long, short), Seen::First);
        assert_eq!(memory.remember_at(key(2), long, short), Seen::Repeat);
        assert_eq!(memory.remember_at(key(1), long, short), Seen::Repeat);
        assert_eq!(
            (memory.expired(), memory.evicted(), memory.len()),
            (1, 0, 2)
        );
    }

    #[test]
    fn the_old_place_of_a_key_remembered_again_forgets_nothing_when_it_comes_up() {
        let memory = ReplayMemory::with_capacity(8);
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let at = |secs| start + Duration::from_secs(secs);
        memory.remember_at(key(2), at(5), start);
        memory.remember_at(key(1), at(1), start);
        // Key 1 expired behind key 2, and is remembered again.
        assert_eq!(memory.remember_at(key(1), at(100), at(2)), Seen::First);
        // Key 2's expiry brings key 1's old place to the front.
        assert_eq!(memory.remember_at(key(1), at(100), at(6)), Seen::Repeat);
        assert_eq!((memory.expired(), memory.evicted()), (2, 0));
    }

    #[test]
    fn keys_remembered_again_and_again_keep_the_order_bounded() {
        let memory = ReplayMemory::with_capacity(4);
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let far = start + Duration::from_secs(1_000_000);
        memory.remember_at(key(0), far, start);
        for round in 1..100u64 {
            let now = start + Duration::from_secs(round);
            memory.remember_at(key(1), now + Duration::from_millis(500), now);
        }
        let order = memory.shared.table.lock().unwrap().order.len();
        assert!(order <= STALE_FACTOR * memory.capacity(), "{order}");
        assert_eq!(memory.remember_at(key(0), far, start), Seen::Repeat);
    }
}
