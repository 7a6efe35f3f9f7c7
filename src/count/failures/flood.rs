//! Flood control without a process-wide lock: one atomic quota per fingerprint and window,
//! reached through a per-thread cache.
//!
//! The quota of a fingerprint is one word: the window it counts (windows are numbered from
//! the ledger's start) and the events written in it. Taking a unit is a compare-and-swap;
//! once the window's units are spent, a failure only *reads* the word, so a flood of one
//! fingerprint from every core shares a read-only cache line instead of a lock. The bound is
//! kept across threads because every thread takes from the same word: at most `per_window`
//! events per fingerprint per window, wherever they come from.
//!
//! Quotas live in a bounded table (least recently seen evicted), taken under its lock only
//! when a thread meets a fingerprint its cache lacks. An evicted quota is flagged so, and
//! caches drop it at their next use; a fingerprint evicted and seen again starts afresh, as
//! one never seen would.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::evict_least_recent;
use crate::panic::lock;
use crate::sync::{weakenable, AtomicBool, AtomicU64, Mutex, Ordering};

/// The fingerprints one thread's cache keeps; past it the cache is emptied and refilled
/// from the shared table. An application has a few dozen fingerprints.
const CACHED_PER_THREAD: usize = 64;

/// Suppressed failures a thread counts on its own before handing them to the fingerprint's
/// shared tally, which the next written event reads: one shared write per this many. Under
/// loom, 2: the model's threads judge three failures each, so that a hand-over falls
/// mid-run, between other threads' judgements, as well as at the end.
const HAND_OVER_EVERY: u64 = if cfg!(all(test, loom)) { 2 } else { 64 };

/// One fingerprint's quota: the window and the events written in it, in one word.
#[derive(Debug, Default)]
pub(super) struct Quota {
    /// `window << WRITTEN_BITS | written`.
    state: AtomicU64,
    /// Suppressed failures handed over by threads and not yet told by an event.
    held: AtomicU64,
    evicted: AtomicBool,
}

/// Bits of the quota word that count the events written; the rest number the window, so
/// window numbers wrap only after 2^47 windows (at one window a millisecond, 4,000 years).
const WRITTEN_BITS: u32 = 16;

/// The most events per window a quota counts: the written count's room.
const MAX_PER_WINDOW: u32 = (1 << WRITTEN_BITS) - 1;

impl Quota {
    /// A quota with nothing written in `window`.
    fn starting(window: u64) -> Self {
        Self {
            state: AtomicU64::new(window << WRITTEN_BITS),
            ..Self::default()
        }
    }

    /// Takes one event of `window`'s quota of `per_window`; false when it is spent.
    ///
    /// A thread that read the clock before another thread moved the quota on to a later
    /// window counts against that later window: a stale window never moves the quota back,
    /// which would let the later window spend its quota twice.
    fn take(&self, window: u64, per_window: u32) -> bool {
        const WINDOW_BITS: u32 = u64::BITS - WRITTEN_BITS;
        let per_window = u64::from(per_window.min(MAX_PER_WINDOW));
        let window = window << WRITTEN_BITS >> WRITTEN_BITS;
        let mut current = self.state.load(Ordering::Relaxed);
        loop {
            let (seen, written) = (current >> WRITTEN_BITS, current & u64::from(MAX_PER_WINDOW));
            // Window numbers wrap; a later window is less than half the range ahead.
            let ahead = window.wrapping_sub(seen) << WRITTEN_BITS >> WRITTEN_BITS;
            let later = ahead != 0 && ahead < 1 << (WINDOW_BITS - 1);
            let next = if later {
                if per_window == 0 {
                    return false;
                }
                window << WRITTEN_BITS | 1
            } else {
                if written >= per_window {
                    return false;
                }
                current + 1
            };
            let taken = weakenable!(
                TakeWithoutCas: self.state.compare_exchange_weak(
                    current,
                    next,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ),
                weakened: {
                    self.state.store(next, Ordering::Relaxed);
                    Ok::<u64, u64>(current)
                }
            );
            match taken {
                Ok(_) => return true,
                Err(actual) => current = actual,
            }
        }
    }
}

/// The shared table of quotas, bounded.
#[derive(Debug, Default)]
pub(super) struct Quotas {
    pub(super) max: usize,
    tick: u64,
    table: FxHashMap<u64, (Arc<Quota>, u64)>,
}

impl Quotas {
    pub(super) fn new(max: usize) -> Self {
        Self {
            max,
            ..Self::default()
        }
    }

    /// The quota of `fingerprint`, made if new (starting in `window`); a full table evicts
    /// the least recently met.
    fn get(&mut self, fingerprint: u64, window: u64) -> Arc<Quota> {
        self.tick += 1;
        let tick = self.tick;
        if let Some((quota, seen)) = self.table.get_mut(&fingerprint) {
            *seen = tick;
            return quota.clone();
        }
        if self.table.len() >= self.max.max(1) {
            if let Some((evicted, _)) = evict_least_recent(&mut self.table, |(_, seen)| *seen) {
                evicted.evicted.store(true, Ordering::Relaxed);
            }
        }
        let quota = Arc::new(Quota::starting(window));
        self.table.insert(fingerprint, (quota.clone(), tick));
        quota
    }

    #[cfg(all(test, not(loom)))]
    pub(super) fn len(&self) -> usize {
        self.table.len()
    }
}

/// What flood control decided for one failure.
pub(crate) enum Verdict {
    /// Write the event; this many were suppressed since one was last written.
    Write {
        suppressed_since: u64,
    },
    Suppress,
}

