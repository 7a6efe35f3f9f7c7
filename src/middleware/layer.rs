//! [`FaultLayer`]: the builder of the caps, the ledger and the reports a [`FaultService`]
//! works with.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::OnceLock;

use http::HeaderName;
use tower::Layer;

use crate::config::{Config, ReportLevels};
use crate::count::Ledger;
use crate::limits::{
    MAX_BODY_BYTES, MAX_CHAIN_LINKS, MAX_MESSAGE_BYTES, MIN_BODY_BYTES, MIN_MESSAGE_BYTES,
};
use crate::middleware::service::FaultService;
use crate::middleware::shared::{Bridges, Shared, StripeHandles};

/// The one layer that catches every failure of the service it wraps, answers it with a
/// bounded problem+json body, reports it and counts it in its [`Ledger`].
///
/// Apply it with `Router::layer`, so that it runs after routing and labels failures with the
/// route template; it wraps axum's fallbacks too. Layers whose headers every answer needs
/// (CORS, request ids) go outside it; layers that fail with an error (limits, load shedding,
/// timeouts) inside; the README shows the stack.
///
/// One layer, or its clones, may wrap a nested router and the router around it: a request
/// counts once in the ledger, where the outer one counts, answers and reports it, and the
/// inner one passes it through (the outer one's catch is around it), hands a service error it
/// meets out to the outer one, and names the route when the outer one could not (a router
/// nested with `Router::nest_service`). The mark that says so is the thread's while the outer one
/// calls and polls its inner service, so an in-process request made from inside a request,
/// through a layer of the same ledger, counts as part of that request. Layers of different
/// ledgers each count every request: an answer the inner one rendered passes the outer one
/// untouched and is counted there under the same outcome and code.
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
    /// Behind one pointer, so that a clone is one reference count: axum clones the layer and
    /// calls `layer` once per route, or once per request for a router called as a service
    /// without `with_state`.
    builder: Arc<Builder>,
}

/// What a layer is built from; copied on write by the builder calls.
#[derive(Clone, Debug)]
struct Builder {
    config: Config,
    ledger: Ledger,
    bridges: Bridges,
    /// The shared state of the services this layer builds, made on the first `layer` call
    /// and shared by every clone; a builder call starts a new one.
    handles: OnceLock<StripeHandles>,
}

impl Default for FaultLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl FaultLayer {
    /// A layer with the default caps and a fresh ledger.
    pub fn new() -> Self {
        Self::with_ledger(Ledger::new())
    }

