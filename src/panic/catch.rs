//! [`catch`]: every place where the layer catches a panic runs through it, which notes on the
//! thread that a catch is open for that call. While one is open, the hook
//! ([`install_panic_hook`](super::install_panic_hook)) records the panic's file and line for
//! the summary and does nothing else: no stderr line, no backtrace capture, even with
//! `RUST_BACKTRACE=1`. Panics anywhere else go to the previous hook unchanged.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};

thread_local! {
    /// [`OPEN`] per open [`catch`] call on this thread, plus [`RECORDED`] while [`SITE`]
    /// holds a site: one cell, so that a `catch` whose call did not panic (nearly all) reads
    /// and writes one word and never touches the site.
    pub(super) static CATCHING: Cell<u32> = const { Cell::new(0) };
    /// Where the last panic caught on this thread happened, until [`catch`] takes it.
    pub(super) static SITE: RefCell<Option<PanicSite>> = const { RefCell::new(None) };
}

/// What one open [`catch`] adds to [`CATCHING`].
pub(super) const OPEN: u32 = 2;

/// The bit of [`CATCHING`] that says [`SITE`] holds a site.
pub(super) const RECORDED: u32 = 1;

/// Where a panic happened, as the hook saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PanicSite {
    pub(crate) file: String,
    pub(crate) line: u32,
}

/// A panic caught by [`catch`]: its payload, and its site when the hook is installed.
pub(crate) struct Caught {
    pub(crate) payload: Box<dyn Any + Send>,
    pub(crate) site: Option<PanicSite>,
}

/// Runs `f`, catching a panic; the installed hook stays quiet for panics inside it. What was
/// caught is boxed: it is rare, and the result of every call and poll goes through here.
pub(crate) fn catch<R>(f: impl FnOnce() -> R) -> Result<R, Box<Caught>> {
    // `CATCHING` is a `const` cell without a destructor, which every thread-local destructor can
    // still reach; `try_with` says so without costing a branch more.
    let _ = CATCHING.try_with(|g| g.set(g.get() + OPEN));
    // A site is only ever read by the `catch` that recorded it. (A panic caught and re-raised
    // with `resume_unwind` within one call still reads the site of the first: std runs no
    // hook for the second.)
    let result = catch_unwind(AssertUnwindSafe(f));
    let recorded = CATCHING
        .try_with(|g| {
            let state = g.get() - OPEN;
            g.set(state & !RECORDED);
            state & RECORDED != 0
        })
        .unwrap_or(false);
    match result {
        Ok(value) if !recorded => Ok(value),
        result => with_site(result, recorded),
    }
}

/// The end of a [`catch`] whose call panicked, or during whose call the hook recorded a
/// panic: kept out of line, off the path of the calls that did neither.
#[cold]
#[inline(never)]
fn with_site<R>(result: std::thread::Result<R>, recorded: bool) -> Result<R, Box<Caught>> {
    let site = if recorded {
        SITE.try_with(|site| site.try_borrow_mut().ok()?.take())
            .ok()
            .flatten()
    } else {
        None
    };
    match result {
        Ok(value) => {
            if let Some(site) = site {
                // The hook kept it off stderr, but the inner service caught it itself (a
                // `catch_unwind` of its own, tower-http's `CatchPanicLayer`): say so once
                // here, or it would go unseen.
                tracing::event!(
                    target: "faultline",
                    tracing::Level::WARN,
                    "code.filepath" = site.file.as_str(),
                    "code.lineno" = site.line,
                    "a panic inside the fault layer was caught by the service itself"
                );
            }
            Ok(value)
        }
        Err(payload) => Err(Box::new(Caught { payload, site })),
    }
}
