//! The caps and switches a [`FaultLayer`](crate::FaultLayer) works with.

use std::borrow::Cow;

use http::HeaderName;

use crate::report::ReportLevels;

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
