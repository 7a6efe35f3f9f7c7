//! Requests that end while their thread is being torn down, seen from outside the process.
//!
//! A runtime kept in a thread-local drops its tasks in that thread-local's destructor, which
//! runs after the layer's own per-thread values (the answer arena, the head cache, the spare
//! records, the panic site) are gone when the holder was made first. Every request that ends
//! there is still counted, nothing panics and the process exits 0. A child process runs the
//! scenario, since a panic in a thread-local destructor aborts the process.

mod common;

use std::cell::RefCell;
use std::future::Future;
use std::pin::pin;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::routing::get;
use axum::Router;
use common::bodies::endless;
use common::subscriber::OnEvent;
use faultline::{Error, FaultLayer, Ledger};
use http_body_util::BodyExt;
use tower::ServiceExt;

const CHILD_ENV: &str = "FAULTLINE_TEARDOWN_CHILD";
/// Requests parked in the holder when the thread exits: half waiting for their handler, half
/// with the head sent and the body pending.
const PARKED: u64 = 80;
/// Polls a request driven by hand may take: the routes below answer at the first.
const MAX_POLLS: usize = 64;
/// What std prints when a thread-local is reached after its destructor ran.
const TLS_PANIC: &str = "cannot access a Thread Local Storage value";

#[test]
fn requests_that_end_in_a_thread_local_destructor_are_counted_and_answered() {
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child", "--include-ignored", "--nocapture"])
        .env(CHILD_ENV, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "child failed ({:?}):\n{stdout}\n{stderr}",
        output.status
    );
    assert!(!stderr.contains(TLS_PANIC), "stderr:\n{stderr}");
    // Before the exit: one handled failure and one panic answered on the thread. In the
    // destructor: the parked requests cancelled, then one more of each kind answered there.
    let counts = format!(
        "counted started={} ok=1 handled=2 panicked=2 cancelled={PARKED} in_flight=0",
        PARKED + 5
    );
    assert!(stdout.contains(&counts), "stdout:\n{stdout}");
    assert!(
        stdout.contains("in the destructor: 422 unsupported-event, 500 panic, 200 fine"),
        "stdout:\n{stdout}"
    );
    // Every failure written or held back by flood control, and each written one an event.
    let accounted = stdout
        .lines()
        .find_map(|line| line.strip_prefix("accounted "))
        .expect("the child's accounting");
    let field = |name: &str| -> u64 {
        let value = accounted
            .split(&format!("{name}="))
            .nth(1)
            .unwrap_or_default();
        value.split(' ').next().unwrap().parse().unwrap()
    };
    assert_eq!(
        field("reported") + field("suppressed"),
        PARKED + 4,
        "{accounted}"
    );
    assert_eq!(field("events"), field("reported"), "{accounted}");
}

async fn unsupported() -> Result<&'static str, Error> {
    Err(Error::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "unsupported-event",
        "event `issues` is not handled here",
    ))
}

async fn panics() -> &'static str {
    panic!("a handler panicked")
}

