//! The synchronization types the lock-free protocols are written against: std's, or loom's
//! when the crate's tests are built with `--cfg loom`, where the models (the `loom_` tests
//! beside each protocol) run every interleaving of a few threads instead of the ones a load
//! test happens to hit.
//!
//! Only what a protocol synchronizes through goes through here. State that is process-wide
//! (`static`s, which loom cannot reset between the runs of a model) or not shared between
//! threads keeps std's types; thread-locals keep std's too, and the stripes, the one protocol
//! built on them, stand in for them under loom (see `count/stripe.rs`).

#[cfg(not(all(test, loom)))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
#[cfg(not(all(test, loom)))]
pub(crate) use std::sync::{Mutex, MutexGuard};

#[cfg(all(test, loom))]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
#[cfg(all(test, loom))]
pub(crate) use loom::sync::{Mutex, MutexGuard};
