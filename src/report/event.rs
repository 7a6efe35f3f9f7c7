//! The event of one failure: its fingerprint and the one `tracing` event written for it.

use std::hash::{Hash, Hasher};

use rustc_hash::FxHasher;
use tracing::Level;

use crate::request::RequestMeta;
use crate::summary::Summary;

/// Outcome, code, route template and panic location: what makes two failures the same.
/// FxHash is enough: none of these comes from raw input.
pub(crate) fn fingerprint(summary: &Summary, route: &str) -> u64 {
    let mut hasher = FxHasher::default();
    summary.outcome.hash(&mut hasher);
    summary.code.hash(&mut hasher);
    route.hash(&mut hasher);
    if let Some(site) = &summary.site {
        site.file.hash(&mut hasher);
        site.line.hash(&mut hasher);
    }
    hasher.finish()
}

/// Writes the event of one failure.
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
