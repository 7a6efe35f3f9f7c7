//! [`FaultLayer`], its service and its response future: catch, classify, count.

use std::borrow::Cow;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use http::header::{
    CACHE_CONTROL, CONTENT_ENCODING, CONTENT_LANGUAGE, CONTENT_LENGTH, CONTENT_LOCATION,
    CONTENT_RANGE, CONTENT_TYPE, ETAG, LAST_MODIFIED, TRANSFER_ENCODING,
};
use http::{response, HeaderName, HeaderValue, Request, Response, StatusCode};
use http_body::Body;
use pin_project_lite::pin_project;
use tower::{BoxError, Layer, Service};

use crate::body::FaultBody;
use crate::config::{
    Config, MAX_BODY_BYTES, MAX_CHAIN_LINKS, MAX_MESSAGE_BYTES, MIN_BODY_BYTES, MIN_MESSAGE_BYTES,
};
use crate::fault::FaultMarker;
use crate::ledger::{Ledger, LedgerLimits, Outcome};
use crate::panic_hook::catch;
use crate::problem::{self, PROBLEM_JSON};
use crate::report::ReportLevels;
use crate::request::{request_id_text, RequestMeta};
use crate::summary::Summary;

/// The one layer that catches every failure of the service it wraps, answers it with a
/// bounded problem+json body, reports it and counts it in its [`Ledger`].
///
/// Apply it with `Router::layer`, so that it runs after routing and labels failures with the
/// route template; it wraps axum's fallbacks too.
///
/// ```
/// use axum::{body::Body, http::Request, routing::get, Router};
/// use faultline::FaultLayer;
/// use tower::ServiceExt;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let (layer, ledger) = FaultLayer::pair();
/// let app = Router::new()
///     .route("/ok", get(|| async { "ok" }))
///     .route("/metrics", get(ledger.metrics_handler()))
///     .layer(layer);
///
/// let request = Request::get("/missing").body(Body::empty()).unwrap();
/// let response = app.oneshot(request).await.unwrap();
/// assert_eq!(response.status(), 404);
/// assert_eq!(response.headers()["content-type"], "application/problem+json");
/// assert_eq!(ledger.snapshot().rejected, 1);
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct FaultLayer {
    shared: Arc<Shared>,
}

/// What every clone of the service shares: one allocation, one reference count per request.
#[derive(Clone, Debug)]
pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) ledger: Ledger,
    #[cfg(feature = "opentelemetry")]
    pub(crate) otel: Option<Arc<crate::otel::OtelMetrics>>,
}

impl Default for FaultLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl FaultLayer {
    /// A layer with the default caps and a fresh ledger.
    pub fn new() -> Self {
        Self {
            shared: Arc::new(Shared {
                config: Config::default(),
                ledger: Ledger::new(),
                #[cfg(feature = "opentelemetry")]
                otel: None,
            }),
        }
    }

    /// A layer with the default caps, and the handle on its ledger.
    pub fn pair() -> (Self, Ledger) {
        let layer = Self::new();
        let ledger = layer.ledger();
        (layer, ledger)
    }

    /// The handle on this layer's ledger.
    pub fn ledger(&self) -> Ledger {
        self.shared.ledger.clone()
    }

    fn config_mut(&mut self) -> &mut Config {
        &mut Arc::make_mut(&mut self.shared).config
    }

