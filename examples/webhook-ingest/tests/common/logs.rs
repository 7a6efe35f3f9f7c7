//! The service's log as a test sees it: what its own thread logs, kept in memory. The
//! service's unit tests use it too (by `#[path]`), so it needs nothing of `common` but
//! `tracing` and `tracing-subscriber`.

use std::sync::{Arc, Mutex};

use tracing::subscriber::DefaultGuard;

/// What this thread logged since [`Logs::capture`], until its guard is dropped.
#[derive(Clone, Default)]
pub struct Logs(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    /// Keeps what this thread logs (every task of a current-thread runtime included) until
    /// the guard is dropped.
    pub fn capture() -> (Logs, DefaultGuard) {
        let logs = Logs::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        let guard = tracing::subscriber::set_default(subscriber);
        // Another test may have met the same callsites with no subscriber, which caches them
        // as unwanted: asked again, with this one.
        tracing::callsite::rebuild_interest_cache();
        (logs, guard)
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
