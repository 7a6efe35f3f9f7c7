//! What a store does, declared once: [`Operations`] and the six groups it is made of, one a
//! table family (instances and digests, inboxes, deliveries, refusals, replay keys,
//! catch-up). The SQLite and the PostgreSQL backends each implement every group in a file of
//! the same name (`sqlite/inboxes.rs`, `postgres/inboxes.rs`, …), with that group's SQL
//! beside the code that runs it; [`Store`](super::Store) holds one of them, or anything else
//! that implements [`Operations`] (the service's tests wrap a store in one that fails on cue).
//!
//! The traits are object safe (`async_trait` boxes each call's future) so that the handle is
//! one `Arc<dyn Operations>`: docs/reference-service.md says why that and not an enum.
//!
//! Every backend keeps the same promises: one transaction per delivery; a delivery id stored
//! once per inbox, decided by the database's unique key inside that transaction; no database
//! work on the async runtime's threads.

use std::time::SystemTime;

use async_trait::async_trait;
use faultline::webhooks::{ReplayKey, Seen};

use crate::ids::{DigestId, InboxId, InstanceId};

use super::catchup::{AskState, CatchUpRow, PassEnd};
use super::{
    Claim, Commit, InboxRow, Ingested, InstanceRow, KnownInbox, NewInbox, RefusedDelivery,
    RefusedDeliveryRow, Stats, StoreError, StoredCommit,
};

/// Everything a store does: the six groups, and its own health and durability.
#[async_trait]
pub trait Operations: Instances + Inboxes + Deliveries + Refusals + Replays + CatchUps {
    /// Whether the store answers a trivial query.
    async fn health(&self) -> Result<(), StoreError>;

    /// Why an answer that says stored may not survive a power cut or a crash of the database
    /// server under the store's settings, or `None` when every commit waits for the disk
    /// (and for a PostgreSQL primary's synchronous standbys). `None` too until opened.
    fn not_durable(&self) -> Option<&str>;

    /// Whether the store has been opened (it may still fail, as any database may).
    fn is_open(&self) -> bool {
        true
    }
}

/// Instances, their digests, and an instance's row counts.
#[async_trait]
pub trait Instances: Send + Sync {
    /// Records a new instance with the SHA-256 of its API key.
    async fn create_instance(&self, id: InstanceId, key_hash: Vec<u8>) -> Result<(), StoreError>;

    /// The instance `id`, if it exists.
    async fn instance(&self, id: InstanceId) -> Result<Option<InstanceRow>, StoreError>;

    /// Records a new digest of `instance`.
    async fn create_digest(
        &self,
        instance: InstanceId,
        id: DigestId,
        description: String,
    ) -> Result<(), StoreError>;

    /// Whether `instance` owns the digest `id`.
    async fn digest_exists(&self, instance: InstanceId, id: DigestId) -> Result<bool, StoreError>;

    /// Row counts of `instance`.
    async fn stats(&self, instance: InstanceId) -> Result<Stats, StoreError>;
}

/// Inboxes and their secrets.
#[async_trait]
pub trait Inboxes: Send + Sync {
    /// Records a new inbox.
    async fn create_inbox(&self, inbox: NewInbox) -> Result<(), StoreError>;

    /// The inbox `id` of `instance`, if it exists.
    async fn inbox(
        &self,
        instance: InstanceId,
        id: InboxId,
    ) -> Result<Option<InboxRow>, StoreError>;

    /// Gives the inbox `id` of `digest` in `instance` the secret `secret`, keeping the one it
    /// replaces as the previous secret from now (the database's now); `false` when there is no
    /// such inbox.
    async fn rotate_secret(
        &self,
        instance: InstanceId,
        digest: DigestId,
        id: InboxId,
        secret: String,
    ) -> Result<bool, StoreError>;

    /// Up to `limit` inboxes of every instance, ordered by instance and id: what a node
    /// writes to its file of known inboxes.
    async fn inboxes(&self, limit: u32) -> Result<Vec<KnownInbox>, StoreError>;
}

/// Deliveries and their commits.
#[async_trait]
pub trait Deliveries: Send + Sync {
    /// Stores a delivery and its commits in one transaction, or nothing if the inbox already
    /// has this delivery id ([`Ingested::Duplicate`]) or, under another id, a delivery of
    /// this replay key ([`Ingested::Replayed`]). The key is taken in the same transaction, for
    /// as long as the delivery is kept: a delivery not stored takes no key, and its sender's
    /// retry is stored.
    async fn ingest(
        &self,
        instance: InstanceId,
        inbox: InboxRow,
        delivery: Claim,
        commits: Vec<Commit>,
    ) -> Result<Ingested, StoreError>;

