//! [`Refusal`]: every way a delivery is refused, each a [`Fault`] with a stable code.

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode};

use crate::error::{Catalog, CatalogEntry, Error, Fault};

/// Seconds a sender waits before retrying a delivery refused because the secrets could not
/// be read: long enough for a store to fail over, short enough that a sender retrying on a
/// schedule of its own (Stripe for three days) is not pushed far back.
pub const SECRETS_RETRY_AFTER_SECS: u32 = 5;

/// Seconds a sender waits before retrying a copy of a delivery still in hand: the first
/// copy is answered within the sender's own timeout (3 to 30 s), so a retry a few seconds
/// later finds it taken (a repeat) or released (handled anew).
pub const IN_PROGRESS_RETRY_AFTER_SECS: u32 = 5;

/// Why a delivery was refused. Each is a [`Fault`]: answered as problem+json with its
/// status and stable code, and counted by the ledger as a handled error under that code.
///
/// A refusal names headers and limits, never a secret, a signature's value or the body.
///
/// | refusal | status | code |
/// |---|---|---|
/// | [`SignatureMissing`](Refusal::SignatureMissing) | 401 | `webhook-signature-missing` |
/// | [`SignatureMismatch`](Refusal::SignatureMismatch) | 401 | `webhook-signature-mismatch` |
/// | [`TimestampStale`](Refusal::TimestampStale) | 401 | `webhook-timestamp-stale` |
/// | [`TimestampFuture`](Refusal::TimestampFuture) | 401 | `webhook-timestamp-future` |
/// | [`HeaderMissing`](Refusal::HeaderMissing) | 400 | `webhook-header-missing` |
/// | [`HeaderMalformed`](Refusal::HeaderMalformed) | 400 | `webhook-header-malformed` |
/// | [`BodyTooLarge`](Refusal::BodyTooLarge) | 413 | `webhook-body-too-large` |
/// | [`BodyUnreadable`](Refusal::BodyUnreadable) | 400 | `webhook-body-unreadable` |
/// | [`BodyInvalid`](Refusal::BodyInvalid) | 400 | `webhook-body-invalid` |
/// | [`UnknownInbox`](Refusal::UnknownInbox) | 404 | `webhook-unknown-inbox` |
/// | [`SecretsUnavailable`](Refusal::SecretsUnavailable) | 503, `Retry-After` | `webhook-secrets-unavailable` |
/// | [`Replayed`](Refusal::Replayed) | 409 | `webhook-replayed` |
/// | [`ReplaysUnavailable`](Refusal::ReplaysUnavailable) | 503, `Retry-After` | `webhook-replays-unavailable` |
/// | [`InProgress`](Refusal::InProgress) | 503, `Retry-After` | `webhook-in-progress` |
/// | [`ReplaysWithoutLayer`](Refusal::ReplaysWithoutLayer) | 500 | `webhook-replays-without-layer` |
///
/// With `?` it keeps its status and code wherever it goes: into [`faultline::Error`](Error),
/// into an error enum of yours that holds it as a `#[fault(transparent)]` field, or as the
/// handler's own error type; it is counted `handled` under its code, never as a 500.
///
/// ```
/// use faultline::webhooks::senders::GitHub;
/// use faultline::webhooks::{Refusal, Verified};
/// use faultline::Fault;
///
/// #[derive(serde::Deserialize)]
/// struct Push {
///     #[serde(rename = "ref")]
///     reference: String,
/// }
///
/// #[derive(Debug, thiserror::Error, Fault)]
/// enum HookError {
///     #[error(transparent)]
///     #[fault(transparent)]
///     Refused(#[from] Refusal),
///     #[error("branch `{0}` is not deployed")]
///     #[fault(status = 422, code = "branch-not-deployed")]
///     NotDeployed(String),
/// }
///
/// async fn push(delivery: Verified<GitHub>) -> Result<&'static str, HookError> {
///     let push: Push = delivery.json()?; // not a push: 400 `webhook-body-invalid`
///     if push.reference != "refs/heads/main" {
///         return Err(HookError::NotDeployed(push.reference));
///     }
///     Ok("deployed")
/// }
///
/// // The same line in a handler that returns `faultline::Error`, or `Refusal` itself.
/// async fn plain(delivery: Verified<GitHub>) -> Result<String, faultline::Error> {
///     let push: Push = delivery.json()?;
///     Ok(push.reference)
/// }
/// # let _ = axum::Router::<faultline::webhooks::Intake<GitHub>>::new()
/// #     .route("/push", axum::routing::post(push))
/// #     .route("/plain", axum::routing::post(plain));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Refusal {
    /// The header that carries the proof is absent, or holds no signature of a scheme
    /// this verifier knows.
    SignatureMissing {
        /// The header, lower-case.
        header: &'static str,
    },
    /// The proof does not match the body under any live secret.
    SignatureMismatch {
        /// The header, lower-case.
        header: &'static str,
    },
    /// The signed timestamp is older than the sender's tolerance.
    TimestampStale {
        /// The header, lower-case.
        header: &'static str,
        /// The tolerance it exceeds.
        tolerance: Duration,
    },
    /// The signed timestamp is further ahead than the sender's tolerance.
    TimestampFuture {
        /// The header, lower-case.
        header: &'static str,
        /// The tolerance it exceeds.
        tolerance: Duration,
    },
    /// A header the signature covers, or the delivery id, is absent.
    HeaderMissing {
        /// The header, lower-case.
        header: &'static str,
    },
    /// A header is not in the form its sender writes it, or is sent more than once.
    HeaderMalformed {
        /// The header, lower-case.
        header: &'static str,
        /// What is wrong with it, for the sender's operator.
        problem: &'static str,
    },
    /// The body is longer than the bound it is read under.
    BodyTooLarge {
        /// The bound, in bytes.
        limit: usize,
    },
    /// The body could not be read to its end: the connection failed mid-body.
    BodyUnreadable,
    /// The verified body is not the JSON the handler takes
    /// ([`Delivery::json`](super::Delivery::json)): a sender's change of payload, or a
    /// handler that expects another event.
    BodyInvalid {
        /// What is wrong: not JSON, cut short, or JSON of another shape.
        problem: &'static str,
        /// The line where it stops fitting, from 1.
        line: usize,
        /// The column where it stops fitting, from 1.
        column: usize,
    },
    /// The secret lookup knows no inbox for this request.
    UnknownInbox,
    /// The secret lookup failed; the sender may retry.
    SecretsUnavailable(Box<dyn StdError + Send + Sync>),
    /// The delivery was taken before, within the intake's replay window, and the intake
    /// refuses repeats ([`OnRepeat::Refuse`](super::OnRepeat::Refuse)).
    Replayed,
    /// The store that remembers what was taken failed; the sender may retry.
    ReplaysUnavailable(Box<dyn StdError + Send + Sync>),
    /// A copy of this delivery is in hand (its key is reserved), and its answer will say
    /// whether it is taken; the sender retries, and the retry is a repeat or handled anew.
    InProgress,
    /// The intake remembers what it takes, but no [`FaultLayer`](crate::FaultLayer) is
    /// around the route to tell it the answer: nothing could say whether the delivery was
    /// taken. A deployment's mistake, answered 500 until it is put right.
    ReplaysWithoutLayer,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::SignatureMissing { header } => {
                write!(f, "the delivery carries no signature in `{header}`")
            }
            Refusal::SignatureMismatch { header } => {
                write!(f, "the signature in `{header}` does not match the body")
            }
            Refusal::TimestampStale { header, tolerance } => write!(
                f,
                "the timestamp in `{header}` is more than {} s old",
                tolerance.as_secs()
            ),
            Refusal::TimestampFuture { header, tolerance } => write!(
                f,
                "the timestamp in `{header}` is more than {} s ahead",
                tolerance.as_secs()
            ),
            Refusal::HeaderMissing { header } => write!(f, "the `{header}` header is missing"),
            Refusal::HeaderMalformed { header, problem } => {
                write!(f, "the `{header}` header {problem}")
            }
            Refusal::BodyTooLarge { limit } => {
                write!(f, "the body is longer than {limit} bytes")
            }
            Refusal::BodyUnreadable => f.write_str("the body ended before its end"),
            Refusal::BodyInvalid {
                problem,
                line,
                column,
            } => write!(f, "the body {problem} (line {line}, column {column})"),
            Refusal::UnknownInbox => f.write_str("no inbox takes deliveries here"),
            Refusal::SecretsUnavailable(_) => f.write_str("the inbox's secrets could not be read"),
            Refusal::Replayed => f.write_str("this delivery was taken already"),
            Refusal::ReplaysUnavailable(_) => {
                f.write_str("the inbox could not tell whether this delivery was taken already")
            }
            Refusal::InProgress => f.write_str("a copy of this delivery is being handled"),
            Refusal::ReplaysWithoutLayer => {
                f.write_str("the inbox remembers deliveries, but no fault layer tells it answers")
            }
        }
    }
}

