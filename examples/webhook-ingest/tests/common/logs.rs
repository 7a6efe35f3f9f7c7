//! The service's log as a test sees it: what its own thread logs, kept in memory. The
//! service's unit tests use it too (by `#[path]`), so it needs nothing of `common` but
//! `tracing` and `tracing-subscriber`.

use std::cell::RefCell;
use std::sync::{Arc, Mutex, Once};

/// What this thread logged since [`Logs::capture`], until its guard is dropped.
#[derive(Clone, Default)]
pub struct Logs(Arc<Mutex<Vec<u8>>>);

thread_local! {
    /// The capture this thread's events are written to, if any.
    static CURRENT: RefCell<Option<Logs>> = const { RefCell::new(None) };
}

/// The writer of the process's one subscriber: an event goes to the capture of the thread
/// that logged it, or nowhere.
struct ThisThread;

impl std::io::Write for ThisThread {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        CURRENT.with(|current| {
            if let Some(logs) = &*current.borrow() {
                logs.0.lock().unwrap().extend_from_slice(bytes);
            }
        });
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Ends a capture when dropped: the thread's events go back to the capture before it.
pub struct Capturing(Option<Logs>);

impl Drop for Capturing {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|current| *current.borrow_mut() = previous);
    }
}

impl Logs {
    /// Keeps what this thread logs (every task of a current-thread runtime included) until
    /// the guard is dropped.
    ///
    /// One subscriber serves the whole process, set once as its global default, and writes
    /// each event to the capture of its thread. A subscriber per test, set as the thread's
    /// default, lost events: `tracing` caches whether a callsite is wanted process-wide, and
    /// a test running beside it without a subscriber could cache it as unwanted.
    pub fn capture() -> (Logs, Capturing) {
        static GLOBAL: Once = Once::new();
        GLOBAL.call_once(|| {
            let subscriber = tracing_subscriber::fmt()
                .with_writer(|| ThisThread)
                .with_ansi(false)
                .finish();
            tracing::subscriber::set_global_default(subscriber)
                .expect("a process that captures logs sets no other global subscriber");
        });
        let logs = Logs::default();
        let previous = CURRENT.with(|current| current.borrow_mut().replace(logs.clone()));
        (logs, Capturing(previous))
    }

    /// The whole log.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    /// How many of its lines hold `text`.
    pub fn lines_with(&self, text: &str) -> usize {
        self.text()
            .lines()
            .filter(|line| line.contains(text))
            .count()
    }
}
