//! Striped request counters: each thread adds to its own stripe's cells, a read sums every
//! stripe. Exact at quiescence, and no cache line is written by every request.

use crate::count::stripe::ThreadStripe;
use crate::outcome::Outcome;
use crate::sync::{AtomicU64, Ordering};

const OUTCOMES: usize = Outcome::ALL.len();

/// One stripe's cells.
#[derive(Debug, Default)]
pub(super) struct Counts {
    started: AtomicU64,
    outcomes: [AtomicU64; OUTCOMES],
    reported: AtomicU64,
    suppressed: AtomicU64,
}

/// Every stripe's cells added up.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Totals {
    pub(super) started: u64,
    pub(super) outcomes: [u64; OUTCOMES],
    pub(super) reported: u64,
    pub(super) suppressed: u64,
}

// Each add goes to the calling thread's stripe (`here`), as a plain store when the thread
// owns it. Relaxed is enough throughout: each cell is exact on its own, and a read taken at
// quiescence happens after every add through whatever synchronized with it (a join, the
// response a client read).
impl Counts {
    pub(super) fn start(&self, here: ThreadStripe) {
        here.add(&self.started);
    }

    pub(super) fn finish(&self, here: ThreadStripe, outcome: Outcome) {
        here.add(&self.outcomes[outcome.index()]);
    }

    pub(super) fn reported(&self, here: ThreadStripe) {
        here.add(&self.reported);
    }

    pub(super) fn suppressed(&self, here: ThreadStripe) {
        here.add(&self.suppressed);
    }
}

impl Totals {
    /// Sums `stripes`. Outcomes are read before `started`, so that a request finishing during
    /// the read is more likely counted as started than as finished and not started; in flight
    /// is derived from the two and floored at zero.
    pub(super) fn sum<'a>(stripes: impl Iterator<Item = &'a Counts> + Clone) -> Self {
        let mut totals = Self::default();
        for counts in stripes.clone() {
            for (total, cell) in totals.outcomes.iter_mut().zip(&counts.outcomes) {
                *total += cell.load(Ordering::Relaxed);
            }
            totals.reported += counts.reported.load(Ordering::Relaxed);
            totals.suppressed += counts.suppressed.load(Ordering::Relaxed);
        }
        totals.started = stripes.map(|c| c.started.load(Ordering::Relaxed)).sum();
        totals
    }

    pub(super) fn outcome(&self, outcome: Outcome) -> u64 {
        self.outcomes[outcome.index()]
    }

    pub(super) fn in_flight(&self) -> u64 {
        self.started.saturating_sub(self.outcomes.iter().sum())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crossbeam_utils::CachePadded;

    use crate::count::stripe;

    #[test]
    fn stripes_add_up_exactly_from_more_threads_than_cores() {
        let stripes: Vec<CachePadded<Counts>> = (0..stripe::count())
            .map(|_| CachePadded::default())
            .collect();
        std::thread::scope(|scope| {
            for _ in 0..16 {
                scope.spawn(|| {
                    let here = stripe::this_thread();
                    let counts = &stripes[here.index];
                    for n in 0..10_000 {
                        counts.start(here);
                        if n % 3 == 0 {
                            counts.finish(here, Outcome::Rejected);
                            counts.suppressed(here);
                        } else {
                            counts.finish(here, Outcome::Ok);
                        }
                    }
                });
            }
        });
        let totals = Totals::sum(stripes.iter().map(|s| &**s));
        assert_eq!(totals.started, 160_000);
        assert_eq!(totals.outcome(Outcome::Rejected), 16 * 3_334);
        assert_eq!(totals.outcome(Outcome::Ok), 160_000 - 16 * 3_334);
        assert_eq!((totals.suppressed, totals.in_flight()), (16 * 3_334, 0));
    }
}
