//! The failure lab's routes: one per kind of failure, all behind one fault layer.
//!
//! A library so that faultline's end-to-end tests and benchmarks serve the same routes
//! in-process; the `failure-lab` binary serves them over TCP.

use std::error::Error as StdError;
use std::fmt;
use std::io;
use std::sync::OnceLock;
use std::time::Duration;

use axum::body::Body;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Query};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use bytes::Bytes;
use faultline::catalog::openapi::{CatalogResponses, LayerFaults, ProblemDetails};
use faultline::{Fault, FaultLayer, Ledger};
use tower::ServiceBuilder;
use utoipa::OpenApi;

/// `POST /json` refuses bodies past this, so the 413 rejection has a target.
const JSON_LIMIT_BYTES: usize = 64 * 1024;
/// `/timeout` sleeps this long behind a timeout of [`TIMEOUT`].
const TIMEOUT_SLEEP: Duration = Duration::from_secs(1);
const TIMEOUT: Duration = Duration::from_millis(100);
/// `/panic-body` waits this long before each chunk.
const BODY_CHUNK_PAUSE: Duration = Duration::from_millis(5);
/// What `/huge`'s error would write through `Display`, left unbounded: 10 MB.
const HUGE_DISPLAY_BYTES: usize = 10 * 1024 * 1024;
/// How deep `/huge`'s `source()` chain goes.
const HUGE_CHAIN_DEPTH: usize = 10_000;
/// `/slow` sleeps at most this long, whatever `ms` says.
const SLOW_MAX_MS: u64 = 60_000;

/// The errors of the lab's handlers.
#[derive(Debug, thiserror::Error, Fault)]
pub enum LabError {
    /// A client mistake: public message, 422.
    #[error("the demo input is invalid: `{field}` must be positive")]
    #[fault(status = 422, code = "demo-invalid")]
    Invalid { field: &'static str },
    /// A server failure whose chain holds words no client may read.
    #[error("could not read the secret store")]
    #[fault(status = 500, code = "store-failed")]
    Store(#[source] io::Error),
    /// `/small` and `/huge`: the same type, different weights.
    #[error(transparent)]
    #[fault(status = 500, code = "demo-sized")]
    Sized(SizedError),
}

/// An error whose `Display` writes `display_bytes` bytes in 64-byte pieces and whose `source()`
/// chain starts at `chain`.
/// An error of a chosen weight, for `/small` and `/huge`.
#[derive(Debug)]
pub struct SizedError {
    display_bytes: usize,
    chain: Option<&'static Link>,
}

impl fmt::Display for SizedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const PIECE: &str = "this error goes on and on, sixty-four bytes at a time........\n";
        let mut written = 0;
        while written < self.display_bytes {
            f.write_str(PIECE)?;
            written += PIECE.len();
        }
        Ok(())
    }
}

impl StdError for SizedError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.chain.map(|link| link as _)
    }
}

/// One link of a shared, never-dropped chain: dropping a 10,000-deep chain of boxes would
/// recurse 10,000 frames deep.
#[derive(Debug)]
struct Link {
    depth: usize,
    next: Option<&'static Link>,
}

impl fmt::Display for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cause at depth {}", self.depth)
    }
}

impl StdError for Link {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.next.map(|link| link as _)
    }
}

/// A chain `depth` links deep, built once per depth and leaked on purpose.
fn chain(depth: usize) -> &'static Link {
    let mut next = None;
    for d in (1..=depth).rev() {
        next = Some(&*Box::leak(Box::new(Link { depth: d, next })));
    }
    next.expect("depth >= 1")
}

fn huge_chain() -> &'static Link {
    static CHAIN: OnceLock<&'static Link> = OnceLock::new();
    CHAIN.get_or_init(|| chain(HUGE_CHAIN_DEPTH))
}

fn small_chain() -> &'static Link {
    static CHAIN: OnceLock<&'static Link> = OnceLock::new();
    CHAIN.get_or_init(|| chain(1))
}

