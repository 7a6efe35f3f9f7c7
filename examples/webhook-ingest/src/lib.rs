//! The webhook ingestion service's routes, behind one fault layer: this file assembles them.
//!
//! A library so that the integration tests serve the same routes in-process; the
//! `webhook-ingest` binary serves them over TCP. Organizations ("instances") own digests; each
//! digest has inboxes; each inbox receives push webhooks from one provider and stores their
//! commits.
//!
//! The modules are floors, declared here ground first, and each uses only those declared
//! before it (`tests/module_order.rs` holds it): the ids records are named by ([`ids`]), the
//! providers' words ([`provider`]), the connections ([`serve`]), the durable queue
//! ([`spool`]), the rows and their databases ([`store`]), a push's commits ([`payload`]),
//! the signature checks and the inboxes as last seen ([`verify`]), the errors ([`error`]),
//! then the one path of a delivery ([`pipeline`]), which the webhook route ([`receive`]) and
//! the drainers run; [`manage`] is the API that creates instances and inboxes, and
//! [`app`](mod@app) assembles the router, [`cli`] reads the flags and [`node`] runs one
//! node of the service from them.

// The floors, ground first, each a blank line apart so that the order stays as written: a
// module uses only those declared above it (tests/module_order.rs reads the uses and checks
// it). Each has a plain comment, not a doc comment: rustdoc would resolve the links of a
// module's own docs in this scope once outer docs are joined to them.

// The ids records are named by: `InstanceId`, `DigestId`, `InboxId`, `DeliveryId`.
pub mod ids;

// The providers' words: `Provider`, `Event`, `Shape`.
pub mod provider;

// Connections: limits, deadlines, HTTP/1 and HTTP/2.
pub mod serve;

// The durable queue, storage only.
pub mod spool;

// The rows and the databases that keep them.
pub mod store;

// The commits of a push payload.
pub mod payload;

// Signature checks, and the inboxes as last seen.
pub mod verify;

// Every error a request can get.
pub mod error;

// The one path of a delivery, and the drainer that runs it.
pub mod pipeline;

// Asking GitHub to redeliver what failed while the service was down.
pub mod catchup;

// What every route shares.
mod state;

// The webhook route.
pub mod receive;

// The management API, and what operators read.
pub mod manage;

// The router assembled.
pub mod app;

// The command line.
pub mod cli;

// One node run as the binary runs it.
pub mod node;

pub use crate::app::{app, Config, DEFAULT_BODY_LIMIT, DEFAULT_PUBLIC_URL, MAX_BODY_LIMIT};
