//! The response body of [`FaultService`](crate::service::FaultService): it watches a streaming body to
//! its end, so that a body that fails or panics after the head went out is still caught and
//! counted, and it carries faultline's own problem bodies.

use std::error::Error as StdError;
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use tower::BoxError;

use crate::middleware::guard::RequestGuard;
use crate::middleware::head::sends_no_body;
use crate::outcome::Outcome;
use crate::panic::catch;
use crate::summary::Summary;

pin_project! {
    /// The body of every response that passed a [`FaultLayer`](crate::FaultLayer).
    pub struct FaultBody<B> {
        #[pin]
        kind: Kind<B>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<B> {
        // The inner service's body; the guard counts the request when it ends. `remaining` is
        // what is left of a declared length: hyper stops polling once that much is written,
        // so reaching it is the end even when the body never says so.
        Watched { #[pin] inner: B, guard: Option<RequestGuard>, remaining: Option<u64>, failed: bool },
        // A rendered problem body, sent in one frame.
        Problem { bytes: Option<Bytes> },
    }
}

impl<B: Body> FaultBody<B> {
    /// Watches `inner` to its end; a body that is already finished, or that the answer never
    /// sends ([`sends_no_body`]), settles at once. `length` is how many bytes the body will
    /// send, if known: its exact size or the declared length.
    ///
    /// Inlined into the success's `pass`: LLVM left it out of line after an edit elsewhere,
    /// and the body's guard and state were copied once more on the way (`bench-smoke`'s `/ok`:
    /// 17,637 instructions per request out of line, 17,591 inlined; BENCHMARKS.md, "Fourth
    /// round").
    #[inline]
    pub(crate) fn watched(
        inner: B,
        mut guard: RequestGuard,
        status: http::StatusCode,
        length: Option<u64>,
    ) -> Self {
        guard.streaming(status);
        let remaining = length;
        let no_body = || sends_no_body(guard.meta().http_method(), status);
        let guard = if inner.is_end_stream() || remaining == Some(0) || no_body() {
            guard.settle_ok();
            None
        } else {
            Some(guard)
        };
        Self {
            kind: Kind::Watched {
                inner,
                guard,
                remaining,
                failed: false,
            },
        }
    }

    /// A body an inner fault layer already answered and counted: passed on untouched.
    pub(crate) fn settled(inner: B) -> Self {
        Self {
            kind: Kind::Watched {
                inner,
                guard: None,
                remaining: None,
                failed: false,
            },
        }
    }
}

impl<B> FaultBody<B> {
    pub(crate) fn problem(bytes: Bytes) -> Self {
        Self {
            kind: Kind::Problem { bytes: Some(bytes) },
        }
    }
}

impl<B> Body for FaultBody<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        match self.project().kind.project() {
            KindProj::Problem { bytes } => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            KindProj::Watched {
                mut inner,
                guard,
                remaining,
                failed,
            } => {
                if *failed {
                    return Poll::Ready(None);
                }
                let Some(watching) = guard.as_mut() else {
                    return inner.poll_frame(cx).map_err(Into::into);
                };
                let polled = catch(|| inner.as_mut().poll_frame(cx));
                let summary = match polled {
                    Ok(Poll::Pending) => return Poll::Pending,
                    Ok(Poll::Ready(None)) => {
                        watching.settle_ok();
                        *guard = None;
                        return Poll::Ready(None);
                    }
                    Ok(Poll::Ready(Some(Ok(frame)))) => {
                        if let (Some(left), Some(data)) = (remaining.as_mut(), frame.data_ref()) {
                            *left = left.saturating_sub(data.len() as u64);
                        }
                        if inner.is_end_stream() || *remaining == Some(0) {
                            watching.settle_ok();
                            *guard = None;
                        }
                        return Poll::Ready(Some(Ok(frame)));
                    }
                    Ok(Poll::Ready(Some(Err(error)))) => {
                        let error = error.into();
                        let summary =
                            Summary::from_body_error(watching.status(), &*error, watching.config());
                        watching.settle_unanswered(&summary);
                        *failed = true;
                        return Poll::Ready(Some(Err(error)));
                    }
                    Err(payload) => Summary::from_panic(
                        Outcome::Aborted,
                        watching.status(),
                        *payload,
                        watching.config(),
                    ),
                };
                watching.settle_unanswered(&summary);
                *failed = true;
                Poll::Ready(Some(Err(BodyPanicked.into())))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Watched { inner, failed, .. } => *failed || inner.is_end_stream(),
            Kind::Problem { bytes } => bytes.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Watched { inner, .. } => inner.size_hint(),
            Kind::Problem { bytes } => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
        }
    }
}

/// An empty body: what a layer outside faultline answers on its own with, such as
/// tower-http's `CorsLayer` answering a preflight request, which needs `Default`.
impl<B> Default for FaultBody<B> {
    fn default() -> Self {
        Self {
            kind: Kind::Problem { bytes: None },
        }
    }
}

impl<B> fmt::Debug for FaultBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.kind {
            Kind::Watched { .. } => "watched",
            Kind::Problem { .. } => "problem",
        };
        f.debug_struct("FaultBody").field("kind", &kind).finish()
    }
}

/// The error a body stream ends with when the inner body panicked; the panic's text goes to
/// the report only.
#[derive(Debug)]
struct BodyPanicked;

impl fmt::Display for BodyPanicked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("response body panicked while streaming")
    }
}

impl StdError for BodyPanicked {}
