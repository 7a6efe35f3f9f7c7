//! What a provider's answer says about going on: its rate limit's headers (GitHub's
//! `X-RateLimit-Remaining` and `-Reset`, GitLab's `RateLimit-Remaining` and `-Reset`), a limit
//! answered 429 (GitHub's secondary limits also 403), with `Retry-After` or without, its own
//! trouble (5xx), and credentials it refuses, as "Rate limits for the REST API" and
//! "Troubleshooting the REST API" in GitHub's documentation, and "Rate limits" and "REST API"
//! in GitLab's, describe them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::HeaderMap;
use reqwest::StatusCode;

/// How long to wait after a secondary limit that gave no `Retry-After` and no reset: GitHub
/// says to wait at least a minute.
pub const SECONDARY_LIMIT_WAIT: Duration = Duration::from_secs(60);
/// The longest wait any header is believed for: a primary window is an hour, so a reset
/// further out than that is a clock gone wrong, not a reason to stop for a day.
pub const MAX_WAIT: Duration = Duration::from_secs(60 * 60);

/// How one provider says that a call is refused or limited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The provider's name, in the reasons shown on `/health` and in the log.
    pub provider: &'static str,
    /// The header of the requests left in the window (lower case).
    pub remaining: &'static str,
    /// The header of the window's reset, in Unix seconds (lower case).
    pub reset: &'static str,
    /// Whether a 403 may be a rate limit: GitHub answers its secondary limits 403 or 429;
    /// GitLab answers every limit 429, and 403 only to a token without the permission.
    pub limit_on_403: bool,
}

/// GitHub's headers and answers.
pub const GITHUB: Limits = Limits {
    provider: "GitHub",
    remaining: "x-ratelimit-remaining",
    reset: "x-ratelimit-reset",
    limit_on_403: true,
};

/// GitLab's headers and answers ("Rate limits" in GitLab's documentation).
pub const GITLAB: Limits = Limits {
    provider: "GitLab",
    remaining: "ratelimit-remaining",
    reset: "ratelimit-reset",
    limit_on_403: false,
};

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

/// The verdict on an answer of `status` with `headers` from the provider of `limits`, at
/// `now`.
pub fn classify(
    status: StatusCode,
    headers: &HeaderMap,
    now: SystemTime,
    limits: &Limits,
) -> Verdict {
    let provider = limits.provider;
    match status.as_u16() {
        429 => Verdict::Wait(limit_wait(headers, now, limits).unwrap_or(SECONDARY_LIMIT_WAIT)),
        403 if limits.limit_on_403 => match limit_wait(headers, now, limits) {
            Some(wait) => Verdict::Wait(wait),
            None => forbidden(provider),
        },
        403 => forbidden(provider),
        401 => Verdict::Refused(format!(
            "{provider} answered 401: the token (or a GitHub App's key) is wrong, expired or revoked"
        )),
        404 => Verdict::Refused(format!(
            "{provider} answered 404: no such hook, or the credentials cannot see it"
        )),
        500..=599 => Verdict::Retry,
        other => Verdict::Refused(format!("{provider} answered {other}")),
    }
}

fn forbidden(provider: &str) -> Verdict {
    Verdict::Refused(format!(
        "{provider} answered 403: the credentials lack the permission to read and \
         redeliver this hook's deliveries"
    ))
}

/// The wait a limited answer's headers ask for: `Retry-After`, or the reset when the window
/// has no request left.
fn limit_wait(headers: &HeaderMap, now: SystemTime, limits: &Limits) -> Option<Duration> {
    retry_after(headers).or_else(|| {
        (remaining(headers, limits) == Some(0))
            .then(|| until_reset(headers, now, limits).unwrap_or(SECONDARY_LIMIT_WAIT))
    })
}

/// How long until the next request may go, after a success: the time to the reset when this
/// answer used the window's last request.
pub fn exhausted(headers: &HeaderMap, now: SystemTime, limits: &Limits) -> Option<Duration> {
    (remaining(headers, limits) == Some(0))
        .then(|| until_reset(headers, now, limits).unwrap_or(SECONDARY_LIMIT_WAIT))
}

fn header_number(headers: &HeaderMap, name: &str) -> Option<u64> {
    headers.get(name)?.to_str().ok()?.trim().parse().ok()
}

fn remaining(headers: &HeaderMap, limits: &Limits) -> Option<u64> {
    header_number(headers, limits.remaining)
}

fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    header_number(headers, "retry-after").map(|secs| Duration::from_secs(secs).min(MAX_WAIT))
}

/// The time from `now` to the reset header (Unix seconds), at least a second.
fn until_reset(headers: &HeaderMap, now: SystemTime, limits: &Limits) -> Option<Duration> {
    let reset = UNIX_EPOCH + Duration::from_secs(header_number(headers, limits.reset)?);
    let wait = reset.duration_since(now).unwrap_or_default();
    Some(wait.clamp(Duration::from_secs(1), MAX_WAIT))
}

#[cfg(test)]
mod tests;
