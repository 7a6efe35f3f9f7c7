//! Stripes: per-thread slots of shared state, so that requests on different cores write
//! different cache lines.
//!
//! Each thread takes a number the first time it asks, in the order threads first ask; its
//! stripe is that number modulo the stripe count. A runtime's worker threads start together
//! and so get neighbouring numbers, hence different stripes while there are no more workers
//! than stripes. Two threads on one stripe stay correct (every write is atomic or locked);
//! they only share a cache line again.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Stripes per core: room for the threads besides the runtime's workers (a blocking pool, a
/// test's own threads) before two workers share one.
const STRIPES_PER_CORE: usize = 2;

/// The fewest stripes, whatever the machine says of itself.
const MIN_STRIPES: usize = 4;

/// The most stripes: 128 cores' worth. Past it threads share stripes, which stays exact.
const MAX_STRIPES: usize = 256;

/// A value alone on its cache lines: 128 bytes, since x86's adjacent-line prefetcher pulls
/// lines in pairs and some ARM cores have 128-byte lines.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct Padded<T>(pub(crate) T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// How many stripes striped state has in this process: a power of two.
pub(crate) fn count() -> usize {
    static COUNT: OnceLock<usize> = OnceLock::new();
    *COUNT.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        (cores * STRIPES_PER_CORE)
            .clamp(MIN_STRIPES, MAX_STRIPES)
            .next_power_of_two()
    })
}

/// The stripe of the calling thread, below [`count`].
pub(crate) fn this_thread() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static NUMBER: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    NUMBER.with(|n| *n) & (count() - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_keeps_its_stripe_and_threads_spread_over_them() {
        assert!(count().is_power_of_two() && count() >= MIN_STRIPES);
        assert_eq!(this_thread(), this_thread());
        // Threads take consecutive numbers, so (other tests' threads aside) many threads
        // cover several stripes.
        let stripes: std::collections::BTreeSet<usize> = (0..2 * count())
            .map(|_| std::thread::spawn(this_thread).join().unwrap())
            .collect();
        assert!(stripes.len() > 1, "{stripes:?}");
        assert!(stripes.iter().all(|&s| s < count()));
        assert_eq!(std::mem::align_of::<Padded<u8>>(), 128);
    }
}
