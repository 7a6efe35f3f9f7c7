//! The webhook ingestion service over real TCP: every route, every bad input, idempotent
//! redelivery under concurrency, and the 503 providers retry; one file per subject.

#[path = "../common/mod.rs"]
mod common;

mod deliveries;
mod management;
mod providers;
mod refusals;
mod store;