    /// A layer with the default caps that counts into `ledger`, made with the bounds it
    /// needs by [`Ledger::builder`]. Two layers given one ledger count into the same tables.
    pub fn with_ledger(ledger: Ledger) -> Self {
        Self {
            builder: Arc::new(Builder {
                config: Config::default(),
                ledger,
                bridges: Bridges::default(),
                handles: OnceLock::new(),
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
        self.builder.ledger.clone()
    }

    /// The builder, copied if shared, with its services' shared state to be made anew.
    fn builder_mut(&mut self) -> &mut Builder {
        let builder = Arc::make_mut(&mut self.builder);
        builder.handles = OnceLock::new();
        builder
    }

    fn config_mut(&mut self) -> &mut Config {
        &mut self.builder_mut().config
    }

    /// Caps each message of a summary (the error's text, a panic's text, each chain link);
    /// default [`DEFAULT_MAX_MESSAGE_BYTES`](crate::limits::DEFAULT_MAX_MESSAGE_BYTES), at least
    /// [`MIN_MESSAGE_BYTES`], at most
    /// [`MAX_MESSAGE_BYTES`].
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.config_mut().max_message_bytes = bytes.clamp(MIN_MESSAGE_BYTES, MAX_MESSAGE_BYTES);
        self
    }

    /// Caps the `source()` links walked; default
    /// [`DEFAULT_MAX_CHAIN_LINKS`](crate::limits::DEFAULT_MAX_CHAIN_LINKS), at most
    /// [`MAX_CHAIN_LINKS`].
    pub fn max_chain_links(mut self, links: usize) -> Self {
        self.config_mut().max_chain_links = links.min(MAX_CHAIN_LINKS);
        self
    }

    /// Caps a whole problem body; default
    /// [`DEFAULT_MAX_BODY_BYTES`](crate::limits::DEFAULT_MAX_BODY_BYTES), at least
    /// [`MIN_BODY_BYTES`], at most
    /// [`MAX_BODY_BYTES`].
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.config_mut().max_body_bytes = bytes.clamp(MIN_BODY_BYTES, MAX_BODY_BYTES);
        self
    }

    /// Records every request into OpenTelemetry's `http.server.request.duration` histogram
    /// (attributes `http.request.method`, `http.route`, `http.response.status_code`, and
    /// `error.type` set to the failure's code for every outcome but `ok`), and exports the
    /// ledger's outcome counts as the observable counter `faultline.requests`, beside
    /// `faultline.requests.started`, so that the two reconcile.
    ///
    /// ```
    /// use opentelemetry::metrics::MeterProvider as _;
    ///
    /// let provider = opentelemetry_sdk::metrics::SdkMeterProvider::builder().build();
    /// let layer = faultline::FaultLayer::new().record_opentelemetry(&provider.meter("webhooks"));
    /// # let _ = layer;
    /// ```
    #[cfg(feature = "opentelemetry")]
    pub fn record_opentelemetry(mut self, meter: &opentelemetry::metrics::Meter) -> Self {
        let ledger = self.ledger();
        self.builder_mut().bridges.opentelemetry = Some(Arc::new(
            crate::export::OpenTelemetryBridge::new(meter, ledger),
        ));
        self
    }

    /// Records into the [`metrics`](https://docs.rs/metrics) facade, through the recorder
    /// installed when this is called (so install it first):
    /// `faultline_requests_started_total`, `faultline_requests_total{outcome}`,
    /// `faultline_errors_total{route,code,status}`
    /// (capped like the ledger's series, past the cap under
    /// [`OVERFLOW_LABEL`](crate::ledger::OVERFLOW_LABEL)), `faultline_reports_total{disposition}`,
    /// the gauge `faultline_in_flight`, and the histogram
    /// [`HTTP_DURATION_METRIC`](crate::metrics::HTTP_DURATION_METRIC) in seconds, labelled
    /// `http.request.method`, `http.route`, `http.response.status_code` and, for failures,
    /// `error.type` (the failure's code).
    ///
    /// Like `record_opentelemetry`, it turns a bridge on; the
    /// ledger stays the exact source of truth.
    ///
    /// ```
    /// let recorder = metrics_util::debugging::DebuggingRecorder::new();
    /// let snapshotter = recorder.snapshotter();
    /// let layer = metrics::with_local_recorder(&recorder, || {
    ///     faultline::FaultLayer::new().record_metrics()
    /// });
    /// # let _ = layer;
    /// // The counters per outcome are registered up front.
    /// assert!(snapshotter.snapshot().into_vec().len() >= faultline::ledger::Outcome::ALL.len());
    /// ```
    #[cfg(feature = "metrics")]
    pub fn record_metrics(mut self) -> Self {
        let max_series = self.builder.ledger.max_series();
        self.builder_mut().bridges.metrics =
            Some(Arc::new(crate::export::MetricsBridge::new(max_series)));
        self
    }

    /// Caps what the layer reads of a request body that an HTTP/1.1 answer left unread, so that
    /// the connection can serve the next request; default
    /// [`DEFAULT_MAX_DRAIN_BYTES`](crate::limits::DEFAULT_MAX_DRAIN_BYTES). A rest declared
    /// longer is not read at all, and one found longer stops being read: either way the answer
    /// says `connection: close`, so the client opens a new connection for its next request
    /// instead of losing it. 0 reads nothing and closes every such connection.
    ///
    /// hyper closes a connection whose request body was left unread after the answer, without
    /// a word; the client's next request on it is lost unseen. The answer waits for the read,
    /// as Go's `net/http` makes it wait, so that a client that sends its whole request before
    /// it reads (most do) is not left blocked. HTTP/2 is left as it is. What draining costs
    /// and what it keeps is counted: [`Snapshot::unread_bodies`](crate::ledger::Snapshot::unread_bodies).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let layer = faultline::FaultLayer::new()
    ///     .max_drain_bytes(256 * 1024) // Go's bound
    ///     .max_drain_time(Duration::from_secs(2));
    /// # let _ = layer;
    /// ```
    pub fn max_drain_bytes(mut self, bytes: u64) -> Self {
        self.config_mut().drain.max_bytes = bytes;
        self
    }

    /// Caps how long the layer waits for the unread rest of a request body before the answer
    /// leaves with `connection: close`; default
    /// [`DEFAULT_MAX_DRAIN_TIME`](crate::limits::DEFAULT_MAX_DRAIN_TIME). A client that trickles
    /// its body holds its answer this long at most, and no worker meanwhile. See
    /// [`max_drain_bytes`](Self::max_drain_bytes).
    pub fn max_drain_time(mut self, time: std::time::Duration) -> Self {
        self.config_mut().drain.max_time = time;
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
        let builder = &*self.builder;
        let handles = builder.handles.get_or_init(|| {
            let shared = Shared::new(
                builder.config.clone(),
                builder.ledger.clone(),
                builder.bridges.clone(),
            );
            shared.into_handles()
        });
        FaultService::with_handles(inner, handles.clone())
    }
}