    /// Up to `limit` commits of a digest, newest first, older than `before` (a `seq`) if given.
    async fn commits(
        &self,
        digest: DigestId,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<StoredCommit>, StoreError>;
}

/// The deliveries refused for something their sender must fix, kept for the operator.
#[async_trait]
pub trait Refusals: Send + Sync {
    /// Keeps a refusal of a delivery to the inbox `inbox` of `instance`, pruning the inbox's
    /// oldest beyond `REFUSALS_KEPT_PER_INBOX`; nothing when there is no such inbox. Returns
    /// whether it was kept.
    async fn record_refusal(
        &self,
        instance: InstanceId,
        inbox: InboxId,
        refusal: RefusedDelivery,
    ) -> Result<bool, StoreError>;

    /// Up to `limit` kept refusals of the inbox `inbox` of `instance`, newest first.
    async fn refusals(
        &self,
        instance: InstanceId,
        inbox: InboxId,
        limit: u32,
    ) -> Result<Vec<RefusedDeliveryRow>, StoreError>;
}

/// The library's replay keys (see `store/replays.rs`). Times are kept to the millisecond.
#[async_trait]
pub trait Replays: Send + Sync {
    /// Reserves `key` until `lease`, judged at `now`, and forgets a few keys expired by `now`:
    /// [`Seen::Held`] while a reservation's lease has not ended, [`Seen::Repeat`] while the
    /// key is taken, else [`Seen::First`]. The `ReplayStore` implementation passes the node's
    /// clock; tests pass their own.
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
    async fn reserve_at(
        &self,
        key: ReplayKey,
        lease: SystemTime,
        now: SystemTime,
    ) -> Result<Seen, StoreError>;

    /// Takes `key` until `until`, whatever its row held: its delivery was answered 2xx.
    async fn confirm_at(&self, key: ReplayKey, until: SystemTime) -> Result<(), StoreError>;

    /// Frees `key` if it is still reserved under `lease`: its delivery was answered
    /// otherwise, or not at all.
    async fn release_at(&self, key: ReplayKey, lease: SystemTime) -> Result<(), StoreError>;
}

/// What catch-up keeps per inbox (see `store/catchup.rs`).
#[async_trait]
pub trait CatchUps: Send + Sync {
    /// Gives the inbox of `row` its catch-up, replacing any it had. The cursor is kept when
    /// the hook stays the same (new credentials for it), and starts again for another hook;
    /// a refusal of the old credentials is forgotten.
    async fn set_catchup(&self, row: CatchUpRow) -> Result<(), StoreError>;

    /// The catch-up of the inbox `inbox` of `instance`, if it has one.
    async fn catchup(
        &self,
        instance: InstanceId,
        inbox: InboxId,
    ) -> Result<Option<CatchUpRow>, StoreError>;

    /// Takes the catch-up away from the inbox; whether it had one.
    async fn delete_catchup(
        &self,
        instance: InstanceId,
        inbox: InboxId,
    ) -> Result<bool, StoreError>;

    /// Up to `limit` inboxes' catch-ups, ordered by instance and inbox.
    async fn catchups(&self, limit: u32) -> Result<Vec<CatchUpRow>, StoreError>;

    /// Takes the inbox's lease for `node` for `ttl_ms`, when it is free, expired or already
    /// `node`'s; the inbox's cursor as the lease found it when `node` holds it now, `None`
    /// when another node does. The cursor is read in the statement that takes the lease: one
    /// read before it could be another node's pass behind, and ask GitHub again for what that
    /// pass asked.
    async fn take_lease(
        &self,
        inbox: InboxId,
        node: String,
        ttl_ms: i64,
    ) -> Result<Option<i64>, StoreError>;

    /// Moves the inbox's cursor up to `cursor` (never down) and renews the lease for
    /// `ttl_ms`, only while `node` holds it; whether it did.
    async fn advance_cursor(
        &self,
        inbox: InboxId,
        node: String,
        cursor: i64,
        ttl_ms: i64,
    ) -> Result<bool, StoreError>;

    /// Ends `node`'s pass over the inbox as `end` says and gives the lease back; whether
    /// this call is the one that recorded a refusal (false when one was already recorded, so
    /// that a refusal is reported once).
    async fn end_pass(
        &self,
        inbox: InboxId,
        node: String,
        end: PassEnd,
    ) -> Result<bool, StoreError>;

    /// Gives back every lease `node` holds, at a clean stop, so that another node need not
    /// wait for them to run out; how many it held.
    async fn release_leases(&self, node: String) -> Result<u64, StoreError>;

    /// Whether the inbox holds the delivery `guid`, and how often it was asked for.
    async fn ask_state(&self, inbox: InboxId, guid: String) -> Result<AskState, StoreError>;

    /// Records that a redelivery of `guid` was asked for.
    async fn record_ask(&self, inbox: InboxId, guid: String) -> Result<(), StoreError>;

    /// Forgets the asks whose delivery the inbox now holds, and those older than
    /// `older_than_ms` (GitHub keeps deliveries no longer); how many were stored.
    async fn take_recovered(&self, inbox: InboxId, older_than_ms: i64) -> Result<u64, StoreError>;
}
