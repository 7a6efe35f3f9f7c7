//! `#[derive(Fault)]`: the status, code and public message of an error type, written as one
//! attribute per variant beside thiserror's `#[error]`.
//!
//! Use it through `faultline`, which re-exports it as `faultline::Fault` (feature `derive`,
//! on by default); the expansion names paths of `faultline` and needs nothing else.
//!
//! ```
//! use faultline::Fault;
//!
//! #[derive(Debug, thiserror::Error, Fault)]
//! #[fault(status = 400)] // the default status of every variant below
//! enum HookError {
//!     #[error("event `{0}` is not handled here")]
//!     #[fault(status = 422, code = "unsupported-event")]
//!     UnsupportedEvent(String),
//!     #[error("payload lacks `{0}`")]
//!     #[fault(code = "malformed-payload")]
//!     Malformed(&'static str),
//!     #[error("the store failed: {0}")]
//!     #[fault(status = 503, code = "store-unavailable", retry_after = 5)]
//!     Store(#[from] std::io::Error),
//! }
//!
//! let error = HookError::Store(std::io::Error::other("disk full"));
//! assert_eq!(error.status(), 503);
//! assert_eq!(error.code(), "store-unavailable");
//! assert!(!error.is_public()); // a 5xx: the client sees a generic message
//! assert_eq!(HookError::Malformed("ref").status(), 400);
//! ```
//!
//! # Keys
//!
//! | key | on | meaning |
//! |---|---|---|
//! | `status = 422` | variant, struct, enum (default) | the HTTP status, 4xx or 5xx |
//! | `code = "unsupported-event"` | variant, struct | the stable kebab-case code |
//! | `message = "text"` | variant, struct | the public message instead of `Display` |
//! | `public` / `public = false` | variant, struct, enum (default) | whether the client reads the message; by default a 4xx is public and a 5xx is not |
//! | `retry_after = 5` | variant, struct, enum (default) | adds `Retry-After: 5` (seconds) |
//! | `header = "www-authenticate: Bearer"` | variant, struct, enum (added to each) | adds a header; may repeat |
//! | `transparent` | variant, struct with one field | status, code, message and headers of the field, itself a `Fault` |
//!
//! A transparent field is one of your own faults, or one of faultline's: axum's rejections
//! (`JsonRejection`, `QueryRejection`, …) and, with the `webhooks` feature,
//! `faultline::webhooks::Refusal`. With thiserror's `#[from]` beside it, `?` puts it in the
//! enum with its status, code and outcome kept (a rejection still counts as `rejected`):
//!
//! ```
//! use axum::extract::rejection::JsonRejection;
//! use axum::Json;
//! use faultline::Fault;
//!
//! #[derive(Debug, thiserror::Error, Fault)]
//! enum ApiError {
//!     #[error(transparent)]
//!     #[fault(transparent)]
//!     Json(#[from] JsonRejection),
//!     #[error("no such item")]
//!     #[fault(status = 404, code = "item-unknown")]
//!     Unknown,
//! }
//!
//! async fn create(body: Result<Json<serde_json::Value>, JsonRejection>) -> Result<String, ApiError> {
//!     let Json(item) = body?; // a 400, 415 or 422 with its code, counted `rejected`
//!     item.get("id").map(ToString::to_string).ok_or(ApiError::Unknown)
//! }
//! # let _ = axum::Router::<()>::new().route("/", axum::routing::post(create));
//! ```
//!
//! A field that is not a fault is a compile error that says so
//! (`` `std::io::Error` is not a fault``): give such an error a variant with a status and code
//! of its own, as `Store` above.
//!
//! A mistake is a compile error on the key that makes it: a variant without a code or a
//! status, a status outside 400–599, a code that is not kebab-case, one code with two
//! statuses, a key beside `transparent`.
//!
//! # What it implements
//!
//! - `faultline::Fault`, from the keys above;
//! - axum's `IntoResponse`, as `faultline::impl_into_response!` does for a hand-written impl;
//! - `faultline::catalog::Catalog`: every (status, code, description) the type can answer with, the
//!   description being the variant's doc comment, else its `#[error("...")]` text; a
//!   transparent field adds its own catalog;
//! - with faultline's `utoipa` feature, utoipa's `IntoResponses`, so that
//!   `#[utoipa::path(responses(HookError))]` documents every status and code.

mod attr;
mod expand;

use proc_macro::TokenStream;
use syn::{parse_macro_input, DeriveInput};

/// Derives `faultline::Fault`, axum's `IntoResponse` and `faultline::catalog::Catalog` from
/// `#[fault(...)]` attributes; see the [crate documentation](crate) for the keys.
#[proc_macro_derive(Fault, attributes(fault))]
pub fn derive_fault(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
