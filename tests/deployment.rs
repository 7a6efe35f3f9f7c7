//! The layer in the places a deployment puts it: on a nested router, around tower-http's
//! `ServeFile`, applied twice with one ledger, and beside tower-http's CORS and request-id
//! layers. Driven in process with `oneshot`, and over TCP where clients run in parallel.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{to_bytes, Body};
use axum::extract::Path;
use axum::routing::get;
use axum::{Extension, Router};
use common::oneshot::{get_request, send};
use common::Lab;
use faultline::ledger::Snapshot;
use faultline::{Error, FaultLayer, Ledger};
use http::header::{ACCESS_CONTROL_ALLOW_ORIGIN, ALLOW, CONTENT_RANGE, ORIGIN, RANGE};
use http::{Request, StatusCode};
use tower::{ServiceBuilder, ServiceExt};
use tower_http::cors::CorsLayer;
use tower_http::request_id::{
    MakeRequestUuid, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};
use tower_http::services::ServeFile;

async fn not_found(Path(id): Path<u32>) -> Result<&'static str, Error> {
    Err(Error::new(
        StatusCode::NOT_FOUND,
        "user-not-found",
        format!("no user {id}"),
    ))
}

#[tokio::test]
async fn the_instance_of_a_nested_router_is_the_path_the_client_sent() {
    let (layer, _) = FaultLayer::pair();
    let users = Router::new()
        .route("/users/{id}", get(not_found))
        .layer(layer);
    let app = Router::new().nest("/api", users);
    let (status, _, problem) = send(&app, get_request("/api/users/7?apiKey=secret")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(problem["instance"], "/api/users/7");
}

/// A file of `len` bytes in the temp directory, removed when dropped.
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(name: &str, len: usize) -> Self {
        let path = std::env::temp_dir().join(format!("faultline-{}-{name}", std::process::id()));
        std::fs::write(&path, vec![b'x'; len]).unwrap();
        Self(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[tokio::test]
async fn an_unsatisfiable_range_keeps_its_content_range() {
    let file = TempFile::new("range", 100);
    let (layer, ledger) = FaultLayer::pair();
    let app = Router::new()
        .route_service("/file", ServeFile::new(&file.0))
        .layer(layer);
    let range = |bytes: &str| {
        Request::get("/file")
            .header(RANGE, bytes)
            .body(Body::empty())
            .unwrap()
    };

    let (status, headers, problem) = send(&app, range("bytes=200-300")).await;
    assert_eq!(status, StatusCode::RANGE_NOT_SATISFIABLE);
    // RFC 9110, section 15.5.17: the complete length of the resource.
    assert_eq!(headers[CONTENT_RANGE], "bytes */100");
    assert_eq!(problem["code"], "range-not-satisfiable");

    // A satisfiable range is a success, passed on untouched.
    let response = app.clone().oneshot(range("bytes=10-19")).await.unwrap();
    assert_eq!(response.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(response.headers()[CONTENT_RANGE], "bytes 10-19/100");
    let body = to_bytes(Body::new(response.into_body()), 1024)
        .await
        .unwrap();
    assert_eq!(body.len(), 10);

    // A header that describes the resource survives on other statuses too.
    let post = Request::post("/file").body(Body::empty()).unwrap();
    let (status, headers, _) = send(&app, post).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(headers[ALLOW].to_str().unwrap().contains("GET"));

    ledger.quiescent().await;
    let snapshot = ledger.snapshot();
    assert_eq!((snapshot.rejected, snapshot.ok), (2, 1));
}

async fn explode() -> &'static str {
    panic!("the handler exploded")
}

/// How long `/slow` may take: far less than its sleep, and it is the only route it bounds.
const SLOW_TIMEOUT: Duration = Duration::from_millis(50);

/// One route per outcome, under `/api`: `inner` on the nested router and again on two of its
/// routes (with a timeout, and with a limit that is never ready, whose layer hands out an
/// error rather than a response); `outer` on the router around it.
fn nested_app(inner: &FaultLayer, outer: FaultLayer) -> Router {
    let slow = get(|| async {
        tokio::time::sleep(Duration::from_secs(30)).await;
        "too late"
    })
    .layer(
        ServiceBuilder::new()
            .layer(inner.clone())
            .timeout(SLOW_TIMEOUT),
    );
    let shed = get(|| async { "never" }).layer(
        ServiceBuilder::new()
            .layer(inner.clone())
            .load_shed()
            .concurrency_limit(0),
    );
    let api = Router::new()
        .route("/ok", get(|| async { "ok" }))
        .route("/users/{id}", get(not_found))
        .route("/panic", get(explode))
        .route("/slow", slow)
        .route("/shed", shed)
        .layer(inner.clone());
    Router::new().nest("/api", api).layer(outer)
}

/// The requests of [`nested_app`], `n` of each kind, and what each must answer.
fn requests(n: usize) -> Vec<(&'static str, StatusCode)> {
    let kinds = [
        ("/api/ok", StatusCode::OK),
        ("/api/users/7", StatusCode::NOT_FOUND),
        ("/api/users/seven", StatusCode::BAD_REQUEST),
        ("/api/panic", StatusCode::INTERNAL_SERVER_ERROR),
        ("/api/slow", StatusCode::GATEWAY_TIMEOUT),
        ("/api/shed", StatusCode::SERVICE_UNAVAILABLE),
    ];
    kinds
        .iter()
        .cycle()
        .take(kinds.len() * n)
        .copied()
        .collect()
}

/// Checks that `s` counted `n` requests of each kind of [`requests`], each once.
fn assert_counted_once(s: &Snapshot, n: u64) {
    assert_eq!(s.started, 6 * n, "{s:#?}");
    assert_eq!((s.ok, s.handled, s.rejected), (n, n, n), "{s:#?}");
    assert_eq!((s.panicked, s.service_error), (n, 2 * n), "{s:#?}");
    assert_eq!((s.aborted, s.cancelled, s.in_flight), (0, 0, 0), "{s:#?}");
    assert_eq!(s.failures(), s.reported + s.suppressed);
    let count = |code: &str| {
        let series = s.series.iter().find(|series| series.code == code);
        series.map(|series| (series.route.as_str(), series.count))
    };
    assert_eq!(count("user-not-found"), Some(("/api/users/{id}", n)));
    assert_eq!(count("timeout"), Some(("/api/slow", n)));
    assert_eq!(count("overloaded"), Some(("/api/shed", n)));
}

/// Sends every request of [`requests`] in turn, checks its status, and waits for the ledger.
async fn send_each_kind(app: &Router, ledger: &Ledger, n: u64) -> Snapshot {
    faultline::install_panic_hook();
    for (path, expected) in requests(n as usize) {
        let (status, _, problem) = send(app, get_request(path)).await;
        assert_eq!(status, expected, "{path}: {problem}");
    }
    ledger.quiescent().await;
    ledger.snapshot()
}

#[tokio::test]
async fn one_ledger_on_a_nested_and_the_outer_router_counts_each_request_once() {
    let (layer, ledger) = FaultLayer::pair();
    let app = nested_app(&layer, layer.clone());
    assert_counted_once(&send_each_kind(&app, &ledger, 5).await, 5);
}

#[tokio::test]
async fn layers_of_different_ledgers_each_count_every_request() {
    let (inner, inner_ledger) = FaultLayer::pair();
    let (outer, outer_ledger) = FaultLayer::pair();
    let app = nested_app(&inner, outer);
    let outer = send_each_kind(&app, &outer_ledger, 3).await;
    assert_counted_once(&outer, 3);
    // `/slow` and `/shed` pass two layers of the inner ledger: counted once there too.
    let inner = inner_ledger.snapshot();
    assert_counted_once(&inner, 3);
    // The outer layer counts what the inner one answered under the inner one's codes and
    // statuses (the rejection, the panic and the service errors too, whose answers carry no
    // fault), and renders none of them again.
    let codes = |s: &Snapshot| {
        let mut codes: Vec<_> = s
            .series
            .iter()
            .map(|series| (series.code.clone(), series.status, series.count))
            .collect();
        codes.sort();
        codes
    };
    assert_eq!(codes(&outer), codes(&inner));
    assert_eq!(codes(&inner).len(), 5, "{inner:#?}");
    // Rendered again, the rejection's detail would be the inner answer's JSON.
    let (status, _, problem) = send(&app, get_request("/api/users/seven")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let detail = problem["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("seven") && !detail.contains('{'),
        "{problem}"
    );
}

/// Parallel clients of the TCP test, each on a connection of its own.
const CLIENTS: usize = 32;

/// Rounds of every kind of request each client sends.
const ROUNDS: usize = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_ledger_applied_twice_counts_exactly_under_parallel_tcp_clients() {
    let (layer, ledger) = FaultLayer::pair();
    let lab = Lab::serve(nested_app(&layer, layer.clone()), ledger).await;
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let urls: Vec<_> = requests(ROUNDS)
                .into_iter()
                .map(|(path, status)| (lab.url(path), status))
                .collect();
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                for (url, expected) in urls {
                    let response = client.get(&url).send().await.unwrap();
                    assert_eq!(response.status().as_u16(), expected.as_u16(), "{url}");
                    response.bytes().await.unwrap();
                }
            })
        })
        .collect();
    for client in clients {
        client.await.unwrap();
    }
    assert_counted_once(&lab.quiescent().await, (CLIENTS * ROUNDS) as u64);
}

