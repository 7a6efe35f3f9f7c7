//! Counting exactly without serializing: the ledger, and the per-thread stripes its counters
//! (and the service's shared state) are split into, so that no cache line is written by
//! every request.

mod failures;
mod ledger;
mod stripe;
mod striped_arc;

pub use failures::Group;
pub(crate) use ledger::ToReport;
#[cfg(all(test, not(loom)))]
pub(crate) use ledger::TALLY_PANICS;
pub use ledger::{
    Ledger, LedgerBuilder, RouteBudget, RouteRequests, Series, Snapshot, UnreadBodies,
};
#[cfg(all(test, not(loom)))]
pub(crate) use stripe::this_thread;
pub(crate) use striped_arc::{Handles as StripedHandles, StripedArc};
