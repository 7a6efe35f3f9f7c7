//! What an HTTP/1.1 answer leaves of its request body: read to its end and discarded, so that
//! the connection serves the next request, or left with the answer saying
//! `connection: close`. Never a silent close.
//!
//! hyper keeps a connection alive only once the request body has been read to its end; when
//! the body is dropped before that, hyper closes the connection after the answer and says
//! nothing, and the client's next request on it (a proxy's, typically: nginx's upstream
//! keep-alive) is lost before any server sees it. So `call` taps the request body
//! ([`tap`]): the inner service gets it wrapped in a [`TappedBody`] that, when dropped,
//! hands back to the response future what it left unread ([`Left`]). As the answer leaves,
//! the future reads that rest within the layer's bounds, as Go's `net/http` does before it
//! writes a head ([`Drain`]), or gives up and adds `connection: close`.
//!
//! Only a request that has a body is tapped: a GET (or any request whose body is already at
//! its end) costs one check. HTTP/2 is left alone: a stream ends on its own without touching
//! the connection.

use std::future::Future as _;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use axum::body::Body as RequestBody;
use bytes::Bytes;
use http::header::{CONNECTION, CONTENT_LENGTH, EXPECT};
use http::{HeaderValue, Request, Response, StatusCode, Version};
use http_body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use crate::config::DrainBounds;
use crate::count::Ledger;
use crate::panic::{catch, lock};
use crate::sync::Mutex;

/// Taps `request`'s body in place when it has one on HTTP/1.x: the [`Tap`] is what the
/// response future reads the unread rest from. A request without a body is left untouched.
#[inline]
pub(crate) fn tap(request: &mut Request<RequestBody>) -> Option<Tap> {
    // The body first: most requests that have none are GETs, and stop there.
    if request.body().is_end_stream()
        || !matches!(request.version(), Version::HTTP_11 | Version::HTTP_10)
    {
        return None;
    }
    Some(tap_body(request))
}

/// Wraps the body of a request that has one: out of line, so that a request without a body
/// pays the two checks above and nothing of this.
#[inline(never)]
fn tap_body(request: &mut Request<RequestBody>) -> Tap {
    let headers = request.headers();
    let tap = Tap(Arc::new(TapState {
        expects_continue: headers
            .get(EXPECT)
            .is_some_and(|value| value.as_bytes().eq_ignore_ascii_case(b"100-continue")),
        length: headers
            .get(CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok()?.parse().ok()),
        left: Mutex::new(None),
    }));
    let body = std::mem::take(request.body_mut());
    *request.body_mut() = RequestBody::new(TappedBody {
        inner: Some(body),
        tap: tap.0.clone(),
        read: 0,
        polled: false,
        ended: false,
        broken: false,
    });
    tap
}

/// The response future's end of a tapped request body: one pointer, so that the future of a
/// request without a body grows by no more than that.
#[derive(Debug)]
pub(crate) struct Tap(Arc<TapState>);

/// What the tapped body and the response future share.
#[derive(Debug)]
struct TapState {
    /// The client waits for `100 Continue` before it sends the body (RFC 9110, 10.1.1).
    expects_continue: bool,
    /// The body's declared length.
    length: Option<u64>,
    /// Filled when the tapped body is dropped.
    left: Mutex<Option<Left>>,
}

/// What a tapped body left when it was dropped.
#[derive(Debug)]
struct Left {
    /// The body, when it was dropped before its end.
    rest: Option<RequestBody>,
    /// Bytes the inner service read.
    read: u64,
    /// Whether it was ever polled: for `Expect: 100-continue`, whether hyper asked for it.
    polled: bool,
    /// A read failed: what is left on the wire cannot be told from the next request.
    broken: bool,
}

/// What to do, as the answer leaves, with what its request body left.
pub(crate) enum Plan {
    /// Nothing left, or nothing this layer holds: the answer goes as it is.
    Keep,
    /// The rest cannot be read within the bounds: the answer says `connection: close`.
    Close,
    /// Read the rest, then answer.
    Drain(Drain),
}