#[derive(serde::Deserialize)]
struct SlowParams {
    ms: Option<u64>,
}

#[utoipa::path(get, path = "/ok", responses((status = 200, description = "ok")))]
async fn ok() -> &'static str {
    "ok"
}

#[utoipa::path(get, path = "/handled", responses(CatalogResponses<(LabError, LayerFaults)>))]
async fn handled() -> Result<&'static str, LabError> {
    Err(LabError::Invalid { field: "amount" })
}

#[utoipa::path(get, path = "/internal", responses(CatalogResponses<(LabError, LayerFaults)>))]
async fn internal() -> Result<&'static str, LabError> {
    let cause = io::Error::other("secret token sk_live_123 was rejected by the vault");
    Err(LabError::Store(io::Error::new(
        io::ErrorKind::PermissionDenied,
        Wrapped(cause),
    )))
}

/// An `io::Error` payload that has a source of its own, so `/internal`'s chain is two deep.
#[derive(Debug)]
struct Wrapped(io::Error);

impl fmt::Display for Wrapped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("opening the secret store failed")
    }
}

impl StdError for Wrapped {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&self.0)
    }
}

/// What `/hostile`'s error says first: markup and quotes, as an attacker would put into a
/// field that an error message echoes. The inbox page must show it, never run it.
pub const HOSTILE_MESSAGE: &str =
    "unknown repository <script>document.documentElement.dataset.pwned='1'</script> \"quoted\" & 'single' <img src=x>";

/// How long the unbroken token after [`HOSTILE_MESSAGE`] is: wider than a laptop screen in
/// any font (over 2,000 px at 14 px), and short enough that the whole message stays within
/// the summary's default cap of 512 bytes.
pub const UNBROKEN_TOKEN_CHARS: usize = 300;

/// `/hostile`'s whole message: [`HOSTILE_MESSAGE`], then a URL of [`UNBROKEN_TOKEN_CHARS`]
/// characters with nowhere to break a line, as a webhook's repository URL or a base64 blob
/// echoed back would be. The inbox page must fit the screen all the same.
pub fn hostile_message() -> String {
    const URL: &str = "https://git.example.com/";
    format!(
        "{HOSTILE_MESSAGE} at {URL}{}",
        "x".repeat(UNBROKEN_TOKEN_CHARS - URL.len())
    )
}

/// `/hostile`: a 400 whose message is [`hostile_message`]. Not in the OpenAPI document: it
/// exists for the inbox page's browser check.
async fn hostile() -> Result<&'static str, faultline::Error> {
    Err(faultline::Error::new(
        StatusCode::BAD_REQUEST,
        "hostile-input",
        hostile_message(),
    ))
}

#[utoipa::path(get, path = "/panic", responses(LayerFaults))]
async fn panics() -> &'static str {
    let detail = String::from("secret: the handler panicked on purpose");
    panic!("{detail}")
}

#[utoipa::path(get, path = "/panic-body", responses((status = 200, description = "three chunks, then the body panics"), LayerFaults))]
async fn panic_body() -> Body {
    let chunks = futures::stream::unfold(0_u32, |n| async move {
        // A pause before each chunk lets the head and earlier chunks reach the client first.
        tokio::time::sleep(BODY_CHUNK_PAUSE).await;
        if n == 3 {
            panic!("secret: the body panicked after three chunks");
        }
        Some((
            Ok::<_, io::Error>(Bytes::from(format!("chunk {n}\n"))),
            n + 1,
        ))
    });
    Body::from_stream(chunks)
}

#[utoipa::path(get, path = "/slow", params(("ms" = Option<u64>, Query, description = "how long to sleep, in milliseconds")), responses((status = 200, description = "slept"), CatalogResponses<(QueryRejection, LayerFaults)>))]
async fn slow(Query(params): Query<SlowParams>) -> &'static str {
    let ms = params.ms.unwrap_or(1_000).min(SLOW_MAX_MS);
    tokio::time::sleep(Duration::from_millis(ms)).await;
    "slow"
}

