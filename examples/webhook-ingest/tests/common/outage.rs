//! Store failures on cue: a store in front of the real one (a `Front`, which makes it a
//! whole store) that fails every operation while an outage lasts, as a disk that stopped
//! answering does, and the operations named to it whatever the outage, as a store that cannot
//! list its inboxes. The service runs on it as on any store; its own code has no such switch.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use webhook_ingest::store::{Front, Operations, Store, StoreError};

/// Switches a store down and up again; clones switch the same store.
#[derive(Clone, Default)]
pub struct Outage(Arc<Switches>);

#[derive(Default)]
struct Switches {
    down: AtomicBool,
    /// Operations, named as the store's methods are, that fail whatever the outage.
    failing: Mutex<Vec<&'static str>>,
}

impl Outage {
    /// A handle on `store` that this outage switches.
    pub fn wrap(store: Store) -> (Store, Outage) {
        let outage = Outage::default();
        let faulty = store.wrapped(|inner| Faulty {
            inner,
            outage: outage.clone(),
        });
        (faulty, outage)
    }

    /// Every store operation fails from now on, as a disk that stopped answering does.
    pub fn begin(&self) {
        self.0.down.store(true, Ordering::SeqCst);
    }

    /// Store operations reach the store again.
    pub fn end(&self) {
        self.0.down.store(false, Ordering::SeqCst);
    }

    /// The operation `operation` fails from now on, with [`StoreError::Connecting`].
    pub fn fail(&self, operation: &'static str) {
        self.0.failing.lock().unwrap().push(operation);
    }
}

/// The store an [`Outage`] switches.
struct Faulty {
    inner: Store,
    outage: Outage,
}

#[async_trait::async_trait]
impl Front for Faulty {
    async fn through(&self, operation: &'static str) -> Result<&dyn Operations, StoreError> {
        let switches = &self.outage.0;
        if switches.down.load(Ordering::SeqCst) {
            // What SQLite answers when its file can no longer be read or written.
            let io_error = rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_IOERR);
            return Err(StoreError::Sqlite(rusqlite::Error::SqliteFailure(
                io_error, None,
            )));
        }
        if switches.failing.lock().unwrap().contains(&operation) {
            return Err(StoreError::Connecting);
        }
        Ok(&*self.inner)
    }

    fn behind(&self) -> Option<&dyn Operations> {
        Some(&*self.inner)
    }
}