impl Tap {
    /// Decides, from what the body left and the answer's `status`, whether the answer waits
    /// for a drain, says `close`, or goes as it is.
    pub(crate) fn plan(self, bounds: &DrainBounds, status: StatusCode) -> Plan {
        let tap = &*self.0;
        let left = lock(&tap.left).take();
        // Still held by someone (a task the handler spawned), or read to its end.
        let Some(Left {
            rest: Some(rest),
            read,
            polled,
            broken,
        }) = left
        else {
            return Plan::Keep;
        };
        // An `Expect: 100-continue` client that hyper never asked for its body may send it or
        // not: the next bytes on the wire cannot be told apart. Go closes too.
        let unasked = tap.expects_continue && !polled;
        let too_long = tap
            .length
            .is_some_and(|length| length.saturating_sub(read) > bounds.max_bytes);
        // A 408 says the body did not come in time (a body deadline gave up on it): waiting
        // for it again would hold the answer for nothing, and RFC 9110 (15.5.9) asks a 408 to
        // close the connection.
        let timed_out = status == StatusCode::REQUEST_TIMEOUT;
        if broken || unasked || too_long || timed_out || bounds.max_bytes == 0 {
            return Plan::Close;
        }
        Plan::Drain(Drain {
            rest,
            bytes_left: bounds.max_bytes,
            read: 0,
            max_time: bounds.max_time,
            deadline: None,
        })
    }
}

/// Adds `connection: close` to an answer whose request body is left on the wire, and counts
/// it.
pub(crate) fn close<B>(response: &mut Response<B>, ledger: &Ledger, read: u64) {
    response
        .headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    ledger.unread_body(false, read);
}

/// Reading the unread rest of a request body to its end, within the bounds.
pub(crate) struct Drain {
    rest: RequestBody,
    /// Bytes that may still be read.
    bytes_left: u64,
    /// Bytes read so far.
    read: u64,
    max_time: Duration,
    /// Armed the first time the rest is not there yet: a rest already buffered is read
    /// without a timer.
    deadline: Option<Pin<Box<Sleep>>>,
}

impl Drain {
    /// Reads until the end (`true`: the connection can be kept), or until the bytes or the time
    /// run out, or a read fails (`false`). Then the bytes read are [`read`](Self::read).
    pub(crate) fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<bool> {
        loop {
            match Pin::new(&mut self.rest).poll_frame(cx) {
                Poll::Ready(None) => return Poll::Ready(true),
                Poll::Ready(Some(Err(_))) => return Poll::Ready(false),
                Poll::Ready(Some(Ok(frame))) => {
                    let bytes = data_len(&frame);
                    self.read += bytes;
                    let Some(left) = self.bytes_left.checked_sub(bytes) else {
                        return Poll::Ready(false);
                    };
                    self.bytes_left = left;
                    if self.rest.is_end_stream() {
                        return Poll::Ready(true);
                    }
                }
                Poll::Pending => return self.poll_deadline(cx).map(|()| false),
            }
        }
    }

    /// Ready once the time bound is past; arms the timer on the first call. Without a tokio
    /// timer to arm, the time is up at once: waiting with no bound is what must not happen.
    fn poll_deadline(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.deadline.is_none() {
            let max_time = self.max_time;
            match catch(|| Box::pin(tokio::time::sleep_until(Instant::now() + max_time))) {
                Ok(sleep) => self.deadline = Some(sleep),
                Err(_) => return Poll::Ready(()),
            }
        }
        let deadline = self.deadline.as_mut().expect("armed above");
        ready!(deadline.as_mut().poll(cx));
        Poll::Ready(())
    }

    /// The bytes read and discarded.
    pub(crate) fn read(&self) -> u64 {
        self.read
    }
}

/// The request body the inner service gets: the client's, watched so that what it leaves
/// unread comes back to the response future when it is dropped.
struct TappedBody {
    /// `Some` until dropped.
    inner: Option<RequestBody>,
    tap: Arc<TapState>,
    read: u64,
    polled: bool,
    ended: bool,
    broken: bool,
}

impl Body for TappedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        this.polled = true;
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let polled = ready!(Pin::new(&mut *inner).poll_frame(cx));
        match &polled {
            None => this.ended = true,
            Some(Ok(frame)) => {
                this.read += data_len(frame);
                this.ended = inner.is_end_stream();
            }
            Some(Err(_)) => this.broken = true,
        }
        Poll::Ready(polled)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(Body::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), Body::size_hint)
    }
}

impl Drop for TappedBody {
    fn drop(&mut self) {
        let rest = self.inner.take().filter(|_| !self.ended);
        let left = Left {
            rest,
            read: self.read,
            polled: self.polled,
            broken: self.broken,
        };
        // Runs while a panicking handler unwinds too: a poisoned lock still takes the rest.
        *lock(&self.tap.left) = Some(left);
    }
}

/// The bytes a frame carries: its data's, none for trailers.
fn data_len(frame: &Frame<Bytes>) -> u64 {
    frame.data_ref().map_or(0, |data| data.len() as u64)
}
