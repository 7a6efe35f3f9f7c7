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
//! A request that a layer of the same ledger outside this one counts already has no guard
//! here: `Passing` hands the inner response on as it is, or a service error out as a
//! [`HandedOver`] summary; `Failed` hands its summary out the same way.

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

use crate::config::Config;
use crate::error::marker;
use crate::error::FaultMarker;
use crate::middleware::body::FaultBody;
use crate::middleware::classify::{
    declared_length, is_error_status, is_readable, read_bounded, remove_replaced_body_headers,
};
use crate::middleware::guard::{HandedOver, RequestGuard};
use crate::middleware::shared::Lane;
use crate::outcome::Outcome;
use crate::panic::{catch, Caught};
use crate::render::problem::{self, PROBLEM_JSON};
use crate::render::summary::Summary;
use crate::request::request_id_text;

pin_project! {
    /// The response future of [`FaultService`](crate::FaultService).
    pub struct ResponseFuture<F, B> {
        #[pin]
        state: State<F, B>,
        guard: Option<RequestGuard>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F, B> {
        // The inner service's future is being polled.
        Calling { #[pin] future: F },
        // An error status came without a fault: its body is read, bounded, for the message.
        Reading { head: Option<response::Parts>, #[pin] body: B, text: Vec<u8> },
        // The failure is known before any polling (a panic in `call`, a `poll_ready` error).
        Failed { summary: Option<Box<Summary>> },
        // A request an outer layer of the same ledger counts: passed through.
        Passing { #[pin] future: F, lane: Arc<Lane> },
        Done,
    }
}

/// What one poll of a state decided.
enum Step<B> {
    Pending,
    /// An answer an inner fault layer rendered and counted: passed on, counted here too.
    Forward(Response<B>, Summary),
    /// An error status whose body is read for its message first.
    Read(response::Parts, B),
    /// A failure to answer, with the head of the response it replaces, if any.
    Answer(Option<response::Parts>, Summary),
}

impl<F, B> ResponseFuture<F, B> {
    pub(crate) fn calling(future: F, guard: RequestGuard) -> Self {
        Self {
            state: State::Calling { future },
            guard: Some(guard),
        }
    }

    pub(crate) fn failed(summary: Box<Summary>, guard: RequestGuard) -> Self {
        Self {
            state: State::Failed {
                summary: Some(summary),
            },
            guard: Some(guard),
        }
    }

    /// Passes a request through for the outer layer of the same ledger that counts it.
    pub(crate) fn passing(future: F, lane: Arc<Lane>) -> Self {
        Self {
            state: State::Passing { future, lane },
            guard: None,
        }
    }

    /// Hands a failure out to the outer layer of the same ledger that counts the request.
    pub(crate) fn handing_over(summary: Box<Summary>) -> Self {
        Self {
            state: State::Failed {
                summary: Some(summary),
            },
            guard: None,
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
            let Some(guard) = this.guard.as_mut() else {
                return poll_passing(this.state, cx).map(Ok);
            };
            let step = match this.state.as_mut().project() {
                StateProj::Calling { future } => {
                    match guard.counting(|| catch(|| future.poll(cx))) {
                        Ok(Poll::Pending) => return Poll::Pending,
                        Ok(Poll::Ready(Ok(response))) if is_plain_success(&response) => {
                            // The common case, straight on: nothing here is moved more than
                            // once more.
                            this.state.set(State::Done);
                            let guard = this.guard.take().expect("checked above");
                            return Poll::Ready(Ok(pass(response, guard)));
                        }
                        polled => failed_or_marked(polled, guard.config()),
                    }
                }
                StateProj::Reading { head, body, text } => {
                    let config = guard.config();
                    ready!(read_bounded(body, text, config.max_message_bytes, cx));
                    let head = head.take().expect("head is taken once");
                    let summary = Summary::from_rejection(head.status, text, config);
                    Step::Answer(Some(head), summary)
                }
                StateProj::Failed { summary } => {
                    Step::Answer(None, *summary.take().expect("taken once"))
                }
                StateProj::Passing { .. } | StateProj::Done => {
                    panic!("ResponseFuture polled after completion")
                }
            };
            let response = match step {
                Step::Pending => return Poll::Pending,
                Step::Read(head, body) => {
                    let head = Some(head);
                    this.state.set(State::Reading {
                        head,
                        body,
                        text: Vec::new(),
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
            return Poll::Ready(Ok(response));
        }
    }
}

/// Polls a request passed through for an outer layer of the same ledger: the response as it
/// is, a failure handed out to that layer. No catch: that layer's is around this poll.
fn poll_passing<F, B, E>(
    mut state: Pin<&mut State<F, B>>,
    cx: &mut Context<'_>,
) -> Poll<Response<FaultBody<B>>>
where
    F: Future<Output = Result<Response<B>, E>>,
    E: Into<BoxError>,
    B: Body<Data = Bytes>,
{
    let summary = match state.as_mut().project() {
        StateProj::Passing { future, lane } => match ready!(future.poll(cx)) {
            Ok(response) => {
                state.set(State::Done);
                return Poll::Ready(response.map(FaultBody::settled));
            }
            Err(error) => Summary::from_service_error(&*error.into(), &lane.config),
        },
        StateProj::Failed { summary } => *summary.take().expect("taken once"),
        _ => panic!("ResponseFuture polled after completion"),
    };
    state.set(State::Done);
    let status = summary.status;
    let mut response = Response::new(FaultBody::default());
    *response.status_mut() = status;
    response
        .extensions_mut()
        .insert(HandedOver(Arc::new(summary)));
    Poll::Ready(response)
}

/// What one poll of the inner future that was not a plain success is: a response to
/// classify, a service error or a panic to answer.
fn failed_or_marked<B, E>(
    polled: Result<Poll<Result<Response<B>, E>>, Box<Caught>>,
    config: &Config,
) -> Step<B>
where
    E: Into<BoxError>,
    B: Body,
{
    match polled {
        Ok(Poll::Pending) => Step::Pending,
        Ok(Poll::Ready(Ok(response))) => classify(response, config),
        Ok(Poll::Ready(Err(error))) => {
            Step::Answer(None, Summary::from_service_error(&*error.into(), config))
        }
        Err(caught) => Step::Answer(None, panicked(*caught, config)),
    }
}

/// A response that is neither an error status nor marked by a fault: passed on as it is.
/// `classify` would say the same, after looking at more.
fn is_plain_success<B>(response: &Response<B>) -> bool {
    !is_error_status(response.status()) && response.extensions().get::<FaultMarker>().is_none()
}

/// What a response of the inner service that is not a plain success is: a fault to render,
/// an answer already rendered, or an error status to re-render.
fn classify<B: Body>(response: Response<B>, config: &Config) -> Step<B> {
    match response.extensions().get::<FaultMarker>().cloned() {
        Some(FaultMarker::Rendered { outcome, code }) => {
            let summary = Summary::already_answered(outcome, response.status(), code);
            Step::Forward(response, summary)
        }
        Some(FaultMarker::Fault(fault)) => {
            let mut head = response.into_parts().0;
            // `status`, `code`, `headers` are the user's code: a panic there is a panicking
            // request, not a crashed connection.
            let described = catch(|| {
                let summary = Summary::from_fault(&*fault, config);
                fault.headers(&mut head.headers);
                summary
            });
            match described {
                Ok(summary) => Step::Answer(Some(head), summary),
                Err(caught) => Step::Answer(None, panicked(*caught, config)),
            }
        }
        None => {
            // An error status: a plain success went on without coming here.
            if let Some((outcome, code)) = marker::marked(response.extensions(), response.status())
            {
                let summary = Summary::already_answered(outcome, response.status(), code);
                return Step::Forward(response, summary);
            }
            if let Some(HandedOver(summary)) = response.extensions().get::<HandedOver>() {
                return Step::Answer(None, Summary::clone(summary));
            }
            let (head, body) = response.into_parts();
            if is_readable(&head, &body) && !body.is_end_stream() {
                return Step::Read(head, body);
            }
            let summary = Summary::from_rejection(head.status, &[], config);
            Step::Answer(Some(head), summary)
        }
    }
}

fn panicked(caught: Caught, config: &Config) -> Summary {
    Summary::from_panic(
        Outcome::Panicked,
        StatusCode::INTERNAL_SERVER_ERROR,
        caught,
        config,
    )
}

/// Passes a success on, its body watched until its end.
fn pass<B: Body>(response: Response<B>, guard: RequestGuard) -> Response<FaultBody<B>> {
    let status = response.status();
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
    // Checked once: the header value is printable, as `request_id` makes it.
    let id_text = request_id_text(&request_id);
    let body = problem::body(&summary, id_text, guard.meta().path(), config);
    head.status = summary.status;
    // Marks the answer as rendered, so that a fault layer outside this one does not render
    // it again.
    marker::mark(
        &mut head.extensions,
        summary.outcome,
        summary.status,
        summary.code,
    );
    let headers = &mut head.headers;
    remove_replaced_body_headers(headers, summary.status);
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(config.request_id_header.clone(), request_id.clone());
    guard.settle_failure(&summary, id_text);
    Response::from_parts(head, FaultBody::problem(body))
}
