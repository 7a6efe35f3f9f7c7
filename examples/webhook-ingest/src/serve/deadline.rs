//! The two deadlines a request meets once its head has arrived, applied inside the fault layer
//! so that both answers are problem+json bodies the ledger counts:
//!
//! - the body must arrive in full within [`Deadlines::body`] of the head, or the client gets
//!   408 `body-timeout` and the connection is closed (the rest of the body may still be on its
//!   way, so the connection cannot carry another request);
//! - the whole request must be answered within [`Deadlines::request`], or the client gets
//!   503 `deadline-exceeded` with `Retry-After`, and the handler is dropped.
//!
//! A handler dropped at the deadline may already have passed a push to the store, which then
//! commits it: the provider's redelivery is answered as a duplicate, so nothing is stored
//! twice and nothing is lost.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use faultline::Fault;
use http_body::{Frame, SizeHint};
use pin_project_lite::pin_project;
use tokio::time::Sleep;

/// Longest wait for a request body, from the head: a 25 MB push at 50 Mbit/s takes 4 s, and
/// a provider that cannot send its body faster will not get an answer within its 10 s anyway.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest time to answer a request: GitHub and GitLab give up on a webhook after 10 s, so
/// the answer must leave before that, with room for the network and the provider's clock.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(8);
/// Seconds a client should wait before retrying a request that ran out of time: it met a slow
/// store or a loaded machine, which a few seconds let drain.
const RETRY_AFTER_SECS: &str = "5";

/// How long a request may take, once its head has arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// The whole body must have arrived within this of the head; past it, 408.
    pub body: Duration,
    /// The response must be ready within this of the head; past it, 503. Longer than
    /// `body`, so that a stalled body gets the 408 that names it.
    pub request: Duration,
}

impl Default for Deadlines {
    fn default() -> Self {
        Self {
            body: DEFAULT_BODY_TIMEOUT,
            request: DEFAULT_REQUEST_TIMEOUT,
        }
    }
}

/// A deadline that passed: the fault the answer carries.
#[derive(Debug, thiserror::Error)]
pub enum Expired {
    /// The body did not arrive in full in time.
    #[error("the request body did not arrive within {0:?}")]
    Body(Duration),
    /// The request was not answered in time.
    #[error("the request was not answered within {0:?}")]
    Request(Duration),
}

impl Fault for Expired {
    fn status(&self) -> StatusCode {
        match self {
            Self::Body(_) => StatusCode::REQUEST_TIMEOUT,
            Self::Request(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::Body(_) => "body-timeout",
            Self::Request(_) => "deadline-exceeded",
        }
    }

    fn headers(&self, headers: &mut HeaderMap) {
        match self {
            Self::Body(_) => {
                headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            Self::Request(_) => {
                headers.insert(
                    header::RETRY_AFTER,
                    HeaderValue::from_static(RETRY_AFTER_SECS),
                );
            }
        }
    }
}

faultline::impl_into_response!(Expired);

/// The middleware that enforces [`Deadlines`]; mount it inside the fault layer with
/// `router.layer(axum::middleware::from_fn_with_state(deadlines, enforce))`.
pub async fn enforce(State(deadlines): State<Deadlines>, request: Request, next: Next) -> Response {
    let body_expired = Arc::new(AtomicBool::new(false));
    let request = request.map(|body| {
        Body::new(DeadlineBody {
            inner: body,
            deadline: tokio::time::sleep(deadlines.body),
            expired: Arc::clone(&body_expired),
        })
    });
    match tokio::time::timeout(deadlines.request, next.run(request)).await {
        // Whatever the handler made of a body that failed (axum's extractors answer 400), the
        // cause was the deadline.
        Ok(_) if body_expired.load(Ordering::Relaxed) => {
            Expired::Body(deadlines.body).into_response()
        }
        Ok(response) => response,
        Err(_) => Expired::Request(deadlines.request).into_response(),
    }
}

pin_project! {
    /// A request body that fails once its deadline passes while a frame is awaited.
    struct DeadlineBody {
        #[pin]
        inner: Body,
        #[pin]
        deadline: Sleep,
        expired: Arc<AtomicBool>,
    }
}

impl http_body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.project();
        if let Poll::Ready(frame) = this.inner.poll_frame(cx) {
            return Poll::Ready(frame);
        }
        ready!(this.deadline.poll(cx));
        this.expired.store(true, Ordering::Relaxed);
        Poll::Ready(Some(Err(axum::Error::new("request body deadline passed"))))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
