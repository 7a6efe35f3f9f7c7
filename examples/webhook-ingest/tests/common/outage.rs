//! A store outage on cue: the store's test-only faults, switched by the tests.

use webhook_ingest::store::{Faults, Store};

/// Switches a store down and up again; clones switch the same store.
#[derive(Clone)]
pub struct Outage(Faults);

impl Outage {
    /// A handle on `store` that this outage switches.
    pub fn wrap(store: Store) -> (Store, Outage) {
        let (store, faults) = store.with_faults();
        (store, Outage(faults))
    }

    /// Every store operation fails from now on, as a disk that stopped answering does.
    pub fn begin(&self) {
        self.0.begin_outage();
    }

    /// Store operations reach the store again.
    pub fn end(&self) {
        self.0.end_outage();
    }
}
