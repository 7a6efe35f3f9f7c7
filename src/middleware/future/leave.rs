//! How a response leaves the [`ResponseFuture`](super::ResponseFuture) other than straight
//! on: passed through for an outer layer of the same ledger, or after what it left of its
//! request body is read ([`drain`](crate::middleware::drain)). Each path is out of line, so
//! that the poll of a request that takes none of them stays as small as it was.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use http::Response;
use http_body::Body;
use tower::BoxError;

use super::{pass, State, StateProj};
use crate::middleware::body::FaultBody;
use crate::middleware::drain::{close, Drain, Plan, Tap};
use crate::middleware::guard::{PassedFailure, RequestGuard};
use crate::middleware::shared::StripeHandle;
use crate::summary::Summary;

/// Polls a request passed through for an outer layer of the same ledger: the response as it
/// is, a failure passed out to that layer. No catch: that layer's is around this poll.
pub(super) fn poll_passing<F, B, E>(
    mut state: Pin<&mut State<F, B>>,
    cx: &mut Context<'_>,
) -> Poll<Response<FaultBody<B>>>
where
    F: Future<Output = Result<Response<B>, E>>,
    E: Into<BoxError>,
    B: Body<Data = Bytes>,
{
    let summary = match state.as_mut().project() {
        StateProj::Passing { future, handle } => match ready!(future.poll(cx)) {
            Ok(response) => {
                state.set(State::Done);
                return Poll::Ready(response.map(FaultBody::settled));
            }
            Err(error) => Summary::from_service_error(&*error.into(), &handle.config),
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
        .insert(PassedFailure(Arc::new(summary)));
    Poll::Ready(response)
}

/// A response waiting for what it left of its request body to be read.
pub(super) struct Draining<B> {
    response: Option<Response<FaultBody<B>>>,
    drain: Drain,
    handle: Arc<StripeHandle>,
}

/// Passes a success on, as [`pass`] does, for a request whose body was tapped: out of line,
/// so that the success of a request without a body pays one check for it.
#[inline(never)]
pub(super) fn pass_tapped<F, B: Body>(
    state: Pin<&mut State<F, B>>,
    tap: Tap,
    guard: RequestGuard,
    response: Response<B>,
    cx: &mut Context<'_>,
) -> Poll<Response<FaultBody<B>>> {
    let handle = guard.handle().clone();
    leave(state, tap, handle, pass(response, guard), cx)
}

/// Lets `response` leave: at once, with `connection: close`, or once what it left of the
/// request body is read. Out of line, as the rare path it is: the poll of every other
/// request stays as small as it was.
#[inline(never)]
pub(super) fn leave<F, B>(
    mut state: Pin<&mut State<F, B>>,
    tap: Tap,
    handle: Arc<StripeHandle>,
    mut response: Response<FaultBody<B>>,
    cx: &mut Context<'_>,
) -> Poll<Response<FaultBody<B>>> {
    match tap.plan(&handle.config.drain, response.status()) {
        Plan::Keep => Poll::Ready(response),
        Plan::Close => {
            close(&mut response, &handle.ledger, 0);
            Poll::Ready(response)
        }
        Plan::Drain(drain) => {
            state.set(State::Draining {
                draining: Box::new(Draining {
                    response: Some(response),
                    drain,
                    handle,
                }),
            });
            poll_draining(state, cx)
        }
    }
}

/// Reads the rest of the request body, then lets the response leave, with
/// `connection: close` if the rest could not be read within the bounds.
#[inline(never)]
pub(super) fn poll_draining<F, B>(
    mut state: Pin<&mut State<F, B>>,
    cx: &mut Context<'_>,
) -> Poll<Response<FaultBody<B>>> {
    let StateProj::Draining { draining } = state.as_mut().project() else {
        unreachable!("polled while draining")
    };
    let Draining {
        response,
        drain,
        handle,
    } = &mut **draining;
    let kept = ready!(drain.poll_drain(cx));
    let mut response = response.take().expect("taken once");
    if kept {
        handle.ledger.unread_body(true, drain.read());
    } else {
        close(&mut response, &handle.ledger, drain.read());
    }
    state.set(State::Done);
    Poll::Ready(response)
}
