//! [`Reservation`]: a delivery's key while the delivery is in hand, from its verification
//! until its answer. Confirmed when the answer's head is 2xx, released on any other answer
//! and when dropped unanswered (a panic, a cancelled request): the layer tells it which
//! ([`AnswerHook`]).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::SystemTime;

use http::StatusCode;

use crate::request::AnswerHook;
use crate::webhooks::replay::{AnyStore, ReplayKey, Settled};

/// A key reserved in a store until `lease`, to be confirmed until `until` or released.
pub(crate) struct Reservation {
    store: Arc<dyn AnyStore>,
    key: ReplayKey,
    lease: SystemTime,
    until: SystemTime,
    /// Confirmed or released already: the drop has nothing left to do.
    settled: bool,
}

impl Reservation {
    pub(crate) fn new(
        store: Arc<dyn AnyStore>,
        key: ReplayKey,
        lease: SystemTime,
        until: SystemTime,
    ) -> Self {
        Self {
            store,
            key,
            lease,
            until,
            settled: false,
        }
    }

    fn release(&mut self) {
        self.settled = true;
        let released = Arc::clone(&self.store).release(self.key, self.lease);
        finish(released, "release");
    }
}

impl AnswerHook for Reservation {
    fn answered(mut self: Box<Self>, status: StatusCode) {
        if !status.is_success() {
            return self.release();
        }
        self.settled = true;
        let confirmed = Arc::clone(&self.store).confirm(self.key, self.until);
        finish(confirmed, "confirm");
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.settled {
            self.release();
        }
    }
}

impl std::fmt::Debug for Reservation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reservation")
            .field("lease", &self.lease)
            .field("until", &self.until)
            .field("settled", &self.settled)
            .finish_non_exhaustive()
    }
}

/// Runs a confirm or a release to its end without holding the answer: at once when the
/// store answers at once (a store in memory, whose future is ready on its first poll, so
/// that a retry right after the answer already finds the key settled), else on the runtime
/// the request runs on. Outside a runtime (a thread being torn down) it is dropped, and the
/// lease frees the key when it ends.
fn finish(mut settle: Pin<Box<Settled>>, what: &'static str) {
    let mut cx = Context::from_waker(Waker::noop());
    match settle.as_mut().poll(&mut cx) {
        Poll::Ready(result) => report(result, what),
        Poll::Pending => {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move { report(settle.await, what) });
            }
        }
    }
}

/// A store that failed to settle a key: the lease frees a key left reserved, and a key left
/// unconfirmed lets one replay through once the lease ends. Said, never with the key.
fn report(result: Result<(), Box<dyn std::error::Error + Send + Sync>>, what: &'static str) {
    if let Err(error) = result {
        tracing::warn!(%error, "the replay store could not {what} a delivery's key");
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::webhooks::replay::ReplayMemory;

    /// A reservation's debug text names its lease, its end and whether it is settled, never
    /// its key: the key is what a replay would need to be recognised by.
    #[test]
    fn debug_names_the_lease_and_not_the_key() {
        let key = ReplayKey::from_bytes([0xab; 32]);
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let reservation = Reservation::new(Arc::new(ReplayMemory::new()), key, at, at);
        let text = format!("{reservation:?}");
        assert!(text.starts_with("Reservation {"), "{text}");
        assert!(text.contains("lease: SystemTime"), "{text}");
        assert!(text.contains("until: SystemTime"), "{text}");
        assert!(text.contains("settled: false"), "{text}");
        assert!(
            !text.contains("171"),
            "the key's bytes (0xab = 171): {text}"
        );
    }
}
