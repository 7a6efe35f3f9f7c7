//! Store failures on cue, for the service's own tests: compiled only with the `faults`
//! feature, which nothing but its tests turns on (its dev-dependency on itself), so the
//! service a deployment runs has no such switch.
//!
//! [`Store::with_faults`] gives a handle on the same database whose every operation first
//! asks its [`Faults`]: an outage fails them all, as a disk that stopped answering does; a
//! failing operation fails alone, as a store that cannot list its inboxes.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use webhook_ingest::store::{Store, StoreError};
//!
//! let (store, faults) = Store::open(":memory:").await.unwrap().with_faults();
//! assert!(store.health().await.is_ok());
//! faults.begin_outage();
//! assert!(matches!(store.health().await, Err(StoreError::Sqlite(_))));
//! faults.end_outage();
//! faults.fail("inboxes");
//! assert!(store.health().await.is_ok());
//! assert!(matches!(store.inboxes(10).await, Err(StoreError::Connecting)));
//! # }
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::{Store, StoreError};

/// The switches of one faulty handle; clones switch the same one.
#[derive(Clone, Default)]
pub struct Faults(Arc<Switches>);

#[derive(Default)]
struct Switches {
    down: AtomicBool,
    /// Operations, named as the [`Store`] methods are, that fail whatever the outage.
    failing: Mutex<Vec<&'static str>>,
}

impl Faults {
    /// Every operation fails from now on.
    pub fn begin_outage(&self) {
        self.0.down.store(true, Ordering::SeqCst);
    }

    /// Operations reach the store again.
    pub fn end_outage(&self) {
        self.0.down.store(false, Ordering::SeqCst);
    }

    /// The operation `operation` fails from now on, with [`StoreError::Connecting`].
    pub fn fail(&self, operation: &'static str) {
        self.0.failing.lock().unwrap().push(operation);
    }

    /// The error `operation` fails with now, if any.
    fn check(&self, operation: &'static str) -> Result<(), StoreError> {
        if self.0.down.load(Ordering::SeqCst) {
            // What SQLite answers when its file can no longer be read or written.
            let io_error = rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_IOERR);
            return Err(StoreError::Sqlite(rusqlite::Error::SqliteFailure(
                io_error, None,
            )));
        }
        if self.0.failing.lock().unwrap().contains(&operation) {
            return Err(StoreError::Connecting);
        }
        Ok(())
    }
}

/// The faults of a handle, its own and those of the handle it was made from.
pub(super) type Chain = Vec<Faults>;

/// Fails `operation` if any fault of `chain` says so.
pub(super) fn check(chain: &Chain, operation: &'static str) -> Result<(), StoreError> {
    chain.iter().try_for_each(|faults| faults.check(operation))
}

impl Store {
    /// A handle on the same database whose operations first ask the returned [`Faults`],
    /// beside any the handle it is made from asks.
    pub fn with_faults(&self) -> (Store, Faults) {
        let faults = Faults::default();
        let mut store = self.clone();
        store.faults.push(faults.clone());
        (store, faults)
    }
}
