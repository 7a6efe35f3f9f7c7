//! [`install_panic_hook`]: the hook that keeps panics caught by the layer off stderr and hands
//! their location to [`catch`](fn@super::catch).

use std::cell::Cell;
use std::panic::{self, PanicHookInfo};
use std::sync::Once;

use super::catch::{PanicSite, CATCHING, OPEN, RECORDED, SITE};

/// Installs faultline's panic hook in front of the current one. Call it once at start-up,
/// after any hook of your own; later calls do nothing.
///
/// A panic on a thread that is inside the layer (calling or polling the inner service,
/// streaming its body, formatting an error) is recorded for that request's report and not
/// passed on, so nothing reaches stderr and no backtrace is captured. Every other panic goes
/// to the previous hook unchanged.
///
/// ```
/// faultline::install_panic_hook();
/// // A panic outside the layer still reaches the previous hook (std's prints to stderr).
/// assert!(std::thread::spawn(|| panic!("outside")).join().is_err());
/// ```
pub fn install_panic_hook() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            // A guard that is gone (never, for a `const` cell without a destructor) is closed.
            if CATCHING.try_with(Cell::get).unwrap_or(0) >= OPEN {
                record(info);
            } else {
                previous(info);
            }
        }));
    });
}

fn record(info: &PanicHookInfo<'_>) {
    let site = info.location().map(|location| PanicSite {
        file: location.file().to_owned(),
        line: location.line(),
    });
    // In a thread-local destructor the site's slot may be gone: the panic is still kept off
    // stderr and caught, only without its file and line.
    let kept = SITE.try_with(|slot| match slot.try_borrow_mut() {
        Ok(mut slot) => {
            *slot = site;
            true
        }
        Err(_) => false,
    });
    if kept == Ok(true) {
        let _ = CATCHING.try_with(|g| g.set(g.get() | RECORDED));
    }
}
