//! The layer driven in process with `oneshot`: the paths that need a hand-made inner service
//! (a `poll_ready` error, load shedding, a pending future, a stalled body) or a subscriber.

mod common;

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::{to_bytes, Body};
use axum::routing::get;
use axum::Router;
use http::header::RETRY_AFTER;
use tower::{service_fn, ServiceBuilder, ServiceExt};

use std::convert::Infallible;
use std::task::{Context, Poll};

use faultline::{Fault, FaultLayer, Ledger};
use http::{HeaderValue, Request, Response, StatusCode};
use tower::{Layer, Service};

use common::oneshot::{get_request, problem_of, send};
use common::subscriber::OnEvent;

#[tokio::test]
async fn a_panic_in_the_synchronous_part_of_call_is_a_500() {
    faultline::install_panic_hook();
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

faultline::impl_into_response!(Busy);

#[tokio::test]
async fn a_fault_whose_display_panics_is_answered_with_a_placeholder_and_its_headers() {
    faultline::install_panic_hook();
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
                Err::<(), faultline::Error>(std::io::Error::other("disk quota exceeded").into())
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

faultline::impl_into_response!(BadHeaders);

#[tokio::test]
async fn a_panic_in_a_faults_own_methods_is_a_panicked_500() {
    faultline::install_panic_hook();
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

#[test]
fn a_panicking_subscriber_does_not_keep_a_request_in_flight() {
    faultline::install_panic_hook();
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
    // Every event panics, like a broken log shipper; the count shows that one did.
    let events = Arc::new(AtomicUsize::new(0));
    let seen = events.clone();
    let panicking = OnEvent(move |_: &tracing::Event<'_>| {
        seen.fetch_add(1, Ordering::Relaxed);
        panic!("the log shipper fell over")
    });
    let status = tracing::subscriber::with_default(panicking, || {
        runtime.block_on(async { service.oneshot(get_request("/")).await.unwrap().status() })
    });
    assert_eq!(status, StatusCode::NOT_FOUND);
    let snapshot = ledger.snapshot();
    assert_eq!((snapshot.rejected, snapshot.in_flight), (1, 0));
    assert_eq!(snapshot.reported + snapshot.suppressed, 1);
    assert!(
        events.load(Ordering::Relaxed) >= 1,
        "no event reached the subscriber"
    );
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

/// An error body up to the readable cap is read for its message; one byte more is not
/// waited for, and the detail comes from the status.
#[tokio::test]
async fn an_error_body_is_read_up_to_the_readable_cap_and_not_past_it() {
    use faultline::limits::MAX_READABLE_BODY_BYTES;

    for (size, detail) in [
        (MAX_READABLE_BODY_BYTES, "a"),
        (MAX_READABLE_BODY_BYTES + 1, "The request was rejected."),
    ] {
        let layer = FaultLayer::new();
        let service = layer.layer(service_fn(move |_: Request<Body>| async move {
            Ok::<_, Infallible>(
                Response::builder()
                    .status(StatusCode::BAD_REQUEST)
                    .body(Body::from("a".repeat(size)))
                    .unwrap(),
            )
        }));
        let response = service.oneshot(get_request("/")).await.unwrap();
        let (_, problem) = problem_of(response).await;
        let shown = problem["detail"].as_str().unwrap();
        assert!(shown.starts_with(detail), "{size} bytes: {shown:.80}");
        assert_ne!(shown.starts_with('a'), size > MAX_READABLE_BODY_BYTES);
    }
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
    let answered = tokio::time::timeout(Duration::from_secs(5), service.oneshot(get_request("/")))
        .await
        .expect("answered without waiting for the body");
    let (status, problem) = problem_of(answered.unwrap()).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    assert_eq!(problem["code"], "bad-gateway");
    assert_eq!(ledger.snapshot().rejected, 1);
}

#[tokio::test]
async fn a_ledger_made_with_its_bounds_keeps_them_for_every_handle() {
    let ledger = Ledger::builder()
        .report_burst(1, Duration::from_secs(60))
        .max_series(1)
        .build();
    let layer = FaultLayer::with_ledger(ledger.clone());
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(layer);
    for path in ["/", "/a", "/b", "/a"] {
        send(&app, get_request(path)).await;
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
                Err::<(), _>(faultline::Error::new(
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
    assert!(body.len() <= faultline::limits::MAX_BODY_BYTES);
    let problem: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let detail = problem["detail"].as_str().unwrap();
    assert!(detail.len() <= faultline::limits::MAX_MESSAGE_BYTES);
    assert!(detail.ends_with(faultline::limits::TRUNCATION_MARKER));
}

#[tokio::test]
async fn nested_layers_render_once_and_each_counts_once() {
    let (inner_layer, inner) = FaultLayer::pair();
    let (outer_layer, outer) = FaultLayer::pair();
    let app = Router::new()
        .route(
            "/",
            get(|| async {
                Err::<(), _>(faultline::Error::new(
                    StatusCode::CONFLICT,
                    "taken",
                    "taken",
                ))
            }),
        )
        .layer(inner_layer)
        .layer(outer_layer);
    let response = app.oneshot(get_request("/missing")).await.unwrap();
    let request_id = response.headers()["x-request-id"].clone();
    let (status, problem) = problem_of(response).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(problem["code"], "not-found");
    assert_eq!(problem["detail"], "No route matches this path.");
    assert_eq!(problem["request_id"], request_id.to_str().unwrap());
    for ledger in [inner, outer] {
        let snapshot = ledger.snapshot();
        assert_eq!((snapshot.started, snapshot.rejected), (1, 1));
    }
}

#[tokio::test]
async fn a_panic_the_service_caught_itself_leaves_no_stale_site_behind() {
    faultline::install_panic_hook();
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

#[tokio::test]
async fn a_builder_call_after_layer_applies_to_the_services_built_after_it() {
    let failing = || {
        service_fn(|_: Request<Body>| async {
            Ok::<_, Infallible>(
                Response::builder()
                    .status(StatusCode::INTERNAL_SERVER_ERROR)
                    .body(Body::from("disk quota exceeded"))
                    .unwrap(),
            )
        })
    };
    let layer = FaultLayer::new();
    let before = layer.layer(failing());
    let again = layer.layer(failing());
    let layer = layer.development(true);
    let after = layer.layer(failing());
    let detail = |problem: serde_json::Value| problem["detail"].as_str().unwrap().to_owned();
    let (_, hidden) = problem_of(before.oneshot(get_request("/")).await.unwrap()).await;
    let (_, also_hidden) = problem_of(again.oneshot(get_request("/")).await.unwrap()).await;
    let (_, shown) = problem_of(after.oneshot(get_request("/")).await.unwrap()).await;
    assert_ne!(detail(hidden.clone()), "disk quota exceeded");
    assert_eq!(detail(hidden), detail(also_hidden));
    assert_eq!(detail(shown), "disk quota exceeded");
}
