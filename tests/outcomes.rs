//! Every outcome over real TCP: status, problem body, headers and exact counts.

mod common;

use std::collections::HashMap;

use common::{problem, Lab};

use faultline::ledger::Outcome;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

struct Case {
    method: &'static str,
    path: &'static str,
    content_type: Option<&'static str>,
    body: Vec<u8>,
    status: u16,
    /// The problem code, or `None` for a success.
    code: Option<&'static str>,
    outcome: Outcome,
    /// Words the detail must contain (public messages) or must be the generic text.
    detail_has: &'static str,
}

fn get(
    path: &'static str,
    status: u16,
    code: Option<&'static str>,
    outcome: Outcome,
    detail_has: &'static str,
) -> Case {
    Case {
        method: "GET",
        path,
        content_type: None,
        body: Vec::new(),
        status,
        code,
        outcome,
        detail_has,
    }
}

fn post_json(
    content_type: Option<&'static str>,
    body: Vec<u8>,
    status: u16,
    code: Option<&'static str>,
    outcome: Outcome,
    detail_has: &'static str,
) -> Case {
    Case {
        method: "POST",
        content_type,
        body,
        ..get("/json", status, code, outcome, detail_has)
    }
}

const GENERIC: &str = "Quote the request_id";

fn cases() -> Vec<Case> {
    let json = Some("application/json");
    vec![
        get("/ok", 200, None, Outcome::Ok, ""),
        get("/slow?ms=5", 200, None, Outcome::Ok, ""),
        get(
            "/handled",
            422,
            Some("demo-invalid"),
            Outcome::Handled,
            "`amount` must be positive",
        ),
        get(
            "/internal",
            500,
            Some("store-failed"),
            Outcome::Handled,
            GENERIC,
        ),
        get("/small", 500, Some("demo-sized"), Outcome::Handled, GENERIC),
        get("/huge", 500, Some("demo-sized"), Outcome::Handled, GENERIC),
        get("/panic", 500, Some("panic"), Outcome::Panicked, GENERIC),
        get(
            "/timeout",
            504,
            Some("timeout"),
            Outcome::ServiceError,
            "took too long",
        ),
        get(
            "/no/such/route",
            404,
            Some("not-found"),
            Outcome::Rejected,
            "No route",
        ),
        Case {
            method: "DELETE",
            ..get(
                "/ok",
                405,
                Some("method-not-allowed"),
                Outcome::Rejected,
                "method",
            )
        },
        get(
            "/slow?ms=abc",
            400,
            Some("bad-request"),
            Outcome::Rejected,
            "Failed to deserialize query string",
        ),
        post_json(json, b"{\"a\":1}".to_vec(), 200, None, Outcome::Ok, ""),
        post_json(
            json,
            b"{not json".to_vec(),
            400,
            Some("bad-request"),
            Outcome::Rejected,
            "Failed to parse the request body as JSON",
        ),
        post_json(
            Some("text/plain"),
            b"{}".to_vec(),
            415,
            Some("unsupported-media-type"),
            Outcome::Rejected,
            "Content-Type",
        ),
        post_json(
            json,
            vec![b' '; 70 * 1024],
            413,
            Some("payload-too-large"),
            Outcome::Rejected,
            "length limit exceeded",
        ),
    ]
}

