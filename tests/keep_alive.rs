//! No request dies at the connection: an HTTP/1.1 answer that leaves before its request body
//! was read to the end either reads the rest (bounded in bytes and time), so that the next
//! request on the kept-alive connection is served, or says `connection: close`, so that the
//! client sends it on a new one. Over real TCP, with parallel clients, every follow-up
//! answered and the ledger's totals exact.

mod common;

use std::time::Duration;

use axum::body::Bytes;
use axum::routing::post;
use axum::{Json, Router};
use common::keep_alive::{pair, Framing, Pair, Request};
use common::Lab;
use faultline::ledger::Snapshot;
use faultline::FaultLayer;

/// Parallel clients, and the pairs each sends in turn: forty pairs per case and body.
const CLIENTS: usize = 8;
const ROUNDS: usize = 5;

/// What answers the first request of a pair before its body is read.
#[derive(Debug, Clone, Copy)]
enum Early {
    /// No route: axum's 404, `rejected`.
    NotFound,
    /// `Json` refusing a wrong content type: 415, `rejected`.
    WrongContentType,
    /// A handler that never reads its body: 200, `ok`.
    Ignores,
    /// A handler that panics before reading: 500, `panicked`.
    Panics,
}

const EARLY: [Early; 4] = [
    Early::NotFound,
    Early::WrongContentType,
    Early::Ignores,
    Early::Panics,
];

impl Early {
    fn request(self, framing: Framing) -> Request {
        let (path, headers) = match self {
            Early::NotFound => ("/nowhere", ""),
            Early::WrongContentType => ("/json", "content-type: text/plain\r\n"),
            Early::Ignores => ("/ignores", ""),
            Early::Panics => ("/panics", ""),
        };
        Request {
            method: "POST",
            path: path.into(),
            headers: headers.into(),
            framing,
        }
    }

    fn status(self) -> u16 {
        match self {
            Early::NotFound => 404,
            Early::WrongContentType => 415,
            Early::Ignores => 200,
            Early::Panics => 500,
        }
    }
}

/// The follow-up: a delivery whose body is read whole.
fn follow_up() -> Request {
    Request {
        method: "POST",
        path: "/reads".into(),
        headers: String::new(),
        framing: Framing::Length(13),
    }
}

