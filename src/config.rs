//! The caps and switches a [`FaultLayer`](crate::FaultLayer) works with.

use std::borrow::Cow;
use std::time::Duration;

use http::{HeaderName, StatusCode};
use tracing::Level;

use crate::outcome::Outcome;

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

/// The header a request id is read from when the request carries one, and written to on
/// every problem response. tower-http's `SetRequestIdLayer` uses the same name by default.
pub const DEFAULT_REQUEST_ID_HEADER: HeaderName = HeaderName::from_static("x-request-id");

#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) max_message_bytes: usize,
    pub(crate) max_chain_links: usize,
    pub(crate) max_body_bytes: usize,
    pub(crate) development: bool,
    pub(crate) request_id_header: HeaderName,
    pub(crate) type_base: Option<Cow<'static, str>>,
    pub(crate) report_levels: ReportLevels,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            max_chain_links: DEFAULT_MAX_CHAIN_LINKS,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            development: false,
            request_id_header: DEFAULT_REQUEST_ID_HEADER,
            type_base: None,
            report_levels: ReportLevels::default(),
        }
    }
}

/// Default cap on the number of failure series: far above what an application's routes times
/// its codes reach, far below what a scrape should carry.
pub const DEFAULT_MAX_SERIES: usize = 512;

/// Default number of events written in full per fingerprint and window: enough to see a
/// problem and its variety, few enough that a flood of one failure costs no log volume.
pub const DEFAULT_REPORTS_PER_WINDOW: u32 = 10;

/// Default flood-control window.
pub const DEFAULT_REPORT_WINDOW: Duration = Duration::from_secs(10);

/// Default cap on fingerprints under flood control; past it the least recently seen goes.
pub const DEFAULT_MAX_FINGERPRINTS: usize = 1024;

/// Default cap on error groups; past it the least recently seen goes.
pub const DEFAULT_MAX_GROUPS: usize = 256;

/// The levels of the failure events, by kind of failure.
///
/// ```
/// use faultline::{FaultLayer, ReportLevels};
/// use tracing::Level;
///
/// let layer = FaultLayer::new().report_levels(ReportLevels {
///     client_error: Level::DEBUG,
///     ..ReportLevels::default()
/// });
/// # let _ = layer;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportLevels {
    /// `handled` and `rejected` with a 4xx status: routine client mistakes. Default INFO.
    pub client_error: Level,
    /// `handled` and `rejected` with a 5xx status, `service_error` and `panicked`.
    /// Default ERROR.
    pub server_error: Level,
    /// `aborted`: the body failed after the head went out. Default WARN.
    pub aborted: Level,
    /// `cancelled`: the client went away. Default DEBUG.
    pub cancelled: Level,
}

impl Default for ReportLevels {
    fn default() -> Self {
        Self {
            client_error: Level::INFO,
            server_error: Level::ERROR,
            aborted: Level::WARN,
            cancelled: Level::DEBUG,
        }
    }
}

impl ReportLevels {
    /// The level of a failure's event.
    pub(crate) fn of(&self, outcome: Outcome, status: StatusCode) -> Level {
        match outcome {
            Outcome::Cancelled => self.cancelled,
            Outcome::Aborted => self.aborted,
            Outcome::ServiceError | Outcome::Panicked => self.server_error,
            _ if status.is_server_error() => self.server_error,
            _ => self.client_error,
        }
    }
}

/// The bounds of flood control and of the error groups.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReportLimits {
    pub(crate) per_window: u32,
    pub(crate) window: Duration,
    pub(crate) max_fingerprints: usize,
    pub(crate) max_groups: usize,
}

impl Default for ReportLimits {
    fn default() -> Self {
        Self {
            per_window: DEFAULT_REPORTS_PER_WINDOW,
            window: DEFAULT_REPORT_WINDOW,
            max_fingerprints: DEFAULT_MAX_FINGERPRINTS,
            max_groups: DEFAULT_MAX_GROUPS,
        }
    }
}

/// The bounds a ledger is built with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LedgerLimits {
    pub(crate) max_series: usize,
    pub(crate) reports: ReportLimits,
}

impl Default for LedgerLimits {
    fn default() -> Self {
        Self {
            max_series: DEFAULT_MAX_SERIES,
            reports: ReportLimits::default(),
        }
    }
}
