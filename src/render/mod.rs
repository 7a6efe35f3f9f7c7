//! What a failure's summary becomes for the client: the RFC 9457
//! `application/problem+json` body rendered from it under a hard byte cap (and, with the
//! `utoipa` feature, that body's schema in OpenAPI).

#[cfg(feature = "utoipa")]
pub mod openapi;
mod problem;

pub(crate) use problem::problem_body;
#[cfg(feature = "utoipa")]
use problem::GENERIC_SERVER_DETAIL;
pub use problem::PROBLEM_JSON;