fn app(layer: FaultLayer) -> Router {
    Router::new()
        .route(
            "/reads",
            post(|body: Bytes| async move { format!("read {}", body.len()) }),
        )
        .route("/ignores", post(|| async { "ignored" }))
        .route(
            "/json",
            post(|Json(value): Json<serde_json::Value>| async move { value.to_string() }),
        )
        .route(
            "/panics",
            post(|| async { panic!("the handler gave up") as &'static str }),
        )
        .layer(layer)
}

/// Runs `CLIENTS` clients of `ROUNDS` pairs each, every first request answered by `early`
/// with a body framed by `framing`; checks every answer and returns the pairs.
async fn pairs(lab: &Lab, early: Early, framing: Framing) -> Vec<Pair> {
    let first = early.request(framing);
    let clients = (0..CLIENTS).map(|_| {
        let (addr, first) = (lab.addr, first.clone());
        tokio::spawn(async move {
            let mut pairs = Vec::new();
            for _ in 0..ROUNDS {
                pairs.push(pair(addr, &first, &follow_up()).await);
            }
            pairs
        })
    });
    let mut all = Vec::new();
    for client in clients {
        all.extend(client.await.unwrap());
    }
    for pair in &all {
        assert_eq!(pair.first.status, early.status(), "{early:?} {framing:?}");
        assert_eq!(pair.second.status, 200, "{early:?} {framing:?}");
        assert_eq!(pair.second.body, b"read 13");
    }
    all
}

/// The ledger after `n` pairs whose first requests `early` answered: every request counted
/// once, in its outcome.
fn assert_counted(snapshot: &Snapshot, early: Early, n: u64) {
    let (mut ok, mut rejected, mut panicked) = (n, 0, 0);
    match early {
        Early::NotFound | Early::WrongContentType => rejected += n,
        Early::Ignores => ok += n,
        Early::Panics => panicked += n,
    }
    assert_eq!(snapshot.started, 2 * n, "{snapshot:#?}");
    assert_eq!(
        (snapshot.ok, snapshot.rejected, snapshot.panicked),
        (ok, rejected, panicked),
        "{early:?}: {snapshot:#?}"
    );
    assert_eq!(snapshot.finished(), 2 * n);
    assert_eq!(snapshot.in_flight, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rest_within_the_bounds_is_read_and_the_connection_serves_the_next_request() {
    let sizes = [
        Framing::Length(0),
        Framing::Length(100),
        Framing::Length(64 * 1024),
        Framing::Length(faultline::limits::DEFAULT_MAX_DRAIN_BYTES as usize),
        Framing::Chunked {
            bytes: 200 * 1024,
            chunk: 16 * 1024,
        },
        Framing::Trickled {
            bytes: 3000,
            pieces: 3,
            gap: Duration::from_millis(30),
        },
    ];
    // Every case on a lab of its own, all at once: the cases wait mostly on each other's
    // bytes and timers, and one after another they took minutes of a debug build.
    let cases = EARLY
        .into_iter()
        .flat_map(|early| sizes.map(|framing| within_bounds(early, framing)));
    futures::future::join_all(cases).await;
}

/// One case of the test above: `early` answering bodies framed by `framing`.
async fn within_bounds(early: Early, framing: Framing) {
    let (layer, ledger) = FaultLayer::pair();
    let lab = Lab::serve(app(layer), ledger).await;
    let all = pairs(&lab, early, framing).await;
    for pair in &all {
        assert!(!pair.first.close, "{early:?} {framing:?}: closed");
        assert!(pair.reused, "{early:?} {framing:?}");
    }
    let snapshot = lab.quiescent().await;
    let n = all.len() as u64;
    assert_counted(&snapshot, early, n);
    let unread = snapshot.unread_bodies;
    let bytes = framing.bytes() as u64;
    // A body of length 0 is at its end before anyone reads it: nothing to drain.
    let drained = if bytes == 0 { 0 } else { n };
    assert_eq!(unread.drained, drained, "{early:?} {framing:?}");
    assert_eq!(unread.closed, 0, "{early:?} {framing:?}");
    assert_eq!(unread.drained_bytes, n * bytes, "{early:?} {framing:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rest_past_the_bounds_closes_the_connection_with_a_word() {
    let max = 64 * 1024;
    let cases = [
        // Declared longer than the bound: not read at all.
        (Framing::Length(max + 1), false),
        // Of unknown length, found longer: read up to the bound, then given up.
        (
            Framing::Chunked {
                bytes: 4 * max,
                chunk: 8 * 1024,
            },
            true,
        ),
        // Slower than the time bound.
        (
            Framing::Trickled {
                bytes: 2000,
                pieces: 2,
                gap: Duration::from_millis(600),
            },
            true,
        ),
        // The client waits to be asked for its body, and is answered first.
        (Framing::ExpectContinue(5000), false),
    ];
    let cases = EARLY.into_iter().flat_map(|early| {
        cases.map(|(framing, reads_some)| past_bounds(early, framing, reads_some, max))
    });
    futures::future::join_all(cases).await;
}

/// One case of the test above: `early` answering bodies framed by `framing` past a byte bound
/// of `max` or a time bound of 200 ms; `reads_some` when some of the rest is read first.
async fn past_bounds(early: Early, framing: Framing, reads_some: bool, max: usize) {
    let layer = FaultLayer::new()
        .max_drain_bytes(max as u64)
        .max_drain_time(Duration::from_millis(200));
    let ledger = layer.ledger();
    let lab = Lab::serve(app(layer), ledger).await;
    let all = pairs(&lab, early, framing).await;
    for pair in &all {
        assert!(pair.first.close, "{early:?} {framing:?}: no close");
        assert!(!pair.reused);
    }
    let snapshot = lab.quiescent().await;
    let n = all.len() as u64;
    assert_counted(&snapshot, early, n);
    let unread = snapshot.unread_bodies;
    assert_eq!(
        (unread.drained, unread.closed),
        (0, n),
        "{early:?} {framing:?}"
    );
    assert_eq!(
        unread.drained_bytes > 0,
        reads_some,
        "{early:?} {framing:?}: {unread:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn axums_405_and_413_keep_the_connection_too() {
    use axum::extract::DefaultBodyLimit;
    use axum::routing::get;

    let (layer, ledger) = FaultLayer::pair();
    let app = Router::new()
        .route(
            "/reads",
            post(|body: Bytes| async move { format!("read {}", body.len()) }),
        )
        .route("/get-only", get(|| async { "got" }))
        .route(
            "/small",
            post(|body: Bytes| async move { body.len().to_string() })
                .layer(DefaultBodyLimit::max(1024)),
        )
        .layer(layer);
    let lab = Lab::serve(app, ledger).await;
    let cases = [("/get-only", 405), ("/small", 413)];
    let mut n = 0;
    for (path, status) in cases {
        let first = Request {
            method: "POST",
            path: path.into(),
            headers: String::new(),
            framing: Framing::Length(64 * 1024),
        };
        let clients = (0..CLIENTS).map(|_| {
            let (addr, first) = (lab.addr, first.clone());
            tokio::spawn(async move { pair(addr, &first, &follow_up()).await })
        });
        for client in clients {
            let pair = client.await.unwrap();
            assert_eq!(pair.first.status, status, "{path}");
            assert!(pair.reused && !pair.first.close, "{path}");
            assert_eq!(pair.second.body, b"read 13");
            n += 1;
        }
    }
    let snapshot = lab.quiescent().await;
    assert_eq!(snapshot.started, 2 * n);
    assert_eq!((snapshot.ok, snapshot.rejected), (n, n), "{snapshot:#?}");
    assert_eq!(snapshot.unread_bodies.drained, n);
}

/// HTTP/2 is left as it is: a stream's unread body ends with the stream, not the connection.
/// The same request on HTTP/1.1 is drained.
#[tokio::test]
async fn only_http1_bodies_are_drained() {
    use axum::body::Body;
    use axum::http::Version;
    use tower::ServiceExt;

    for (version, drained) in [(Version::HTTP_2, 0), (Version::HTTP_11, 1)] {
        let (layer, ledger) = FaultLayer::pair();
        let request = axum::http::Request::post("/ignores")
            .version(version)
            .body(Body::from(vec![b'x'; 1000]))
            .unwrap();
        let response = app(layer).oneshot(request).await.unwrap();
        assert_eq!(response.status(), 200);
        assert!(response.headers().get("connection").is_none());
        let unread = ledger.snapshot().unread_bodies;
        assert_eq!(unread.drained, drained, "{version:?}");
        assert_eq!(unread.drained_bytes, drained * 1000, "{version:?}");
    }
}

/// A 408 (a body deadline gave up on a stalled body) closes at once: the rest is not waited
/// for again, and RFC 9110 asks a 408 to close the connection.
#[tokio::test]
async fn a_408_closes_without_waiting_for_the_rest() {
    use axum::http::StatusCode;

    let layer = FaultLayer::new().max_drain_time(Duration::from_secs(30));
    let ledger = layer.ledger();
    let app = Router::new()
        .route(
            "/slow",
            post(|| async {
                Err::<(), _>(faultline::Error::new(
                    StatusCode::REQUEST_TIMEOUT,
                    "body-timeout",
                    "the request body did not arrive in time",
                ))
            }),
        )
        .route(
            "/reads",
            post(|body: Bytes| async move { format!("read {}", body.len()) }),
        )
        .layer(layer);
    let lab = Lab::serve(app, ledger).await;
    let first = Request {
        method: "POST",
        path: "/slow".into(),
        headers: String::new(),
        // Half the body now, the rest long after the time bound the layer would wait.
        framing: Framing::Trickled {
            bytes: 2000,
            pieces: 2,
            gap: Duration::from_secs(2),
        },
    };
    let started = std::time::Instant::now();
    let pair = pair(lab.addr, &first, &follow_up()).await;
    assert_eq!(pair.first.status, 408);
    assert!(pair.first.close && !pair.reused);
    assert_eq!(pair.second.body, b"read 13");
    // The writer's second piece waits 2 s: the pair took that, not the 30 s bound.
    assert!(started.elapsed() < Duration::from_secs(20));
    let unread = lab.quiescent().await.unread_bodies;
    assert_eq!((unread.drained, unread.closed), (0, 1));
}
