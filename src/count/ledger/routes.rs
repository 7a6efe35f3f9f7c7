//! Requests per route template and outcome, counted on the thread's stripe.
//!
//! Each interned route template has a process-wide index ([`RouteKey::Interned`]); each
//! ledger gives the templates it meets a slot of its own, up to its cap, the first time it
//! meets them (under a lock, once per template and ledger). From then on, counting a request
//! reads the slot from a table no request writes and adds one to a cell of the thread's own
//! stripe: no lock, no allocation, no shared write. Past the cap, templates share the
//! `~overflow` slot; requests that matched no route have the `~unmatched` slot.

// The slot table is a number published once under a lock, read on its own: std's. The
// cells are written through a stripe, so they take the `sync` facade's type, as the
// stripes' other counters do.
use std::sync::atomic::AtomicU16;

use crate::sync::{AtomicU64, Mutex, Ordering};

use crate::count::stripe::ThreadStripe;
use crate::outcome::{Outcome, OVERFLOW_LABEL, UNMATCHED_ROUTE};
use crate::panic::lock;
use crate::request::{InternedRoute, RouteKey, MAX_INTERNED_ROUTES};

const OUTCOMES: usize = Outcome::ALL.len();

/// The slot of requests that matched no route.
const UNMATCHED_SLOT: u16 = 0;
/// The slot of routes past the cap, and of templates past the interning cap.
const OVERFLOW_SLOT: u16 = 1;
/// The first slot of a named route.
const FIRST_ROUTE_SLOT: u16 = 2;
/// In [`RouteSlots::by_index`]: this ledger has not met the template yet.
const UNASSIGNED: u16 = u16::MAX;

/// One ledger's slots: which template each holds, and the slot of each interned template.
#[derive(Debug)]
pub(super) struct RouteSlots {
    /// By interned index: the slot, or [`UNASSIGNED`]. Written once per template.
    by_index: Box<[AtomicU16]>,
    /// The templates holding the named slots, in slot order from [`FIRST_ROUTE_SLOT`].
    names: Mutex<Vec<&'static str>>,
    max: usize,
}

/// A route's requests by outcome, from a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RouteRequests {
    /// The route template; `~unmatched` for requests that matched no route, `~overflow` for
    /// routes past the cap.
    pub route: String,
    /// Requests by outcome, in the order of [`Outcome::ALL`].
    pub outcomes: [u64; OUTCOMES],
}

impl RouteRequests {
    /// The requests of this route that ended in `outcome`.
    pub fn outcome(&self, outcome: Outcome) -> u64 {
        self.outcomes[outcome.index()]
    }

    /// Requests of this route that reached an outcome.
    pub fn finished(&self) -> u64 {
        self.outcomes.iter().sum()
    }
}

impl RouteSlots {
    pub(super) fn new(max: usize) -> Self {
        let max = max.min(MAX_INTERNED_ROUTES);
        Self {
            by_index: (0..MAX_INTERNED_ROUTES)
                .map(|_| AtomicU16::new(UNASSIGNED))
                .collect(),
            names: Mutex::new(Vec::with_capacity(max)),
            max,
        }
    }

    /// Slots in a stripe's block: the two reserved ones and one per route under the cap.
    pub(super) fn slots(&self) -> usize {
        usize::from(FIRST_ROUTE_SLOT) + self.max
    }

    /// The slot `key` counts in, given one the first time this ledger meets its template.
    pub(super) fn slot(&self, key: RouteKey) -> u16 {
        let route = match key {
            RouteKey::Unmatched => return UNMATCHED_SLOT,
            RouteKey::Uninterned => return OVERFLOW_SLOT,
            RouteKey::Interned(route) => route,
        };
        // Relaxed: the slot is a number whose meaning (the name) is only read under the lock.
        match self.by_index[usize::from(route.index)].load(Ordering::Relaxed) {
            UNASSIGNED => self.assign(route),
            slot => slot,
        }
    }

    #[cold]
    fn assign(&self, route: InternedRoute) -> u16 {
        let index = usize::from(route.index);
        let mut names = lock(&self.names);
        let current = self.by_index[index].load(Ordering::Relaxed);
        if current != UNASSIGNED {
            return current;
        }
        let slot = if names.len() < self.max {
            names.push(route.text);
            FIRST_ROUTE_SLOT + (names.len() - 1) as u16
        } else {
            OVERFLOW_SLOT
        };
        self.by_index[index].store(slot, Ordering::Relaxed);
        slot
    }

