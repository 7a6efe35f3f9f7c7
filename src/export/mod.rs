//! The ways out of the ledger: what it serves over HTTP (the Prometheus exposition, the error
//! groups as JSON, the errors page), the bridges that record into the `metrics` facade
//! and OpenTelemetry as requests finish, and the status a failure sets on its request's span.

mod errors_page;
mod handlers;
#[cfg(any(feature = "metrics", feature = "opentelemetry"))]
mod labels;
#[cfg(feature = "metrics")]
mod metrics;
#[cfg(feature = "opentelemetry")]
mod opentelemetry;
mod prometheus;
#[cfg(feature = "tracing-opentelemetry")]
mod span;

#[cfg(any(feature = "metrics", feature = "opentelemetry"))]
pub(crate) use labels::Finished;
#[cfg(feature = "metrics")]
pub(crate) use metrics::MetricsBridge;
#[cfg(feature = "metrics")]
pub use metrics::{HTTP_DURATION_BUCKETS, HTTP_DURATION_METRIC};
#[cfg(feature = "opentelemetry")]
pub(crate) use opentelemetry::OpenTelemetryBridge;
pub use prometheus::PROMETHEUS_TEXT;
#[cfg(feature = "tracing-opentelemetry")]
pub(crate) use span::RequestSpan;
