//! [`ResponseFuture`]: the state machine of one request, from the inner future to exactly one
//! outcome.
//!
//! | state | on | next |
//! |---|---|---|
//! | `Calling` | a success | pass the response on, its body watched to the end |
//! | `Calling` | a response an inner fault layer answered | pass it on, count it here too |
//! | `Calling` | a handler's fault, an error status, a service error, a panic | answer |
//! | `Calling` | an error status with a small plain body | `Reading` |
//! | `Reading` | the body read up to the cap | answer |
//! | `Failed` | (a failure known at `call`) | answer |
//!
//! "Answer" renders the problem body, reports and counts the failure, and ends in `Done`.
//!
//! Whichever way the response leaves, a request body it left unread (a tapped body dropped
//! before its end) is read first, in `Draining`, or the response says `connection: close`
//! ([`drain`](super::drain)).
//!
//! A request that a layer of the same ledger outside this one counts already has no guard
//! here: `Passing` passes the inner response on as it is, or a service error out as a
//! [`PassedFailure`](crate::middleware::guard::PassedFailure) summary; `Failed` passes its
//! summary out the same way. These ways out, and `Draining`, are in [`leave`](mod@leave).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::{response, HeaderValue, Response, StatusCode};
use http_body::Body;
use pin_project_lite::pin_project;
use tower::BoxError;

use crate::error::mark;
use crate::middleware::body::FaultBody;
use crate::middleware::classify::{failed_or_marked, is_plain_success, read_bounded, Step};
use crate::middleware::drain::Tap;
use crate::middleware::guard::{polled_by_a_fault_layer, RequestGuard};
use crate::middleware::head::{declared_length, remove_replaced_body_headers};
use crate::middleware::shared::StripeHandle;
use crate::outcome::Outcome;
use crate::panic::catch;
use crate::render::{problem_body, PROBLEM_JSON};
use crate::summary::Summary;

mod leave;
use leave::{leave, pass_tapped, poll_draining, poll_passing, Draining};

