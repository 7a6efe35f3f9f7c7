//! Requests per route template and outcome, counted on the thread's stripe; a handler's
//! answers apart by whose mistake they were: a 4xx the client's, any other status the server's.
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

use http::StatusCode;

use crate::sync::{AtomicU64, Mutex, Ordering};

use crate::limits::MAX_INTERNED_ROUTES;
use crate::outcome::{Outcome, OVERFLOW_LABEL, UNMATCHED_ROUTE};
use crate::panic::lock;
use crate::request::{InternedRoute, RouteKey};
use crate::stripe::ThreadStripe;

const OUTCOMES: usize = Outcome::ALL.len();
/// The cells of one route slot: one per outcome, then the handled answers with a 4xx status,
/// which the `handled` cell then leaves out. One cell more per route, and still one add per
/// request.
const COLUMNS: usize = OUTCOMES + 1;
/// The column of the handled answers with a 4xx status.
const HANDLED_4XX: usize = OUTCOMES;

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
    /// Of the `handled` requests, those answered with a 4xx status: the handler judged the
    /// request the client's mistake. The rest of `handled` (a 5xx, or a status outside
    /// 400–599, which `#[derive(Fault)]` refuses) is the server's own failure.
    pub handled_4xx: u64,
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

    /// The `handled` requests answered with anything but a 4xx: the handler's own failures.
    pub fn handled_5xx(&self) -> u64 {
        self.outcome(Outcome::Handled) - self.handled_4xx
    }
}

/// The cell of its route slot a finished request counts in.
#[derive(Debug, Clone, Copy)]
pub(super) struct Column(usize);

impl Column {
    /// The column of `outcome`. `Handled` counts there as the server's failure: a request
    /// whose status is not known counts against the service, not for it.
    pub(super) fn of(outcome: Outcome) -> Self {
        Self(outcome.index())
    }

    /// The column of a request that ended in `outcome` with `status`: a handled 4xx apart.
    pub(super) fn answered(outcome: Outcome, status: StatusCode) -> Self {
        if outcome == Outcome::Handled && status.is_client_error() {
            Self(HANDLED_4XX)
        } else {
            Self::of(outcome)
        }
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
        let mut sums = vec![[0u64; COLUMNS]; self.slots()];
        for block in blocks {
            for (sum, cells) in sums.iter_mut().zip(block.0.chunks_exact(COLUMNS)) {
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
            .filter(|(_, columns)| columns.iter().any(|&n| n > 0))
            .map(|(slot, columns)| {
                let mut outcomes = [0; OUTCOMES];
                outcomes.copy_from_slice(&columns[..OUTCOMES]);
                outcomes[Outcome::Handled.index()] += columns[HANDLED_4XX];
                RouteRequests {
                    route: name(slot).to_owned(),
                    outcomes,
                    handled_4xx: columns[HANDLED_4XX],
                }
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

/// One stripe's cells: one per route slot and [`Column`], allocated with the stripe.
#[derive(Debug)]
pub(super) struct RouteCounts(Box<[AtomicU64]>);

impl RouteCounts {
    pub(super) fn new(slots: usize) -> Self {
        Self((0..slots * COLUMNS).map(|_| AtomicU64::new(0)).collect())
    }

    /// Relaxed, unlike the outcome's own add: the request's end is the outcome's release, and
    /// no reader concludes from a route's cells what is in flight; they are exact at
    /// quiescence, and the budget's samples need no more.
    pub(super) fn add(&self, here: ThreadStripe, route: u16, column: Column) {
        here.add(&self.0[usize::from(route) * COLUMNS + column.0]);
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
        let count = |key: RouteKey, outcome: Outcome, status: u16, n: usize| {
            let status = StatusCode::from_u16(status).unwrap();
            for _ in 0..n {
                ledger.start();
                ledger.finish_answered(outcome, status, key);
            }
        };
        // Indices are process-wide, slots per ledger: the first two met get the slots.
        count(route("/b", 900), Outcome::Ok, 200, 5);
        count(route("/a", 7), Outcome::Handled, 503, 2);
        count(route("/a", 7), Outcome::Handled, 401, 3);
        count(route("/c", 3), Outcome::Ok, 200, 4);
        count(route("/c", 3), Outcome::Handled, 422, 6);
        count(route("/d", 4000), Outcome::Panicked, 500, 1);
        count(RouteKey::Uninterned, Outcome::Rejected, 413, 1);
        count(RouteKey::Unmatched, Outcome::Rejected, 404, 3);
        count(route("/b", 900), Outcome::Cancelled, 499, 1);
        // A status not known counts as the server's.
        ledger.start();
        ledger.finish(Outcome::Handled, route("/b", 900));
        let snapshot = ledger.snapshot();
        let got: Vec<(&str, [u64; OUTCOMES], u64)> = snapshot
            .routes
            .iter()
            .map(|r| (r.route.as_str(), r.outcomes, r.handled_4xx))
            .collect();
        assert_eq!(
            got,
            [
                ("/a", [0, 5, 0, 0, 0, 0, 0], 3),
                ("/b", [5, 1, 0, 0, 0, 0, 1], 0),
                (UNMATCHED_ROUTE, [0, 0, 3, 0, 0, 0, 0], 0),
                (OVERFLOW_LABEL, [4, 6, 1, 0, 1, 0, 0], 6),
            ]
        );
        let handled_5xx: Vec<u64> = snapshot.routes.iter().map(|r| r.handled_5xx()).collect();
        assert_eq!(handled_5xx, [2, 1, 0, 0]);
        for &outcome in Outcome::ALL {
            let per_route: u64 = snapshot.routes.iter().map(|r| r.outcome(outcome)).sum();
            assert_eq!(per_route, snapshot.outcome(outcome), "{outcome:?}");
        }
    }

    #[test]
    fn a_template_met_by_many_threads_at_once_takes_one_slot() {
        let slots = RouteSlots::new(4);
        let blocks: Vec<RouteCounts> = (0..crate::stripe::count())
            .map(|_| RouteCounts::new(slots.slots()))
            .collect();
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    let stripe = crate::stripe::this_thread();
                    for n in 0..1_000u16 {
                        let key = route(["/x", "/y"][usize::from(n % 2)], 10 + n % 2);
                        blocks[stripe.index].add(stripe, slots.slot(key), Column::of(Outcome::Ok));
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