    /// Caps each message of a summary (the error's text, a panic's text, each chain link);
    /// default [`DEFAULT_MAX_MESSAGE_BYTES`](crate::DEFAULT_MAX_MESSAGE_BYTES), at least
    /// [`MIN_MESSAGE_BYTES`](crate::MIN_MESSAGE_BYTES), at most
    /// [`MAX_MESSAGE_BYTES`](crate::MAX_MESSAGE_BYTES).
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.config_mut().max_message_bytes = bytes.clamp(MIN_MESSAGE_BYTES, MAX_MESSAGE_BYTES);
        self
    }

    /// Caps the `source()` links walked; default
    /// [`DEFAULT_MAX_CHAIN_LINKS`](crate::DEFAULT_MAX_CHAIN_LINKS), at most
    /// [`MAX_CHAIN_LINKS`](crate::MAX_CHAIN_LINKS).
    pub fn max_chain_links(mut self, links: usize) -> Self {
        self.config_mut().max_chain_links = links.min(MAX_CHAIN_LINKS);
        self
    }

    /// Caps a whole problem body; default
    /// [`DEFAULT_MAX_BODY_BYTES`](crate::DEFAULT_MAX_BODY_BYTES), at least
    /// [`MIN_BODY_BYTES`](crate::MIN_BODY_BYTES), at most
    /// [`MAX_BODY_BYTES`](crate::MAX_BODY_BYTES).
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.config_mut().max_body_bytes = bytes.clamp(MIN_BODY_BYTES, MAX_BODY_BYTES);
        self
    }

    /// Changes the limits of the layer's ledger in place: handles taken before see them too.
    fn ledger_limits(self, change: impl FnOnce(&mut LedgerLimits)) -> Self {
        let mut limits = self.shared.ledger.limits();
        change(&mut limits);
        self.shared.ledger.set_limits(limits);
        self
    }

    /// Caps the failure series of the ledger; default
    /// [`DEFAULT_MAX_SERIES`](crate::DEFAULT_MAX_SERIES).
    ///
    /// This and the other ledger limits belong to the ledger, which every clone of the layer
    /// and every handle from [`pair`](Self::pair) or [`ledger`](Self::ledger) share.
    pub fn max_series(self, series: usize) -> Self {
        self.ledger_limits(|limits| limits.max_series = series)
    }

    /// Flood control: per fingerprint, at most `events` failure events are written in full
    /// per `window`; the rest are suppressed and counted. Default
    /// [`DEFAULT_REPORTS_PER_WINDOW`](crate::DEFAULT_REPORTS_PER_WINDOW) per
    /// [`DEFAULT_REPORT_WINDOW`](crate::DEFAULT_REPORT_WINDOW).
    pub fn report_burst(self, events: u32, window: std::time::Duration) -> Self {
        self.ledger_limits(|limits| {
            limits.reports.per_window = events;
            limits.reports.window = window;
        })
    }

    /// Caps the fingerprints under flood control; default
    /// [`DEFAULT_MAX_FINGERPRINTS`](crate::DEFAULT_MAX_FINGERPRINTS).
    pub fn max_fingerprints(self, fingerprints: usize) -> Self {
        self.ledger_limits(|limits| limits.reports.max_fingerprints = fingerprints)
    }

    /// Caps the error groups; default [`DEFAULT_MAX_GROUPS`](crate::DEFAULT_MAX_GROUPS).
    pub fn max_groups(self, groups: usize) -> Self {
        self.ledger_limits(|limits| limits.reports.max_groups = groups)
    }

    /// Records every request into OpenTelemetry's `http.server.request.duration` histogram
    /// (attributes `http.request.method`, `http.route`, `http.response.status_code`, and
    /// `error.type` set to the failure's code for every outcome but `ok`), and exports the
    /// ledger's outcome counts as the observable counter `faultline.requests`.
    ///
    /// ```
    /// use opentelemetry::metrics::MeterProvider as _;
    ///
    /// let provider = opentelemetry_sdk::metrics::SdkMeterProvider::builder().build();
    /// let layer = faultline::FaultLayer::new().opentelemetry(&provider.meter("webhooks"));
    /// # let _ = layer;
    /// ```
    #[cfg(feature = "opentelemetry")]
    pub fn opentelemetry(mut self, meter: &opentelemetry::metrics::Meter) -> Self {
        let ledger = self.ledger();
        Arc::make_mut(&mut self.shared).otel =
            Some(Arc::new(crate::otel::OtelMetrics::new(meter, ledger)));
        self
    }

    /// The level of each kind of failure event; see [`ReportLevels`].
    pub fn report_levels(mut self, levels: ReportLevels) -> Self {
        self.config_mut().report_levels = levels;
        self
    }

    /// In development mode clients see the internal message and chain of 5xx failures and
    /// panics too. Never switch it on where clients are not the developers themselves.
    pub fn development(mut self, on: bool) -> Self {
        self.config_mut().development = on;
        self
    }

    /// The header a request id is read from and written to; default `x-request-id`.
    pub fn request_id_header(mut self, name: HeaderName) -> Self {
        self.config_mut().request_id_header = name;
        self
    }

    /// Makes the problem `type` the base followed by the code
    /// (`https://errors.example.com/` gives `https://errors.example.com/unsupported-event`);
    /// by default `type` is `about:blank`.
    pub fn problem_type_base(mut self, base: impl Into<Cow<'static, str>>) -> Self {
        self.config_mut().type_base = Some(base.into());
        self
    }
}

impl<S> Layer<S> for FaultLayer {
    type Service = FaultService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        FaultService {
            inner,
            shared: self.shared.clone(),
            not_ready: None,
        }
    }
}

/// The service [`FaultLayer`] builds. Its error type is `Infallible`: every failure of the
/// inner service becomes a response.
#[derive(Debug)]
pub struct FaultService<S> {
    inner: S,
    shared: Arc<Shared>,
    /// A failure of `poll_ready` (an error or a panic), answered by the next call.
    not_ready: Option<Summary>,
}

