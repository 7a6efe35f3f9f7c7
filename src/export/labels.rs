//! The labels of a finished request, as both metrics bridges record them, made in one place:
//! every value comes from a bounded set (a known method or `_OTHER`, a route template, a
//! status, a code), so that no client can make a bridge grow a new series.

use std::time::Instant;

use crate::outcome::Outcome;
use crate::request::RequestMeta;

/// The methods that are labels of their own; any other (an extension method a client made
/// up) is `_OTHER`, as OpenTelemetry's conventions say, so clients cannot add label values.
const KNOWN_METHODS: [&str; 9] = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
];

/// The method label of every method not in [`KNOWN_METHODS`].
pub(crate) const OTHER_METHOD: &str = "_OTHER";

/// How one request ended, labelled for the bridges.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Finished<'a> {
    pub(crate) started_at: Instant,
    pub(crate) outcome: Outcome,
    /// One of [`KNOWN_METHODS`], or [`OTHER_METHOD`].
    pub(crate) method: &'static str,
    /// The route template from axum's `MatchedPath`; `None` when no route matched.
    pub(crate) route: Option<&'a str>,
    /// The status, as the ledger's series have it (499 for a cancellation).
    pub(crate) status: u16,
    /// The failure's code; `None` for a success.
    pub(crate) error_type: Option<&'static str>,
}

impl<'a> Finished<'a> {
    pub(crate) fn new(
        started_at: Instant,
        meta: &'a RequestMeta,
        outcome: Outcome,
        status: u16,
        error_type: Option<&'static str>,
    ) -> Self {
        Self {
            started_at,
            outcome,
            method: method_label(meta.method()),
            route: meta.matched_route(),
            status,
            error_type,
        }
    }

    /// The status sent; `None` when no response went out (a cancellation).
    pub(crate) fn sent_status(&self) -> Option<u16> {
        (self.outcome != Outcome::Cancelled).then_some(self.status)
    }
}

fn method_label(method: &str) -> &'static str {
    KNOWN_METHODS
        .into_iter()
        .find(|known| *known == method)
        .unwrap_or(OTHER_METHOD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_a_client_makes_up_share_one_label() {
        assert_eq!(method_label("GET"), "GET");
        assert_eq!(method_label("PATCH"), "PATCH");
        assert_eq!(method_label("PURGE"), OTHER_METHOD);
        assert_eq!(method_label("get"), OTHER_METHOD);
    }
}
