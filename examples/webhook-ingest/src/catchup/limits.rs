//! What GitHub's answer says about going on: its primary rate limit (`X-RateLimit-Remaining`
//! and `-Reset`), its secondary limits (403 or 429, with `Retry-After` or without), its own
//! trouble (5xx), and credentials it refuses, as "Rate limits for the REST API" and
//! "Troubleshooting the REST API" in GitHub's documentation describe them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::HeaderMap;
use reqwest::StatusCode;

/// How long to wait after a secondary limit that gave no `Retry-After` and no reset: GitHub
/// says to wait at least a minute.
pub const SECONDARY_LIMIT_WAIT: Duration = Duration::from_secs(60);
/// The longest wait any header is believed for: a primary window is an hour, so a reset
/// further out than that is a clock gone wrong, not a reason to stop for a day.
pub const MAX_WAIT: Duration = Duration::from_secs(60 * 60);

/// What to do after an answer that was not a success.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A rate limit: ask nothing of this hook for this long.
    Wait(Duration),
    /// GitHub's own trouble: try again after a backoff.
    Retry,
    /// The credentials or the hook are wrong: asking again cannot help until new credentials
    /// are given. The reason, for `/health` and the log, names no credential.
    Refused(String),
}

/// The verdict on an answer of `status` with `headers`, at `now`.
pub fn classify(status: StatusCode, headers: &HeaderMap, now: SystemTime) -> Verdict {
    match status.as_u16() {
        403 | 429 => {
            if let Some(wait) = retry_after(headers) {
                Verdict::Wait(wait)
            } else if remaining(headers) == Some(0) {
                Verdict::Wait(until_reset(headers, now).unwrap_or(SECONDARY_LIMIT_WAIT))
            } else if status == StatusCode::TOO_MANY_REQUESTS {
                Verdict::Wait(SECONDARY_LIMIT_WAIT)
            } else {
                Verdict::Refused(
                    "GitHub answered 403: the credentials lack the permission to read and \
                     redeliver this hook's deliveries"
                        .into(),
                )
            }
        }
        401 => Verdict::Refused(
            "GitHub answered 401: the token or the App's key is wrong, expired or revoked".into(),
        ),
        404 => Verdict::Refused(
            "GitHub answered 404: no such hook, or the credentials cannot see it".into(),
        ),
        500..=599 => Verdict::Retry,
        other => Verdict::Refused(format!("GitHub answered {other}")),
    }
}

/// How long until the next request may go, after a success: the time to the reset when this
/// answer used the window's last request.
pub fn exhausted(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    (remaining(headers) == Some(0))
        .then(|| until_reset(headers, now).unwrap_or(SECONDARY_LIMIT_WAIT))
}

fn header_number(headers: &HeaderMap, name: &str) -> Option<u64> {
    headers.get(name)?.to_str().ok()?.trim().parse().ok()
}

fn remaining(headers: &HeaderMap) -> Option<u64> {
    header_number(headers, "x-ratelimit-remaining")
}

fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    header_number(headers, "retry-after").map(|secs| Duration::from_secs(secs).min(MAX_WAIT))
}

/// The time from `now` to `X-RateLimit-Reset` (Unix seconds), at least a second.
fn until_reset(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let reset = UNIX_EPOCH + Duration::from_secs(header_number(headers, "x-ratelimit-reset")?);
    let wait = reset.duration_since(now).unwrap_or_default();
    Some(wait.clamp(Duration::from_secs(1), MAX_WAIT))
}

#[cfg(test)]
mod tests;
