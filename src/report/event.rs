//! The one `tracing` event written for a failure that flood control lets through.

use tracing::Level;

use crate::request::RequestMeta;
use crate::summary::Summary;

/// Writes the event of one failure; `fingerprint` is the one the ledger judged it by.
pub(crate) fn emit(
    level: Level,
    summary: &Summary,
    meta: &RequestMeta,
    request_id: &str,
    fingerprint: u64,
    suppressed_since: u64,
) {
    macro_rules! emit_at {
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
                "fault.fingerprint" = tracing::field::display(format_args!("{fingerprint:016x}")),
                "fault.suppressed" = suppressed_since,
                "fault.chain" = summary.chain.as_str(),
                "code.filepath" = summary.site.as_ref().map(|site| site.file.as_str()),
                "code.lineno" = summary.site.as_ref().map(|site| site.line),
                "{}",
                summary.message
            )
        };
    }
    match level {
        Level::ERROR => emit_at!(Level::ERROR),
        Level::WARN => emit_at!(Level::WARN),
        Level::INFO => emit_at!(Level::INFO),
        Level::DEBUG => emit_at!(Level::DEBUG),
        _ => emit_at!(Level::TRACE),
    }
}