#[utoipa::path(get, path = "/small", responses(CatalogResponses<(LabError, LayerFaults)>))]
async fn small() -> Result<&'static str, LabError> {
    Err(LabError::Sized(SizedError {
        display_bytes: 1,
        chain: Some(small_chain()),
    }))
}

#[utoipa::path(get, path = "/huge", responses(CatalogResponses<(LabError, LayerFaults)>))]
async fn huge() -> Result<&'static str, LabError> {
    Err(LabError::Sized(SizedError {
        display_bytes: HUGE_DISPLAY_BYTES,
        chain: Some(huge_chain()),
    }))
}

#[utoipa::path(post, path = "/json", request_body = serde_json::Value, responses((status = 200, description = "the same JSON back"), CatalogResponses<(JsonRejection, LayerFaults)>))]
async fn json(Json(value): Json<serde_json::Value>) -> Json<serde_json::Value> {
    Json(value)
}

#[utoipa::path(get, path = "/timeout", responses(LayerFaults))]
async fn sleeps_past_the_timeout() -> &'static str {
    tokio::time::sleep(TIMEOUT_SLEEP).await;
    "too late"
}

/// The lab's OpenAPI document: every route with every status and code it can answer, and
/// the `ProblemDetails` schema of the problem bodies.
#[derive(OpenApi)]
#[openapi(
    paths(
        ok,
        handled,
        internal,
        panics,
        panic_body,
        slow,
        small,
        huge,
        json,
        sleeps_past_the_timeout
    ),
    components(schemas(ProblemDetails))
)]
pub struct LabApi;

/// `GET /openapi.json`: the lab's OpenAPI document.
async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(LabApi::openapi())
}

/// The lab's router, every route behind one fault layer whose ledger is returned with it.
pub fn app() -> (Router, Ledger) {
    // Built before the first request, so no request pays for it.
    huge_chain();
    small_chain();
    let (layer, ledger) = FaultLayer::pair();
    let routes = Router::new()
        .route("/ok", get(ok))
        .route("/handled", get(handled))
        .route("/hostile", get(hostile))
        .route("/internal", get(internal))
        .route("/panic", get(panics))
        .route("/panic-body", get(panic_body))
        .route("/slow", get(slow))
        .route("/small", get(small))
        .route("/huge", get(huge))
        .route(
            "/json",
            post(json).layer(DefaultBodyLimit::max(JSON_LIMIT_BYTES)),
        )
        .route("/metrics", get(ledger.metrics_handler()))
        // The lab serves 127.0.0.1 only and is a test bench: its error groups are open.
        // A real service mounts these behind its admin authentication.
        .route("/errors", get(ledger.errors_handler()))
        .route("/errors/inbox", get(ledger.errors_page_handler()))
        .route("/openapi.json", get(openapi_json))
        .layer(layer.clone());
    // tower's timeout fails with an error, not a response: the fault layer sits outside it
    // and turns that error into a 504.
    let timed = Router::new()
        .route("/timeout", get(sleeps_past_the_timeout))
        .layer(
            ServiceBuilder::new()
                .layer(layer)
                .layer(tower::timeout::TimeoutLayer::new(TIMEOUT)),
        );
    (routes.merge(timed), ledger)
}

// The benchmark's comparison modes: the same success, handled-error and panic routes as
// `app()`, served the ways a service would without faultline.

/// How many structs the naive mode's error carries: a parsed request that is kept inside the
/// error "for context", as error types often do.
const NAIVE_PAYLOAD_ITEMS: usize = 1_000;
/// How deep the naive mode's context chain goes above that payload.
const NAIVE_CONTEXT_DEPTH: usize = 10;
/// Where the naive mode cuts its formatted error: after the work, like
/// `util.inspect(err, {depth: null}).substr(0, 5000)`.
const NAIVE_CUT_CHARS: usize = 5_000;

