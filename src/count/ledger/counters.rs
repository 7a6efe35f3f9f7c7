//! Striped request counters: each thread adds to its own stripe's cells, a read sums every
//! stripe. Exact at quiescence, and no cache line is written by every request.

use crate::outcome::Outcome;
use crate::stripe::ThreadStripe;
use crate::sync::{weakenable, AtomicU64, Ordering};

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
// owns it. The finish is a release and its read an acquire, so that a read which sees a
// request's finish sees its start, on whichever threads the two ran: the start happened
// before the finish (the request was handed from one thread to the other through a
// synchronizing queue, a task's wake-up), and the read of the starts comes after the acquire.
// Starts, reports and suppressions are relaxed: each cell is exact on its own, and nothing is
// read through them.
impl Counts {
    pub(super) fn start(&self, here: ThreadStripe) {
        here.add(&self.started);
    }

    pub(super) fn finish(&self, here: ThreadStripe, outcome: Outcome) {
        here.add_release(&self.outcomes[outcome.index()]);
    }

    pub(super) fn reported(&self, here: ThreadStripe) {
        here.add(&self.reported);
    }

    pub(super) fn suppressed(&self, here: ThreadStripe) {
        here.add(&self.suppressed);
    }
}

impl Totals {
    /// Sums `stripes`: the finishes first, with acquire loads, then the starts. Every finish
    /// read then has its start read, so `finished <= started` in every sum, taken at any
    /// moment on any memory model (`loom_a_read_never_sees_a_finish_without_its_start`);
    /// a request that starts or finishes during the read may be missing from either total.
    pub(super) fn sum<'a>(stripes: impl Iterator<Item = &'a Counts> + Clone) -> Self {
        let mut totals = Self::default();
        let starts_first = weakenable!(StartsReadFirst: false, weakened: true);
        if starts_first {
            totals.started = Self::starts(stripes.clone());
        }
        let finish_read =
            weakenable!(FinishesReadRelaxed: Ordering::Acquire, weakened: Ordering::Relaxed);
        for counts in stripes.clone() {
            for (total, cell) in totals.outcomes.iter_mut().zip(&counts.outcomes) {
                *total += cell.load(finish_read);
            }
            totals.reported += counts.reported.load(Ordering::Relaxed);
            totals.suppressed += counts.suppressed.load(Ordering::Relaxed);
        }
        if !starts_first {
            totals.started = Self::starts(stripes);
        }
        totals
    }

    fn starts<'a>(stripes: impl Iterator<Item = &'a Counts>) -> u64 {
        stripes.map(|c| c.started.load(Ordering::Relaxed)).sum()
    }

    pub(super) fn outcome(&self, outcome: Outcome) -> u64 {
        self.outcomes[outcome.index()]
    }

    pub(super) fn finished(&self) -> u64 {
        self.outcomes.iter().sum()
    }

    /// Started and not finished; 0 if more finished than started, which only a bug can make
    /// (`Snapshot::is_consistent` says so).
    pub(super) fn in_flight(&self) -> u64 {
        self.started.saturating_sub(self.finished())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crossbeam_utils::CachePadded;

    use crate::stripe;

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
