//! The inboxes the webhook route looks up on every delivery, kept in memory beside the
//! SQLite file: a look-up on tokio's blocking pool is a thread hand-off each way, which under
//! load cost more than the delivery's own insert (`BENCHMARKS.md`, where the time goes).
//!
//! The file belongs to this process alone, and every change of an inbox goes through its
//! writer, so the copy stays exact: a rotation forgets the inbox once its commit is durable,
//! and a look-up that read the database before that cannot put the old row back, because
//! every forget moves a generation that the look-up's insert must still match.

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};
use std::time::Instant;

use crate::ids::{InboxId, InstanceId};
use crate::store::InboxRow;

/// Inboxes kept at most: a few hundred bytes each, so a few megabytes. Past it a look-up of
/// an inbox not kept goes to the database, as every look-up did before.
const MAX_KEPT: usize = 10_000;

/// An inbox as read, and when: its previous secret's age keeps growing from there.
struct Kept {
    row: InboxRow,
    read_at: Instant,
}

#[derive(Default)]
struct Table {
    /// By instance, then inbox id, so that a look-up borrows both ids.
    by_instance: HashMap<InstanceId, HashMap<InboxId, Kept>>,
    len: usize,
    generation: u64,
}

/// The kept inboxes of one SQLite store.
#[derive(Default)]
pub(super) struct KeptInboxes {
    table: RwLock<Table>,
}

impl KeptInboxes {
    /// The inbox `id` of `instance` if it is kept, with its previous secret's age brought up
    /// to now; else the generation to hand to [`keep`](Self::keep) after reading it.
    pub(super) fn get(&self, instance: &InstanceId, id: &InboxId) -> Result<InboxRow, u64> {
        let table = self.table.read().unwrap_or_else(PoisonError::into_inner);
        let Some(kept) = table.by_instance.get(instance).and_then(|ids| ids.get(id)) else {
            return Err(table.generation);
        };
        let mut row = kept.row.clone();
        if let Some(previous) = &mut row.previous {
            previous.age += kept.read_at.elapsed();
        }
        Ok(row)
    }

    /// Keeps `row`, read from the database at `read_at` in `generation`, unless an inbox was
    /// forgotten since: then the row may be older than the change that forgot it.
    pub(super) fn keep(
        &self,
        instance: &InstanceId,
        row: &InboxRow,
        generation: u64,
        read_at: Instant,
    ) {
        let mut table = self.table.write().unwrap_or_else(PoisonError::into_inner);
        if table.generation != generation || table.len >= MAX_KEPT {
            return;
        }
        let kept = Kept {
            row: row.clone(),
            read_at,
        };
        let ids = table.by_instance.entry(instance.clone()).or_default();
        if ids.insert(row.id.clone(), kept).is_none() {
            table.len += 1;
        }
    }

    /// Forgets the inbox `id` of `instance`, once a change of it is committed.
    pub(super) fn forget(&self, instance: &InstanceId, id: &InboxId) {
        let mut table = self.table.write().unwrap_or_else(PoisonError::into_inner);
        table.generation += 1;
        let removed = table
            .by_instance
            .get_mut(instance)
            .and_then(|ids| ids.remove(id));
        if removed.is_some() {
            table.len -= 1;
        }
    }
}

#[cfg(test)]
mod tests;
