//! The webhook ingestion service's routes, behind one fault layer: this file assembles them.
//!
//! A library so that the integration tests serve the same routes in-process; the
//! `webhook-ingest` binary serves them over TCP. Organizations ("instances") own digests; each
//! digest has inboxes; each inbox receives push webhooks from one provider and stores their
//! commits.
//!
//! The modules are floors, declared here ground first, and each uses only those declared
//! before it (`tests/module_order.rs` holds it): the providers' words ([`provider`]), the
//! connections ([`serve`]), the durable queue ([`spool`]), the rows and their databases
//! ([`store`]), a push's commits ([`payload`]), the signature checks and the inboxes as last
//! seen ([`verify`]), the errors ([`error`]), then the one path of a delivery
//! ([`pipeline`]), which the webhook route ([`receive`]) and the drainers run; [`manage`] is
//! the API that creates instances and inboxes, and [`app`] assembles the router.

pub mod app;
pub mod cli;
pub mod error;
pub mod manage;
pub mod payload;
pub mod pipeline;
pub mod provider;
pub mod receive;
pub mod serve;
pub mod spool;
mod state;
pub mod store;
pub mod verify;

pub use crate::app::{app, Config, DEFAULT_BODY_LIMIT, DEFAULT_PUBLIC_URL};