impl<S: Clone> Clone for FaultService<S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            shared: self.shared.clone(),
            not_ready: None,
        }
    }
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for FaultService<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
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
        let config = &self.shared.config;
        let inner = &mut self.inner;
        self.not_ready = match catch(|| inner.poll_ready(cx)) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(Ok(()))) => None,
            Ok(Poll::Ready(Err(error))) => {
                Some(Summary::from_service_error(&*error.into(), config))
            }
            Err(payload) => Some(Summary::from_panic(
                Outcome::Panicked,
                StatusCode::INTERNAL_SERVER_ERROR,
                payload,
                config,
            )),
        };
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let meta = RequestMeta::capture(&request, &self.shared.config.request_id_header);
        let tally = Tally::start(self.shared.clone(), meta);
        if let Some(summary) = self.not_ready.take() {
            return ResponseFuture::failed(summary, tally);
        }
        let inner = &mut self.inner;
        match catch(|| inner.call(request)) {
            Ok(future) => ResponseFuture {
                state: State::Calling { future },
                tally: Some(tally),
            },
            Err(payload) => {
                let summary = Summary::from_panic(
                    Outcome::Panicked,
                    StatusCode::INTERNAL_SERVER_ERROR,
                    payload,
                    &self.shared.config,
                );
                ResponseFuture::failed(summary, tally)
            }
        }
    }
}

pin_project! {
    /// The response future of [`FaultService`].
    pub struct ResponseFuture<F, B> {
        #[pin]
        state: State<F, B>,
        tally: Option<Tally>,
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
        Failed { summary: Option<Summary> },
        Done,
    }
}

impl<F, B> ResponseFuture<F, B> {
    fn failed(summary: Summary, tally: Tally) -> Self {
        Self {
            state: State::Failed {
                summary: Some(summary),
            },
            tally: Some(tally),
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
            let tally = this
                .tally
                .as_ref()
                .expect("ResponseFuture polled after completion");
            let config = &tally.shared.config;
            let (head, summary) = match this.state.as_mut().project() {
                StateProj::Calling { future } => {
                    let polled = catch(|| future.poll(cx));
                    match polled {
                        Ok(Poll::Pending) => return Poll::Pending,
                        Ok(Poll::Ready(Ok(response))) => {
                            let marker = response.extensions().get::<FaultMarker>().cloned();
                            if let Some(FaultMarker::Rendered { outcome, code }) = marker {
                                // An inner fault layer answered already: count, keep its answer.
                                let summary =
                                    Summary::already_answered(outcome, response.status(), code);
                                let mut tally = this.tally.take().expect("checked above");
                                tally.settle_unanswered(&summary);
                                this.state.set(State::Done);
                                return Poll::Ready(Ok(response.map(FaultBody::settled)));
                            }
                            if let Some(FaultMarker::Fault(fault)) = marker {
                                let mut head = response.into_parts().0;
                                // `status`, `code`, `headers` are the user's code: a panic there
                                // is a panicking request, not a crashed connection.
                                let described = catch(|| {
                                    let summary = Summary::from_fault(&*fault, config);
                                    fault.headers(&mut head.headers);
                                    summary
                                });
                                match described {
                                    Ok(summary) => (Some(head), summary),
                                    Err(caught) => (
                                        None,
                                        Summary::from_panic(
                                            Outcome::Panicked,
                                            StatusCode::INTERNAL_SERVER_ERROR,
                                            caught,
                                            config,
                                        ),
                                    ),
                                }
                            } else if is_error_status(response.status()) {
                                let (head, body) = response.into_parts();
                                if is_readable(&head, &body) {
                                    this.state.set(State::Reading {
                                        head: Some(head),
                                        body,
                                        text: Vec::new(),
                                    });
                                    continue;
                                }
                                let summary = Summary::from_rejection(head.status, &[], config);
                                (Some(head), summary)
                            } else {
                                let tally = this.tally.take().expect("checked above");
                                this.state.set(State::Done);
                                let status = response.status();
                                // A body of exact size says so itself; only one that does
                                // not needs its declared length parsed from the head.
                                let length = match response.body().size_hint().exact() {
                                    Some(exact) => Some(exact),
                                    None => declared_length(response.headers()),
                                };
                                return Poll::Ready(Ok(response
                                    .map(|body| FaultBody::watched(body, tally, status, length))));
                            }
                        }
                        Ok(Poll::Ready(Err(error))) => {
                            (None, Summary::from_service_error(&*error.into(), config))
                        }
                        Err(payload) => (
                            None,
                            Summary::from_panic(
                                Outcome::Panicked,
                                StatusCode::INTERNAL_SERVER_ERROR,
                                payload,
                                config,
                            ),
                        ),
                    }
                }
                StateProj::Reading { head, body, text } => {
                    let cap = config.max_message_bytes;
                    ready!(read_bounded(body, text, cap, cx));
                    let head = head.take().expect("head is taken once");
                    let summary = Summary::from_rejection(head.status, text, config);
                    (Some(head), summary)
                }
                StateProj::Failed { summary } => (None, summary.take().expect("taken once")),
                StateProj::Done => panic!("ResponseFuture polled after completion"),
            };
            // The inner future or body may panic in its destructor too; that must not unwind
            // through the server.
            let state = this.state.as_mut();
            let _ = catch(move || {
                let mut state = state;
                state.set(State::Done)
            });
            let tally = this.tally.take().expect("checked above");
            return Poll::Ready(Ok(answer(tally, head, summary)));
        }
    }
}

