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
/// `capacity` keys, each held until its lease ends or taken until the moment it was given.
/// Past the capacity, the key remembered first is forgotten before its time, and counted
/// ([`evicted`]); a replay of it would then pass. Cheap to clone: clones share one memory.
///
/// One lock guards it, held for a hash lookup and an insert per verified delivery and
/// another per answer: next to the HMAC over the body that each delivery costs before it,
/// the lock is not what a receiver waits on. A fleet shares a [`ReplayStore`] of its own
/// instead.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use faultline::webhooks::{ReplayKey, ReplayMemory, Seen};
///
/// let memory = ReplayMemory::with_capacity(1);
/// let now = SystemTime::now();
/// let (a, b) = (ReplayKey::from_bytes([1; 32]), ReplayKey::from_bytes([2; 32]));
/// let (lease, later) = (now + Duration::from_secs(1), now + Duration::from_secs(60));
/// assert_eq!(memory.reserve_at(a, lease, now), Seen::First);
/// assert_eq!(memory.reserve_at(a, lease, now), Seen::Held); // in hand
/// memory.confirm_at(a, later, now); // answered 2xx
/// assert_eq!(memory.reserve_at(a, lease, now), Seen::Repeat);
/// assert_eq!(memory.reserve_at(b, lease, now), Seen::First); // `a` is forgotten early
/// assert_eq!(memory.evicted(), 1);
/// memory.release_at(b, lease); // answered otherwise
/// assert_eq!(memory.reserve_at(b, lease, now), Seen::First);
/// ```
///
/// [`evicted`]: ReplayMemory::evicted
#[derive(Clone)]
pub struct ReplayMemory {
    inner: Arc<Memory>,
}

/// The one memory every clone of a [`ReplayMemory`] reaches.
struct Memory {
    capacity: usize,
    table: Mutex<Table>,
    evicted: AtomicU64,
    expired: AtomicU64,
}

/// A key's state: held under a lease that ends at `expiry`, or taken until `expiry`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    expiry: SystemTime,
    taken: bool,
}

/// Each key's entry, and the keys in the order they were remembered. A key remembered
/// again (after it expired, or confirmed after its reservation) is in `order` twice; the
/// place whose entry is not the key's own is skipped when it comes up, and all such are
/// dropped at once when `order` reaches [`STALE_FACTOR`] times the capacity. So
/// `entries.len() <= capacity` and `order.len() <= STALE_FACTOR * capacity`.
#[derive(Default)]
struct Table {
    entries: HashMap<ReplayKey, Entry>,
    order: VecDeque<(ReplayKey, Entry)>,
}