#[tokio::test]
async fn cors_outside_the_layer_reaches_every_answer_and_inside_all_but_panics() {
    faultline::install_panic_hook();
    let routes = || {
        Router::new()
            .route("/users/{id}", get(not_found))
            .route("/panic", get(explode))
    };
    let from_browser = |path: &str| {
        Request::get(path)
            .header(ORIGIN, "https://app.example.com")
            .body(Body::empty())
            .unwrap()
    };
    let outside = routes().layer(
        ServiceBuilder::new()
            .layer(CorsLayer::permissive())
            .layer(FaultLayer::new()),
    );
    for path in ["/users/7", "/panic"] {
        let (_, headers, problem) = send(&outside, from_browser(path)).await;
        assert_eq!(headers[ACCESS_CONTROL_ALLOW_ORIGIN], "*", "{problem}");
    }
    let inside = routes().layer(
        ServiceBuilder::new()
            .layer(FaultLayer::new())
            .layer(CorsLayer::permissive()),
    );
    let (_, headers, _) = send(&inside, from_browser("/users/7")).await;
    assert_eq!(headers[ACCESS_CONTROL_ALLOW_ORIGIN], "*");
    // A panic leaves no response for CORS to have put its headers on: why the layer goes
    // inside CORS.
    let (status, headers, _) = send(&inside, from_browser("/panic")).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(!headers.contains_key(ACCESS_CONTROL_ALLOW_ORIGIN));
}