/// One thread's cache of quotas, with the failures it suppressed and has not handed over.
#[derive(Debug, Default)]
pub(super) struct CachedQuotas {
    entries: FxHashMap<u64, Cached>,
}

#[derive(Debug)]
struct Cached {
    quota: Arc<Quota>,
    suppressed: u64,
}

impl CachedQuotas {
    /// Decides one failure of `fingerprint` in `window`. `shared` is locked only when the
    /// cache lacks the fingerprint. Inlined into the reporter's judging, its one caller: out
    /// of line it costs a failure about 20 instructions more (BENCHMARKS.md, "Fifth round").
    #[inline]
    pub(super) fn judge(
        &mut self,
        fingerprint: u64,
        window: u64,
        per_window: u32,
        shared: &Mutex<Quotas>,
    ) -> Verdict {
        // One lookup in the usual case: the fingerprint is cached and its quota alive.
        let usable = self
            .entries
            .get(&fingerprint)
            .is_some_and(|c| !c.quota.evicted.load(Ordering::Relaxed));
        if !usable {
            self.refill(fingerprint, window, shared);
        }
        let cached = self.entries.get_mut(&fingerprint).expect("refilled above");
        if cached.quota.take(window, per_window) {
            let held = &cached.quota.held;
            let handed = weakenable!(
                HeldTakenWithoutSwap: held.swap(0, Ordering::Relaxed),
                weakened: {
                    let handed = held.load(Ordering::Relaxed);
                    held.store(0, Ordering::Relaxed);
                    handed
                }
            );
            let suppressed_since = std::mem::take(&mut cached.suppressed) + handed;
            return Verdict::Write { suppressed_since };
        }
        cached.suppressed += 1;
        if cached.suppressed >= HAND_OVER_EVERY {
            let suppressed = std::mem::take(&mut cached.suppressed);
            cached.quota.held.fetch_add(suppressed, Ordering::Relaxed);
        }
        Verdict::Suppress
    }

    /// Caches the quota of `fingerprint` from `shared`, in place of an evicted one.
    fn refill(&mut self, fingerprint: u64, window: u64, shared: &Mutex<Quotas>) {
        self.entries.remove(&fingerprint);
        if self.entries.len() >= CACHED_PER_THREAD {
            self.hand_over_all();
        }
        let quota = lock(shared).get(fingerprint, window);
        let cached = Cached {
            quota,
            suppressed: 0,
        };
        self.entries.insert(fingerprint, cached);
    }

    /// Hands every suppressed count to its quota and empties the cache.
    pub(super) fn hand_over_all(&mut self) {
        for (_, cached) in self.entries.drain() {
            if cached.suppressed > 0 {
                cached
                    .quota
                    .held
                    .fetch_add(cached.suppressed, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, loom))]
mod loom_models {
    use loom::sync::Arc;

    use super::*;

    /// Failures one thread judges, by the window its clock read: one thread moves to the
    /// second window before the other, which then judges with a stale window.
    const WINDOWS: [[u64; 3]; 2] = [[1, 1, 2], [1, 2, 2]];

    /// Two threads judge three failures each of one fingerprint, one event per window, across
    /// a window change: exactly one event per window is written whatever the interleaving (a
    /// stale window counts against the later one, never moves the quota back), and every
    /// failure not written is told by an event or held for the next one, through hand-overs
    /// mid-run (every [`HAND_OVER_EVERY`] suppressed) and at the end.
    #[test]
    fn loom_flood_control_writes_per_window_and_tells_every_suppressed_failure() {
        two_threads_across_a_window_change();
    }

    /// `Quota::take` writes its word with a store in place of the compare-and-swap: both
    /// threads may take the first window's one unit.
    #[test]
    #[should_panic(expected = "one event in each of the two windows")]
    fn loom_flood_control_weakened_take_without_cas() {
        crate::sync::run_weakened(
            crate::sync::Weakening::TakeWithoutCas,
            two_threads_across_a_window_change,
        );
    }

    /// A written event takes the held count with a load and a store in place of `swap`: a
    /// hand-over by the other thread between the two is lost.
    #[test]
    #[should_panic(expected = "every suppressed failure told or held")]
    fn loom_flood_control_weakened_held_taken_without_swap() {
        crate::sync::run_weakened(
            crate::sync::Weakening::HeldTakenWithoutSwap,
            two_threads_across_a_window_change,
        );
    }

    fn two_threads_across_a_window_change() {
        loom::model(|| {
            let shared = Arc::new(Mutex::new(Quotas::new(4)));
            let threads: Vec<_> = WINDOWS
                .into_iter()
                .map(|windows| {
                    let shared = shared.clone();
                    loom::thread::spawn(move || {
                        let mut cache = CachedQuotas::default();
                        let (mut written, mut told) = (0, 0);
                        for window in windows {
                            if let Verdict::Write { suppressed_since } =
                                cache.judge(42, window, 1, &shared)
                            {
                                written += 1;
                                told += suppressed_since;
                            }
                        }
                        // What is left below the interval, as at a read.
                        cache.hand_over_all();
                        (written, told)
                    })
                })
                .collect();
            let (mut written, mut told) = (0, 0);
            for thread in threads {
                let (w, t) = thread.join().unwrap();
                written += w;
                told += t;
            }
            assert_eq!(written, 2, "one event in each of the two windows");
            let quotas = lock(&shared);
            let held = quotas.table[&42].0.held.load(Ordering::Relaxed);
            assert_eq!(
                told + held,
                6 - written,
                "every suppressed failure told or held"
            );
        });
    }
}