#[tokio::test]
async fn each_route_answers_with_its_outcome_and_is_counted_once() {
    let lab = Lab::start().await;
    let client = reqwest::Client::new();
    let mut expected: HashMap<Outcome, u64> = HashMap::new();
    let mut started = 0;
    for case in cases() {
        let mut request = client.request(case.method.parse().unwrap(), lab.url(case.path));
        if let Some(content_type) = case.content_type {
            request = request.header("content-type", content_type);
        }
        let response = request.body(case.body.clone()).send().await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.bytes().await.unwrap();
        assert_eq!(
            status, case.status,
            "{} {}: {:?}",
            case.method, case.path, body
        );
        match case.code {
            None => assert!(!headers["content-type"]
                .to_str()
                .unwrap()
                .contains("problem")),
            Some(code) => {
                let value = problem(status, &headers, &body);
                assert_eq!(value["code"], code, "{} {}", case.method, case.path);
                assert_eq!(value["instance"], case.path.split('?').next().unwrap());
                assert_eq!(value["type"], "about:blank");
                let detail = value["detail"].as_str().unwrap();
                assert!(
                    detail.contains(case.detail_has),
                    "{} {}: {detail}",
                    case.method,
                    case.path
                );
            }
        }
        *expected.entry(case.outcome).or_default() += 1;
        started += 1;
    }
    let snapshot = lab.quiescent().await;
    assert_eq!(snapshot.in_flight, 0, "{snapshot:#?}");
    for &outcome in Outcome::ALL {
        let want = expected.get(&outcome).copied().unwrap_or(0);
        assert_eq!(snapshot.outcome(outcome), want, "{outcome:?}");
    }
    assert_eq!(snapshot.started, started);
    // The failure series carry route templates, never raw paths.
    let series = |route: &str, code: &str| {
        snapshot
            .series
            .iter()
            .find(|s| s.route == route && s.code == code)
            .map(|s| s.count)
    };
    assert_eq!(series("/huge", "demo-sized"), Some(1));
    assert_eq!(series("/ok", "method-not-allowed"), Some(1));
    assert_eq!(series("~unmatched", "not-found"), Some(1));
    assert_eq!(series("/json", "payload-too-large"), Some(1));
    assert!(snapshot.series.iter().all(|s| s.route != "/no/such/route"));
    assert_eq!(
        snapshot.series.iter().map(|s| s.count).sum::<u64>(),
        snapshot.failures()
    );
}

#[tokio::test]
async fn no_internal_text_reaches_a_client() {
    let lab = Lab::start().await;
    let client = reqwest::Client::new();
    for path in ["/internal", "/panic", "/small", "/huge", "/timeout"] {
        let response = client.get(lab.url(path)).send().await.unwrap();
        let body = response.text().await.unwrap();
        assert!(body.len() <= faultline::limits::DEFAULT_MAX_BODY_BYTES);
        for word in ["secret", "sk_live", "vault", "cause at depth", "sixty-four"] {
            assert!(!body.contains(word), "{path} leaks `{word}`: {body}");
        }
    }
}

#[tokio::test]
async fn the_request_id_a_client_sends_comes_back() {
    let lab = Lab::start().await;
    let response = reqwest::Client::new()
        .get(lab.url("/handled"))
        .header("x-request-id", "hook-42")
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-request-id"], "hook-42");
    let value: serde_json::Value =
        serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    assert_eq!(value["request_id"], "hook-42");
}