impl StdError for Refusal {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            Refusal::SecretsUnavailable(source) | Refusal::ReplaysUnavailable(source) => {
                Some(&**source)
            }
            _ => None,
        }
    }
}

impl Fault for Refusal {
    fn status(&self) -> StatusCode {
        match self {
            Refusal::SignatureMissing { .. }
            | Refusal::SignatureMismatch { .. }
            | Refusal::TimestampStale { .. }
            | Refusal::TimestampFuture { .. } => StatusCode::UNAUTHORIZED,
            Refusal::HeaderMissing { .. }
            | Refusal::HeaderMalformed { .. }
            | Refusal::BodyUnreadable
            | Refusal::BodyInvalid { .. } => StatusCode::BAD_REQUEST,
            Refusal::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Refusal::UnknownInbox => StatusCode::NOT_FOUND,
            Refusal::Replayed => StatusCode::CONFLICT,
            Refusal::SecretsUnavailable(_)
            | Refusal::ReplaysUnavailable(_)
            | Refusal::InProgress => StatusCode::SERVICE_UNAVAILABLE,
            Refusal::ReplaysWithoutLayer => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Refusal::SignatureMissing { .. } => "webhook-signature-missing",
            Refusal::SignatureMismatch { .. } => "webhook-signature-mismatch",
            Refusal::TimestampStale { .. } => "webhook-timestamp-stale",
            Refusal::TimestampFuture { .. } => "webhook-timestamp-future",
            Refusal::HeaderMissing { .. } => "webhook-header-missing",
            Refusal::HeaderMalformed { .. } => "webhook-header-malformed",
            Refusal::BodyTooLarge { .. } => "webhook-body-too-large",
            Refusal::BodyUnreadable => "webhook-body-unreadable",
            Refusal::BodyInvalid { .. } => "webhook-body-invalid",
            Refusal::UnknownInbox => "webhook-unknown-inbox",
            Refusal::SecretsUnavailable(_) => "webhook-secrets-unavailable",
            Refusal::Replayed => "webhook-replayed",
            Refusal::ReplaysUnavailable(_) => "webhook-replays-unavailable",
            Refusal::InProgress => "webhook-in-progress",
            Refusal::ReplaysWithoutLayer => "webhook-replays-without-layer",
        }
    }

