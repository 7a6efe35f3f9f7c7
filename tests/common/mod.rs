//! Serves the failure lab in-process on 127.0.0.1:0 for the end-to-end tests.

// Each test binary that includes this module uses a different part of it.
#![allow(dead_code)]

pub mod bodies;
pub mod keep_alive;
pub mod oneshot;
pub mod subscriber;
pub mod threads;
pub mod tools;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use faultline::ledger::Snapshot;
use faultline::Ledger;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// What `Lab::hang_up_after_the_head` reads at the most: room for the status line it checks;
/// the rest of the answer is left unread.
const HEAD_READ: usize = 512;

/// A running lab server; aborted when dropped.
pub struct Lab {
    pub addr: SocketAddr,
    pub ledger: Ledger,
    task: tokio::task::JoinHandle<()>,
}

impl Lab {
    pub async fn start() -> Self {
        let (app, ledger) = failure_lab::app();
        Self::serve(app, ledger).await
    }

    /// Serves `app`, whose fault layer counts into `ledger`, with the panic hook installed.
    pub async fn serve(app: axum::Router, ledger: Ledger) -> Self {
        faultline::install_panic_hook();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { addr, ledger, task }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Sends a GET of `path` over TCP, reads what the first read gives (the head at least)
    /// and hangs up, whether or not the body has been sent whole by then.
    pub async fn hang_up_after_the_head(&self, path: &str) {
        let mut stream = TcpStream::connect(self.addr).await.unwrap();
        let request = format!("GET {path} HTTP/1.1\r\nhost: lab\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut buf = [0_u8; HEAD_READ];
        let n = stream.read(&mut buf).await.unwrap();
        assert!(buf[..n].starts_with(b"HTTP/1.1 200"), "{path}");
    }

    /// Waits (ten seconds at most) until no request is in flight, bodies included, then
    /// takes a snapshot.
    pub async fn quiescent(&self) -> Snapshot {
        let settled = tokio::time::timeout(Duration::from_secs(10), self.ledger.quiescent()).await;
        let snapshot = self.ledger.snapshot();
        assert!(settled.is_ok(), "still in flight: {snapshot:#?}");
        snapshot
    }

    /// Waits up to ten seconds for `done` to hold of a snapshot, and returns that snapshot;
    /// panics with the last snapshot if it never does.
    pub async fn wait_for(&self, done: impl Fn(&Snapshot) -> bool) -> Snapshot {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let snapshot = self.ledger.snapshot();
            if done(&snapshot) {
                return snapshot;
            }
            assert!(Instant::now() < deadline, "gave up waiting: {snapshot:#?}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `/ok`, and `/handled` failing with a handler's 422 `demo-invalid` and `message`: the
/// routes the metrics bridge tests put behind their layer.
pub fn ok_and_handled(message: &'static str) -> axum::Router {
    use axum::routing::get;
    axum::Router::new()
        .route("/ok", get(|| async { "ok" }))
        .route(
            "/handled",
            get(move || async move {
                Err::<(), _>(faultline::Error::new(
                    axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                    "demo-invalid",
                    message,
                ))
            }),
        )
}

/// The problem body of a response, checked for the members every problem carries.
pub fn problem(
    status: u16,
    headers: &reqwest::header::HeaderMap,
    body: &[u8],
) -> serde_json::Value {
    assert_eq!(
        headers.get("content-type").unwrap(),
        "application/problem+json",
        "status {status}"
    );
    assert_eq!(headers.get("cache-control").unwrap(), "no-store");
    assert!(body.len() <= faultline::limits::DEFAULT_MAX_BODY_BYTES);
    let value: serde_json::Value = serde_json::from_slice(body).expect("valid JSON");
    assert_eq!(value["status"], status);
    for member in ["type", "title", "detail", "instance", "code", "request_id"] {
        assert!(value[member].is_string(), "{member} missing in {value}");
    }
    assert_eq!(
        headers.get("x-request-id").unwrap().to_str().unwrap(),
        value["request_id"].as_str().unwrap()
    );
    value
}
