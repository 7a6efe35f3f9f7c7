//! The request's span status set as OpenTelemetry's HTTP semantic conventions say, with the
//! `tracing-opentelemetry` feature on: one test per outcome, each over TCP, the spans made by
//! tower-http's `TraceLayer` around the fault layer and exported through
//! `tracing-opentelemetry` into the SDK's in-memory exporter.
//! `cargo test --features tracing-opentelemetry --test span_status`.

#![cfg(feature = "tracing-opentelemetry")]

mod common;

use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::{Request, Response, StatusCode};
use axum::routing::get;
use axum::Router;
use common::Lab;
use faultline::FaultLayer;
use opentelemetry::trace::{Status, TracerProvider as _};
use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tokio::io::AsyncWriteExt;
use tower::Layer as _;
use tower_http::trace::TraceLayer;
use tracing_subscriber::layer::SubscriberExt as _;

/// How long a test waits for the request's span to be exported, which happens when its last
/// handle is dropped: after the body was sent, or the connection was gone.
const EXPORT_WAIT: Duration = Duration::from_secs(10);

/// The pause before each chunk of the failing body: long enough for its head to be sent first.
const CHUNK_PAUSE: Duration = Duration::from_millis(20);

/// Spans exported in memory, through the subscriber this test's thread uses. Each test runs
/// on a current-thread runtime, so the server, its connections and the client all run on
/// that thread, under that subscriber.
struct Traced {
    exporter: InMemorySpanExporter,
    _provider: SdkTracerProvider,
    _default: tracing::subscriber::DefaultGuard,
}

fn traced() -> Traced {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("span-status")));
    Traced {
        exporter,
        _provider: provider,
        _default: tracing::subscriber::set_default(subscriber),
    }
}

