//! The caps and defaults of faultline, with the reason for each: every cost a failure can
//! cause is bounded by one of them.
//!
//! The `DEFAULT_*` values are what [`FaultLayer::new`](crate::FaultLayer::new) and
//! [`Ledger::new`](crate::Ledger::new) use; the `MIN_*` and `MAX_*` values bound what the
//! builder calls accept (a value outside is clamped).
//!
//! ```
//! use faultline::limits;
//!
//! let layer = faultline::FaultLayer::new().max_message_bytes(2 * limits::DEFAULT_MAX_MESSAGE_BYTES);
//! # let _ = layer;
//! assert!(limits::DEFAULT_MAX_BODY_BYTES <= limits::MAX_BODY_BYTES);
//! ```

use std::time::Duration;

use http::HeaderName;

// What a summary and a problem body may cost.

/// The visible marker appended to every string that was cut at its cap.
pub const TRUNCATION_MARKER: &str = "…[truncated]";

/// Default cap on each message in a summary: the error's text, a panic's text, each link of
/// the source chain. Enough for any message a person reads; small enough that a `Display`
/// writing megabytes costs about what a short one does.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 512;

/// Default number of `source()` links written into a summary. Real chains are two to five
/// deep; past this the walk stops and the summary notes that the chain goes on.
pub const DEFAULT_MAX_CHAIN_LINKS: usize = 8;

/// Default cap on a whole problem+json body: one small TCP segment's worth, and far more
/// than a client needs to correct its request.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024;

/// The smallest message cap accepted: room for the truncation marker and some text.
pub const MIN_MESSAGE_BYTES: usize = 32;

/// The largest message cap accepted: a cap is there to bound the cost, so "no cap" is this.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// The most `source()` links walked whatever the setting: also what ends a chain that loops
/// back on itself.
pub const MAX_CHAIN_LINKS: usize = 64;

/// The largest body cap accepted.
pub const MAX_BODY_BYTES: usize = 256 * 1024;

/// The smallest body cap accepted: room for every fixed member of the problem object at its
/// own cap, with some detail left.
pub const MIN_BODY_BYTES: usize = 1024;

/// Default cap on the unread rest of a request body that the layer reads and discards so
/// that its HTTP/1.1 connection can serve the next request. Go's `net/http` discards 256 KiB;
/// a webhook receiver refuses whole deliveries before reading them, and a push event is often
/// larger than that, while reading a mebibyte from a kept connection costs less than the new
/// connection (and, behind a proxy, the lost request) that closing it forces. A rest declared
/// longer than this is not read at all: the answer says `connection: close`.
pub const DEFAULT_MAX_DRAIN_BYTES: u64 = 1024 * 1024;

/// Default time the layer waits for the unread rest of a request body before it gives up and
/// answers with `connection: close`: ASP.NET Core's Kestrel drains for the same five
/// seconds. A client that trickles its body holds no worker meanwhile, only its answer.
pub const DEFAULT_MAX_DRAIN_TIME: Duration = Duration::from_secs(5);

/// The header a request id is read from when the request carries one, and written to on
/// every problem response. tower-http's `SetRequestIdLayer` uses the same name by default.
pub const DEFAULT_REQUEST_ID_HEADER: HeaderName = HeaderName::from_static("x-request-id");

/// The longest request id taken from a client; a longer one is replaced by a generated id.
/// It is echoed in a header, the problem body and every report, so a client must not be able
/// to make it large. UUIDs and the ids of common tracing systems are well under it.
pub const MAX_REQUEST_ID_BYTES: usize = 128;

/// The most route templates interned per process, and so the most a ledger counts per route
/// whatever [`LedgerBuilder::max_routes`](crate::ledger::LedgerBuilder::max_routes) asks.
/// Templates come from the application's own routes, a few dozen; the cap only bounds what a
/// process that builds routers from data could leak. Past it, a request's route is kept as
/// axum's shared string, and counted per route under `~overflow`.
pub const MAX_INTERNED_ROUTES: usize = 4096;

/// The most an error response's body may declare for the layer to wait for its text, which
/// becomes the problem's detail. axum's rejections are a few dozen bytes; a larger or
/// open-ended body (a proxied 502 that streams) is not waited for, so that a stalled body
/// cannot hold back the answer.
pub const MAX_READABLE_BODY_BYTES: usize = 64 * 1024;

// What the ledger may hold.

/// Default cap on the number of failure series: far above what an application's routes times
/// its codes reach, far below what a scrape should carry.
pub const DEFAULT_MAX_SERIES: usize = 512;

/// Default cap on the route templates counted per route: an application's routes are a few
/// dozen. Each thread's stripe holds a cell per route and outcome, so the cap is also that
/// block's size: 66 × 7 cells of 8 bytes, under 4 KiB per stripe.
pub const DEFAULT_MAX_ROUTES: usize = 64;

/// Default number of events written in full per fingerprint and window: enough to see a
/// problem and its variety, few enough that a flood of one failure costs no log volume.
pub const DEFAULT_REPORTS_PER_WINDOW: u32 = 10;

/// Default flood-control window.
pub const DEFAULT_REPORT_WINDOW: Duration = Duration::from_secs(10);

/// Default cap on fingerprints under flood control; past it the least recently seen goes.
pub const DEFAULT_MAX_FINGERPRINTS: usize = 1024;

/// Default cap on error groups; past it the least recently seen goes.
pub const DEFAULT_MAX_GROUPS: usize = 256;

/// The minutes of per-minute counts each error group keeps: the last hour, what a person on
/// call compares against ("since when, and is it getting worse?"). Also public as
/// `faultline::ledger::TREND_MINUTES`.
pub const TREND_MINUTES: usize = 60;
