//! Catch-up's bugs, planted on purpose to see the checks that must catch them fail: a store in
//! front of catch-up's ([`Plant::wrap_store`], through the service's
//! `catchup::CatchUp::wrap_store`) that changes the answers its loop gets, so that each of the
//! three guards against a second ask is lost in turn. The service's code has no such switch.
//! `tests/catchup.rs` runs the plants in process; the package's `planted_catchup` example
//! (which includes this file by its path) runs them as the binary, for
//! `load-scripts/fleet/catchup.py`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use webhook_ingest::catchup::WrapStore;
use webhook_ingest::ids::{InboxId, InstanceId};
use webhook_ingest::store::catchup::{AskState, CatchUpRow, PassEnd};
use webhook_ingest::store::{CatchUps, StoreError};

/// A bug planted in catch-up, named on the example's command line as clap writes it
/// (`cursor-not-saved`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Plant {
    /// The cursor is never moved: the next pass asks again.
    CursorNotSaved,
    /// Every node works every inbox at once.
    LeaseIgnored,
    /// A failed delivery is asked for even when the store holds it.
    StoredCheckSkipped,
}

impl Plant {
    /// The wrapper that plants this bug in catch-up's store.
    pub fn wrap_store(self) -> WrapStore {
        WrapStore::new(move |inner| {
            Arc::new(Planted {
                inner,
                plant: self,
                cursors: Mutex::default(),
            })
        })
    }
}

/// Catch-up's store with a bug planted: every operation passed on, three answers changed.
struct Planted {
    inner: Arc<dyn CatchUps>,
    plant: Plant,
    /// Each inbox's cursor as the pass began with it: as the round read it, then as the lease
    /// found it.
    cursors: Mutex<HashMap<InboxId, i64>>,
}

impl Planted {
    fn began_at(&self, inbox: &InboxId) -> Option<i64> {
        self.cursors.lock().unwrap().get(inbox).copied()
    }

    fn begins_at(&self, inbox: InboxId, cursor: i64) {
        self.cursors.lock().unwrap().insert(inbox, cursor);
    }
}

#[async_trait]
impl CatchUps for Planted {
    async fn set_catchup(&self, row: CatchUpRow) -> Result<(), StoreError> {
        self.inner.set_catchup(row).await
    }

    async fn catchup(
        &self,
        instance: InstanceId,
        inbox: InboxId,
    ) -> Result<Option<CatchUpRow>, StoreError> {
        self.inner.catchup(instance, inbox).await
    }

    async fn delete_catchup(
        &self,
        instance: InstanceId,
        inbox: InboxId,
    ) -> Result<bool, StoreError> {
        self.inner.delete_catchup(instance, inbox).await
    }

    /// The rows as read, each cursor remembered as the round read it.
    async fn catchups(&self, limit: u32) -> Result<Vec<CatchUpRow>, StoreError> {
        let rows = self.inner.catchups(limit).await?;
        for row in &rows {
            self.begins_at(row.inbox.clone(), row.cursor);
        }
        Ok(rows)
    }

    /// Lease ignored: a lease another node holds is answered as held, with the cursor the
    /// round read.
    async fn take_lease(
        &self,
        inbox: InboxId,
        node: String,
        ttl_ms: i64,
    ) -> Result<Option<i64>, StoreError> {
        let leased = self.inner.take_lease(inbox.clone(), node, ttl_ms).await?;
        let cursor = match leased {
            None if self.plant == Plant::LeaseIgnored => self.began_at(&inbox),
            leased => leased,
        };
        if let Some(cursor) = cursor {
            self.begins_at(inbox, cursor);
        }
        Ok(cursor)
    }

    /// Cursor not saved: the cursor stays where the pass began. Lease ignored: a lease lost
    /// is answered as held.
    async fn advance_cursor(
        &self,
        inbox: InboxId,
        node: String,
        cursor: i64,
        ttl_ms: i64,
    ) -> Result<bool, StoreError> {
        let cursor = match self.plant {
            Plant::CursorNotSaved => self.began_at(&inbox).unwrap_or(cursor),
            _ => cursor,
        };
        let held = self
            .inner
            .advance_cursor(inbox, node, cursor, ttl_ms)
            .await?;
        Ok(held || self.plant == Plant::LeaseIgnored)
    }

    async fn end_pass(
        &self,
        inbox: InboxId,
        node: String,
        end: PassEnd,
    ) -> Result<bool, StoreError> {
        self.inner.end_pass(inbox, node, end).await
    }

    async fn release_leases(&self, node: String) -> Result<u64, StoreError> {
        self.inner.release_leases(node).await
    }

    /// Stored check skipped: no delivery is answered as stored.
    async fn ask_state(&self, inbox: InboxId, guid: String) -> Result<AskState, StoreError> {
        let state = self.inner.ask_state(inbox, guid).await?;
        Ok(AskState {
            stored: state.stored && self.plant != Plant::StoredCheckSkipped,
            ..state
        })
    }

    async fn record_ask(&self, inbox: InboxId, guid: String) -> Result<(), StoreError> {
        self.inner.record_ask(inbox, guid).await
    }

    async fn take_recovered(&self, inbox: InboxId, older_than_ms: i64) -> Result<u64, StoreError> {
        self.inner.take_recovered(inbox, older_than_ms).await
    }
}
