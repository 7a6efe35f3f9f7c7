//! A store outage on cue: the wrapper the tests put between the service and its store.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use webhook_ingest::store::{Store, StoreBackend, StoreError};

/// Switches a wrapped store down and up again; clones switch the same store.
#[derive(Clone, Default)]
pub struct Outage(Arc<AtomicBool>);

impl Outage {
    /// `store` behind a wrapper that this outage switches.
    pub fn wrap(store: Store) -> (Store, Outage) {
        let outage = Outage::default();
        let wrapper = Wrapper {
            inner: store,
            down: outage.clone(),
        };
        (Store::wrapping(wrapper), outage)
    }

    /// Every store operation fails from now on, as a disk that stopped answering does.
    pub fn begin(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Store operations reach the store again.
    pub fn end(&self) {
        self.0.store(false, Ordering::SeqCst);
    }

    fn is_down(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

struct Wrapper {
    inner: Store,
    down: Outage,
}

impl StoreBackend for Wrapper {
    fn inner(&self) -> &Store {
        &self.inner
    }

    fn before(&self, _operation: &'static str) -> Result<(), StoreError> {
        if !self.down.is_down() {
            return Ok(());
        }
        // What SQLite answers when its file can no longer be read or written.
        let io_error = rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_IOERR);
        Err(StoreError::Sqlite(rusqlite::Error::SqliteFailure(
            io_error, None,
        )))
    }
}
