//! The marks a response carries in its extensions for a fault layer to find: a handler's
//! fault to render ([`FaultMarker::Fault`]), or an answer a fault layer rendered already, so
//! that a fault layer outside it counts it under the same outcome and code and passes it on,
//! instead of rendering it again.
//!
//! A handler's fault made into a response while a fault layer calls or polls the handler, on
//! the thread doing so (nearly always), does not go into the extensions: it waits in a slot of
//! the thread ([`leave_for_layer`]), and the layer takes it into the request's record when the
//! call or poll returns, with the status it was made with. Inserted into the extensions, it
//! allocated their map, its table and the boxed marker, and hashed its type twice (the
//! ledger bench's handled row: BENCHMARKS.md, "Fifth round"). The layer renders the waiting
//! fault for the response only when the response's status is the fault's: a layer in between
//! that answered with another status answered for itself. Nothing marks the response made of
//! the fault: a handler that throws it away and returns another response of the same status
//! has the fault rendered for that one (`tests/handler_fault.rs`, docs/design.md).
//!
//! An answer that replaced a handler's fault is marked by overwriting the fault's marker in
//! place ([`FaultMarker::Rendered`]). Every other answer (a rejection, a service error, a
//! panic) has a code that follows from its outcome and status, so it is marked with a
//! zero-sized value of one type per outcome: a zero-sized value in the response extensions
//! costs no allocation of its own, where a marker with data costs one more (the extensions'
//! map and its table are allocated either way).

use std::cell::RefCell;
use std::sync::Arc;

use http::{Extensions, StatusCode};

use crate::error::{codes, Fault};
use crate::outcome::Outcome;
use crate::request::note_waiting_fault;

/// A handler's fault waiting for the layer, with the status of the response made of it.
pub(crate) type WaitingFault = (Arc<dyn Fault>, StatusCode);

thread_local! {
    /// The fault made into a response during the call or poll under way, until the layer
    /// that counts the request takes it.
    static WAITING: RefCell<Option<WaitingFault>> = const { RefCell::new(None) };
}

/// Leaves `fault`, made into a response with `status`, for the layer calling or polling the
/// code that made it. Given back when no layer does so on this thread (the code runs outside
/// a `FaultLayer`, or on a task of its own): it then travels in the response's extensions.
/// A second fault in one call or poll replaces the first: the later response is the one
/// more likely returned.
pub(crate) fn leave_for_layer(
    fault: Arc<dyn Fault>,
    status: StatusCode,
) -> Result<(), Arc<dyn Fault>> {
    if !note_waiting_fault() {
        return Err(fault);
    }
    let mut fault = Some((fault, status));
    // A slot gone (a thread-local destructor) or in use leaves the fault here, for the
    // extensions; the layer then finds the slot empty.
    let _ = WAITING.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            *slot = fault.take();
        }
    });
    match fault {
        Some((fault, _)) => Err(fault),
        None => Ok(()),
    }
}

/// The fault left during the call or poll that just returned, for the layer whose note says
/// so.
pub(crate) fn take_waiting() -> Option<WaitingFault> {
    WAITING
        .try_with(|slot| slot.try_borrow_mut().ok()?.take())
        .ok()
        .flatten()
}

/// Puts a fault taken aside back in its slot, for the note it was left for.
pub(crate) fn restore_waiting(fault: WaitingFault) {
    let _ = WAITING.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            *slot = Some(fault);
        }
    });
}

/// What faultline leaves in the response extensions for a fault layer to find.
#[derive(Clone)]
pub(crate) enum FaultMarker {
    /// A handler's error, for the layer to render.
    Fault(Arc<dyn Fault>),
    /// An answer a fault layer rendered already: a layer outside it counts it under the same
    /// outcome and code, and passes it on untouched.
    Rendered {
        outcome: Outcome,
        code: &'static str,
    },
}

/// The mark of a rendered rejection: its code is the status's.
#[derive(Clone, Copy)]
struct RenderedRejection;

/// The mark of a rendered service error: its code follows from the status
/// ([`codes::SERVICE_ERRORS`]).
#[derive(Clone, Copy)]
struct RenderedServiceError;