/// The request id a handler saw in tower-http's `RequestId` extension, kept for the test.
type Seen = Arc<Mutex<Vec<String>>>;

fn id_routes(seen: &Seen) -> Router {
    let seen = seen.clone();
    Router::new().route(
        "/users/{id}",
        get(move |Extension(id): Extension<RequestId>| async move {
            let text = id.header_value().to_str().unwrap().to_owned();
            seen.lock().unwrap().push(text);
            Err::<(), _>(Error::new(StatusCode::NOT_FOUND, "user-not-found", "gone"))
        }),
    )
}

#[tokio::test]
async fn the_problem_carries_the_request_id_of_tower_http_from_either_side() {
    let seen = Seen::default();
    let outside = id_routes(&seen).layer(
        ServiceBuilder::new()
            .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
            .layer(PropagateRequestIdLayer::x_request_id())
            .layer(FaultLayer::new()),
    );
    let inside = id_routes(&seen).layer(
        ServiceBuilder::new()
            .layer(FaultLayer::new())
            .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
            .layer(PropagateRequestIdLayer::x_request_id()),
    );
    for app in [outside, inside] {
        let (status, headers, problem) = send(&app, get_request("/users/7")).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let handler_saw = seen.lock().unwrap().pop().unwrap();
        assert_eq!(handler_saw.len(), 36, "a UUID: {handler_saw}");
        assert_eq!(problem["request_id"], handler_saw.as_str());
        assert_eq!(headers["x-request-id"], handler_saw.as_str());
    }
}

#[tokio::test]
async fn a_router_nested_as_a_service_is_counted_once_under_its_own_route() {
    let (layer, ledger) = FaultLayer::pair();
    let api = Router::new()
        .route("/users/{id}", get(not_found))
        .layer(layer.clone());
    // The outer router sees only a prefix here; the nested one names the route.
    let app = Router::new().nest_service("/api", api).layer(layer);
    let (status, _, problem) = send(&app, get_request("/api/users/7")).await;
    assert_eq!(
        (status, &problem["instance"]),
        (StatusCode::NOT_FOUND, &"/api/users/7".into())
    );
    let s = ledger.snapshot();
    assert_eq!((s.started, s.handled), (1, 1), "{s:#?}");
    let routes: Vec<_> = s
        .series
        .iter()
        .map(|series| series.route.as_str())
        .collect();
    assert_eq!(routes, ["/api/users/{id}"]);
}

/// Two ledgers' layers nested, each passing the request through below its counting layer:
/// the outer ledger's route (named by its passing layer) waits in the thread while the inner
/// ledger's counting layer runs, and the inner one's passing layer names a route of its own
/// there. Each ledger counts the request once, and the outer one's route is the one its own
/// passing layer named, not lost to the inner ledger's.
#[tokio::test]
async fn nested_routers_of_two_ledgers_each_count_under_their_own_route() {
    let (outer, outer_ledger) = FaultLayer::pair();
    let (inner, inner_ledger) = FaultLayer::pair();
    let users = Router::new()
        .route(
            "/inner/users/{id}",
            get(|| async { StatusCode::IM_A_TEAPOT }),
        )
        .layer(inner.clone());
    // As a service of its own (axum takes a `Router` here for a mistaken `nest`).
    let users = tower::ServiceExt::map_request(users, |request: axum::extract::Request| request);
    let middle = Router::new()
        .route_service("/inner/{*rest}", users)
        .layer(inner)
        .layer(outer.clone());
    // The outermost router sees only a prefix: its layer counts the request unmatched, and
    // takes the route the middle router's passing layer names.
    let app = Router::new().nest_service("/outer", middle).layer(outer);
    let (status, _, problem) = send(&app, get_request("/outer/inner/users/7")).await;
    assert_eq!(status, StatusCode::IM_A_TEAPOT, "{problem}");
    let routes = |ledger: &Ledger| -> Vec<String> {
        let s = ledger.snapshot();
        assert_eq!((s.started, s.rejected), (1, 1), "{s:#?}");
        s.series.iter().map(|series| series.route.clone()).collect()
    };
    assert_eq!(routes(&outer_ledger), ["/outer/inner/{*rest}"]);
    assert_eq!(routes(&inner_ledger), ["/outer/inner/{*rest}"]);
}
