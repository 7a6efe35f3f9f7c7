//! Which stripe a thread writes: the registry of stripes, claimed and given back.
//!
//! A thread claims a stripe of its own the first time it asks and gives it back when it
//! exits; while it holds it, it is the stripe's only writer, so a counter there is a plain
//! load and store, exact without a locked instruction (a per-CPU counter's trick, with
//! threads for CPUs). The store carries the add's ordering: a finish is a release store,
//! still a plain `mov` on x86. Threads past the owned stripes share the last one, where every write
//! is atomic. A stripe given back keeps its counts and serves the next thread that claims it:
//! the claim goes through a lock, which orders the old owner's writes before the new one's.
//!
//! Why not `thread_local::ThreadLocal`, which keeps such a registry of thread ids: a request
//! can end in a thread-local's destructor (a runtime kept in one drops its tasks there), and
//! must still be counted. `ThreadLocal::get` called after the crate's own per-thread guard
//! was destroyed takes a new id and then touches that guard, which panics inside a destructor
//! and aborts the process (checked with thread_local 1.1.10: exit status 134). Here an exiting
//! thread writes to the shared stripe instead. The stripe index is also one claim per thread
//! that every ledger and every stripe handle indexes by, where a `ThreadLocal` per ledger would add a
//! lookup and an allocation per thread and ledger. The registry is model-checked under loom
//! (`loom_a_stripe_keeps_its_counts_across_thread_exit_and_reuse`).

#[cfg(not(all(test, loom)))]
use std::cell::Cell;

use crate::panic::lock;
use crate::sync::{weakenable, AtomicU64, Mutex, Ordering};

/// Stripes per core: room for the threads besides the runtime's workers (a blocking pool, a
/// test's own threads) before a thread must share.
const STRIPES_PER_CORE: usize = 4;

/// The fewest stripes, whatever the machine says of itself.
const MIN_STRIPES: usize = 8;

/// The most stripes: 128 cores' worth. Past it threads share, which stays exact.
const MAX_STRIPES: usize = 512;

/// How many stripes striped state has in this process: a power of two. Under loom, two: one
/// to own, give back and claim again, and the shared one.
pub(crate) fn count() -> usize {
    if cfg!(all(test, loom)) {
        return 2;
    }
    static COUNT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *COUNT.get_or_init(|| for_cores(std::thread::available_parallelism().map_or(1, |n| n.get())))
}

/// The stripes of a machine of `cores` cores: [`STRIPES_PER_CORE`] each, within
/// [`MIN_STRIPES`] and [`MAX_STRIPES`], rounded up to a power of two.
fn for_cores(cores: usize) -> usize {
    (cores * STRIPES_PER_CORE)
        .clamp(MIN_STRIPES, MAX_STRIPES)
        .next_power_of_two()
}

/// The stripe every thread without one of its own shares.
fn shared_stripe() -> usize {
    count() - 1
}

/// The stripes given back by threads that exited, and the next never claimed.
type Registry = Mutex<(Vec<usize>, usize)>;

#[cfg(not(all(test, loom)))]
static FREE: Registry = Mutex::new((Vec::new(), 0));

#[cfg(all(test, loom))]
loom::lazy_static! {
    static ref FREE: Registry = Mutex::new((Vec::new(), 0));
}

/// A stripe for the calling thread: one given back, else the next never claimed, else the
/// shared one.
fn claim() -> usize {
    claim_from(&FREE)
}

/// [`claim`] from `registry` (the process's, but for a test's own).
fn claim_from(registry: &Registry) -> usize {
    let mut free = lock(registry);
    let (given_back, next) = &mut *free;
    if let Some(stripe) = given_back.pop() {
        return stripe;
    }
    if *next < shared_stripe() {
        *next += 1;
        return *next - 1;
    }
    shared_stripe()
}

/// Gives back the stripe of a thread that exits, through the registry's lock: the lock
/// orders this thread's last writes there before those of the thread that claims it next.
fn give_back(stripe: usize) {
    give_back_to(&FREE, stripe);
}

/// [`give_back`] to `registry`.
fn give_back_to(registry: &Registry, stripe: usize) {
    if stripe != shared_stripe() {
        lock(registry).0.push(stripe);
    }
}

