//! The synchronization types the lock-free protocols are written against: std's, or loom's
//! when the crate's tests are built with `--cfg loom`, where the models (the `loom_` tests
//! beside each protocol) run every interleaving of a few threads instead of the ones a load
//! test happens to hit.
//!
//! Only what a protocol synchronizes through goes through here. State that is process-wide
//! (`static`s, which loom cannot reset between the runs of a model) or not shared between
//! threads keeps std's types; thread-locals keep std's too, and the stripes, the one protocol
//! built on them, stand in for them under loom (see `stripe/thread.rs`).
//!
//! Each model also runs weakened: the step of its protocol that the model shows to be needed
//! is written with `weakenable!`, whose weakened form exists only under `--cfg loom`, and a
//! second test runs the same model with that `Weakening` switched on and expects loom to
//! find the failure. A normal build compiles the code as written and nothing else.

#[cfg(not(all(test, loom)))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
#[cfg(not(all(test, loom)))]
pub(crate) use std::sync::{Mutex, MutexGuard};

#[cfg(all(test, loom))]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
#[cfg(all(test, loom))]
pub(crate) use loom::sync::{Mutex, MutexGuard};

/// `$strong`, the code as written; under `--cfg loom`, `$weak` while a model runs with the
/// `Weakening` `$name` switched on (`run_weakened`).
#[cfg(all(test, loom))]
macro_rules! weakenable {
    ($name:ident: $strong:expr, weakened: $weak:expr) => {
        if $crate::sync::is_weakened($crate::sync::Weakening::$name) {
            $weak
        } else {
            $strong
        }
    };
}

/// `$strong`: outside the loom models a weakening does not exist.
#[cfg(not(all(test, loom)))]
macro_rules! weakenable {
    ($name:ident: $strong:expr, weakened: $weak:expr) => {
        $strong
    };
}
pub(crate) use weakenable;

/// The steps a model shows to be needed, each named for what its weakened form does.
#[cfg(all(test, loom))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Weakening {
    /// The shared stripe is written as if the thread owned it: a plain load and store.
    SharedStripeOwned,
    /// The add that ends a request is relaxed on a stripe its thread owns (the plain store).
    OwnerStoreRelaxed,
    /// The add that ends a request is relaxed on the shared stripe (the `fetch_add`).
    SharedAddRelaxed,
    /// The read of the finishes is relaxed.
    FinishesReadRelaxed,
    /// The starts are read before the finishes.
    StartsReadFirst,
    /// `Waiters::finished` reads `armed` without its fence.
    NoFenceInFinished,
    /// `Waiters::register` reads the counters without its fence.
    NoFenceInRegister,
    /// A thread's series table hands its counts over and keeps them.
    HandOverKeepsCounts,
    /// The new minute's compare-and-swap is made against that minute, not the one last read.
    SampleComparesWrongMinute,
    /// Flood control's quota is taken with a store in place of its compare-and-swap.
    TakeWithoutCas,
    /// A written event takes the held count with a load and a store in place of `swap`.
    HeldTakenWithoutSwap,
}

#[cfg(all(test, loom))]
thread_local! {
    /// The weakening switched on. Loom runs every thread of a model as a coroutine on the
    /// OS thread of its test, so the test's thread-local is the model's, and tests running
    /// in parallel do not see each other's.
    static WEAKENED: std::cell::Cell<Option<Weakening>> = const { std::cell::Cell::new(None) };
}

/// Whether the model running on this thread weakens `step`.
#[cfg(all(test, loom))]
pub(crate) fn is_weakened(step: Weakening) -> bool {
    WEAKENED.with(|on| on.get() == Some(step))
}

/// Runs `model` with `step` weakened; the test calling it expects the panic loom raises
/// (`#[should_panic]`, naming the failure).
#[cfg(all(test, loom))]
pub(crate) fn run_weakened(step: Weakening, model: impl FnOnce()) {
    /// Switches the weakening off again, even as the model's failure unwinds.
    struct Off;
    impl Drop for Off {
        fn drop(&mut self) {
            WEAKENED.with(|on| on.set(None));
        }
    }
    WEAKENED.with(|on| on.set(Some(step)));
    let _off = Off;
    model();
}