pin_project! {
    /// The response future of [`FaultService`](crate::service::FaultService).
    pub struct ResponseFuture<F, B> {
        #[pin]
        state: State<F, B>,
        guard: Option<RequestGuard>,
        // The request body's tap, when it had a body on HTTP/1.x.
        tap: Option<Tap>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F, B> {
        // The inner service's future is being polled.
        Calling { #[pin] future: F },
        // An error status came without a fault: its body is read, bounded, for the message.
        // Boxed, as `Draining` is: a head, a body and a buffer would make the future of every
        // request larger than the inner future it carries.
        Reading { reading: Pin<Box<Reading<B>>> },
        // The failure is known before any polling (a panic in `call`, a `poll_ready` error).
        Failed { summary: Option<Box<Summary>> },
        // A request an outer layer of the same ledger counts: passed through.
        Passing { #[pin] future: F, handle: Arc<StripeHandle> },
        // The response is made; what it left of the request body is read first. Boxed: a
        // rare state, which must not make every request's future larger.
        Draining { draining: Box<Draining<B>> },
        Done,
    }
}

impl<F, B> ResponseFuture<F, B> {
    /// The future of a request whose inner service `call` makes, under the guard's catch.
    ///
    /// The inner future is written straight into this one's state, inside the catch: returned
    /// out of it, through the catch's result, into the state and out of `call`, a future of
    /// the size of axum's is copied once per step (`bench-smoke`'s `/ok` row: three `memcpy`s
    /// in `catch` and three in `call` before).
    #[inline(always)]
    pub(crate) fn calling(guard: RequestGuard, tap: Option<Tap>, call: impl FnOnce() -> F) -> Self {
        let mut this = Self {
            state: State::Done,
            guard: Some(guard),
            tap,
        };
        let (state, guard) = (&mut this.state, this.guard.as_mut().expect("set above"));
        let called = guard.counting(|| {
            catch(|| {
                *state = State::Calling { future: call() };
            })
        });
        if let Err(caught) = called {
            let summary = Summary::from_panic(
                Outcome::Panicked,
                StatusCode::INTERNAL_SERVER_ERROR,
                *caught,
                guard.config(),
            );
            this.state = State::Failed {
                summary: Some(Box::new(summary)),
            };
        }
        this
    }

    pub(crate) fn failed(summary: Box<Summary>, guard: RequestGuard, tap: Option<Tap>) -> Self {
        Self {
            state: State::Failed {
                summary: Some(summary),
            },
            guard: Some(guard),
            tap,
        }
    }

    /// Passes a request through for the outer layer of the same ledger that counts it.
    pub(crate) fn passing(future: F, handle: Arc<StripeHandle>) -> Self {
        Self {
            state: State::Passing { future, handle },
            guard: None,
            tap: None,
        }
    }

    /// Hands a failure out to the outer layer of the same ledger that counts the request.
    pub(crate) fn passing_failure(summary: Box<Summary>) -> Self {
        Self {
            state: State::Failed {
                summary: Some(summary),
            },
            guard: None,
            tap: None,
        }
    }
}

impl<F, B, E> Future for ResponseFuture<F, B>
where
    F: Future<Output = Result<Response<B>, E>>,
    E: Into<BoxError>,
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    type Output = Result<Response<FaultBody<B>>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        loop {
            // No guard: passed through for an outer layer, or draining (the guard went with
            // the response).
            let Some(guard) = this.guard.as_mut() else {
                if let StateProj::Draining { .. } = this.state.as_mut().project() {
                    return poll_draining(this.state, cx).map(Ok);
                }
                return poll_passing(this.state, cx).map(Ok);
            };
            let step = match this.state.as_mut().project() {
                StateProj::Calling { future } => {
                    match guard.counting(|| catch(|| future.poll(cx))) {
                        Ok(Poll::Pending) => return Poll::Pending,
                        Ok(Poll::Ready(Ok(response)))
                            if is_plain_success(&response)
                                && !guard.has_fault_for(response.status()) =>
                        {
                            // The common case, straight on: nothing here is moved more than
                            // once more.
                            this.state.set(State::Done);
                            let guard = this.guard.take().expect("checked above");
                            if this.tap.is_none() {
                                return Poll::Ready(Ok(pass(response, guard)));
                            }
                            let tap = this.tap.take().expect("checked above");
                            return pass_tapped(this.state, tap, guard, response, cx).map(Ok);
                        }
                        polled => failed_or_marked(polled, guard.take_fault(), guard.config()),
                    }
                }
                StateProj::Reading { reading } => {
                    let ReadingProj { head, body, text } = reading.as_mut().project();
                    let config = guard.config();
                    ready!(read_bounded(body, text, config.max_message_bytes, cx));
                    let head = head.take().expect("head is taken once");
                    let summary = Summary::from_rejection(head.status, text, config);
                    Step::Answer(Some(head), summary)
                }
                StateProj::Failed { summary } => {
                    Step::Answer(None, *summary.take().expect("taken once"))
                }
                StateProj::Passing { .. } | StateProj::Draining { .. } | StateProj::Done => {
                    panic!("ResponseFuture polled after completion")
                }
            };
            // Only a tapped request needs the shared state once the guard is gone.
            let handle = this.tap.as_ref().map(|_| guard.handle().clone());
            let response = match step {
                Step::Pending => return Poll::Pending,
                Step::Read(head, body) => {
                    this.state.set(State::Reading {
                        reading: Box::pin(Reading {
                            head: Some(head),
                            body,
                            text: Vec::new(),
                        }),
                    });
                    continue;
                }
                Step::Forward(response, summary) => {
                    this.state.set(State::Done);
                    let mut guard = this.guard.take().expect("checked above");
                    guard.settle_unanswered(&summary);
                    response.map(FaultBody::settled)
                }
                Step::Answer(head, summary) => {
                    // The inner future or body may panic in its destructor too; that must not
                    // unwind through the server.
                    let state = this.state.as_mut();
                    let _ = catch(move || {
                        let mut state = state;
                        state.set(State::Done)
                    });
                    answer(this.guard.take().expect("checked above"), head, summary)
                }
            };
            return match (this.tap.take(), handle) {
                (Some(tap), Some(handle)) => leave(this.state, tap, handle, response, cx).map(Ok),
                _ => Poll::Ready(Ok(response)),
            };
        }
    }
}

pin_project! {
    /// An error status's head, and its body being read for the message.
    #[project = ReadingProj]
    struct Reading<B> {
        head: Option<response::Parts>,
        #[pin]
        body: B,
        text: Vec<u8>,
    }
}

/// Passes a success on, its body watched until its end.
fn pass<B: Body>(response: Response<B>, mut guard: RequestGuard) -> Response<FaultBody<B>> {
    let status = response.status();
    guard.answered(status);
    // A body of exact size says so itself; only one that does not needs its declared length
    // parsed from the head.
    let length = match response.body().size_hint().exact() {
        Some(exact) => Some(exact),
        None => declared_length(response.headers()),
    };
    response.map(|body| FaultBody::watched(body, guard, status, length))
}

/// Renders, reports and counts a failure, and builds the problem response.
fn answer<B>(
    mut guard: RequestGuard,
    head: Option<response::Parts>,
    summary: Summary,
) -> Response<FaultBody<B>> {
    let config = guard.config();
    let mut head = head.unwrap_or_else(|| Response::new(()).into_parts().0);
    let request_id = guard
        .meta()
        .request_id_or(|| head.headers.get(&config.request_id_header));
    // The id's text is checked (as UTF-8) only where it is needed as text: a sent id's in the
    // body, and either kind in a report that is written, which flood control holds back for
    // most failures.
    let (body, id_at) = problem_body(&summary, &request_id, guard.meta().path(), config);
    // One buffer: a made id's header value is the body's copy of it.
    let id_value = request_id.header_value(&body, id_at);
    head.status = summary.status;
    // Marks the answer as rendered, so that a fault layer outside this one does not render
    // it again: only when one polls this future. Otherwise nothing reads the mark, and
    // inserting it would cost two allocations (the extensions' map and its table) of the four
    // of a 404's answer; a handler's fault marker is left as it is, read by no one.
    if polled_by_a_fault_layer() {
        mark(
            &mut head.extensions,
            summary.outcome,
            summary.status,
            summary.code,
        );
    }
    let headers = &mut head.headers;
    remove_replaced_body_headers(headers, summary.status);
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(config.request_id_header.clone(), id_value);
    guard.settle_failure(&summary, &request_id);
    summary.keep_message_buffer();
    Response::from_parts(head, FaultBody::problem(body))
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::convert::Infallible;

    use axum::body::Body;
    use futures::FutureExt;
    use http::{Request, StatusCode};
    use tower::{service_fn, Layer, ServiceExt};

    use crate::error::marked;
    use crate::FaultLayer;

    /// A 404 answered by a layer alone, and by the inner of two layers of different ledgers.
    fn answer_404(layers: usize) -> http::Response<crate::middleware::FaultBody<Body>> {
        let not_found = service_fn(|_: Request<Body>| async {
            let mut response = http::Response::new(Body::empty());
            *response.status_mut() = StatusCode::NOT_FOUND;
            Ok::<_, Infallible>(response)
        });
        let inner = FaultLayer::new().layer(not_found);
        let request = Request::new(Body::empty());
        let answered = match layers {
            1 => inner.oneshot(request).now_or_never(),
            _ => {
                let outer = FaultLayer::new().layer(inner.map_response(|r| r.map(Body::new)));
                outer.oneshot(request).now_or_never()
            }
        };
        answered.expect("ready at once").expect("infallible")
    }

    #[test]
    fn an_answer_is_marked_rendered_only_for_a_fault_layer_outside_that_reads_the_mark() {
        // Alone, the answer carries no mark: its extensions allocate nothing.
        let alone = answer_404(1);
        assert_eq!(alone.status(), StatusCode::NOT_FOUND);
        assert!(alone.extensions().is_empty());
        assert!(marked(alone.extensions(), alone.status()).is_none());
        // Under a layer of another ledger, the inner answer is marked, and the outer one
        // passes it on with the mark as it found it.
        let nested = answer_404(2);
        assert_eq!(nested.status(), StatusCode::NOT_FOUND);
        assert!(marked(nested.extensions(), nested.status()).is_some());
    }
}