#[cfg(not(all(test, loom)))]
thread_local! {
    static CLAIM: Claim = Claim(claim());
    /// The claimed stripe, read without the claim's destructor bookkeeping; cleared when the
    /// claim is given back.
    static THREAD_STRIPE: Cell<Option<ThreadStripe>> = const { Cell::new(None) };
}

/// A thread's stripe, given back when the thread exits.
#[cfg(not(all(test, loom)))]
struct Claim(usize);

#[cfg(not(all(test, loom)))]
impl Drop for Claim {
    fn drop(&mut self) {
        // From here on this thread writes to the shared stripe, atomically.
        let _ = THREAD_STRIPE.try_with(|here| here.set(None));
        give_back(self.0);
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
    /// Adds one to `cell`, the calling thread's cell of this stripe, ordered for nothing but
    /// the cell itself: a start, a report.
    pub(crate) fn add(self, cell: &AtomicU64) {
        self.add_ordered(cell, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Adds one to `cell` as a release: a reader whose acquire load sees this add sees
    /// everything that happened before it on any thread, the start of the request it ends
    /// included. On x86 a release store is a plain store, and a `lock xadd` is one either way.
    pub(crate) fn add_release(self, cell: &AtomicU64) {
        self.add_ordered(
            cell,
            weakenable!(OwnerStoreRelaxed: Ordering::Release, weakened: Ordering::Relaxed),
            weakenable!(SharedAddRelaxed: Ordering::Release, weakened: Ordering::Relaxed),
        );
    }

    #[inline(always)]
    fn add_ordered(self, cell: &AtomicU64, owner_store: Ordering, shared_add: Ordering) {
        if self.owned {
            // The only writer: a plain read and write, with no locked instruction. The store
            // itself carries the ordering: a reader synchronizes with the store it reads.
            cell.store(cell.load(Ordering::Relaxed) + 1, owner_store);
        } else {
            cell.fetch_add(1, shared_add);
        }
    }
}

/// The calling thread's stripe. A thread that is exiting (its stripe already given back) writes
/// to the shared stripe.
#[cfg(not(all(test, loom)))]
pub(crate) fn this_thread() -> ThreadStripe {
    // `THREAD_STRIPE` is a `const` cell without a destructor, reachable in every thread-local
    // destructor; `try_with` costs nothing more on it.
    if let Ok(Some(here)) = THREAD_STRIPE.try_with(Cell::get) {
        return here;
    }
    match CLAIM.try_with(|claim| thread_stripe(claim.0)) {
        Ok(claimed) => {
            let _ = THREAD_STRIPE.try_with(|cell| cell.set(Some(claimed)));
            claimed
        }
        Err(_) => thread_stripe(shared_stripe()),
    }
}

/// Under loom, a stand-in for the two thread-locals, whose mock in loom 0.7 breaks in spawned
/// threads (tokio-rs/loom#290): the threads' stripes in a table that loom does not see, as it
/// does not see a thread-local, keyed by the OS thread that runs the model and loom's thread.
/// A model calls [`exit`] where a thread's destructors would run; the claim and the give-back
/// are the real ones, through the registry loom does see.
#[cfg(all(test, loom))]
type LoomThread = (std::thread::ThreadId, loom::thread::ThreadId);

#[cfg(all(test, loom))]
static LOOM_STRIPES: std::sync::Mutex<Vec<(LoomThread, ThreadStripe)>> =
    std::sync::Mutex::new(Vec::new());

#[cfg(all(test, loom))]
fn loom_thread() -> LoomThread {
    (std::thread::current().id(), loom::thread::current().id())
}

/// The calling thread's stripe, claimed on its first call.
#[cfg(all(test, loom))]
pub(crate) fn this_thread() -> ThreadStripe {
    let me = loom_thread();
    let known = |stripes: &[(LoomThread, ThreadStripe)]| {
        stripes.iter().find(|(t, _)| *t == me).map(|s| s.1)
    };
    if let Some(here) = known(&LOOM_STRIPES.lock().unwrap()) {
        return here;
    }
    let claimed = thread_stripe(claim());
    LOOM_STRIPES.lock().unwrap().push((me, claimed));
    claimed
}

/// Runs `f` as a loom model, every thread of which starts with no stripe.
#[cfg(all(test, loom))]
pub(crate) fn model(f: impl Fn() + Sync + Send + 'static) {
    loom::model(move || {
        let os_thread = std::thread::current().id();
        LOOM_STRIPES
            .lock()
            .unwrap()
            .retain(|((t, _), _)| *t != os_thread);
        f();
    });
}

/// What a thread's exit does to its stripe: forgets its stripe and gives it back.
#[cfg(all(test, loom))]
pub(crate) fn exit() {
    let me = loom_thread();
    let mut stripes = LOOM_STRIPES.lock().unwrap();
    if let Some(at) = stripes.iter().position(|(t, _)| *t == me) {
        let (_, here) = stripes.swap_remove(at);
        drop(stripes);
        give_back(here.index);
    }
}

fn thread_stripe(index: usize) -> ThreadStripe {
    ThreadStripe {
        index,
        owned: weakenable!(SharedStripeOwned: index != shared_stripe(), weakened: true),
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_machine_has_four_stripes_a_core_a_power_of_two_within_the_bounds() {
        let cores = [1, 2, 3, 5, 16, 24, 128, 129, 1000];
        let stripes = [8, 8, 16, 32, 64, 128, 512, 512, 512];
        assert_eq!(cores.map(for_cores), stripes);
    }

    #[test]
    fn every_stripe_but_the_shared_one_is_claimed_once_until_given_back() {
        let registry = Registry::default();
        let claimed: Vec<usize> = (0..count() + 2).map(|_| claim_from(&registry)).collect();
        // Every stripe below the shared one, in order, then the shared one for all others.
        let expected: Vec<usize> = (0..shared_stripe()).chain([shared_stripe(); 3]).collect();
        assert_eq!(claimed, expected);
        // A stripe given back is claimed again, the last given back first; the shared one
        // is never given back, so it is never handed out as owned.
        give_back_to(&registry, shared_stripe());
        give_back_to(&registry, 2);
        give_back_to(&registry, 5);
        let again: Vec<usize> = (0..3).map(|_| claim_from(&registry)).collect();
        assert_eq!(again, [5, 2, shared_stripe()]);
    }

    #[test]
    fn a_thread_that_exits_gives_its_stripe_back_for_the_next_thread() {
        // Threads one after another: each finds a stripe another gave back on exit. Were
        // they not given back, no more than `count() - 1` threads in the whole process would
        // ever own one. Other tests' threads may hold stripes meanwhile, so not all own one.
        let threads = 10 * count();
        let owned = (0..threads)
            .filter(|_| std::thread::spawn(|| this_thread().owned).join().unwrap())
            .count();
        assert!(
            owned >= count(),
            "{owned} of {threads} threads owned a stripe"
        );
    }

    #[test]
    fn threads_own_their_stripes_and_counts_stay_exact_past_the_owned_ones() {
        assert!(count().is_power_of_two() && count() >= MIN_STRIPES);
        assert_eq!(this_thread().index, this_thread().index);
        // More live threads than stripes: some own one, the rest share the last.
        let cells: Vec<AtomicU64> = (0..count()).map(|_| AtomicU64::default()).collect();
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

#[cfg(all(test, loom))]
mod loom_models {
    use loom::sync::Arc;

    use super::*;

    /// Three threads, two stripes: one owned, one shared. Whichever way the threads start and
    /// exit, one owns the stripe, gives it back on exit and a later one claims it again with
    /// its counts, while the others share the last stripe; every add is in the sum.
    #[test]
    fn loom_a_stripe_keeps_its_counts_across_thread_exit_and_reuse() {
        stripes_keep_their_counts();
    }

    /// The shared stripe written with a plain load and store, as an owner writes its own: an
    /// add of one sharer is lost.
    #[test]
    #[should_panic(expected = "every add in the sum")]
    fn loom_a_stripe_keeps_its_counts_weakened_shared_stripe_owned() {
        crate::sync::run_weakened(
            crate::sync::Weakening::SharedStripeOwned,
            stripes_keep_their_counts,
        );
    }

    fn stripes_keep_their_counts() {
        model(|| {
            let cells: Arc<[AtomicU64; 2]> = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
            let threads: Vec<_> = (0..3)
                .map(|_| {
                    let cells = cells.clone();
                    loom::thread::spawn(move || {
                        let here = this_thread();
                        here.add(&cells[here.index]);
                        here.add(&cells[here.index]);
                        exit();
                    })
                })
                .collect();
            for thread in threads {
                thread.join().unwrap();
            }
            let total: u64 = cells.iter().map(|c| c.load(Ordering::Relaxed)).sum();
            assert_eq!(total, 6, "every add in the sum");
        });
    }
}
