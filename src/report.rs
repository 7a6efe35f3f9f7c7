//! One tracing event per failure, never for a success. The event carries the bounded summary
//! under OpenTelemetry's semantic-convention names where one exists.

use tracing::Level;

use crate::ledger::Outcome;
use crate::request::RequestMeta;
use crate::summary::Summary;

/// The level of a failure's event: client mistakes are routine, server failures are not.
pub(crate) fn level(summary: &Summary) -> Level {
    match summary.outcome {
        Outcome::Ok => Level::TRACE,
        Outcome::Cancelled => Level::DEBUG,
        Outcome::Aborted => Level::WARN,
        Outcome::ServiceError | Outcome::Panicked => Level::ERROR,
        Outcome::Handled | Outcome::Rejected if summary.status.is_server_error() => Level::ERROR,
        Outcome::Handled | Outcome::Rejected => Level::INFO,
    }
}

/// Emits the event for one failure.
pub(crate) fn report(summary: &Summary, meta: &RequestMeta, request_id: &str) {
    macro_rules! emit {
        ($level:expr) => {
            tracing::event!(
                target: "faultline",
                $level,
                "error.type" = summary.code,
                "http.route" = meta.route(),
                "http.request.method" = meta.method(),
                "http.response.status_code" = summary.status.as_u16(),
                request_id,
                "fault.outcome" = summary.outcome.as_str(),
                "fault.chain" = summary.chain.as_str(),
                "code.filepath" = summary.site.as_ref().map(|site| site.file.as_str()),
                "code.lineno" = summary.site.as_ref().map(|site| site.line),
                "{}",
                summary.message
            )
        };
    }
    match level(summary) {
        Level::ERROR => emit!(Level::ERROR),
        Level::WARN => emit!(Level::WARN),
        Level::INFO => emit!(Level::INFO),
        Level::DEBUG => emit!(Level::DEBUG),
        _ => emit!(Level::TRACE),
    }
}
