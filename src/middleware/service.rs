//! [`FaultService`]: calls the inner service under a panic guard, with the request's drop
//! guard armed before anything else runs.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body::Body;
use tower::{BoxError, Layer, Service};

use crate::middleware::body::FaultBody;
use crate::middleware::drain::tap;
use crate::middleware::future::ResponseFuture;
use crate::middleware::guard::{counted_by, passing_through, RequestGuard};
use crate::middleware::layer::FaultLayer;
use crate::middleware::shared::{StripeHandle, StripeHandles};
use crate::outcome::Outcome;
use crate::panic::catch;
use crate::request::interned_route;
use crate::summary::Summary;
use axum::body::Body as RequestBody;

/// The service [`FaultLayer`] builds. Its error type is `Infallible`: every failure of the
/// inner service becomes a response.
///
/// It serves requests with an [`axum::body::Body`], the body axum's router and `axum::serve`
/// give every service (a service fed by hyper directly maps its `Incoming` body with
/// `Body::new` first). On HTTP/1.x a body is watched on its way in, so that what an answer
/// leaves of it is read and discarded within bounds, or the answer says `connection: close`
/// ([`FaultLayer::max_drain_bytes`](crate::FaultLayer::max_drain_bytes)).
#[derive(Debug)]
pub struct FaultService<S> {
    inner: S,
    /// The shared state, through the calling thread's handle.
    handle: Arc<StripeHandle>,
    /// Every handle, held by the services the layer built (not by per-request clones), so that
    /// the handles live as long as the router does.
    _handles: Option<StripeHandles>,
    /// A failure of `poll_ready` (an error or a panic), answered by the next call; boxed,
    /// since it is rare and the service is moved with every request.
    not_ready: Option<Box<Summary>>,
}

impl<S: Clone> Clone for FaultService<S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            handle: self.handle.here(),
            _handles: None,
            not_ready: None,
        }
    }
}

impl<S, ResBody> Service<Request<RequestBody>> for FaultService<S>
where
    S: Service<Request<RequestBody>, Response = Response<ResBody>>,
    S::Error: Into<BoxError>,
    ResBody: Body<Data = Bytes>,
    ResBody::Error: Into<BoxError>,
{
    type Response = Response<FaultBody<ResBody>>;
    type Error = Infallible;
    type Future = ResponseFuture<S::Future, ResBody>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if self.not_ready.is_some() {
            return Poll::Ready(Ok(()));
        }
        let config = &self.handle.config;
        let inner = &mut self.inner;
        self.not_ready = match catch(|| inner.poll_ready(cx)) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(Ok(()))) => None,
            Ok(Poll::Ready(Err(error))) => Some(Box::new(Summary::from_service_error(
                &*error.into(),
                config,
            ))),
            Err(payload) => Some(Box::new(Summary::from_panic(
                Outcome::Panicked,
                StatusCode::INTERNAL_SERVER_ERROR,
                *payload,
                config,
            ))),
        };
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: Request<RequestBody>) -> Self::Future {
        let ledger = self.handle.ledger.id();
        if counted_by(ledger) {
            return self.pass_through(request);
        }
        let guard = RequestGuard::start(self.handle.clone(), &request);
        // Tapped before anything can drop it: a request refused here leaves its body too.
        let tap = tap(&mut request);
        if let Some(summary) = self.not_ready.take() {
            drop(request);
            return ResponseFuture::failed(summary, guard, tap);
        }
        let inner = &mut self.inner;
        // The closure holds the request by reference, so that it is moved once, into the call,
        // and not with the closure through the catch.
        let mut request = Some(request);
        ResponseFuture::calling(guard, tap, || {
            inner.call(request.take().expect("called once"))
        })
    }
}

impl<S> FaultService<S> {
    /// Wraps `inner` as [`layer`](Layer::layer) does: the service counts into the layer's
    /// ledger and shares the layer's caps.
    ///
    /// ```
    /// use axum::{body::Body, http::Request};
    /// use faultline::service::FaultService;
    /// use faultline::FaultLayer;
    /// use tower::{service_fn, ServiceExt};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let (layer, ledger) = FaultLayer::pair();
    /// let inner = service_fn(|_: Request<Body>| async {
    ///     Ok::<_, std::io::Error>(axum::http::Response::new(Body::from("ok")))
    /// });
    /// let service = FaultService::new(inner, &layer);
    /// let _ = service.get_ref();
    /// let response = service.oneshot(Request::new(Body::empty())).await.unwrap();
    /// assert_eq!(response.status(), 200);
    /// // `ok` once the body is sent to its end: here, read whole.
    /// axum::body::to_bytes(Body::new(response.into_body()), 1024).await.unwrap();
    /// assert_eq!(ledger.snapshot().ok, 1);
    /// # }
    /// ```
    pub fn new(inner: S, layer: &FaultLayer) -> Self {
        layer.layer(inner)
    }
}

impl<S> FaultService<S> {
    /// Calls the inner service for a request that a layer of the same ledger, outside this
    /// one, counts already: no guard, no catching (that layer's catch is around this call),
    /// and a failure of `poll_ready` goes out to it.
    fn pass_through<ResBody>(
        &mut self,
        request: Request<RequestBody>,
    ) -> ResponseFuture<S::Future, ResBody>
    where
        S: Service<Request<RequestBody>, Response = Response<ResBody>>,
    {
        passing_through(interned_route(&request));
        match self.not_ready.take() {
            Some(summary) => ResponseFuture::passing_failure(summary),
            // The counting layer outside tapped the body already.
            None => ResponseFuture::passing(self.inner.call(request), self.handle.clone()),
        }
    }

    /// The service over `inner`, sharing the shared state (ledger included) of the layer's
    /// other services.
    pub(crate) fn with_handles(inner: S, handles: StripeHandles) -> Self {
        Self {
            inner,
            handle: handles[0].here(),
            _handles: Some(handles),
            not_ready: None,
        }
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, to change.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service, unwrapped.
    pub fn into_inner(self) -> S {
        self.inner
    }
}