impl Traced {
    /// The span `TraceLayer` made for the one request, once exported.
    async fn request_span(&self) -> SpanData {
        let deadline = Instant::now() + EXPORT_WAIT;
        loop {
            let spans = self.exporter.get_finished_spans().unwrap();
            if let Some(span) = spans.into_iter().find(|s| s.name == "request") {
                return span;
            }
            assert!(
                Instant::now() < deadline,
                "the request span was not exported"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

fn error_type(span: &SpanData) -> Option<Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == "error.type")
        .map(|kv| kv.value.clone())
}

/// Asserts the span of a request the conventions call no error: status unset, no `error.type`.
fn assert_no_error(span: &SpanData) {
    assert_eq!(span.status, Status::Unset, "{span:#?}");
    assert_eq!(error_type(span), None, "{span:#?}");
}

/// Asserts the span of a failed request: status `Error` and `error.type` = `code`.
fn assert_error(span: &SpanData, code: &'static str) {
    assert_eq!(span.status, Status::error(""), "{span:#?}");
    assert_eq!(error_type(span), Some(Value::from(code)), "{span:#?}");
}

/// `routes` behind a fault layer inside `TraceLayer` (added after it, so outside), served.
async fn serve_inside_trace(routes: Router) -> Lab {
    let (layer, ledger) = FaultLayer::pair();
    let app = routes.layer(layer).layer(TraceLayer::new_for_http());
    Lab::serve(app, ledger).await
}

/// Sends a GET of `path`, checks its status and reads its body whole.
async fn get_status(lab: &Lab, path: &str, status: u16) {
    let response = reqwest::get(lab.url(path)).await.unwrap();
    assert_eq!(response.status().as_u16(), status, "{path}");
    response.bytes().await.unwrap();
}

async fn explode() -> &'static str {
    panic!("on purpose")
}

fn failing(status: StatusCode, code: &'static str) -> Result<(), faultline::Error> {
    Err(faultline::Error::new(status, code, "it failed"))
}

#[tokio::test]
async fn ok_leaves_the_status_unset() {
    let traced = traced();
    let lab = serve_inside_trace(Router::new().route("/ok", get(|| async { "ok" }))).await;
    get_status(&lab, "/ok", 200).await;
    assert_no_error(&traced.request_span().await);
    assert_eq!(lab.quiescent().await.ok, 1);
}

/// A 4xx is the client's mistake: for a server span no error, so no `error.type` either.
#[tokio::test]
async fn a_handled_4xx_leaves_the_status_unset() {
    let traced = traced();
    let routes = Router::new().route(
        "/handled",
        get(|| async { failing(StatusCode::UNPROCESSABLE_ENTITY, "demo-invalid") }),
    );
    let lab = serve_inside_trace(routes).await;
    get_status(&lab, "/handled", 422).await;
    assert_no_error(&traced.request_span().await);
    assert_eq!(lab.quiescent().await.handled, 1);
}

#[tokio::test]
async fn a_handled_5xx_sets_error_with_its_code() {
    let traced = traced();
    let routes = Router::new().route(
        "/handled",
        get(|| async { failing(StatusCode::SERVICE_UNAVAILABLE, "store-down") }),
    );
    let lab = serve_inside_trace(routes).await;
    get_status(&lab, "/handled", 503).await;
    assert_error(&traced.request_span().await, "store-down");
    assert_eq!(lab.quiescent().await.handled, 1);
}

#[tokio::test]
async fn a_rejected_4xx_leaves_the_status_unset() {
    let traced = traced();
    let lab = serve_inside_trace(Router::new().route("/ok", get(|| async { "ok" }))).await;
    get_status(&lab, "/missing", 404).await;
    assert_no_error(&traced.request_span().await);
    assert_eq!(lab.quiescent().await.rejected, 1);
}

#[tokio::test]
async fn a_rejected_5xx_sets_error_with_the_status_code() {
    let traced = traced();
    let routes = Router::new().route("/bare", get(|| async { StatusCode::BAD_GATEWAY }));
    let lab = serve_inside_trace(routes).await;
    get_status(&lab, "/bare", 502).await;
    assert_error(&traced.request_span().await, "bad-gateway");
    assert_eq!(lab.quiescent().await.rejected, 1);
}

#[tokio::test]
async fn a_service_error_sets_error_with_its_code() {
    let traced = traced();
    let (layer, ledger) = FaultLayer::pair();
    let broken = tower::service_fn(|_: Request<Body>| async {
        Err::<Response<Body>, _>(std::io::Error::other("the upstream is gone"))
    });
    let app = Router::new()
        .route_service("/broken", layer.layer(broken))
        .layer(TraceLayer::new_for_http());
    let lab = Lab::serve(app, ledger).await;
    get_status(&lab, "/broken", 500).await;
    assert_error(&traced.request_span().await, "service-error");
    assert_eq!(lab.quiescent().await.service_error, 1);
}

#[tokio::test]
async fn a_panic_sets_error_with_its_code() {
    let traced = traced();
    let lab = serve_inside_trace(Router::new().route("/panic", get(explode))).await;
    get_status(&lab, "/panic", 500).await;
    assert_error(&traced.request_span().await, "panic");
    assert_eq!(lab.quiescent().await.panicked, 1);
}

/// A 200 head, then a body that fails: the answer is incomplete, an error of the request.
#[tokio::test]
async fn a_body_that_fails_after_a_2xx_head_sets_error() {
    let traced = traced();
    let routes = Router::new().route(
        "/stream",
        get(|| async {
            let chunks = futures::stream::unfold(0, |n| async move {
                // A pause first, so that the head and the first chunk leave before the error.
                tokio::time::sleep(CHUNK_PAUSE).await;
                let chunk = match n {
                    0 => Ok(Bytes::from_static(b"first chunk\n")),
                    _ => Err(std::io::Error::other("the source went away")),
                };
                Some((chunk, n + 1))
            });
            Body::from_stream(chunks)
        }),
    );
    let lab = serve_inside_trace(routes).await;
    let response = reqwest::get(lab.url("/stream")).await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.bytes().await.is_err());
    assert_error(&traced.request_span().await, "body-aborted");
    assert_eq!(lab.quiescent().await.aborted, 1);
}

/// The client goes away before the answer: the request did not end, an error of it.
#[tokio::test]
async fn a_cancelled_request_sets_error() {
    let traced = traced();
    let routes = Router::new().route("/never", get(std::future::pending::<&'static str>));
    let lab = serve_inside_trace(routes).await;
    let mut stream = tokio::net::TcpStream::connect(lab.addr).await.unwrap();
    stream
        .write_all(b"GET /never HTTP/1.1\r\nhost: lab\r\n\r\n")
        .await
        .unwrap();
    lab.wait_for(|s| s.in_flight == 1).await;
    drop(stream);
    assert_error(&traced.request_span().await, "cancelled");
    assert_eq!(lab.quiescent().await.cancelled, 1);
}

/// Outside `TraceLayer`, the layer is called before its span exists: the span current then
/// (none, under `axum::serve`) is the one whose status it would set, and `TraceLayer`'s stays unset.
#[tokio::test]
async fn outside_trace_layer_the_request_span_status_stays_unset() {
    let traced = traced();
    let (layer, ledger) = FaultLayer::pair();
    let app = Router::new()
        .route("/panic", get(explode))
        .layer(TraceLayer::new_for_http())
        .layer(layer);
    let lab = Lab::serve(app, ledger).await;
    get_status(&lab, "/panic", 500).await;
    assert_no_error(&traced.request_span().await);
    assert_eq!(lab.quiescent().await.panicked, 1);
}
