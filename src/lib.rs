//! faultline: one tower layer that catches every failure of an axum service, answers it with
//! a small, safe RFC 9457 `application/problem+json` body, reports it and counts it exactly.
//!
//! Wrap a `Router` in one [`FaultLayer`]. Handlers return `Result<T, E>` where `E` is your own
//! error type deriving [`Fault`](derive@Fault) (status, stable code, public message), or
//! faultline's [`Error`]; with `?`, axum's rejections keep their status and code and any other
//! `std::error::Error` becomes a 500. The layer catches:
//!
//! | outcome | what happened | status |
//! |---|---|---|
//! | `ok` | 2xx/3xx without a fault, body sent to its end | as sent |
//! | `handled` | a handler returned `Err` | the fault's |
//! | `rejected` | a 4xx/5xx without a fault: axum's rejections, 404, 405, 413, other layers | kept |
//! | `service_error` | the inner service returned `Err`: timeout, overload, … | 504, 503, 500 |
//! | `panicked` | a panic in `call`, in a poll, in an extractor or in `IntoResponse` | 500 |
//! | `aborted` | the head was sent, then the body failed or panicked | (stream ends in error) |
//! | `cancelled` | the response, or its body, was dropped before it was sent whole | (none) |
//!
//! A streamed body is `ok` when it ends, or once the bytes of its declared length are out; a
//! body of length 0, and an answer that carries none on the wire (to a HEAD, a 1xx, a 204, a
//! 304), as soon as the head goes out. A body dropped before that, polled or not, is
//! `cancelled`.
//!
//! Every request ends in exactly one outcome, counted in the [`Ledger`], which keeps `started`
//! and each outcome as totals of their own. A snapshot reads the finishes before the starts,
//! ordered so that every finish it reads has its start read, on any memory model:
//! `ok + handled + rejected + service_error + panicked + aborted + cancelled <= started` holds
//! in every snapshot ([`Snapshot::is_consistent`](ledger::Snapshot::is_consistent), which a finish counted twice or a start lost
//! breaks), and once nothing is in flight each outcome is exactly the number of requests that
//! ended in it.
//!
//! Summaries are bounded before the work: messages go through a writer that refuses bytes
//! past [`limits::DEFAULT_MAX_MESSAGE_BYTES`], the `source()` chain is walked to
//! [`limits::DEFAULT_MAX_CHAIN_LINKS`], and the whole body is capped at
//! [`limits::DEFAULT_MAX_BODY_BYTES`].
//! 5xx bodies carry a generic detail and the request id; the internal text goes to the
//! tracing report only.
//!
//! # What the crate root holds
//!
//! The root names what a service writes to set the layer up, and no more; what it reads
//! back, or names only in a type, is one module down.
//!
//! - [`FaultLayer`], and the [`ReportLevels`] its builder takes: the one layer.
//! - [`Fault`] (the trait and its derive), [`Error`] and [`impl_into_response!`]: what a
//!   handler returns.
//! - [`Ledger`]: the counts, and the handlers that serve them.
//! - [`install_panic_hook`]: called once at start-up, so that a caught panic stays off stderr.
//! - The modules: [`limits`] (every cap and default), [`ledger`] (what a ledger reads out,
//!   the [`Outcome`](ledger::Outcome) of each request among it), [`service`] (the types the
//!   layer builds), [`catalog`] (every answer an error type gives, for API documentation and,
//!   with `utoipa`, OpenAPI), and one per feature that adds names: `metrics`, `webhooks`.
//!
//! # Features
//!
//! - `derive` (default): `#[derive(Fault)]`.
//! - `json` (default): axum's `JsonRejection` as a fault, for `?`.
//! - `metrics`: the `metrics` facade bridge, see `FaultLayer::record_metrics` (when enabled).
//! - `opentelemetry`: the OpenTelemetry metrics bridge.
//! - `tracing-opentelemetry`: a failure sets its request's span status as OpenTelemetry's HTTP
//!   conventions say (status `Error`, `error.type` = the code), see `docs/operations.md`.
//! - `utoipa`: error responses in OpenAPI, see `catalog::openapi` (when enabled).
//! - `webhooks`: verified webhook intake for GitHub, GitLab, Bitbucket, Gitea, Forgejo,
//!   Standard Webhooks, Stripe, Slack and Shopify, see the `webhooks` module (when enabled).
//!
//! # Quick start
//!
//! ```
//! use axum::{routing::get, Router};
//! use faultline::{Fault, FaultLayer};
//!
//! #[derive(Debug, thiserror::Error, Fault)]
//! enum HookError {
//!     #[error("event `{0}` is not handled here")]
//!     #[fault(status = 422, code = "unsupported-event")]
//!     UnsupportedEvent(String),
//! }
//!
//! async fn hook() -> Result<&'static str, HookError> {
//!     Err(HookError::UnsupportedEvent("issues".into()))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let (layer, ledger) = FaultLayer::pair();
//! let app = Router::new()
//!     .route("/hook", get(hook))
//!     .route("/metrics", get(ledger.metrics_handler()))
//!     .layer(layer);
//!
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
//! let addr = listener.local_addr().unwrap();
//! let server = tokio::spawn(async move { axum::serve(listener, app).await });
//!
//! let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
//! # use tokio::io::{AsyncReadExt, AsyncWriteExt};
//! stream
//!     .write_all(b"GET /hook HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
//!     .await
//!     .unwrap();
//! let mut response = String::new();
//! stream.read_to_string(&mut response).await.unwrap();
//!
//! assert!(response.starts_with("HTTP/1.1 422"));
//! assert!(response.contains("content-type: application/problem+json"));
//! assert!(response.contains(r#""code":"unsupported-event""#));
//! assert!(response.contains(r#""detail":"event `issues` is not handled here""#));
//! assert_eq!(ledger.snapshot().handled, 1);
//! server.abort();
//! # }
//! ```

