//! Stripes: per-thread slots of shared state, so that requests on different cores write
//! different cache lines.
//!
//! A thread claims a stripe of its own the first time it asks and gives it back when it
//! exits; while it holds it, it is the stripe's only writer, so a counter there is a plain
//! load and store, exact without a locked instruction (a per-CPU counter's trick, with
//! threads for CPUs). Threads past the owned stripes share the last one, where every write
//! is atomic. A stripe given back keeps its counts and serves the next thread that claims it:
//! the claim goes through a lock, which orders the old owner's writes before the new one's.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::panic::lock;

/// Stripes per core: room for the threads besides the runtime's workers (a blocking pool, a
/// test's own threads) before a thread must share.
const STRIPES_PER_CORE: usize = 4;

/// The fewest stripes, whatever the machine says of itself.
const MIN_STRIPES: usize = 8;

/// The most stripes: 128 cores' worth. Past it threads share, which stays exact.
const MAX_STRIPES: usize = 512;

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

/// The stripe every thread without one of its own shares.
fn shared_stripe() -> usize {
    count() - 1
}

/// The stripes given back by threads that exited, and the next never claimed.
static FREE: Mutex<(Vec<usize>, usize)> = Mutex::new((Vec::new(), 0));

thread_local! {
    static CLAIM: Claim = Claim::new();
    /// The claimed stripe, read without the claim's destructor bookkeeping; cleared when the
    /// claim is given back.
    static THREAD_STRIPE: Cell<Option<ThreadStripe>> = const { Cell::new(None) };
}

/// A thread's stripe, given back when the thread exits.
struct Claim(usize);

impl Claim {
    fn new() -> Self {
        let mut free = lock(&FREE);
        let (given_back, next) = &mut *free;
        if let Some(stripe) = given_back.pop() {
            return Self(stripe);
        }
        if *next < shared_stripe() {
            *next += 1;
            return Self(*next - 1);
        }
        Self(shared_stripe())
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        // From here on this thread writes to the shared stripe, atomically.
        let _ = THREAD_STRIPE.try_with(|here| here.set(None));
        if self.0 != shared_stripe() {
            let mut free = lock(&FREE);
            free.0.push(self.0);
        }
    }
}

/// Where the calling thread writes striped state.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ThreadStripe {
    /// The stripe, below [`count`].
    pub(crate) index: usize,
    /// Whether this thread is the stripe's only writer.
    owned: bool,
}

impl ThreadStripe {
    /// Adds one to `cell`, the calling thread's cell of this stripe.
    pub(crate) fn add(self, cell: &AtomicU64) {
        if self.owned {
            // The only writer: a plain read and write, with no locked instruction.
            cell.store(cell.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        } else {
            cell.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The calling thread's stripe. A thread that is exiting (its stripe already given back) writes
/// to the shared stripe.
pub(crate) fn this_thread() -> ThreadStripe {
    if let Some(here) = THREAD_STRIPE.with(Cell::get) {
        return here;
    }
    match CLAIM.try_with(|claim| thread_stripe(claim.0)) {
        Ok(claimed) => {
            THREAD_STRIPE.with(|cell| cell.set(Some(claimed)));
            claimed
        }
        Err(_) => thread_stripe(shared_stripe()),
    }
}

fn thread_stripe(index: usize) -> ThreadStripe {
    ThreadStripe {
        index,
        owned: index != shared_stripe(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_own_their_stripes_and_counts_stay_exact_past_the_owned_ones() {
        assert!(count().is_power_of_two() && count() >= MIN_STRIPES);
        assert_eq!(this_thread().index, this_thread().index);
        assert_eq!(std::mem::align_of::<Padded<u8>>(), 128);
        // More live threads than stripes: some own one, the rest share the last.
        let cells: Vec<Padded<AtomicU64>> = (0..count()).map(|_| Padded::default()).collect();
        let threads = 2 * count();
        let barrier = std::sync::Barrier::new(threads);
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    barrier.wait();
                    let here = this_thread();
                    for _ in 0..10_000 {
                        here.add(&cells[here.index]);
                    }
                    barrier.wait();
                });
            }
        });
        let total: u64 = cells.iter().map(|c| c.load(Ordering::Relaxed)).sum();
        assert_eq!(total, threads as u64 * 10_000);
        assert!(cells[shared_stripe()].load(Ordering::Relaxed) > 0);
    }
}
