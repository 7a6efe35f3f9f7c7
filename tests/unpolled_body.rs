//! A streamed body's `ok` means "sent to its end": a body dropped before it was sent whole,
//! even one never polled, counts `cancelled`; an answer that sends no body (a HEAD, a 204, a
//! 304) and a body of length 0 count `ok` as soon as the head goes out. A body that fails
//! after its head went out counts `aborted`, under the status of that head.

mod common;

use std::convert::Infallible;

use axum::body::Body;
use axum::http::{header::CONTENT_LENGTH, Method, Request, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use common::bodies::endless;
use common::Lab;
use faultline::ledger::Outcome;
use faultline::{FaultLayer, Ledger};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tower::ServiceExt;

/// A body of two frames whose length is not known ahead.
fn streamed() -> Body {
    let frames =
        ["first ", "second"].map(|f| Ok::<_, Infallible>(Bytes::from_static(f.as_bytes())));
    Body::from_stream(futures::stream::iter(frames))
}

/// A body whose second frame is an error, after the head and a first frame went out.
fn failing() -> Body {
    let frames = [
        Ok(Bytes::from_static(b"first ")),
        Err(std::io::Error::other("the store went away mid-body")),
    ];
    Body::from_stream(futures::stream::iter(frames))
}

fn app() -> (Router, Ledger) {
    let (layer, ledger) = FaultLayer::pair();
    let app = Router::new()
        .route("/streamed", get(|| async { streamed() }))
        .route("/fixed", get(|| async { "fixed" }))
        .route("/empty", get(|| async { Body::empty() }))
        .route(
            "/declared-empty",
            get(|| async { ([(CONTENT_LENGTH, "0")], streamed()).into_response() }),
        )
        .route(
            "/no-content",
            get(|| async { (StatusCode::NO_CONTENT, streamed()) }),
        )
        .route(
            "/not-modified",
            get(|| async { (StatusCode::NOT_MODIFIED, streamed()) }),
        )
        .route("/endless", get(|| async { endless() }))
        .route(
            "/partial-failing",
            get(|| async { (StatusCode::PARTIAL_CONTENT, failing()) }),
        )
        .layer(layer);
    (app, ledger)
}

fn request(method: Method, path: &str) -> Request<Body> {
    Request::builder()
        .method(method)
        .uri(path)
        .body(Body::empty())
        .unwrap()
}

/// The response's body is dropped as it comes, never polled, as a layer outside faultline
/// that discards it would.
async fn drop_unpolled(app: &Router, method: Method, path: &str) -> StatusCode {
    let response = app.clone().oneshot(request(method, path)).await.unwrap();
    let status = response.status();
    drop(response);
    status
}

#[tokio::test]
async fn a_body_dropped_before_it_is_polled_counts_cancelled_unless_it_sends_nothing() {
    let cases = [
        (Method::GET, "/streamed", 200, Outcome::Cancelled),
        (Method::GET, "/fixed", 200, Outcome::Cancelled),
        (Method::GET, "/empty", 200, Outcome::Ok),
        (Method::GET, "/declared-empty", 200, Outcome::Ok),
        (Method::HEAD, "/streamed", 200, Outcome::Ok),
        (Method::GET, "/no-content", 204, Outcome::Ok),
        (Method::GET, "/not-modified", 304, Outcome::Ok),
    ];
    for (method, path, status, outcome) in cases {
        let (app, ledger) = app();
        let sent = drop_unpolled(&app, method.clone(), path).await;
        assert_eq!(sent.as_u16(), status, "{method} {path}");
        let s = ledger.snapshot();
        assert_eq!(s.started, 1, "{method} {path}");
        assert_eq!(s.outcome(outcome), 1, "{method} {path}: {s:#?}");
        assert_eq!(s.ok + s.cancelled, 1, "{method} {path}: {s:#?}");
        assert_eq!(s.in_flight, 0, "{method} {path}");
    }
}

/// Sends `method path` over its own connection and reads the whole answer.
async fn over_tcp(lab: &Lab, method: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(lab.addr).await.unwrap();
    let head = format!("{method} {path} HTTP/1.1\r\nhost: lab\r\nconnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

/// Over TCP the server never polls the body of a HEAD, a 204 or a 304: each counts `ok`, as
/// do a body sent to its end and one of length 0; a client that leaves after the head while
/// the body streams counts `cancelled`.
#[tokio::test]
async fn over_tcp_answers_without_a_body_count_ok_and_an_unfinished_one_cancelled() {
    let (app, ledger) = app();
    let lab = Lab::serve(app, ledger).await;
    let cases = [
        ("HEAD", "/streamed", "HTTP/1.1 200", ""),
        ("GET", "/no-content", "HTTP/1.1 204", ""),
        ("GET", "/not-modified", "HTTP/1.1 304", ""),
        (
            "GET",
            "/streamed",
            "HTTP/1.1 200",
            "6\r\nfirst \r\n6\r\nsecond\r\n0\r\n\r\n",
        ),
        ("GET", "/declared-empty", "HTTP/1.1 200", ""),
        ("GET", "/empty", "HTTP/1.1 200", ""),
    ];
    for (method, path, head, body) in cases {
        let answer = over_tcp(&lab, method, path).await;
        assert!(answer.starts_with(head), "{method} {path}: {answer}");
        let sent = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
        assert_eq!(sent, body, "{method} {path}: {answer}");
    }
    let ok = cases.len() as u64;
    let s = lab.quiescent().await;
    assert_eq!((s.started, s.ok, s.cancelled), (ok, ok, 0), "{s:#?}");

    // The head is read, then the client hangs up while the body still streams.
    lab.hang_up_after_the_head("/endless").await;
    let s = lab.quiescent().await;
    assert_eq!((s.started, s.ok, s.cancelled), (ok + 1, ok, 1), "{s:#?}");
}

/// The ledger counts an aborted body under the status its head went out with, not the 200 a
/// request that has not answered yet would be taken for.
#[tokio::test]
async fn a_body_that_fails_after_a_206_head_counts_aborted_under_206() {
    let (app, ledger) = app();
    let response = app
        .oneshot(request(Method::GET, "/partial-failing"))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::PARTIAL_CONTENT);
    let read = axum::body::to_bytes(response.into_body(), usize::MAX).await;
    assert!(read.is_err(), "the body must end in its error: {read:?}");
    ledger.quiescent().await;
    let s = ledger.snapshot();
    assert_eq!((s.started, s.aborted, s.ok), (1, 1, 0), "{s:#?}");
    let series: Vec<_> = s
        .series
        .iter()
        .map(|series| (series.route.as_str(), series.code.as_str(), series.status))
        .collect();
    assert_eq!(series, [("/partial-failing", "body-aborted", 206)]);
}