impl ReplayMemory {
    /// A memory of [`DEFAULT_REPLAY_CAPACITY`] keys.
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_REPLAY_CAPACITY)
    }

    /// A memory of at most `capacity` keys (at least one).
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            inner: Arc::new(Memory {
                capacity: capacity.max(1),
                table: Mutex::default(),
                evicted: AtomicU64::new(0),
                expired: AtomicU64::new(0),
            }),
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.inner
            .table
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Reserves `key` until `lease`, judged at `now`: [`Seen::Held`] while a reservation's
    /// lease has not ended, [`Seen::Repeat`] while it is taken, else [`Seen::First`]. For
    /// tests and for callers with a clock of their own; the [`ReplayStore`] implementation
    /// reads the system clock.
    pub fn reserve_at(&self, key: ReplayKey, lease: SystemTime, now: SystemTime) -> Seen {
        let mut table = self.table();
        self.forget_expired(&mut table, now);
        if let Some(&entry) = table.entries.get(&key) {
            if entry.expiry > now {
                return if entry.taken {
                    Seen::Repeat
                } else {
                    Seen::Held
                };
            }
            // Its place in the order stays behind, and is skipped when it comes up.
            table.entries.remove(&key);
            self.inner.expired.fetch_add(1, Ordering::Relaxed);
        }
        let entry = Entry {
            expiry: lease,
            taken: false,
        };
        self.insert(&mut table, key, entry, now);
        Seen::First
    }

    /// Takes `key` until `until`, judged at `now`, whatever it held.
    pub fn confirm_at(&self, key: ReplayKey, until: SystemTime, now: SystemTime) {
        let mut table = self.table();
        self.forget_expired(&mut table, now);
        let entry = Entry {
            expiry: until,
            taken: true,
        };
        self.insert(&mut table, key, entry, now);
    }

    /// Frees `key` if it is still held under the lease that ends at `lease`.
    pub fn release_at(&self, key: ReplayKey, lease: SystemTime) {
        let held = Entry {
            expiry: lease,
            taken: false,
        };
        let mut table = self.table();
        if table.entries.get(&key) == Some(&held) {
            // Its place in the order stays behind, and is skipped when it comes up.
            table.entries.remove(&key);
        }
    }

    /// Puts `entry` in for `key`, forgetting the oldest keys first when the memory is full.
    fn insert(&self, table: &mut Table, key: ReplayKey, entry: Entry, now: SystemTime) {
        while !table.entries.contains_key(&key) && table.entries.len() >= self.inner.capacity {
            let Some((oldest, expiry)) = table.order.pop_front() else {
                break;
            };
            self.forget(table, oldest, expiry, now);
        }
        if table.order.len() >= STALE_FACTOR * self.inner.capacity {
            let Table { entries, order } = &mut *table;
            order.retain(|(key, entry)| entries.get(key) == Some(entry));
        }
        table.entries.insert(key, entry);
        table.order.push_back((key, entry));
    }

    /// Forgets the keys at the front of the order whose time has come.
    fn forget_expired(&self, table: &mut Table, now: SystemTime) {
        while let Some(&(key, entry)) = table.order.front() {
            if entry.expiry > now {
                break;
            }
            table.order.pop_front();
            self.forget(table, key, entry, now);
        }
    }

    /// Forgets `key` if `entry` is still its own, counting whether it was due.
    fn forget(&self, table: &mut Table, key: ReplayKey, entry: Entry, now: SystemTime) {
        if table.entries.get(&key) != Some(&entry) {
            return;
        }
        table.entries.remove(&key);
        let counter = if entry.expiry > now {
            &self.inner.evicted
        } else {
            &self.inner.expired
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Keys forgotten before their time because the memory was full: each is a delivery
    /// whose replay would pass. Worth an alert when it grows; raise the capacity, or
    /// shorten the window.
    pub fn evicted(&self) -> u64 {
        self.inner.evicted.load(Ordering::Relaxed)
    }

    /// Keys forgotten at their time: taken ones at their expiry, held ones when their
    /// lease ended unsettled.
    pub fn expired(&self) -> u64 {
        self.inner.expired.load(Ordering::Relaxed)
    }

    /// Keys held or taken now, some of which may have expired and not yet been dropped.
    pub fn len(&self) -> usize {
        self.table().entries.len()
    }

    /// Whether it holds no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most keys it holds.
    pub fn capacity(&self) -> usize {
        self.inner.capacity
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
            .field("capacity", &self.inner.capacity)
            .field("evicted", &self.evicted())
            .field("expired", &self.expired())
            .finish_non_exhaustive()
    }
}

impl ReplayStore for ReplayMemory {
    type Error = Infallible;

    async fn reserve(&self, key: ReplayKey, lease: SystemTime) -> Result<Seen, Infallible> {
        Ok(self.reserve_at(key, lease, SystemTime::now()))
    }

    async fn confirm(&self, key: ReplayKey, until: SystemTime) -> Result<(), Infallible> {
        self.confirm_at(key, until, SystemTime::now());
        Ok(())
    }

    async fn release(&self, key: ReplayKey, lease: SystemTime) -> Result<(), Infallible> {
        self.release_at(key, lease);
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
