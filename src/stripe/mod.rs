//! Stripes: per-thread slots of shared state, so that requests on different cores write
//! different cache lines. The ledger counts in them; the middleware's shared state is cloned
//! through them.
//!
//! - `thread.rs`: which stripe the calling thread writes ([`this_thread`]), claimed on its
//!   first use and given back when the thread exits, and how many stripes there are
//!   ([`count`]).
//! - `striped_arc.rs`: a counted pointer with one handle per stripe ([`StripedArc`]), so that
//!   threads clone and drop it without writing a shared reference count.

mod striped_arc;
mod thread;

pub(crate) use striped_arc::{Handles as StripedHandles, StripedArc};
pub(crate) use thread::{count, this_thread, ThreadStripe};
#[cfg(all(test, loom))]
pub(crate) use thread::{exit, model};