/// The mark of a rendered panic: a 500 with the panic code.
#[derive(Clone, Copy)]
struct RenderedPanic;

/// Marks `extensions` as holding an answer rendered for a failure of `outcome` and `code`
/// with `status`.
pub(crate) fn mark(
    extensions: &mut Extensions,
    outcome: Outcome,
    status: StatusCode,
    code: &'static str,
) {
    if let Some(marker) = extensions.get_mut::<FaultMarker>() {
        *marker = FaultMarker::Rendered { outcome, code };
        return;
    }
    if derived_code(outcome, status) != Some(code) {
        extensions.insert(FaultMarker::Rendered { outcome, code });
        return;
    }
    match outcome {
        Outcome::Rejected => {
            extensions.insert(RenderedRejection);
        }
        Outcome::ServiceError => {
            extensions.insert(RenderedServiceError);
        }
        _ => {
            extensions.insert(RenderedPanic);
        }
    }
}

/// The outcome and code of an answer marked with a zero-sized mark, if it is one. Looked for
/// only on an error status, after the fault marker.
pub(crate) fn marked(
    extensions: &Extensions,
    status: StatusCode,
) -> Option<(Outcome, &'static str)> {
    let outcome = if extensions.get::<RenderedRejection>().is_some() {
        Outcome::Rejected
    } else if extensions.get::<RenderedServiceError>().is_some() {
        Outcome::ServiceError
    } else if extensions.get::<RenderedPanic>().is_some() {
        Outcome::Panicked
    } else {
        return None;
    };
    // A layer in between may have changed the status: the code then follows the new one.
    let code = derived_code(outcome, status).unwrap_or_else(|| codes::for_status(status));
    Some((outcome, code))
}

/// The code of an answer of `outcome` with `status` that came without a fault, when it
/// follows from them.
fn derived_code(outcome: Outcome, status: StatusCode) -> Option<&'static str> {
    match outcome {
        Outcome::Rejected => Some(codes::for_status(status)),
        Outcome::ServiceError => codes::for_service_error(status),
        Outcome::Panicked if status == StatusCode::INTERNAL_SERVER_ERROR => Some(codes::PANIC),
        _ => None,
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn every_mark_reads_back_as_the_outcome_and_code_it_was_made_with() {
        let cases = [
            (
                Outcome::Rejected,
                StatusCode::NOT_FOUND,
                codes::for_status(StatusCode::NOT_FOUND),
            ),
            (
                Outcome::ServiceError,
                StatusCode::GATEWAY_TIMEOUT,
                codes::TIMEOUT,
            ),
            (
                Outcome::ServiceError,
                StatusCode::SERVICE_UNAVAILABLE,
                codes::OVERLOADED,
            ),
            (
                Outcome::ServiceError,
                StatusCode::INTERNAL_SERVER_ERROR,
                codes::SERVICE_ERROR,
            ),
            (
                Outcome::Panicked,
                StatusCode::INTERNAL_SERVER_ERROR,
                codes::PANIC,
            ),
        ];
        for (outcome, status, code) in cases {
            let mut extensions = Extensions::new();
            mark(&mut extensions, outcome, status, code);
            assert!(
                extensions.get::<FaultMarker>().is_none(),
                "{outcome:?} {status}"
            );
            assert_eq!(marked(&extensions, status), Some((outcome, code)));
        }
        // A code that does not follow from the outcome and status keeps a marker with data.
        let mut extensions = Extensions::new();
        mark(
            &mut extensions,
            Outcome::Handled,
            StatusCode::UNPROCESSABLE_ENTITY,
            "unsupported-event",
        );
        assert_eq!(marked(&extensions, StatusCode::UNPROCESSABLE_ENTITY), None);
        assert!(matches!(
            extensions.get::<FaultMarker>(),
            Some(FaultMarker::Rendered {
                outcome: Outcome::Handled,
                code: "unsupported-event"
            })
        ));
        assert_eq!(marked(&Extensions::new(), StatusCode::NOT_FOUND), None);
    }
}
