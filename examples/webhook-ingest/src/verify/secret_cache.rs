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
    /// Each inbox with the moment it was read: a previous secret's age, which the database
    /// reported then, keeps growing from there.
    inboxes: Arc<Mutex<HashMap<(InstanceId, InboxId), Seen>>>,
}

impl SecretCache {
    /// Remembers what the store answered for `inbox` of `instance`; whether it is one not
    /// remembered before.
    pub fn remember(&self, instance: &InstanceId, inbox: &InboxRow) -> bool {
        let mut inboxes = self.inboxes.lock().unwrap_or_else(|e| e.into_inner());
        let key = (instance.clone(), inbox.id.clone());
        if inboxes.len() < MAX_CACHED_INBOXES || inboxes.contains_key(&key) {
            return inboxes
                .insert(key, (inbox.clone(), Instant::now()))
                .is_none();
        }
        false
    }

    /// Forgets everything and remembers `inboxes` (the first [`MAX_CACHED_INBOXES`]), as the
    /// store listed them or the file of known inboxes kept them.
    pub fn replace(&self, inboxes: &[KnownInbox]) {
        let now = Instant::now();
        let fresh: HashMap<_, _> = inboxes
            .iter()
            .take(MAX_CACHED_INBOXES)
            .map(|known| {
                let key = (known.instance.clone(), known.inbox.id.clone());
                (key, (known.inbox.clone(), now))
            })
            .collect();
        *self.inboxes.lock().unwrap_or_else(|e| e.into_inner()) = fresh;
    }

    /// How many inboxes are remembered.
    pub fn len(&self) -> usize {
        self.inboxes.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether no inbox is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every inbox remembered, each previous secret's age brought up to now: what the file
    /// of known inboxes is written from when an inbox is made or rotated here.
    pub fn known(&self) -> Vec<KnownInbox> {
        let inboxes = self.inboxes.lock().unwrap_or_else(|e| e.into_inner());
        let mut known: Vec<KnownInbox> = inboxes
            .iter()
            .map(|((instance, _), (row, seen))| {
                let mut inbox = row.clone();
                if let Some(previous) = &mut inbox.previous {
                    previous.age += seen.elapsed();
                }
                let instance = instance.clone();
                KnownInbox { instance, inbox }
            })
            .collect();
        known.sort_by(|a, b| (&a.instance, &a.inbox.id).cmp(&(&b.instance, &b.inbox.id)));
        known
    }

    /// The inbox as last seen, if it was, with its previous secret's age brought up to now.
    pub fn get(&self, instance: &InstanceId, inbox: &InboxId) -> Option<InboxRow> {
        let inboxes = self.inboxes.lock().unwrap_or_else(|e| e.into_inner());
        let (row, seen) = inboxes.get(&(instance.clone(), inbox.clone()))?;
        let mut row = row.clone();
        if let Some(previous) = &mut row.previous {
            previous.age += seen.elapsed();
        }
        Some(row)
    }
}

impl std::fmt::Debug for SecretCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inboxes = self.inboxes.lock().unwrap_or_else(|e| e.into_inner());
        f.debug_struct("SecretCache")
            .field("inboxes", &inboxes.len())
            .finish()
    }
}