#[tokio::test]
async fn the_query_string_never_reaches_the_problem_body() {
    let lab = Lab::start().await;
    let response = reqwest::get(lab.url("/handled?apiKey=topsecret"))
        .await
        .unwrap();
    let body = response.text().await.unwrap();
    assert!(!body.contains("topsecret"), "{body}");
    assert!(body.contains(r#""instance":"/handled""#), "{body}");
}

#[tokio::test]
async fn a_body_that_panics_mid_stream_is_counted_aborted() {
    let lab = Lab::start().await;
    let response = reqwest::get(lab.url("/panic-body")).await.unwrap();
    // The head went out before the body failed.
    assert_eq!(response.status(), 200);
    let read = response.bytes().await;
    assert!(
        read.is_err(),
        "the stream must end in an error, got {read:?}"
    );
    let snapshot = lab.quiescent().await;
    assert_eq!(snapshot.aborted, 1);
    assert_eq!(snapshot.ok, 0);
    assert_eq!(snapshot.started, 1);
    let series = &snapshot.series[0];
    assert_eq!(
        (series.route.as_str(), series.code.as_str(), series.status),
        ("/panic-body", "body-panic", 200)
    );
    // The server keeps serving.
    assert_eq!(reqwest::get(lab.url("/ok")).await.unwrap().status(), 200);
}

#[tokio::test]
async fn a_head_request_is_ok_not_cancelled() {
    let lab = Lab::start().await;
    let response = reqwest::Client::new()
        .head(lab.url("/ok"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let snapshot = lab.quiescent().await;
    assert_eq!((snapshot.ok, snapshot.cancelled), (1, 0));
}

/// Clients that go away while the handler sleeps are each counted cancelled, exactly.
#[tokio::test]
async fn clients_that_disconnect_are_counted_cancelled() {
    const CLIENTS: u64 = 24;
    let lab = Lab::start().await;
    let mut streams = Vec::new();
    for _ in 0..CLIENTS {
        let mut stream = TcpStream::connect(lab.addr).await.unwrap();
        stream
            .write_all(b"GET /slow?ms=30000 HTTP/1.1\r\nhost: lab\r\n\r\n")
            .await
            .unwrap();
        streams.push(stream);
    }
    lab.wait_for(|s| s.in_flight == CLIENTS).await;
    drop(streams);
    let snapshot = lab.quiescent().await;
    assert_eq!(snapshot.cancelled, CLIENTS);
    assert_eq!(snapshot.started, CLIENTS);
    assert_eq!(snapshot.finished(), CLIENTS, "cancelled and nothing else");
    let series = &snapshot.series[0];
    assert_eq!(
        (
            series.route.as_str(),
            series.code.as_str(),
            series.status,
            series.count
        ),
        ("/slow", "cancelled", 499, CLIENTS)
    );
}

/// A client that reads the whole answer and hangs up: ok, not cancelled.
#[tokio::test]
async fn a_client_that_leaves_after_the_whole_answer_is_counted_ok() {
    let lab = Lab::start().await;
    lab.hang_up_after_the_head("/slow?ms=1").await;
    let snapshot = lab.quiescent().await;
    assert_eq!((snapshot.ok, snapshot.cancelled), (1, 0));
}

#[tokio::test]
async fn the_metrics_route_exposes_the_ledger() {
    let lab = Lab::start().await;
    reqwest::get(lab.url("/handled")).await.unwrap();
    reqwest::get(lab.url("/nowhere")).await.unwrap();
    let response = reqwest::get(lab.url("/metrics")).await.unwrap();
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let text = response.text().await.unwrap();
    assert!(
        text.contains("faultline_requests_total{outcome=\"handled\"} 1\n"),
        "{text}"
    );
    assert!(
        text.contains("faultline_requests_total{outcome=\"rejected\"} 1\n"),
        "{text}"
    );
    // The metrics request itself is in flight while it renders.
    assert!(text.contains("faultline_in_flight 1\n"), "{text}");
    assert!(text.contains(
        "faultline_errors_total{route=\"/handled\",code=\"demo-invalid\",status=\"422\"} 1\n"
    ));
    assert!(text.contains(
        "faultline_errors_total{route=\"~unmatched\",code=\"not-found\",status=\"404\"} 1\n"
    ));
}

/// A streamed body with a declared length, like a file download: hyper stops polling once
/// the declared bytes are written, and the request is still counted ok.
#[tokio::test]
async fn a_streamed_body_with_a_declared_length_is_counted_ok() {
    use axum::body::Body;
    use axum::routing::get;

    let (layer, ledger) = faultline::FaultLayer::pair();
    let app = axum::Router::new()
        .route(
            "/file",
            get(|| async {
                let chunks = futures::stream::iter(
                    ["hel", "lo"]
                        .map(|c| Ok::<_, std::io::Error>(bytes::Bytes::from_static(c.as_bytes()))),
                );
                axum::http::Response::builder()
                    .header("content-length", "5")
                    .body(Body::from_stream(chunks))
                    .unwrap()
            }),
        )
        .layer(layer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let body = reqwest::get(format!("http://{addr}/file"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(body, "hello");
    let settled = std::time::Duration::from_secs(10);
    tokio::time::timeout(settled, ledger.quiescent())
        .await
        .expect("the body's end is counted");
    let snapshot = ledger.snapshot();
    assert_eq!(
        (snapshot.ok, snapshot.cancelled, snapshot.in_flight),
        (1, 0, 0)
    );
    server.abort();
}
