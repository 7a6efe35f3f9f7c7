//! What the layer did with request bodies that their answers left unread: read to their end
//! and discarded, so that the HTTP/1.1 connection serves the next request, or left, with the
//! answer saying `connection: close`.
//!
//! Counted only on that path (a refusal before the body, a handler that ignores its body),
//! never on the success path, so plain shared counters serve: a flood of such answers writes
//! them from every core, and each write is one `fetch_add` beside the failure's own tally.

use std::sync::atomic::{AtomicU64, Ordering};

/// The ledger's counters of unread request bodies.
#[derive(Debug, Default)]
pub(crate) struct UnreadCounters {
    drained: AtomicU64,
    closed: AtomicU64,
    bytes: AtomicU64,
}

impl UnreadCounters {
    /// Counts one unread rest read to its end (`kept`) or given up on, with the bytes read.
    pub(crate) fn count(&self, kept: bool, bytes: u64) {
        let counter = if kept { &self.drained } else { &self.closed };
        counter.fetch_add(1, Ordering::Relaxed);
        if bytes > 0 {
            self.bytes.fetch_add(bytes, Ordering::Relaxed);
        }
    }

    pub(crate) fn read(&self) -> UnreadBodies {
        UnreadBodies {
            drained: self.drained.load(Ordering::Relaxed),
            closed: self.closed.load(Ordering::Relaxed),
            drained_bytes: self.bytes.load(Ordering::Relaxed),
        }
    }
}

/// Request bodies that an HTTP/1.1 answer left unread, and what the layer did with each:
/// what draining them cost, and the connections it kept.
///
/// hyper closes a kept-alive connection without a word when an answer leaves before its
/// request body was read to the end, and the client's next request on it is lost. So the
/// layer reads the rest, within [`FaultLayer::max_drain_bytes`](crate::FaultLayer::max_drain_bytes)
/// and [`FaultLayer::max_drain_time`](crate::FaultLayer::max_drain_time), or says
/// `connection: close` in the answer.
///
/// ```
/// let (layer, ledger) = faultline::FaultLayer::pair();
/// # let _ = layer;
/// let unread = ledger.snapshot().unread_bodies;
/// assert_eq!((unread.drained, unread.closed, unread.drained_bytes), (0, 0, 0));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct UnreadBodies {
    /// Rests read to their end: each kept its connection for the next request.
    pub drained: u64,
    /// Answers that said `connection: close` instead: the rest was longer than the byte
    /// bound, slower than the time bound, broken, never asked for (`Expect:
    /// 100-continue`), or the answer was a 408, which gave up on it already.
    pub closed: u64,
    /// The bytes read and discarded, in both cases: what draining cost.
    pub drained_bytes: u64,
}
