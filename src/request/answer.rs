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
//! hook pays one more test of a flag already loaded. A handler's fault reaches the layer the
//! same way ([`note_waiting_fault`]; its slot is the error module's, which knows the type).

use std::cell::{Cell, RefCell};

use http::StatusCode;

use crate::request::InternedRoute;

/// Code inside a request that learns how it was answered.
pub(crate) trait AnswerHook: Send + std::fmt::Debug {
    /// The answer's head leaves the layer with `status`. Not called when no head leaves:
    /// the hook is then dropped.
    fn answered(self: Box<Self>, status: StatusCode);
}

/// What the thread knows of the request a layer is calling or polling its inner service for,
/// in one word: the ledger that counts it (by `Ledger::id`, the address of its shared state,
/// whose low bits are 0; 0 for none), and in those low bits what code inside left in the
/// thread's slots for the layer to take: a route template in [`NESTED`], a hook in
/// [`ATTACHED`], a handler's fault in the error module's slot. One word, so that noting the request around each call and poll is two swaps
/// of a word: a note of the ledger, the route and the flag by value (40 bytes) cost the ok
/// row 79 instructions per poll (BENCHMARKS.md, "Third round").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CountingFor(usize);

impl CountingFor {
    /// The note's bit saying a route template waits in [`NESTED`].
    const NESTED_ROUTE: usize = 0b01;
    /// The note's bit saying a hook waits in [`ATTACHED`].
    const ATTACHED_HOOK: usize = 0b10;
    /// The note's bit saying a handler's fault waits in the error module's slot.
    const WAITING_FAULT: usize = 0b100;
    const FLAGS: usize = Self::NESTED_ROUTE | Self::ATTACHED_HOOK | Self::WAITING_FAULT;

    /// The note of a request counted by `ledger`, nothing seen yet.
    pub(crate) const fn new(ledger: usize) -> Self {
        // A ledger's id is the address of a value aligned to at least 8 bytes.
        debug_assert!(ledger & Self::FLAGS == 0);
        Self(ledger)
    }

    /// The ledger (by `Ledger::id`) that counts the request; 0 for none.
    pub(crate) fn ledger(self) -> usize {
        self.0 & !Self::FLAGS
    }

    /// Whether a layer passing the request through left a route template in [`NESTED`]: a
    /// router nested as a service (`Router::nest_service`) matches the route the outer
    /// router could not name.
    pub(crate) fn has_nested_route(self) -> bool {
        self.0 & Self::NESTED_ROUTE != 0
    }

    /// Whether an [`AnswerHook`] waits in [`ATTACHED`] for the layer to take.
    pub(crate) fn has_attached_hook(self) -> bool {
        self.0 & Self::ATTACHED_HOOK != 0
    }

    /// Whether a handler's fault waits for the layer ([`note_waiting_fault`]).
    pub(crate) fn has_waiting_fault(self) -> bool {
        self.0 & Self::WAITING_FAULT != 0
    }

    /// Whether anything at all waits for the layer: one test on the path of a request that
    /// left nothing.
    pub(crate) fn has_any_waiting(self) -> bool {
        self.0 & Self::FLAGS != 0
    }

    fn with(self, flag: usize) -> Self {
        Self(self.0 | flag)
    }
}

thread_local! {
    /// The request whose inner service this thread is calling or polling, if any.
    pub(crate) static COUNTING: Cell<CountingFor> = const { Cell::new(CountingFor::new(0)) };

    /// The hook attached during the poll under way, until the layer takes it.
    static ATTACHED: RefCell<Option<Box<dyn AnswerHook>>> = const { RefCell::new(None) };

    /// The route template a layer passing the request through saw, until the layer that
    /// counts it takes it.
    static NESTED: Cell<Option<InternedRoute>> = const { Cell::new(None) };
}

/// Leaves `route` for the layer that counts the request being called here, unless a route
/// waits for it already (the outermost router nested as a service names it first), or no
/// layer counts it here.
pub(crate) fn note_nested_route(route: InternedRoute) {
    let _ = COUNTING.try_with(|counting| {
        let note = counting.get();
        let nothing_to_note = note.ledger() == 0 || note.has_nested_route();
        if !nothing_to_note && NESTED.try_with(|slot| slot.set(Some(route))).is_ok() {
            counting.set(note.with(CountingFor::NESTED_ROUTE));
        }
    });
}

/// The route template left for the layer whose note says one waits.
pub(crate) fn take_nested_route() -> Option<InternedRoute> {
    NESTED.try_with(Cell::take).ok().flatten()
}

/// Puts a route taken aside back in its slot, for the note it was left for.
pub(crate) fn restore_nested_route(route: InternedRoute) {
    let _ = NESTED.try_with(|slot| slot.set(Some(route)));
}