    /// The routes with a request counted, from the sums of every stripe's block; named routes
    /// sorted by template, then `~unmatched`, then `~overflow`.
    pub(super) fn collect<'a>(
        &self,
        blocks: impl Iterator<Item = &'a RouteCounts>,
    ) -> Vec<RouteRequests> {
        let mut sums = vec![[0u64; OUTCOMES]; self.slots()];
        for block in blocks {
            for (sum, cells) in sums.iter_mut().zip(block.0.chunks_exact(OUTCOMES)) {
                for (total, cell) in sum.iter_mut().zip(cells) {
                    *total += cell.load(Ordering::Relaxed);
                }
            }
        }
        let names = lock(&self.names).clone();
        let name = |slot: usize| match slot {
            0 => UNMATCHED_ROUTE,
            1 => OVERFLOW_LABEL,
            n => names[n - usize::from(FIRST_ROUTE_SLOT)],
        };
        let mut routes: Vec<RouteRequests> = sums
            .into_iter()
            .enumerate()
            .filter(|(_, outcomes)| outcomes.iter().any(|&n| n > 0))
            .map(|(slot, outcomes)| RouteRequests {
                route: name(slot).to_owned(),
                outcomes,
            })
            .collect();
        let rank = |r: &RouteRequests| match r.route.as_str() {
            UNMATCHED_ROUTE => 1,
            OVERFLOW_LABEL => 2,
            _ => 0,
        };
        routes.sort_by(|a, b| rank(a).cmp(&rank(b)).then_with(|| a.route.cmp(&b.route)));
        routes
    }
}

/// One stripe's cells: one per route slot and outcome, allocated with the stripe.
#[derive(Debug)]
pub(super) struct RouteCounts(Box<[AtomicU64]>);

impl RouteCounts {
    pub(super) fn new(slots: usize) -> Self {
        Self((0..slots * OUTCOMES).map(|_| AtomicU64::new(0)).collect())
    }

    /// Relaxed, unlike the outcome's own add: the request's end is the outcome's release, and
    /// no reader concludes from a route's cells what is in flight; they are exact at
    /// quiescence, and the budget's samples need no more.
    pub(super) fn add(&self, here: ThreadStripe, route: u16, outcome: Outcome) {
        here.add(&self.0[usize::from(route) * OUTCOMES + outcome.index()]);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::config::LedgerLimits;
    use crate::count::ledger::Ledger;

    fn route(text: &'static str, index: u16) -> RouteKey {
        RouteKey::Interned(InternedRoute { text, index })
    }

    #[test]
    fn routes_past_the_cap_share_overflow_and_per_outcome_sums_match_the_totals() {
        let ledger = Ledger::with_limits(LedgerLimits {
            max_routes: 2,
            ..LedgerLimits::default()
        });
        let count = |key: RouteKey, outcome: Outcome, n: usize| {
            for _ in 0..n {
                ledger.start();
                ledger.finish(outcome, key);
            }
        };
        // Indices are process-wide, slots per ledger: the first two met get the slots.
        count(route("/b", 900), Outcome::Ok, 5);
        count(route("/a", 7), Outcome::Handled, 2);
        count(route("/c", 3), Outcome::Ok, 4);
        count(route("/d", 4000), Outcome::Panicked, 1);
        count(RouteKey::Uninterned, Outcome::Rejected, 1);
        count(RouteKey::Unmatched, Outcome::Rejected, 3);
        count(route("/b", 900), Outcome::Cancelled, 1);
        let snapshot = ledger.snapshot();
        let got: Vec<(&str, [u64; OUTCOMES])> = snapshot
            .routes
            .iter()
            .map(|r| (r.route.as_str(), r.outcomes))
            .collect();
        assert_eq!(
            got,
            [
                ("/a", [0, 2, 0, 0, 0, 0, 0]),
                ("/b", [5, 0, 0, 0, 0, 0, 1]),
                (UNMATCHED_ROUTE, [0, 0, 3, 0, 0, 0, 0]),
                (OVERFLOW_LABEL, [4, 0, 1, 0, 1, 0, 0]),
            ]
        );
        for &outcome in Outcome::ALL {
            let per_route: u64 = snapshot.routes.iter().map(|r| r.outcome(outcome)).sum();
            assert_eq!(per_route, snapshot.outcome(outcome), "{outcome:?}");
        }
    }

    #[test]
    fn a_template_met_by_many_threads_at_once_takes_one_slot() {
        let slots = RouteSlots::new(4);
        let blocks: Vec<RouteCounts> = (0..crate::count::stripe::count())
            .map(|_| RouteCounts::new(slots.slots()))
            .collect();
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    let stripe = crate::count::stripe::this_thread();
                    for n in 0..1_000u16 {
                        let key = route(["/x", "/y"][usize::from(n % 2)], 10 + n % 2);
                        blocks[stripe.index].add(stripe, slots.slot(key), Outcome::Ok);
                    }
                });
            }
        });
        let routes = slots.collect(blocks.iter());
        assert_eq!(lock(&slots.names).len(), 2);
        let got: Vec<(&str, u64)> = routes.iter().map(|r| (&*r.route, r.finished())).collect();
        assert_eq!(got, [("/x", 4_000), ("/y", 4_000)]);
    }
}
