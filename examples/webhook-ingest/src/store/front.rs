//! A store in front of another ([`Front`]): each operation first asks it which store to run
//! on, and it may answer an error instead, or do something first. The store that opens in
//! the background is one (it answers [`StoreError::Connecting`] until its database is
//! reached); the service's tests make their faulty stores so. Every [`Front`] is a whole
//! store: the operations are passed on here, once for every kind of front.

use std::sync::OnceLock;
use std::time::SystemTime;

use async_trait::async_trait;
use faultline::webhooks::{ReplayKey, Seen};

use crate::ids::{DigestId, InboxId, InstanceId};

use super::catchup::{AskState, CatchUpRow, PassEnd};
use super::operations::{CatchUps, Deliveries, Inboxes, Instances, Operations, Refusals, Replays};
use super::{
    Claim, Commit, InboxRow, Ingested, InstanceRow, KnownInbox, NewInbox, RefusedDelivery,
    RefusedDeliveryRow, Stats, StoreError, StoredCommit,
};

/// A store in front of another.
#[async_trait]
pub trait Front: Send + Sync {
    /// The store the operation `operation` (named as its method is) runs on now, or the error
    /// it fails with instead.
    async fn through(&self, operation: &'static str) -> Result<&dyn Operations, StoreError>;

    /// The store behind, for what does not wait: whether it is open and durable.
    fn behind(&self) -> Option<&dyn Operations>;
}

/// Implements a group of operations for every [`Front`] by passing each on to the store
/// `through` gives.
macro_rules! pass_on {
    ($group:ident { $(fn $op:ident($($arg:ident: $ty:ty),*) -> $out:ty;)* }) => {
        #[async_trait]
        impl<T: Front> $group for T {
            $(async fn $op(&self, $($arg: $ty),*) -> Result<$out, StoreError> {
                self.through(stringify!($op)).await?.$op($($arg),*).await
            })*
        }
    };
}

#[async_trait]
impl<T: Front> Operations for T {
    async fn health(&self) -> Result<(), StoreError> {
        self.through("health").await?.health().await
    }

    fn not_durable(&self) -> Option<&str> {
        self.behind()?.not_durable()
    }

    fn is_open(&self) -> bool {
        self.behind().is_some_and(|store| store.is_open())
    }
}

pass_on!(Instances {
    fn create_instance(id: InstanceId, key_hash: Vec<u8>) -> ();
    fn instance(id: InstanceId) -> Option<InstanceRow>;
    fn create_digest(instance: InstanceId, id: DigestId, description: String) -> ();
    fn digest_exists(instance: InstanceId, id: DigestId) -> bool;
    fn stats(instance: InstanceId) -> Stats;
});

pass_on!(Inboxes {
    fn create_inbox(inbox: NewInbox) -> ();
    fn inbox(instance: InstanceId, id: InboxId) -> Option<InboxRow>;
    fn rotate_secret(instance: InstanceId, digest: DigestId, id: InboxId, secret: String) -> bool;
    fn inboxes(limit: u32) -> Vec<KnownInbox>;
});

pass_on!(Deliveries {
    fn ingest(instance: InstanceId, inbox: InboxRow, delivery: Claim, commits: Vec<Commit>)
        -> Ingested;
    fn commits(digest: DigestId, before: Option<i64>, limit: u32) -> Vec<StoredCommit>;
});

pass_on!(Refusals {
    fn record_refusal(instance: InstanceId, inbox: InboxId, refusal: RefusedDelivery) -> bool;
    fn refusals(instance: InstanceId, inbox: InboxId, limit: u32) -> Vec<RefusedDeliveryRow>;
});

pass_on!(Replays {
    fn reserve_at(key: ReplayKey, lease: SystemTime, now: SystemTime) -> Seen;
    fn confirm_at(key: ReplayKey, until: SystemTime) -> ();
    fn release_at(key: ReplayKey, lease: SystemTime) -> ();
});

pass_on!(CatchUps {
    fn set_catchup(row: CatchUpRow) -> ();
    fn catchup(instance: InstanceId, inbox: InboxId) -> Option<CatchUpRow>;
    fn delete_catchup(instance: InstanceId, inbox: InboxId) -> bool;
    fn catchups(limit: u32) -> Vec<CatchUpRow>;
    fn take_lease(inbox: InboxId, node: String, ttl_ms: i64) -> Option<i64>;
    fn advance_cursor(inbox: InboxId, node: String, cursor: i64, ttl_ms: i64) -> bool;
    fn end_pass(inbox: InboxId, node: String, end: PassEnd) -> bool;
    fn release_leases(node: String) -> u64;
    fn ask_state(inbox: InboxId, guid: String) -> AskState;
    fn record_ask(inbox: InboxId, guid: String) -> ();
    fn take_recovered(inbox: InboxId, older_than_ms: i64) -> u64;
});

/// A store whose database is opened in the background: [`StoreError::Connecting`] until
/// then.
#[derive(Default)]
pub(super) struct Deferred(pub(super) OnceLock<Box<dyn Operations>>);

#[async_trait]
impl Front for Deferred {
    async fn through(&self, _: &'static str) -> Result<&dyn Operations, StoreError> {
        self.behind().ok_or(StoreError::Connecting)
    }

    fn behind(&self) -> Option<&dyn Operations> {
        self.0.get().map(|store| &**store)
    }
}
