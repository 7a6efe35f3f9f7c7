//! What the layer tells about a request's answer to code inside it that asked: an
//! [`AnswerHook`] attached to the request ([`attach`]) is told the status of the answer's
//! head when it leaves the layer, and is dropped without being told when there is no head
//! (a panic rendered as a 500 drops it before that answer leaves, a cancelled request with
//! the request). The webhook intake's replay reservation is the one user: confirmed on a
//! 2xx, released on anything else.
//!
//! An extractor runs inside the layer's poll of its inner service, on the thread polling
//! it, but cannot reach the layer's record of the request: the record is the layer's, and
//! the request was moved into the extractor. So the thread's note of the request being
//! polled ([`COUNTING`]) carries a flag, and the hook waits in a slot of the thread until
//! the layer, when the poll returns, takes it into the request's record. A request with no
//! hook pays one more test of a flag already loaded.

use std::cell::{Cell, RefCell};

use http::StatusCode;

use crate::request::InternedRoute;

/// Code inside a request that learns how it was answered.
pub(crate) trait AnswerHook: Send + std::fmt::Debug {
    /// The answer's head leaves the layer with `status`. Not called when no head leaves:
    /// the hook is then dropped.
    fn answered(self: Box<Self>, status: StatusCode);
}

/// What the thread knows of the request a layer is calling or polling its inner service for.
#[derive(Clone, Copy)]
pub(crate) struct CountingFor {
    /// The ledger (by `Ledger::id`) that counts it; 0 for none.
    pub(crate) ledger: usize,
    /// The route template a layer passing it through saw: a router nested as a service
    /// (`Router::nest_service`) matches the route the outer router could not name.
    pub(crate) nested_route: Option<InternedRoute>,
    /// Whether an [`AnswerHook`] waits in [`ATTACHED`] for the layer to take.
    pub(crate) attached: bool,
}

impl CountingFor {
    /// The note of a request counted by `ledger`, nothing seen yet.
    pub(crate) const fn new(ledger: usize) -> Self {
        Self {
            ledger,
            nested_route: None,
            attached: false,
        }
    }
}

thread_local! {
    /// The request whose inner service this thread is calling or polling, if any.
    pub(crate) static COUNTING: Cell<CountingFor> = const { Cell::new(CountingFor::new(0)) };

    /// The hook attached during the poll under way, until the layer takes it.
    static ATTACHED: RefCell<Option<Box<dyn AnswerHook>>> = const { RefCell::new(None) };
}

/// Attaches `hook` to the request this thread is polling for a layer, which tells it the
/// answer's status. Given back when no layer is polling here (the code runs outside a
/// `FaultLayer`, or on a task of its own): nothing would tell it.
#[cfg_attr(not(feature = "webhooks"), allow(dead_code))]
pub(crate) fn attach(hook: Box<dyn AnswerHook>) -> Result<(), Box<dyn AnswerHook>> {
    let Ok(note) = COUNTING.try_with(Cell::get) else {
        return Err(hook);
    };
    if note.ledger == 0 {
        return Err(hook);
    }
    let stored = ATTACHED.try_with(|slot| match slot.try_borrow_mut() {
        Ok(mut slot) => {
            // A second hook in one poll replaces none: the first stays, the second goes back.
            if slot.is_some() {
                return Err(hook);
            }
            *slot = Some(hook);
            Ok(())
        }
        Err(_) => Err(hook),
    });
    match stored {
        Ok(Ok(())) => {
            let _ = COUNTING.try_with(|counting| {
                counting.set(CountingFor {
                    attached: true,
                    ..note
                })
            });
            Ok(())
        }
        Ok(Err(hook)) => Err(hook),
        Err(_) => Err(Box::new(Unreachable)),
    }
}

/// What [`attach`] gives back when the thread is being torn down and its slot is gone: the
/// hook itself was dropped with the closure that held it.
#[derive(Debug)]
#[cfg_attr(not(feature = "webhooks"), allow(dead_code))]
struct Unreachable;

impl AnswerHook for Unreachable {
    fn answered(self: Box<Self>, _: StatusCode) {}
}

/// The hook attached during the poll that just returned, for the layer whose note said so.
pub(crate) fn take_attached() -> Option<Box<dyn AnswerHook>> {
    ATTACHED
        .try_with(|slot| slot.try_borrow_mut().ok()?.take())
        .ok()
        .flatten()
}