#![deny(unsafe_code)]
#![deny(unreachable_pub)]
#![warn(missing_docs)]

// The modules in the order of their layers, ground first, each a blank line apart so that
// the order stays as written: a module uses only those declared above it
// (tests/module_order.rs reads the uses and checks it). A private module's line here is a
// comment, not a doc: with a doc here, rustdoc reads the links of the module's own docs from
// the crate root, where they do not resolve.

// How a request ended, and the route labels every failure carries.
mod outcome;

/// Every cap and default, with its reason.
pub mod limits;

// The caps and switches a layer works with.
mod config;

// The atomics and locks the lock-free protocols use: std's, or loom's in the models.
mod sync;

// Catching panics, the hook that keeps caught ones off stderr, locks that outlive them.
mod panic;

// The per-thread stripes shared state is split into, for the ledger's counters and the
// middleware's shared state alike, and the counted pointer with one handle per stripe.
mod stripe;

// The bounded writer, and the per-thread arena an answer's bytes are frozen from.
mod text;

// What the layer keeps of a request (method, path, route, request id), the process-wide route
// table, and request-id generation.
mod request;

// The `Fault` trait, `Error`, rejections, codes, and the response-extension markers.
mod error;

// The bounded summary of a failure, computed once: what the answer, the report and the
// counts are all made from.
mod summary;

// The problem body rendered from a summary.
mod render;

// The tracing event of a failure.
mod report;

// The ledger, and what it keeps of failures: series, flood control, error groups.
mod count;

// What a ledger serves over HTTP (`/metrics`, the error groups, the errors page), the
// `metrics` and OpenTelemetry bridges.
mod export;

/// Verified webhook intake: a verifier per sender, the extractor, refusals as faults.
#[cfg(feature = "webhooks")]
pub mod webhooks;

// What `?` makes of an error: every fault faultline defines keeps its status and code.
mod convert;

// The tower layer, service, response future and body.
mod middleware;