fn app() -> (Router, Ledger) {
    let (layer, ledger) = FaultLayer::pair();
    let app = Router::new()
        .route("/unsupported", get(unsupported))
        .route("/panic", get(panics))
        .route("/fine", get(|| async { "fine" }))
        .route("/wait", get(std::future::pending::<&'static str>))
        .route("/stream", get(|| async { endless() }))
        .layer(layer);
    (app, ledger)
}

fn get_request(path: &str) -> Request<Body> {
    Request::get(path).body(Body::empty()).unwrap()
}

/// Drives `future` by hand: in a thread-local destructor tokio's own per-thread context may
/// be gone, so no runtime is used there.
fn drive<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..MAX_POLLS {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
    panic!("not ready after {MAX_POLLS} polls")
}

/// One request through `app` and its whole body, as `status code` (the problem's code, or the
/// body's text).
fn answer_by_hand(app: &Router, path: &str) -> String {
    let response = drive(app.clone().oneshot(get_request(path))).unwrap();
    let status = response.status().as_u16();
    let body = drive(response.into_body().collect()).unwrap().to_bytes();
    let text = String::from_utf8_lossy(&body).into_owned();
    let shown = match text.split("\"code\":\"").nth(1) {
        Some(rest) => rest.split('"').next().unwrap_or_default().to_owned(),
        None => text,
    };
    format!("{status} {shown}")
}

/// The thread's first thread-local, so that its destructor runs after the layer's.
struct Holder {
    runtime: Option<tokio::runtime::Runtime>,
    app: Router,
    answers: Arc<Mutex<Vec<String>>>,
}

impl Drop for Holder {
    fn drop(&mut self) {
        // The parked requests end here, their futures dropped with the runtime's tasks.
        drop(self.runtime.take());
        let answers = ["/unsupported", "/panic", "/fine"].map(|p| answer_by_hand(&self.app, p));
        *self.answers.lock().unwrap() = answers.to_vec();
    }
}

thread_local! {
    static HOLDER: RefCell<Option<Holder>> = const { RefCell::new(None) };
}

/// Makes the holder first, answers a failure and a panic on the thread (making the layer's
/// per-thread values), parks [`PARKED`] requests in the holder's runtime and returns, so that
/// the thread exits with them.
fn run_thread(app: Router, ledger: Ledger, answers: Arc<Mutex<Vec<String>>>) {
    HOLDER.with(|holder| *holder.borrow_mut() = None);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        for path in ["/unsupported", "/panic"] {
            let response = app.clone().oneshot(get_request(path)).await.unwrap();
            response.into_body().collect().await.unwrap();
        }
        for n in 0..PARKED {
            let path = if n % 2 == 0 { "/wait" } else { "/stream" };
            let request = app.clone().oneshot(get_request(path));
            tokio::spawn(async move {
                let response = request.await.unwrap();
                let _ = response.into_body().collect().await;
            });
        }
        // Until every parked request waits: its handler, or its body after the first frame.
        while ledger.snapshot().started < PARKED + 2 {
            tokio::task::yield_now().await;
        }
        for _ in 0..MAX_POLLS {
            tokio::task::yield_now().await;
        }
    });
    let snapshot = ledger.snapshot();
    assert_eq!(snapshot.in_flight, PARKED, "{snapshot:#?}");
    HOLDER.with(|holder| {
        *holder.borrow_mut() = Some(Holder {
            runtime: Some(runtime),
            app,
            answers,
        })
    });
}

#[test]
#[ignore = "run in a child process by the test above"]
fn child() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let events = Arc::new(Mutex::new(0));
    // Counts faultline's events and keeps no per-thread state, so that it works in a
    // thread-local destructor: what is checked is faultline's, not a subscriber's.
    let counted = events.clone();
    let counting = OnEvent(move |event: &tracing::Event<'_>| {
        if event.metadata().target() == "faultline" {
            *counted.lock().unwrap() += 1;
        }
    });
    tracing::subscriber::set_global_default(counting).unwrap();
    faultline::install_panic_hook();
    let (app, ledger) = app();
    let answers = Arc::new(Mutex::new(Vec::new()));
    let thread = {
        let (ledger, answers) = (ledger.clone(), answers.clone());
        std::thread::spawn(move || run_thread(app, ledger, answers))
    };
    thread.join().unwrap();
    let s = ledger.snapshot();
    println!(
        "counted started={} ok={} handled={} panicked={} cancelled={} in_flight={}",
        s.started, s.ok, s.handled, s.panicked, s.cancelled, s.in_flight
    );
    println!("in the destructor: {}", answers.lock().unwrap().join(", "));
    let events = *events.lock().unwrap();
    println!(
        "accounted reported={} suppressed={} events={events}",
        s.reported, s.suppressed
    );
}
