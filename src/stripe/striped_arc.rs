//! A counted pointer whose count is striped: one handle per stripe onto one value, so that
//! threads on different stripes clone and drop handles without writing a shared line.
//!
//! An `Arc` cloned for every request by every core has one reference count that the cores
//! hand each other, a ceiling on the whole process. Here the value is behind one `Arc`, held
//! by one handle per [`stripe`], each alone on its cache lines; a
//! thread clones the handle of its own stripe ([`StripedArc::here`]), so the count it writes
//! is its stripe's.
//!
//! The set of handles ([`Handles`]) is what the owners hold: while it lives, every clone goes
//! to the calling thread's handle. Once it is gone, the handles still held keep the value
//! alive and clone themselves, which is correct, only shared again.

use std::ops::Deref;
use std::sync::{Arc, OnceLock, Weak};

use crossbeam_utils::CachePadded;

use crate::stripe;

/// One stripe's handle onto a value shared by every stripe, alone on its cache lines (its
/// padding makes the `Arc` around it take lines of its own, counts included).
#[derive(Debug)]
pub(crate) struct StripedArc<T> {
    hub: CachePadded<Arc<Hub<T>>>,
}

/// The value, and the way back to every handle from any of them.
#[derive(Debug)]
struct Hub<T> {
    value: T,
    /// The handles, by stripe; weak, since each handle holds the hub.
    handles: OnceLock<Box<[Weak<StripedArc<T>>]>>,
}

/// Every handle of one value, by stripe: what the value's owners hold.
pub(crate) type Handles<T> = Arc<[Arc<StripedArc<T>>]>;

impl<T> StripedArc<T> {
    /// Shares `value` through one handle per stripe.
    pub(crate) fn handles(value: T) -> Handles<T> {
        let hub = Arc::new(Hub {
            value,
            handles: OnceLock::new(),
        });
        let handles: Handles<T> = (0..stripe::count())
            .map(|_| {
                Arc::new(Self {
                    hub: CachePadded::new(hub.clone()),
                })
            })
            .collect();
        let weak = handles.iter().map(Arc::downgrade).collect();
        hub.handles.set(weak).expect("handles are made once");
        handles
    }

    /// The handle of the calling thread's stripe, counted once more; this one if the handles are
    /// gone.
    pub(crate) fn here(self: &Arc<Self>) -> Arc<Self> {
        self.hub
            .handles
            .get()
            .and_then(|handles| handles[stripe::this_thread().index].upgrade())
            .unwrap_or_else(|| self.clone())
    }
}

impl<T> Deref for StripedArc<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.hub.value
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn each_thread_clones_its_own_handle_onto_one_value() {
        let handles = StripedArc::handles(String::from("shared"));
        assert_eq!(handles.len(), stripe::count());
        assert!(std::mem::align_of::<StripedArc<String>>() >= 64);
        let mine = handles[stripe::this_thread().index].clone();
        // From any handle, a thread gets the handle of its own stripe, onto the same value.
        for handle in handles.iter() {
            assert!(Arc::ptr_eq(&handle.here(), &mine));
            assert!(std::ptr::eq::<String>(&***handle, &**mine));
        }
        let theirs = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let here = mine.here();
                    (stripe::this_thread().index, Arc::as_ptr(&here) as usize)
                })
                .join()
                .unwrap()
        });
        assert_eq!(theirs.1, Arc::as_ptr(&handles[theirs.0]) as usize);
    }

    #[test]
    fn held_handles_outlive_the_set_and_keep_the_value() {
        let handles = StripedArc::handles(vec![1, 2, 3]);
        let first = handles[0].clone();
        let here = first.here();
        drop((handles, here));
        // Only a clone is left: it still works, on its own handle.
        assert!(Arc::ptr_eq(&first.here(), &first));
        assert_eq!(**first.here(), [1, 2, 3]);
        assert_eq!(Arc::strong_count(&first), 1);
    }
}
