//! [`lock`]: the one way faultline takes its locks, whatever panicked while one was held.

use std::sync::PoisonError;

use crate::sync::{Mutex, MutexGuard};

/// Locks `mutex`, even if a thread panicked while holding it: faultline's tables hold counts
/// and bounded text, every update of which leaves them usable, and a request must never fail
/// because another one panicked.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
