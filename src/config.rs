//! The caps and switches a [`FaultLayer`](crate::FaultLayer) works with.

use std::borrow::Cow;
use std::time::Duration;

use http::{HeaderName, StatusCode};
use tracing::Level;

use crate::limits::{
    DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CHAIN_LINKS, DEFAULT_MAX_DRAIN_BYTES,
    DEFAULT_MAX_DRAIN_TIME, DEFAULT_MAX_FINGERPRINTS, DEFAULT_MAX_GROUPS,
    DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_MAX_ROUTES, DEFAULT_MAX_SERIES, DEFAULT_REPORTS_PER_WINDOW,
    DEFAULT_REPORT_WINDOW, DEFAULT_REQUEST_ID_HEADER,
};
use crate::outcome::Outcome;

#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) max_message_bytes: usize,
    pub(crate) max_chain_links: usize,
    pub(crate) max_body_bytes: usize,
    pub(crate) development: bool,
    pub(crate) request_id_header: HeaderName,
    pub(crate) type_base: Option<Cow<'static, str>>,
    pub(crate) report_levels: ReportLevels,
    /// What the layer reads of a request body left unread by the answer, so that its
    /// connection can be kept (see [`DrainBounds`]).
    pub(crate) drain: DrainBounds,
}

/// The bounds of reading what an answer left of its request body.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DrainBounds {
    /// The most bytes read; 0 never reads, and every such answer says `connection: close`.
    pub(crate) max_bytes: u64,
    /// The longest wait for them.
    pub(crate) max_time: Duration,
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
            drain: DrainBounds {
                max_bytes: DEFAULT_MAX_DRAIN_BYTES,
                max_time: DEFAULT_MAX_DRAIN_TIME,
            },
        }
    }
}

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
    pub(crate) max_routes: usize,
    pub(crate) reports: ReportLimits,
}

impl Default for LedgerLimits {
    fn default() -> Self {
        Self {
            max_series: DEFAULT_MAX_SERIES,
            max_routes: DEFAULT_MAX_ROUTES,
            reports: ReportLimits::default(),
        }
    }
}
