//! The inboxes already seen, kept in memory so that a delivery can be verified while the
//! store cannot be asked.
//!
//! Every inbox the store answers for is remembered (its provider, digest, secret, and the
//! previous secret of its last rotation with the time of that rotation); when
//! the store is unreachable, a delivery to a remembered inbox is checked against the
//! remembered secrets, by the same grace rule as with the store, and spooled as verified. The
//! store stays the authority: it is asked
//! first, every time, and its answer replaces what was remembered.
//!
//! Beside what a delivery's look-up remembers, the whole cache is replaced by every inbox the
//! store lists (see `refresh`), and filled at start from the file of known inboxes (see
//! `known`), so that a node restarted while the store is down knows every inbox that
//! existed at its last refresh.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::ids::{InboxId, InstanceId};
use crate::store::{InboxRow, KnownInbox};

/// Inboxes remembered at most: at a few hundred bytes each, tens of megabytes at worst. Past
/// it a new inbox is not remembered, and its deliveries during an outage are spooled
/// unverified and checked when drained.
pub const MAX_CACHED_INBOXES: usize = 100_000;

/// An inbox as the store answered for it, and when.
type Seen = (InboxRow, Instant);

/// The inboxes already seen, by instance and inbox id; cheap to clone.
#[derive(Clone, Default)]
pub struct SecretCache {
    inboxes: Arc<Mutex<Remembered>>,
}

/// Each inbox with the moment it was read: a previous secret's age, which the database
/// reported then, keeps growing from there. By instance, then inbox, so that a look-up
/// borrows the two ids where a key of both would be a copy of them; their number kept
/// beside them, so that the cap is checked without walking every instance under the lock.
#[derive(Default)]
struct Remembered {
    by_instance: HashMap<InstanceId, HashMap<InboxId, Seen>>,
    count: usize,
}

impl Remembered {
    /// Holds `row` of `instance` as seen `at`, counted when it was not held before.
    fn hold(&mut self, instance: &InstanceId, row: &InboxRow, at: Instant) {
        let inboxes = self.by_instance.entry(instance.clone()).or_default();
        if inboxes.insert(row.id.clone(), (row.clone(), at)).is_none() {
            self.count += 1;
        }
    }
}

impl SecretCache {
    /// Remembers what the store answered for `inbox` of `instance`; whether it is one not
    /// remembered before.
    ///
    /// Every delivery's look-up comes here, almost always with the row remembered: found by
    /// reference and equal, only its time is brought up to now, nothing copied or freed (the
    /// row and both ids were cloned, and the entry replaced freed, 1,400 instructions per
    /// delivery; `BENCHMARKS.md`). The time matters only to a previous secret, whose age
    /// differs between two reads unless they are within the database clock's tick.
    pub fn remember(&self, instance: &InstanceId, inbox: &InboxRow) -> bool {
        let mut remembered = self.inboxes.lock().unwrap_or_else(|e| e.into_inner());
        let held = remembered
            .by_instance
            .get_mut(instance)
            .and_then(|inboxes| inboxes.get_mut(&inbox.id));
        if let Some((row, seen)) = held {
            if row != inbox {
                *row = inbox.clone();
            }
            *seen = Instant::now();
            return false;
        }
        if remembered.count >= MAX_CACHED_INBOXES {
            return false;
        }
        remembered.hold(instance, inbox, Instant::now());
        true
    }

    /// Forgets everything and remembers `inboxes` (the first [`MAX_CACHED_INBOXES`]), as the
    /// store listed them or the file of known inboxes kept them.
    pub fn replace(&self, inboxes: &[KnownInbox]) {
        let now = Instant::now();
        let mut fresh = Remembered::default();
        for known in inboxes.iter().take(MAX_CACHED_INBOXES) {
            fresh.hold(&known.instance, &known.inbox, now);
        }
        *self.inboxes.lock().unwrap_or_else(|e| e.into_inner()) = fresh;
    }

    /// How many inboxes are remembered.
    pub fn len(&self) -> usize {
        self.inboxes.lock().unwrap_or_else(|e| e.into_inner()).count
    }

    /// Whether no inbox is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every inbox remembered, each previous secret's age brought up to now: what the file
    /// of known inboxes is written from when an inbox is made or rotated here.
    pub fn known(&self) -> Vec<KnownInbox> {
        let remembered = self.inboxes.lock().unwrap_or_else(|e| e.into_inner());
        let mut known: Vec<KnownInbox> = remembered
            .by_instance
            .iter()
            .flat_map(|(instance, inboxes)| {
                inboxes.values().map(|seen| KnownInbox {
                    instance: instance.clone(),
                    inbox: aged(seen),
                })
            })
            .collect();
        known.sort_by(|a, b| (&a.instance, &a.inbox.id).cmp(&(&b.instance, &b.inbox.id)));
        known
    }

    /// The inbox as last seen, if it was, with its previous secret's age brought up to now.
    pub fn get(&self, instance: &InstanceId, inbox: &InboxId) -> Option<InboxRow> {
        let remembered = self.inboxes.lock().unwrap_or_else(|e| e.into_inner());
        remembered.by_instance.get(instance)?.get(inbox).map(aged)
    }
}

/// The row as seen, its previous secret's age brought up to now.
fn aged((row, seen): &Seen) -> InboxRow {
    let mut row = row.clone();
    if let Some(previous) = &mut row.previous {
        previous.age += seen.elapsed();
    }
    row
}

impl std::fmt::Debug for SecretCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretCache")
            .field("inboxes", &self.len())
            .finish()
    }
}

#[cfg(test)]
mod tests;
