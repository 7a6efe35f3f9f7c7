//! The serve stack over real TCP: stalled heads and bodies, the request deadline, the
//! connection bound, idle connections and graceful shutdown. Limits are short (a few hundred
//! milliseconds); the only timed assertions are generous bounds on "was closed".

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::routing::get;
use axum::Router;
use faultline::ledger::Snapshot;
use faultline::{FaultLayer, Ledger};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{oneshot, Notify, Semaphore};
use webhook_ingest::serve::{self, deadline, Connections, Deadlines, Limits};
use webhook_ingest::store::Store;

/// The short limit every test runs with.
const LIMIT: Duration = Duration::from_millis(300);
/// Far past any limit here: a connection still open this long was not closed by one.
const CLOSE_BOUND: Duration = Duration::from_secs(10);
/// The connection bound of the bound test, and the clients past it.
const BOUND: usize = 4;
const PAST_BOUND: usize = 3;

/// A served router; `stop` shuts it down and waits for the server to return.
struct Server {
    addr: SocketAddr,
    ledger: Ledger,
    connections: Connections,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    async fn start(
        router: Router,
        ledger: Ledger,
        connections: Connections,
        limits: Limits,
    ) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let served = connections.clone();
        let task = tokio::spawn(async move {
            serve::serve(listener, router, limits, served, async {
                let _ = stopped.await;
            })
            .await;
        });
        Self {
            addr,
            ledger,
            connections,
            stop: Some(stop),
            task,
        }
    }

    /// The reference service on an in-memory store, with short limits.
    async fn reference(limits: Limits) -> Self {
        let connections = Connections::default();
        let config = webhook_ingest::Config {
            deadlines: Deadlines {
                body: LIMIT,
                request: 3 * LIMIT,
            },
            connections: connections.clone(),
            ..webhook_ingest::Config::default()
        };
        let (router, ledger) = webhook_ingest::app(Store::open(":memory:").await.unwrap(), config);
        Self::start(router, ledger, connections, limits).await
    }

    /// `routes` behind the request deadlines and a fault layer, as the reference service
    /// composes them.
    async fn custom(routes: Router, deadlines: Deadlines, limits: Limits) -> Self {
        let (layer, ledger) = FaultLayer::pair();
        let router = routes
            .layer(axum::middleware::from_fn_with_state(
                deadlines,
                deadline::enforce,
            ))
            .layer(layer);
        Self::start(router, ledger, Connections::default(), limits).await
    }

    /// Starts shutdown; the server's return is awaited by `stopped`.
    fn begin_shutdown(&mut self) {
        let _ = self.stop.take().unwrap().send(());
    }

    async fn stopped(self) -> (Ledger, Connections) {
        tokio::time::timeout(CLOSE_BOUND, self.task)
            .await
            .expect("the server returned after shutdown")
            .unwrap();
        (self.ledger, self.connections)
    }

    async fn connect(&self, bytes: &[u8]) -> TcpStream {
        let mut stream = TcpStream::connect(self.addr).await.unwrap();
        stream.write_all(bytes).await.unwrap();
        stream
    }

    /// Waits until the open-connection gauge reads `open`.
    async fn wait_open(&self, open: u64) {
        let deadline = Instant::now() + CLOSE_BOUND;
        while self.connections.open() != open {
            assert!(
                Instant::now() < deadline,
                "open: {}",
                self.connections.open()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// Short limits; the rest as shipped.
fn short_limits() -> Limits {
    Limits {
        header_timeout: LIMIT,
        shutdown_timeout: LIMIT,
        ..Limits::default()
    }
}

/// Everything the server sends until it closes the connection; fails past [`CLOSE_BOUND`].
async fn read_to_close(stream: &mut TcpStream) -> String {
    let mut received = Vec::new();
    let read = tokio::time::timeout(CLOSE_BOUND, async {
        let mut buffer = [0; 4096];
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => received.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "still open after {CLOSE_BOUND:?}");
    String::from_utf8_lossy(&received).into_owned()
}

fn status_of(response: &str) -> u16 {
    response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn header_of<'a>(response: &'a str, name: &str) -> Option<&'a str> {
    let head = response.split("\r\n\r\n").next()?;
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

/// Waits until no request is in flight, then takes a snapshot.
async fn quiescent(ledger: &Ledger) -> Snapshot {
    let deadline = Instant::now() + CLOSE_BOUND;
    loop {
        let snapshot = ledger.snapshot();
        if snapshot.in_flight == 0 {
            return snapshot;
        }
        assert!(Instant::now() < deadline, "still in flight: {snapshot:#?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_heads_are_closed_after_the_header_timeout() {
    let server = Server::reference(short_limits()).await;
    // Nothing at all, a piece of HTTP/2's preface (both stall protocol detection), and half an
    // HTTP/1 head (hyper's own header timer).
    let stalls: [&[u8]; 3] = [
        b"",
        b"PRI * HTTP/2.0\r\n",
        b"POST /api/in_1/inboxes/ib_1/commits HTTP/1.1\r\nHost: 127.0.0.1\r\nX-GitHub-",
    ];
    let mut streams = Vec::new();
    for stall in stalls {
        streams.push(server.connect(stall).await);
    }
    server.wait_open(3).await;
    for stream in &mut streams {
        let answer = read_to_close(stream).await;
        assert!(!answer.contains("200 OK"), "{answer}");
    }
    server.wait_open(0).await;
    assert_eq!(server.connections.accepted(), 3);
    assert_eq!(server.ledger.snapshot().started, 0, "no request ever began");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_keep_alive_connection_is_closed() {
    let limits = Limits {
        header_timeout: Duration::from_secs(30),
        idle_timeout: LIMIT,
        ..short_limits()
    };
    let server = Server::reference(limits).await;
    let mut stream = server
        .connect(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await;
    // The header timeout (30 s) is past the bound: only the idle timeout closes it in time.
    let answer = read_to_close(&mut stream).await;
    assert_eq!(status_of(&answer), 200, "{answer}");
    server.wait_open(0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_body_gets_408_problem_json_and_is_counted() {
    let server = Server::reference(short_limits()).await;
    let mut stream = server
        .connect(
            b"POST /api/in_1/inboxes/ib_1/commits HTTP/1.1\r\nHost: 127.0.0.1\r\n\
              Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"ref\":",
        )
        .await;
    let answer = read_to_close(&mut stream).await;
    assert_eq!(status_of(&answer), 408, "{answer}");
    assert_eq!(
        header_of(&answer, "content-type"),
        Some("application/problem+json")
    );
    assert!(answer.contains(r#""code":"body-timeout""#), "{answer}");
    let counts = quiescent(&server.ledger).await;
    assert_eq!((counts.started, counts.handled), (1, 1), "{counts:#?}");
    assert_eq!(counts.finished(), 1, "{counts:#?}");
    let series = &counts.series[0];
    assert_eq!((series.code.as_str(), series.status), ("body-timeout", 408));
    server.wait_open(0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_handler_gets_503_with_retry_after_and_is_counted() {
    let routes = Router::new().route(
        "/slow",
        get(|| async {
            tokio::time::sleep(CLOSE_BOUND).await;
            "too late"
        }),
    );
    let deadlines = Deadlines {
        body: LIMIT,
        request: LIMIT,
    };
    let server = Server::custom(routes, deadlines, short_limits()).await;
    let mut stream = server
        .connect(b"GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .await;
    let answer = read_to_close(&mut stream).await;
    assert_eq!(status_of(&answer), 503, "{answer}");
    assert!(header_of(&answer, "retry-after").is_some(), "{answer}");
    assert!(answer.contains(r#""code":"deadline-exceeded""#), "{answer}");
    assert!(!answer.contains("too late"));
    let counts = quiescent(&server.ledger).await;
    assert_eq!((counts.started, counts.handled), (1, 1), "{counts:#?}");
    assert_eq!(counts.finished(), 1, "{counts:#?}");
    let series = &counts.series[0];
    assert_eq!((series.route.as_str(), series.status), ("/slow", 503));
}

/// A handler that holds its request until the test opens the gate.
#[derive(Clone)]
struct Gate {
    active: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
    entered: Arc<Notify>,
    open: Arc<Semaphore>,
}

impl Default for Gate {
    fn default() -> Self {
        Self {
            active: Arc::default(),
            peak: Arc::default(),
            entered: Arc::default(),
            // Closed: the test adds a permit per request it lets through.
            open: Arc::new(Semaphore::new(0)),
        }
    }
}

async fn held(State(gate): State<Gate>) -> &'static str {
    let now = gate.active.fetch_add(1, Ordering::SeqCst) + 1;
    gate.peak.fetch_max(now, Ordering::SeqCst);
    gate.entered.notify_one();
    let _pass = gate.open.acquire().await.unwrap();
    gate.active.fetch_sub(1, Ordering::SeqCst);
    "released"
}

fn gated(gate: &Gate) -> Router {
    Router::new()
        .route("/held", get(held))
        .route("/free", get(|| async { "free" }))
        .with_state(gate.clone())
}

/// Long request deadlines, so that only the gate ends a held request.
fn patient() -> Deadlines {
    Deadlines {
        body: CLOSE_BOUND,
        request: 2 * CLOSE_BOUND,
    }
}

const HELD_REQUEST: &[u8] = b"GET /held HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_connection_bound_holds_and_the_rest_are_served_after() {
    let gate = Gate::default();
    let limits = Limits {
        max_connections: BOUND,
        header_timeout: CLOSE_BOUND,
        ..short_limits()
    };
    let server = Server::custom(gated(&gate), patient(), limits).await;
    let mut clients = Vec::new();
    for _ in 0..BOUND + PAST_BOUND {
        let mut stream = server.connect(HELD_REQUEST).await;
        clients.push(tokio::spawn(
            async move { read_to_close(&mut stream).await },
        ));
    }
    let deadline = Instant::now() + CLOSE_BOUND;
    while gate.active.load(Ordering::SeqCst) < BOUND {
        assert!(
            Instant::now() < deadline,
            "the first {BOUND} were not served"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Give the connections past the bound every chance to be (wrongly) served.
    tokio::time::sleep(LIMIT).await;
    assert_eq!(gate.active.load(Ordering::SeqCst), BOUND);
    assert_eq!(server.connections.open(), BOUND as u64);
    gate.open.add_permits(BOUND + PAST_BOUND);
    for client in clients {
        let answer = client.await.unwrap();
        assert_eq!(status_of(&answer), 200, "{answer}");
    }
    assert_eq!(gate.peak.load(Ordering::SeqCst), BOUND);
    assert_eq!(server.connections.accepted(), (BOUND + PAST_BOUND) as u64);
    let counts = quiescent(&server.ledger).await;
    assert_eq!(counts.ok, (BOUND + PAST_BOUND) as u64, "{counts:#?}");
    server.wait_open(0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_streams_are_bounded_per_connection_and_an_idle_connection_is_closed() {
    const STREAMS: u32 = 2;
    const REQUESTS: usize = 5;
    let gate = Gate::default();
    let limits = Limits {
        h2_max_streams: STREAMS,
        idle_timeout: LIMIT,
        header_timeout: CLOSE_BOUND,
        ..short_limits()
    };
    let server = Server::custom(gated(&gate), patient(), limits).await;
    let stream = TcpStream::connect(server.addr).await.unwrap();
    let (sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap();
    let connection = tokio::spawn(connection);
    // One answered request first: by then the client has the server's SETTINGS, and with
    // them the stream bound it must keep to (before them it may open any number, which the
    // server refuses past its bound).
    let mut ready = sender.clone();
    let free = hyper::Request::get("http://127.0.0.1/free")
        .body(axum::body::Body::empty())
        .unwrap();
    assert_eq!(ready.send_request(free).await.unwrap().status(), 200);
    let mut requests = Vec::new();
    for _ in 0..REQUESTS {
        let mut sender = sender.clone();
        requests.push(tokio::spawn(async move {
            let request = hyper::Request::get("http://127.0.0.1/held")
                .body(axum::body::Body::empty())
                .unwrap();
            sender.send_request(request).await.unwrap().status()
        }));
    }
    let deadline = Instant::now() + CLOSE_BOUND;
    while gate.active.load(Ordering::SeqCst) < STREAMS as usize {
        assert!(
            Instant::now() < deadline,
            "the first streams were not served"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Give the streams past the bound every chance to be (wrongly) served.
    tokio::time::sleep(LIMIT).await;
    assert_eq!(gate.active.load(Ordering::SeqCst), STREAMS as usize);
    gate.open.add_permits(REQUESTS);
    for request in requests {
        assert_eq!(request.await.unwrap(), 200);
    }
    assert_eq!(gate.peak.load(Ordering::SeqCst), STREAMS as usize);
    assert_eq!(
        server.connections.accepted(),
        1,
        "one connection carried them all"
    );
    // The client keeps its end open: only the server's idle timeout ends the connection.
    tokio::time::timeout(CLOSE_BOUND, connection)
        .await
        .expect("the idle connection was closed")
        .unwrap()
        .unwrap();
    drop(sender);
    server.wait_open(0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_accepting_and_lets_the_request_in_flight_finish() {
    let gate = Gate::default();
    let limits = Limits {
        shutdown_timeout: CLOSE_BOUND,
        ..short_limits()
    };
    let mut server = Server::custom(gated(&gate), patient(), limits).await;
    let addr = server.addr;
    let mut stream = server.connect(HELD_REQUEST).await;
    gate.entered.notified().await;
    server.begin_shutdown();
    // New connections are refused while the one in flight is still held.
    let deadline = Instant::now() + CLOSE_BOUND;
    while TcpStream::connect(addr).await.is_ok() {
        assert!(Instant::now() < deadline, "still accepting after shutdown");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    gate.open.add_permits(1);
    let answer = read_to_close(&mut stream).await;
    assert_eq!(status_of(&answer), 200, "{answer}");
    assert!(answer.ends_with("released"), "{answer}");
    let (ledger, connections) = server.stopped().await;
    let counts = ledger.snapshot();
    assert_eq!((counts.started, counts.ok, counts.in_flight), (1, 1, 0));
    assert_eq!(counts.finished(), 1, "{counts:#?}");
    assert_eq!(connections.open(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_closes_what_outlives_its_deadline_and_the_ledger_balances() {
    let gate = Gate::default();
    let mut server = Server::custom(gated(&gate), patient(), short_limits()).await;
    let mut held = server.connect(HELD_REQUEST).await;
    let mut idle = server.connect(b"").await;
    gate.entered.notified().await;
    server.begin_shutdown();
    let (ledger, connections) = server.stopped().await;
    assert!(!read_to_close(&mut held).await.contains("released"));
    read_to_close(&mut idle).await;
    let counts = ledger.snapshot();
    assert_eq!(
        (counts.started, counts.cancelled, counts.in_flight),
        (1, 1, 0)
    );
    assert_eq!(counts.finished(), 1, "{counts:#?}");
    assert_eq!(connections.open(), 0);
}