pub use crate::config::ReportLevels;
// `Ledger`'s methods live in three files, each beside what it reads: making, counting and
// reading in `count/ledger/mod.rs`, the error budget in `count/ledger/budget.rs`, the HTTP
// handlers and the errors page in `export/handlers.rs`.
pub use crate::count::Ledger;
pub use crate::error::{Error, Fault};
pub use crate::middleware::FaultLayer;
pub use crate::panic::install_panic_hook;
#[cfg(feature = "derive")]
pub use faultline_derive::Fault;

pub mod service {
    //! The service plumbing [`FaultLayer`](crate::FaultLayer) builds: named in a type, rarely
    //! written by hand. [`FaultService`] wraps the inner service, its `call` returns a
    //! [`ResponseFuture`], and every response it gives has a [`FaultBody`]; a problem body
    //! has the content type [`PROBLEM_JSON`].

    pub use crate::middleware::FaultBody;
    pub use crate::middleware::FaultService;
    pub use crate::middleware::ResponseFuture;
    pub use crate::render::PROBLEM_JSON;
}

pub mod ledger {
    //! What a [`Ledger`](crate::Ledger) is built with and what it reads out: its
    //! [`LedgerBuilder`], the [`Outcome`] each request is counted in, the counts at one moment
    //! ([`Snapshot`], with one [`Series`] per route, code and status) and the error groups
    //! ([`Group`]), with the labels and the
    //! content type they use; the requests per route and outcome ([`RouteRequests`]) and the
    //! error budget per route ([`RouteBudget`]); the counters kept outside the ledger that it
    //! exports ([`ExportCounters`], each read as a [`Counter`]).

    pub use crate::count::{
        Counter, ExportCounters, Group, LedgerBuilder, RouteBudget, RouteRequests, Series,
        Snapshot, UnreadBodies,
    };
    pub use crate::export::PROMETHEUS_TEXT;
    pub use crate::limits::TREND_MINUTES;
    pub use crate::outcome::{Outcome, OVERFLOW_LABEL, UNMATCHED_ROUTE};
}

pub mod catalog {
    //! Every answer an error type can give, for API documentation: `#[derive(Fault)]` writes
    //! a type's [`Catalog`], and the `utoipa` feature turns it into OpenAPI responses (the
    //! `openapi` module, when enabled).

    pub use crate::error::{Catalog, CatalogEntry};
    #[cfg(feature = "utoipa")]
    pub use crate::render::openapi;
}

#[cfg(feature = "metrics")]
pub mod metrics {
    //! The request duration histogram the `metrics` bridge records (feature `metrics`), named
    //! and bucketed so that a Prometheus exporter can be set up for it; see
    //! [`FaultLayer::record_metrics`](crate::FaultLayer::record_metrics).

    pub use crate::export::{HTTP_DURATION_BUCKETS, HTTP_DURATION_METRIC};
}

/// What [`impl_into_response!`] expands to needs; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use std::borrow::Cow;
    pub use std::vec::Vec;

    pub use axum::response::{IntoResponse, Response};
    pub use http::header::RETRY_AFTER;
    pub use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
    #[cfg(feature = "utoipa")]
    pub use utoipa;

    /// What utoipa's `IntoResponses` returns.
    #[cfg(feature = "utoipa")]
    pub type OpenApiResponses = std::collections::BTreeMap<
        String,
        utoipa::openapi::RefOr<utoipa::openapi::response::Response>,
    >;

    /// A status the derive has checked to be 4xx or 5xx, made in a `const`.
    pub const fn status(code: u16) -> StatusCode {
        match StatusCode::from_u16(code) {
            Ok(status) => status,
            Err(_) => panic!("the derive checks that a status is 4xx or 5xx"),
        }
    }
}

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// The operations guide's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../docs/operations.md")]
struct OperationsDoctests;

/// The webhooks guide's examples, compiled and run as doc tests.
#[cfg(all(doctest, feature = "webhooks"))]
#[doc = include_str!("../docs/webhooks.md")]
struct WebhooksDoctests;

/// The open-internet guide's examples (shown, not run: they need the reference service).
#[cfg(doctest)]
#[doc = include_str!("../docs/open-internet.md")]
struct OpenInternetDoctests;
