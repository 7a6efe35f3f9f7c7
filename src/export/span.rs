//! The status of the request's server span set as OpenTelemetry's HTTP semantic conventions say,
//! through `tracing-opentelemetry` (cargo feature `tracing-opentelemetry`).
//!
//! The span is the one current when the layer is called for the request: the request span
//! of tower-http's `TraceLayer` when the fault layer sits inside it. A request that fails as
//! the server's fault (a 5xx answer, a panic) or does not end whole (a body that fails after
//! its head, `aborted`; a client gone before the end, `cancelled`) sets the span's status to
//! `Error`, without a description, and its `error.type` to the failure's stable code: a
//! code is a `&'static str` of the code's catalogue or the service's own, so the attribute
//! keeps the low cardinality the conventions ask for. Anything else (1xx–3xx, and 4xx,
//! which for a server is the client's mistake and not an error of the request) leaves the
//! status unset and sets no `error.type`, as the conventions say for server spans.

use http::StatusCode;
use opentelemetry::trace::Status;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use crate::outcome::Outcome;

/// The name of the attribute that carries the failure's code.
const ERROR_TYPE: &str = "error.type";

/// The span current when the layer was called for a request, kept until its status is set.
#[derive(Debug)]
pub(crate) struct RequestSpan(tracing::Span);

impl RequestSpan {
    /// The span of the request being called here: the current one.
    pub(crate) fn current() -> Self {
        Self(tracing::Span::current())
    }

    /// Sets the span's status and `error.type` for a request that ended in `outcome`, with
    /// `status` (499 for a cancellation) and `code`, and lets the span go: its owner ends it.
    pub(crate) fn set_status(&mut self, outcome: Outcome, status: StatusCode, code: &'static str) {
        let span = std::mem::replace(&mut self.0, tracing::Span::none());
        if is_error(outcome, status) {
            // No description: the code says what the status would otherwise have to.
            span.set_status(Status::error(""));
            span.set_attribute(ERROR_TYPE, code);
        }
    }
}

/// Whether a request that ended so is an error of a server span: a 5xx, and whatever did not
/// end in a whole answer.
fn is_error(outcome: Outcome, status: StatusCode) -> bool {
    match outcome {
        Outcome::Panicked | Outcome::Aborted | Outcome::Cancelled => true,
        Outcome::Ok | Outcome::Handled | Outcome::Rejected | Outcome::ServiceError => {
            status.is_server_error()
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_server_span_is_an_error_for_5xx_and_unfinished_requests_only() {
        let cases = [
            (Outcome::Ok, 200, false),
            (Outcome::Ok, 304, false),
            (Outcome::Handled, 422, false),
            (Outcome::Rejected, 404, false),
            (Outcome::Rejected, 503, true),
            (Outcome::Handled, 500, true),
            (Outcome::ServiceError, 504, true),
            (Outcome::Panicked, 500, true),
            (Outcome::Aborted, 200, true),
            (Outcome::Cancelled, 499, true),
        ];
        for (outcome, status, error) in cases {
            let status = StatusCode::from_u16(status).unwrap();
            assert_eq!(is_error(outcome, status), error, "{outcome:?} {status}");
        }
    }
}
