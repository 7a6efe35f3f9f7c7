//! What a layer notes in its thread while it calls or polls its inner service, for the
//! layers and the code inside it: whether a layer of a ledger already counts the request,
//! the route template and the failure a layer passing it through leaves for the one that
//! counts it, and what an outer layer's note had waiting while an inner one's is on.

use std::cell::Cell;
use std::sync::Arc;

use crate::error::{restore_waiting, take_waiting, WaitingFault};
use crate::request::{
    note_nested_route, restore_nested_route, take_nested_route, CountingFor, InternedRoute,
    COUNTING,
};
use crate::summary::Summary;

/// Whether a layer of the ledger `ledger` already counts the request being called here.
pub(crate) fn counted_by(ledger: usize) -> bool {
    // `COUNTING` is a `const` cell without a destructor: reachable in every thread-local
    // destructor. Were it not, no note means that nothing counts the request yet.
    COUNTING
        .try_with(Cell::get)
        .is_ok_and(|note| note.ledger() == ledger)
}

/// Whether a fault layer (of another ledger: one of the same ledger passes the request
/// through) is calling or polling the service this thread runs now: the only reader an
/// answer's rendered mark can have. A layer between the two that polled the inner future on
/// a task of its own would hide the outer one; that one then renders the answer again, and
/// counts it, as any failure it meets.
pub(crate) fn polled_by_a_fault_layer() -> bool {
    COUNTING
        .try_with(Cell::get)
        .is_ok_and(|note| note.ledger() != 0)
}

/// Tells the layer that counts the request being called here the route template a layer
/// passing it through saw, if it is interned.
pub(crate) fn passing_through(route: Option<InternedRoute>) {
    if let Some(route) = route {
        note_nested_route(route);
    }
}

/// A failure a passing-through layer met, for the layer that counts the request to answer,
/// report and count: the response that carries it has no body of its own.
#[derive(Clone, Debug)]
pub(crate) struct PassedFailure(pub(crate) Arc<Summary>);

/// What an outer layer's note had waiting in the thread's slots while an inner layer's note
/// is on: a route template, a handler's fault.
pub(super) struct Kept {
    route: Option<InternedRoute>,
    fault: Option<WaitingFault>,
}

impl Kept {
    /// Out of line: only nested layers of different ledgers with something waiting come here.
    #[inline(never)]
    pub(super) fn take(outer: CountingFor) -> Option<Kept> {
        let route = outer.has_nested_route().then(take_nested_route).flatten();
        let fault = outer.has_waiting_fault().then(take_waiting).flatten();
        (route.is_some() || fault.is_some()).then_some(Kept { route, fault })
    }

    pub(super) fn restore(self) {
        if let Some(route) = self.route {
            restore_nested_route(route);
        }
        if let Some(fault) = self.fault {
            restore_waiting(fault);
        }
    }
}
