//! The ways out of the ledger: the error inbox page, and the bridges that record into the
//! `metrics` facade and OpenTelemetry as requests finish.

pub(crate) mod inbox;
#[cfg(feature = "metrics")]
pub(crate) mod metrics;
#[cfg(feature = "opentelemetry")]
pub(crate) mod opentelemetry;
