//! Counting exactly without serializing: the ledger, and the per-thread stripes its counters
//! (and the service's shared state) are split into, so that no cache line is written by
//! every request.

pub(crate) mod ledger;
pub(crate) mod stripe;
pub(crate) mod striped_arc;
