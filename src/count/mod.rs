//! Counting exactly without serializing: the ledger, whose counters are split into the
//! per-thread stripes (`crate::stripe`) so that no cache line is written by every request,
//! and what it keeps of failures.

mod failures;
mod ledger;

pub use failures::Group;
pub(crate) use ledger::ToReport;
#[cfg(all(test, not(loom)))]
pub(crate) use ledger::TALLY_PANICS;
pub use ledger::{
    Counter, ExportCounters, Ledger, LedgerBuilder, RouteBudget, RouteRequests, Series, Snapshot,
    UnreadBodies,
};
