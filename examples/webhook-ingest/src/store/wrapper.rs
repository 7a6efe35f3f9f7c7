//! A store in front of another: the seam through which something stands between the service
//! and its database without the production store knowing of it.
//!
//! A [`StoreBackend`] holds an inner [`Store`] and, by default, passes every operation on
//! once [`StoreBackend::before`] lets it; it may override any operation. The integration tests
//! build one that fails every call while switched, to see what providers see when the
//! database is down; nothing of it lives in the store's own types.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use std::sync::atomic::{AtomicBool, Ordering};
//! use std::sync::Arc;
//!
//! use webhook_ingest::store::{Store, StoreBackend, StoreError};
//!
//! /// Fails every operation while `down` is set.
//! struct Outage {
//!     inner: Store,
//!     down: Arc<AtomicBool>,
//! }
//!
//! impl StoreBackend for Outage {
//!     fn inner(&self) -> &Store {
//!         &self.inner
//!     }
//!
//!     fn before(&self, _operation: &'static str) -> Result<(), StoreError> {
//!         if self.down.load(Ordering::Relaxed) {
//!             Err(StoreError::Connecting)
//!         } else {
//!             Ok(())
//!         }
//!     }
//! }
//!
//! let down = Arc::new(AtomicBool::new(false));
//! let inner = Store::open(":memory:").await.unwrap();
//! let store = Store::wrapping(Outage { inner, down: down.clone() });
//! assert!(store.health().await.is_ok());
//! down.store(true, Ordering::Relaxed);
//! assert!(matches!(store.health().await, Err(StoreError::Connecting)));
//! # }
//! ```

use std::future::Future;
use std::pin::Pin;

use super::{
    Commit, InboxRow, Ingested, InstanceRow, KnownInbox, NewInbox, RefusedDelivery,
    RefusedDeliveryRow, Stats, Store, StoreError, StoredCommit,
};

/// What a wrapped operation answers: a boxed future, since a trait object cannot name its
/// future's type. Only wrapped stores pay for the box; SQLite and PostgreSQL do not.
pub type Answer<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Passes `$call` on to the inner store once `before` lets it.
macro_rules! pass_on {
    ($self:ident, $name:literal, $method:ident ( $($arg:expr),* )) => {
        Box::pin(async move {
            $self.before($name)?;
            $self.inner().$method($($arg),*).await
        })
    };
}

/// A store that wraps another: every operation goes through `before`, then to
/// [`StoreBackend::inner`], unless the wrapper overrides it. Served with [`Store::wrapping`].
pub trait StoreBackend: Send + Sync + 'static {
    /// The store the operations are passed on to.
    fn inner(&self) -> &Store;

    /// Runs before each operation, named as the [`Store`] method is; an error answers the
    /// operation in place of the inner store.
    fn before(&self, operation: &'static str) -> Result<(), StoreError> {
        let _ = operation;
        Ok(())
    }

    /// The kind the start-up log shows: the inner store's.
    fn kind(&self) -> &'static str {
        self.inner().kind()
    }

    /// [`Store::health`].
    fn health(&self) -> Answer<'_, ()> {
        pass_on!(self, "health", health())
    }

    /// [`Store::create_instance`].
    fn create_instance(&self, id: String, key_hash: Vec<u8>) -> Answer<'_, ()> {
        pass_on!(self, "create_instance", create_instance(id, key_hash))
    }

    /// [`Store::instance`].
    fn instance(&self, id: String) -> Answer<'_, Option<InstanceRow>> {
        pass_on!(self, "instance", instance(id))
    }

    /// [`Store::create_digest`].
    fn create_digest(&self, instance: String, id: String, description: String) -> Answer<'_, ()> {
        pass_on!(
            self,
            "create_digest",
            create_digest(instance, id, description)
        )
    }

    /// [`Store::digest_exists`].
    fn digest_exists(&self, instance: String, id: String) -> Answer<'_, bool> {
        pass_on!(self, "digest_exists", digest_exists(instance, id))
    }

    /// [`Store::create_inbox`].
    fn create_inbox(&self, inbox: NewInbox) -> Answer<'_, ()> {
        pass_on!(self, "create_inbox", create_inbox(inbox))
    }

    /// [`Store::inbox`].
    fn inbox(&self, instance: String, id: String) -> Answer<'_, Option<InboxRow>> {
        pass_on!(self, "inbox", inbox(instance, id))
    }

    /// [`Store::rotate_secret`].
    fn rotate_secret(
        &self,
        instance: String,
        digest: String,
        id: String,
        secret: String,
    ) -> Answer<'_, bool> {
        pass_on!(
            self,
            "rotate_secret",
            rotate_secret(instance, digest, id, secret)
        )
    }

    /// [`Store::ingest`].
    fn ingest(
        &self,
        instance: String,
        inbox: InboxRow,
        delivery_id: String,
        commits: Vec<Commit>,
    ) -> Answer<'_, Ingested> {
        pass_on!(
            self,
            "ingest",
            ingest(instance, inbox, delivery_id, commits)
        )
    }

    /// [`Store::record_refusal`].
    fn record_refusal(
        &self,
        instance: String,
        inbox: String,
        refusal: RefusedDelivery,
    ) -> Answer<'_, bool> {
        pass_on!(
            self,
            "record_refusal",
            record_refusal(instance, inbox, refusal)
        )
    }

    /// [`Store::refusals`].
    fn refusals(
        &self,
        instance: String,
        inbox: String,
        limit: u32,
    ) -> Answer<'_, Vec<RefusedDeliveryRow>> {
        pass_on!(self, "refusals", refusals(instance, inbox, limit))
    }

    /// [`Store::commits`].
    fn commits(
        &self,
        digest: String,
        before: Option<i64>,
        limit: u32,
    ) -> Answer<'_, Vec<StoredCommit>> {
        pass_on!(self, "commits", commits(digest, before, limit))
    }

    /// [`Store::stats`].
    fn stats(&self, instance: String) -> Answer<'_, Stats> {
        pass_on!(self, "stats", stats(instance))
    }

    /// [`Store::inboxes`].
    fn inboxes(&self, limit: u32) -> Answer<'_, Vec<KnownInbox>> {
        pass_on!(self, "inboxes", inboxes(limit))
    }
}