/// Whether a response without a fault is a failure to re-render and count as rejected.
fn is_error_status(status: StatusCode) -> bool {
    status.is_client_error() || status.is_server_error()
}

/// The most an error response's body may declare for the layer to wait for its text.
/// axum's rejections are a few dozen bytes; a larger or open-ended body (a proxied 502 that
/// streams) is not waited for, so a stalled body cannot hold back the answer.
const MAX_READABLE_BODY_BYTES: u64 = 64 * 1024;

/// Whether an error response's body is worth reading for its message: plain text of a known,
/// small size.
fn is_readable<B: Body>(head: &response::Parts, body: &B) -> bool {
    !head.headers.contains_key(CONTENT_ENCODING)
        && body
            .size_hint()
            .upper()
            .is_some_and(|upper| upper <= MAX_READABLE_BODY_BYTES)
}

/// The `Content-Length` a response head declares.
fn declared_length(headers: &http::HeaderMap) -> Option<u64> {
    headers.get(CONTENT_LENGTH)?.to_str().ok()?.parse().ok()
}

/// Headers that describe a body the problem body replaces.
const REPLACED_BODY_HEADERS: [HeaderName; 8] = [
    CONTENT_LENGTH,
    TRANSFER_ENCODING,
    CONTENT_ENCODING,
    CONTENT_RANGE,
    CONTENT_LANGUAGE,
    CONTENT_LOCATION,
    ETAG,
    LAST_MODIFIED,
];

/// Reads `body` into `text` until its end or until `text` holds more than `cap` bytes, so a
/// rejection's message costs at most the cap. An error or a panic of the body ends the read.
fn read_bounded<B: Body<Data = Bytes>>(
    mut body: Pin<&mut B>,
    text: &mut Vec<u8>,
    cap: usize,
    cx: &mut Context<'_>,
) -> Poll<()> {
    while text.len() <= cap {
        let polled = catch(|| body.as_mut().poll_frame(cx));
        match polled {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(Some(Ok(frame)))) => {
                if let Some(data) = frame.data_ref() {
                    // One byte past the cap tells the summary the text was cut.
                    let room = cap + 1 - text.len();
                    text.extend_from_slice(&data[..data.len().min(room)]);
                }
            }
            Ok(Poll::Ready(Some(Err(_)) | None)) | Err(_) => break,
        }
    }
    Poll::Ready(())
}

/// Renders, reports and counts a failure, and builds the problem response.
fn answer<B>(
    mut tally: Tally,
    head: Option<response::Parts>,
    summary: Summary,
) -> Response<FaultBody<B>> {
    let config = &tally.shared.config;
    let request_id = tally.meta.request_id();
    let body = problem::render(
        &summary,
        request_id_text(&request_id),
        tally.meta.path(),
        config,
    );
    let mut head = head.unwrap_or_else(|| Response::new(()).into_parts().0);
    head.status = summary.status;
    // Marks the answer as rendered, so that a fault layer outside this one does not render
    // it again; a handler's fault marker is overwritten in place, without an allocation.
    let rendered = FaultMarker::Rendered {
        outcome: summary.outcome,
        code: summary.code,
    };
    match head.extensions.get_mut::<FaultMarker>() {
        Some(marker) => *marker = rendered,
        None => {
            head.extensions.insert(rendered);
        }
    }
    let headers = &mut head.headers;
    for name in REPLACED_BODY_HEADERS {
        headers.remove(name);
    }
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(config.request_id_header.clone(), request_id.clone());
    tally.settle_failure(&summary, request_id_text(&request_id));
    Response::from_parts(head, FaultBody::problem(Bytes::from(body)))
}