    fn headers(&self, headers: &mut HeaderMap) {
        let seconds = match self {
            Refusal::SecretsUnavailable(_) | Refusal::ReplaysUnavailable(_) => {
                SECRETS_RETRY_AFTER_SECS
            }
            Refusal::InProgress => IN_PROGRESS_RETRY_AFTER_SECS,
            _ => return,
        };
        headers.insert(http::header::RETRY_AFTER, HeaderValue::from(seconds));
    }
}

/// Every refusal with what it tells the sender's operator, for API documentation: the
/// status and code are read from a refusal of each kind, so the table cannot drift from
/// [`Fault`]'s answers. A `#[fault(transparent)]` field of type `Refusal` adds these to its
/// type's catalog.
impl Catalog for Refusal {
    fn catalog() -> Vec<CatalogEntry> {
        samples()
            .into_iter()
            .map(|(refusal, meaning)| CatalogEntry::new(refusal.status(), refusal.code(), meaning))
            .collect()
    }
}

/// A refusal of each kind with its meaning, the rows of [`Refusal`]'s catalog.
fn samples() -> [(Refusal, &'static str); 15] {
    let unavailable = || Box::new(std::io::Error::other("unavailable")) as _;
    let header = "";
    let tolerance = Duration::ZERO;
    [
        (
            Refusal::SignatureMissing { header },
            "the delivery carries no signature",
        ),
        (
            Refusal::SignatureMismatch { header },
            "the signature does not match the body",
        ),
        (
            Refusal::TimestampStale { header, tolerance },
            "the signed timestamp is too old",
        ),
        (
            Refusal::TimestampFuture { header, tolerance },
            "the signed timestamp is too far ahead",
        ),
        (
            Refusal::HeaderMissing { header },
            "a header the signature covers is missing",
        ),
        (
            malformed(header, ""),
            "a header is not in its sender's form, or is sent twice",
        ),
        (
            Refusal::BodyTooLarge { limit: 0 },
            "the body is longer than the intake's bound",
        ),
        (Refusal::BodyUnreadable, "the body ended before its end"),
        (
            Refusal::BodyInvalid {
                problem: "",
                line: 0,
                column: 0,
            },
            "the verified body is not the JSON the handler takes",
        ),
        (Refusal::UnknownInbox, "no inbox takes deliveries here"),
        (
            Refusal::SecretsUnavailable(unavailable()),
            "the secrets could not be read; retry",
        ),
        (Refusal::Replayed, "the delivery was taken already"),
        (
            Refusal::ReplaysUnavailable(unavailable()),
            "whether the delivery was taken could not be told; retry",
        ),
        (
            Refusal::InProgress,
            "a copy of the delivery is in hand; retry to learn whether it was taken",
        ),
        (
            Refusal::ReplaysWithoutLayer,
            "no fault layer tells the intake its answers; a deployment's mistake",
        ),
    ]
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        Error::from_fault(self).into_response()
    }
}

/// A header of one value that is malformed.
pub(crate) fn malformed(header: &'static str, problem: &'static str) -> Refusal {
    Refusal::HeaderMalformed { header, problem }
}

#[cfg(test)]
mod tests;
