//! The ways out of the ledger: what it serves over HTTP (the Prometheus exposition, the error
//! groups as JSON, the error inbox page), and the bridges that record into the `metrics`
//! facade and OpenTelemetry as requests finish.

mod handlers;
mod inbox;
#[cfg(any(feature = "metrics", feature = "opentelemetry"))]
pub(crate) mod labels;
#[cfg(feature = "metrics")]
pub(crate) mod metrics;
#[cfg(feature = "opentelemetry")]
pub(crate) mod opentelemetry;
pub(crate) mod prometheus;