/// One request's place in the ledger, from `call` until its outcome is counted. Dropped
/// before that, it counts the request as cancelled.
#[derive(Debug)]
pub(crate) struct Tally {
    shared: Arc<Shared>,
    meta: RequestMeta,
    phase: Phase,
    #[cfg(feature = "opentelemetry")]
    started_at: Option<std::time::Instant>,
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Waiting for the inner service's response.
    Waiting,
    /// The head went out and the body is streaming; `polled` once the body was asked for.
    Streaming { status: StatusCode, polled: bool },
    /// Counted.
    Settled,
}

impl Tally {
    fn start(shared: Arc<Shared>, meta: RequestMeta) -> Self {
        shared.ledger.start();
        Self {
            #[cfg(feature = "opentelemetry")]
            started_at: shared.otel.as_ref().map(|_| std::time::Instant::now()),
            shared,
            meta,
            phase: Phase::Waiting,
        }
    }

    /// Records the request's duration, when an OpenTelemetry meter is configured.
    #[cfg(feature = "opentelemetry")]
    fn record_duration(&self, status: Option<u16>, error_type: Option<&'static str>) {
        if let (Some(otel), Some(started_at)) = (&self.shared.otel, self.started_at) {
            otel.record(crate::otel::Finished {
                started_at,
                meta: &self.meta,
                status,
                error_type,
            });
        }
    }

    pub(crate) fn config(&self) -> &Config {
        &self.shared.config
    }

    /// The head went out with `status`; the body decides the outcome from here.
    pub(crate) fn streaming(&mut self, status: StatusCode) {
        self.phase = Phase::Streaming {
            status,
            polled: false,
        };
    }

    pub(crate) fn mark_polled(&mut self) {
        if let Phase::Streaming { polled, .. } = &mut self.phase {
            *polled = true;
        }
    }

    pub(crate) fn status(&self) -> StatusCode {
        match self.phase {
            Phase::Streaming { status, .. } => status,
            _ => StatusCode::OK,
        }
    }

    pub(crate) fn settle_ok(&mut self) {
        if !matches!(self.phase, Phase::Settled) {
            #[cfg(feature = "opentelemetry")]
            let _ = catch(|| self.record_duration(Some(self.status().as_u16()), None));
            self.phase = Phase::Settled;
            self.shared.ledger.finish(Outcome::Ok);
        }
    }

    pub(crate) fn settle_failure(&mut self, summary: &Summary, request_id: &str) {
        if matches!(self.phase, Phase::Settled) {
            return;
        }
        self.phase = Phase::Settled;
        let ledger = &self.shared.ledger;
        ledger.record_failure(self.meta.route(), summary.code, summary.status.as_u16());
        // The report runs the subscriber's code (and the exporter's): a panic there must not
        // keep the request from being counted.
        let levels = &self.shared.config.report_levels;
        let _ = catch(|| ledger.report(summary, &self.meta, request_id, levels));
        #[cfg(feature = "opentelemetry")]
        let _ = catch(|| {
            self.record_duration(
                (summary.outcome != Outcome::Cancelled).then(|| summary.status.as_u16()),
                Some(summary.code),
            )
        });
        ledger.finish(summary.outcome);
    }

    /// Settles a failure that has no answer to render (the head is gone or never comes).
    pub(crate) fn settle_unanswered(&mut self, summary: &Summary) {
        let request_id = self.meta.request_id();
        self.settle_failure(summary, request_id_text(&request_id));
    }
}