/// `/handled` written by hand: a small JSON 422 built with serde_json.
async fn handled_by_hand() -> (StatusCode, Json<serde_json::Value>) {
    (
        StatusCode::UNPROCESSABLE_ENTITY,
        Json(serde_json::json!({
            "error": "the demo input is invalid: `amount` must be positive",
            "code": "demo-invalid",
        })),
    )
}

/// The paths `app()` serves besides `/ok`, `/handled` and `/panic`. The comparison modes route
/// them to a plain 404, so that every mode looks its requests up in the same route table: the
/// router's lookup costs more in a larger table (about 190 instructions per request for
/// `/ok` in this one), and that is the service's cost, not its error handling's.
const OTHER_PATHS: [&str; 12] = [
    "/hostile",
    "/internal",
    "/panic-body",
    "/slow",
    "/small",
    "/huge",
    "/json",
    "/metrics",
    "/errors",
    "/errors/inbox",
    "/openapi.json",
    "/timeout",
];

/// The routes of a comparison mode: its own three, and [`OTHER_PATHS`] answering 404.
fn comparison_routes(handled: axum::routing::MethodRouter) -> Router {
    let routes = Router::new()
        .route("/ok", get(ok))
        .route("/handled", handled)
        .route("/panic", get(panics));
    OTHER_PATHS.iter().fold(routes, |routes, path| {
        routes.route(path, get(|| async { StatusCode::NOT_FOUND }))
    })
}

/// `bare` mode: plain axum, no error layer. Errors are small JSON responses written by hand,
/// and `/panic` is not caught: hyper drops the connection.
pub fn bare() -> Router {
    comparison_routes(get(handled_by_hand))
}

/// `catch-panic` mode: the `bare` routes behind tower-http's `CatchPanicLayer` with its default
/// response; std's panic hook stays in place, so each panic is printed to stderr.
pub fn catch_panic() -> Router {
    bare().layer(tower_http::catch_panic::CatchPanicLayer::new())
}

/// One of the small structs of the naive mode's payload.
#[derive(Debug)]
#[allow(dead_code)] // Read through `Debug` only, which is the point.
struct LineItem {
    id: u64,
    sku: &'static str,
    quantity: u32,
    price_cents: u64,
    tags: [&'static str; 2],
}

/// An error as many services build it: context on context above the data that failed.
#[derive(Debug)]
#[allow(dead_code)] // Read through `Debug` only, which is the point.
enum NaiveError {
    Context {
        context: String,
        source: Box<NaiveError>,
    },
    Rejected {
        reason: &'static str,
        payload: Vec<LineItem>,
    },
}

fn naive_error() -> NaiveError {
    let payload = (0..NAIVE_PAYLOAD_ITEMS as u64)
        .map(|id| LineItem {
            id,
            sku: "SKU-0042-BLUE",
            quantity: 1 + (id % 7) as u32,
            price_cents: 1_999 + id,
            tags: ["webhook", "push"],
        })
        .collect();
    let mut error = NaiveError::Rejected {
        reason: "amount must be positive",
        payload,
    };
    for depth in (1..=NAIVE_CONTEXT_DEPTH).rev() {
        error = NaiveError::Context {
            context: format!("while processing step {depth}"),
            source: Box::new(error),
        };
    }
    error
}

/// `naive` mode's `/handled`: the whole error pretty-printed with `{:#?}`, cut to
/// [`NAIVE_CUT_CHARS`] afterwards, logged synchronously and sent to the client.
async fn handled_naively() -> (StatusCode, Json<serde_json::Value>) {
    let error = naive_error();
    let text: String = format!("{error:#?}")
        .chars()
        .take(NAIVE_CUT_CHARS)
        .collect();
    tracing::error!(error = %text, "request failed");
    (
        StatusCode::UNPROCESSABLE_ENTITY,
        Json(serde_json::json!({ "error": text })),
    )
}

/// `naive` mode: the `bare` routes, but `/handled` formats and logs its whole error.
pub fn naive() -> Router {
    comparison_routes(get(handled_naively))
}