/// Attaches `hook` to the request this thread is polling for a layer, which tells it the
/// answer's status. Given back when no layer is polling here (the code runs outside a
/// `FaultLayer`, or on a task of its own): nothing would tell it.
#[cfg_attr(not(feature = "webhooks"), allow(dead_code))]
pub(crate) fn attach(hook: Box<dyn AnswerHook>) -> Result<(), Box<dyn AnswerHook>> {
    let Ok(note) = COUNTING.try_with(Cell::get) else {
        return Err(hook);
    };
    if note.ledger() == 0 {
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
            let _ =
                COUNTING.try_with(|counting| counting.set(note.with(CountingFor::ATTACHED_HOOK)));
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

/// Notes that a handler's fault waits in the error module's slot for the layer counting the
/// request being called or polled here; false, noting nothing, when no layer counts it here
/// (the fault then travels in the response's extensions).
pub(crate) fn note_waiting_fault() -> bool {
    COUNTING
        .try_with(|counting| {
            let note = counting.get();
            if note.ledger() == 0 {
                return false;
            }
            counting.set(note.with(CountingFor::WAITING_FAULT));
            true
        })
        .unwrap_or(false)
}

/// The hook attached during the poll that just returned, for the layer whose note said so.
pub(crate) fn take_attached() -> Option<Box<dyn AnswerHook>> {
    ATTACHED
        .try_with(|slot| slot.try_borrow_mut().ok()?.take())
        .ok()
        .flatten()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A ledger's id as the note holds it: an address, its low bits free.
    const LEDGER: usize = 0x1000;

    #[derive(Debug)]
    struct Silent;

    impl AnswerHook for Silent {
        fn answered(self: Box<Self>, _: StatusCode) {}
    }

    /// Runs `f` with the thread noting a request `LEDGER` counts, as a layer's call does.
    fn noted<R>(f: impl FnOnce() -> R) -> (R, CountingFor) {
        let outer = COUNTING.with(|counting| counting.replace(CountingFor::new(LEDGER)));
        let result = f();
        let note = COUNTING.with(|counting| counting.replace(outer));
        (result, note)
    }

    #[test]
    fn the_note_keeps_the_ledger_and_each_flag_apart() {
        let note = CountingFor::new(LEDGER);
        assert_eq!(note.ledger(), LEDGER);
        assert!(!note.has_nested_route() && !note.has_attached_hook());
        assert!(!note.has_waiting_fault() && !note.has_any_waiting());
        let faulted = note.with(CountingFor::WAITING_FAULT);
        assert_eq!(faulted.ledger(), LEDGER);
        assert!(faulted.has_waiting_fault() && faulted.has_any_waiting());
        assert!(!faulted.has_attached_hook() && !faulted.has_nested_route());
        let routed = note.with(CountingFor::NESTED_ROUTE);
        assert_eq!(routed.ledger(), LEDGER);
        assert!(routed.has_nested_route() && !routed.has_attached_hook());
        let hooked = note.with(CountingFor::ATTACHED_HOOK);
        assert_eq!(hooked.ledger(), LEDGER);
        assert!(hooked.has_attached_hook() && !hooked.has_nested_route());
        // Set twice, a flag stays set.
        let twice = hooked.with(CountingFor::ATTACHED_HOOK);
        assert!(twice.has_attached_hook());
        assert_eq!(CountingFor::new(0).ledger(), 0);
    }

    #[test]
    fn a_hook_waits_for_the_layer_whose_note_says_so() {
        // No layer polling here: the hook comes back.
        assert!(attach(Box::new(Silent)).is_err());
        let ((first, second), note) =
            noted(|| (attach(Box::new(Silent)), attach(Box::new(Silent))));
        assert!(first.is_ok());
        // One per poll: the second goes back.
        assert!(second.is_err());
        assert!(note.has_attached_hook() && !note.has_nested_route());
        assert!(take_attached().is_some());
        assert!(take_attached().is_none());
    }

    #[test]
    fn the_first_route_noted_waits_for_the_layer_whose_note_says_so() {
        let route = |text| InternedRoute { text, index: 0 };
        // No layer counting here: nothing is noted.
        note_nested_route(route("/nowhere"));
        assert_eq!(COUNTING.with(Cell::get).ledger(), 0);
        assert!(!COUNTING.with(Cell::get).has_nested_route());
        let ((), note) = noted(|| {
            note_nested_route(route("/outer/{id}"));
            note_nested_route(route("/inner/{id}"));
        });
        assert!(note.has_nested_route() && !note.has_attached_hook());
        assert_eq!(take_nested_route(), Some(route("/outer/{id}")));
        assert_eq!(take_nested_route(), None);
    }
}