impl Drop for Tally {
    fn drop(&mut self) {
        match self.phase {
            Phase::Settled => {}
            // A body that was never asked for (a HEAD request, a 204) was delivered whole.
            Phase::Streaming { polled: false, .. } => self.settle_ok(),
            Phase::Waiting | Phase::Streaming { polled: true, .. } => {
                self.settle_unanswered(&Summary::cancelled())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fmt;
    use std::time::Duration;

    use axum::body::{to_bytes, Body};
    use axum::routing::get;
    use axum::Router;
    use http::header::RETRY_AFTER;
    use tower::{service_fn, ServiceBuilder, ServiceExt};

    use super::*;
    use crate::fault::Fault;

    async fn problem_of(response: Response<FaultBody<Body>>) -> (StatusCode, serde_json::Value) {
        let status = response.status();
        let body = to_bytes(axum::body::Body::new(response.into_body()), usize::MAX)
            .await
            .unwrap();
        (status, serde_json::from_slice(&body).unwrap())
    }

    fn get_request(path: &str) -> Request<Body> {
        Request::get(path).body(Body::empty()).unwrap()
    }

    #[tokio::test]
    async fn a_panic_in_the_synchronous_part_of_call_is_a_500() {
        crate::install_panic_hook();
        let (layer, ledger) = FaultLayer::pair();
        let service = layer.layer(tower::service_fn(
            |_: Request<Body>| -> std::future::Ready<Result<Response<Body>, Infallible>> {
                panic!("call exploded before returning a future")
            },
        ));
        let (status, problem) = problem_of(service.oneshot(get_request("/x")).await.unwrap()).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(problem["code"], "panic");
        assert_eq!(ledger.snapshot().panicked, 1);
    }

    #[derive(Debug)]
    struct NotReady;

    impl fmt::Display for NotReady {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("backend pool exhausted")
        }
    }

    impl std::error::Error for NotReady {}

    /// A service whose `poll_ready` fails.
    #[derive(Clone)]
    struct NeverReady;

    impl Service<Request<Body>> for NeverReady {
        type Response = Response<Body>;
        type Error = NotReady;
        type Future = std::future::Ready<Result<Response<Body>, NotReady>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), NotReady>> {
            Poll::Ready(Err(NotReady))
        }

        fn call(&mut self, _: Request<Body>) -> Self::Future {
            unreachable!("never ready")
        }
    }

    #[tokio::test]
    async fn a_poll_ready_error_answers_the_next_call_as_a_service_error() {
        let (layer, ledger) = FaultLayer::pair();
        let response = layer
            .layer(NeverReady)
            .oneshot(get_request("/x"))
            .await
            .unwrap();
        let (status, problem) = problem_of(response).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(problem["code"], "service-error");
        assert!(!problem["detail"].as_str().unwrap().contains("pool"));
        let snapshot = ledger.snapshot();
        assert_eq!((snapshot.service_error, snapshot.started), (1, 1));
    }

    #[tokio::test]
    async fn overload_from_load_shed_is_a_503() {
        let (layer, ledger) = FaultLayer::pair();
        let (gate_tx, gate_rx) = tokio::sync::oneshot::channel::<()>();
        let gate = std::sync::Arc::new(tokio::sync::Mutex::new(Some(gate_rx)));
        let service = ServiceBuilder::new()
            .layer(layer)
            .load_shed()
            .concurrency_limit(1)
            .service(service_fn(move |_: Request<Body>| {
                let gate = gate.clone();
                async move {
                    if let Some(rx) = gate.lock().await.take() {
                        let _ = rx.await;
                    }
                    Ok::<_, Infallible>(Response::new(Body::empty()))
                }
            }));
        let mut first = service.clone();
        let first = tokio::spawn(async move {
            first
                .ready()
                .await
                .unwrap()
                .call(get_request("/a"))
                .await
                .unwrap()
                .status()
        });
        // Wait until the first request holds the only permit.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let (status, problem) = problem_of(service.oneshot(get_request("/b")).await.unwrap()).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(problem["code"], "overloaded");
        gate_tx.send(()).unwrap();
        assert_eq!(first.await.unwrap(), StatusCode::OK);
        let snapshot = ledger.snapshot();
        assert_eq!((snapshot.ok, snapshot.service_error), (1, 1));
    }

    #[derive(Debug)]
    struct Busy;

    impl fmt::Display for Busy {
        fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
            panic!("Display exploded")
        }
    }

    impl std::error::Error for Busy {}

    impl Fault for Busy {
        fn status(&self) -> StatusCode {
            StatusCode::TOO_MANY_REQUESTS
        }

        fn code(&self) -> &'static str {
            "busy"
        }

        fn headers(&self, headers: &mut http::HeaderMap) {
            headers.insert(RETRY_AFTER, HeaderValue::from_static("7"));
        }
    }

    crate::impl_into_response!(Busy);

    #[tokio::test]
    async fn a_fault_whose_display_panics_is_answered_with_a_placeholder_and_its_headers() {
        crate::install_panic_hook();
        let (layer, ledger) = FaultLayer::pair();
        let app = Router::new()
            .route("/busy", get(|| async { Err::<(), _>(Busy) }))
            .layer(layer);
        let response = app.oneshot(get_request("/busy")).await.unwrap();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[RETRY_AFTER], "7");
        let body = to_bytes(response.into_body(), usize::MAX).await.unwrap();
        let problem: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(problem["code"], "busy");
        assert!(problem["detail"].as_str().unwrap().contains("panicked"));
        assert_eq!(ledger.snapshot().handled, 1);
    }

    #[tokio::test]
    async fn development_mode_shows_internal_text_to_the_client() {
        let layer = FaultLayer::new()
            .development(true)
            .problem_type_base("https://errors.example.com/");
        let app = Router::new()
            .route(
                "/io",
                get(|| async {
                    Err::<(), crate::Error>(std::io::Error::other("disk quota exceeded").into())
                }),
            )
            .layer(layer);
        let response = app.oneshot(get_request("/io")).await.unwrap();
        let body = to_bytes(response.into_body(), usize::MAX).await.unwrap();
        let problem: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(problem["status"], 500);
        assert_eq!(problem["detail"], "disk quota exceeded");
        assert_eq!(problem["type"], "https://errors.example.com/internal");
    }

    #[tokio::test]
    async fn a_dropped_response_future_is_cancelled() {
        let (layer, ledger) = FaultLayer::pair();
        let service = layer.layer(service_fn(|_: Request<Body>| async {
            std::future::pending::<Result<Response<Body>, Infallible>>().await
        }));
        let attempt = tokio::time::timeout(
            Duration::from_millis(10),
            service.oneshot(get_request("/x")),
        );
        assert!(attempt.await.is_err());
        let snapshot = ledger.snapshot();
        assert_eq!(
            (snapshot.started, snapshot.cancelled, snapshot.in_flight),
            (1, 1, 0)
        );
    }

    #[derive(Debug)]
    struct BadHeaders;

    impl fmt::Display for BadHeaders {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("slow down")
        }
    }

    impl std::error::Error for BadHeaders {}

    impl Fault for BadHeaders {
        fn status(&self) -> StatusCode {
            StatusCode::TOO_MANY_REQUESTS
        }

        fn code(&self) -> &'static str {
            "slow-down"
        }

        fn headers(&self, _: &mut http::HeaderMap) {
            panic!("a computed Retry-After failed to parse")
        }
    }

    crate::impl_into_response!(BadHeaders);

    #[tokio::test]
    async fn a_panic_in_a_faults_own_methods_is_a_panicked_500() {
        crate::install_panic_hook();
        let (layer, ledger) = FaultLayer::pair();
        let app = Router::new()
            .route("/", get(|| async { Err::<(), _>(BadHeaders) }))
            .layer(layer);
        let response = app.oneshot(get_request("/")).await.unwrap();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = to_bytes(response.into_body(), usize::MAX).await.unwrap();
        let problem: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(problem["code"], "panic");
        let snapshot = ledger.snapshot();
        assert_eq!((snapshot.panicked, snapshot.in_flight), (1, 0));
    }

    /// A subscriber whose every event panics, like a broken log shipper.
    struct PanickingSubscriber;

    impl tracing::Subscriber for PanickingSubscriber {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, _: &tracing::Event<'_>) {
            panic!("the log shipper fell over")
        }
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }

    #[test]
    fn a_panicking_subscriber_does_not_keep_a_request_in_flight() {
        crate::install_panic_hook();
        let (layer, ledger) = FaultLayer::pair();
        let service = layer.layer(service_fn(|_: Request<Body>| async {
            Ok::<_, Infallible>(
                Response::builder()
                    .status(StatusCode::NOT_FOUND)
                    .body(Body::empty())
                    .unwrap(),
            )
        }));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let status = tracing::subscriber::with_default(PanickingSubscriber, || {
            runtime.block_on(async { service.oneshot(get_request("/")).await.unwrap().status() })
        });
        assert_eq!(status, StatusCode::NOT_FOUND);
        let snapshot = ledger.snapshot();
        assert_eq!((snapshot.rejected, snapshot.in_flight), (1, 0));
        assert_eq!(snapshot.reported + snapshot.suppressed, 1);
    }

    #[tokio::test]
    async fn a_replaced_body_takes_its_describing_headers_with_it() {
        let (layer, _) = FaultLayer::pair();
        let service = layer.layer(service_fn(|_: Request<Body>| async {
            Ok::<_, Infallible>(
                Response::builder()
                    .status(StatusCode::BAD_REQUEST)
                    .header("content-encoding", "gzip")
                    .header("etag", "\"abc\"")
                    .header("vary", "accept-encoding")
                    .body(Body::from(vec![0x1f, 0x8b, 0x08, 0x00]))
                    .unwrap(),
            )
        }));
        let response = service.oneshot(get_request("/")).await.unwrap();
        assert!(response.headers().get("content-encoding").is_none());
        assert!(response.headers().get("etag").is_none());
        assert_eq!(response.headers()["vary"], "accept-encoding");
        let (_, problem) = problem_of(response).await;
        assert_eq!(problem["detail"], "The request was rejected.");
    }

    #[tokio::test]
    async fn an_error_body_that_stalls_does_not_hold_back_the_answer() {
        let (layer, ledger) = FaultLayer::pair();
        let service = layer.layer(service_fn(|_: Request<Body>| async {
            let never = futures::stream::pending::<Result<bytes::Bytes, std::io::Error>>();
            Ok::<_, Infallible>(
                Response::builder()
                    .status(StatusCode::BAD_GATEWAY)
                    .body(Body::from_stream(never))
                    .unwrap(),
            )
        }));
        let answered =
            tokio::time::timeout(Duration::from_secs(5), service.oneshot(get_request("/")))
                .await
                .expect("answered without waiting for the body");
        let (status, problem) = problem_of(answered.unwrap()).await;
        assert_eq!(status, StatusCode::BAD_GATEWAY);
        assert_eq!(problem["code"], "bad-gateway");
        assert_eq!(ledger.snapshot().rejected, 1);
    }

    #[tokio::test]
    async fn limits_set_after_pair_apply_to_the_handed_out_ledger() {
        let (layer, ledger) = FaultLayer::pair();
        let layer = layer.report_burst(1, Duration::from_secs(60)).max_series(1);
        let app = Router::new()
            .route("/", get(|| async { "ok" }))
            .layer(layer);
        for path in ["/", "/a", "/b", "/a"] {
            app.clone().oneshot(get_request(path)).await.unwrap();
        }
        let snapshot = ledger.snapshot();
        assert_eq!((snapshot.ok, snapshot.rejected), (1, 3));
        // One 404 series fits; every failure shares its fingerprint, so one event is written.
        assert_eq!((snapshot.reported, snapshot.suppressed), (1, 2));
        assert_eq!(snapshot.series.len(), 1);
    }

    #[tokio::test]
    async fn caps_asked_to_be_unbounded_are_clamped_not_overflowed() {
        let layer = FaultLayer::new()
            .max_message_bytes(usize::MAX)
            .max_chain_links(usize::MAX)
            .max_body_bytes(usize::MAX);
        let app = Router::new()
            .route(
                "/",
                get(|| async {
                    Err::<(), _>(crate::Error::new(
                        StatusCode::BAD_REQUEST,
                        "big",
                        "x".repeat(200_000),
                    ))
                }),
            )
            .layer(layer);
        let response = app.oneshot(get_request("/")).await.unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let body = to_bytes(response.into_body(), usize::MAX).await.unwrap();
        assert!(body.len() <= crate::MAX_BODY_BYTES);
        let problem: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let detail = problem["detail"].as_str().unwrap();
        assert!(detail.len() <= crate::MAX_MESSAGE_BYTES);
        assert!(detail.ends_with(crate::TRUNCATION_MARKER));
    }

    #[tokio::test]
    async fn nested_layers_render_once_and_each_counts_once() {
        let (inner_layer, inner) = FaultLayer::pair();
        let (outer_layer, outer) = FaultLayer::pair();
        let app = Router::new()
            .route(
                "/",
                get(|| async {
                    Err::<(), _>(crate::Error::new(StatusCode::CONFLICT, "taken", "taken"))
                }),
            )
            .layer(inner_layer)
            .layer(outer_layer);
        let response = app.oneshot(get_request("/missing")).await.unwrap();
        let request_id = response.headers()["x-request-id"].clone();
        let (status, problem) = problem_of_body(response).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(problem["code"], "not-found");
        assert_eq!(problem["detail"], "No route matches this path.");
        assert_eq!(problem["request_id"], request_id.to_str().unwrap());
        for ledger in [inner, outer] {
            let snapshot = ledger.snapshot();
            assert_eq!((snapshot.started, snapshot.rejected), (1, 1));
        }
    }

    async fn problem_of_body(response: Response<Body>) -> (StatusCode, serde_json::Value) {
        let status = response.status();
        let body = to_bytes(response.into_body(), usize::MAX).await.unwrap();
        (status, serde_json::from_slice(&body).unwrap())
    }

    #[tokio::test]
    async fn a_panic_the_service_caught_itself_leaves_no_stale_site_behind() {
        crate::install_panic_hook();
        let (layer, ledger) = FaultLayer::pair();
        let service = layer.layer(service_fn(|request: Request<Body>| async move {
            if request.uri().path() == "/resume" {
                // A re-raised panic skips every panic hook: it has no site of its own.
                std::panic::resume_unwind(Box::new("re-raised"));
            }
            // A panic the service catches on its own, inside the layer.
            let _ = std::panic::catch_unwind(|| panic!("handled inside"));
            Ok::<_, Infallible>(Response::new(Body::empty()))
        }));
        let ok = service.clone().oneshot(get_request("/")).await.unwrap();
        assert_eq!(ok.status(), StatusCode::OK);
        let resumed = service.oneshot(get_request("/resume")).await.unwrap();
        assert_eq!(resumed.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let groups = ledger.groups();
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].message, "re-raised");
        assert_eq!(
            groups[0].location, None,
            "a stale site from the earlier panic"
        );
    }
}
