//! Every way a request to the service can fail, with the status and stable code it answers.
//!
//! Messages are public for 4xx, so they name what the client must fix and never carry an API
//! key, a webhook secret or a signature: header names yes, header values no.

use std::borrow::Cow;

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use faultline::Fault;

use crate::store::StoreError;
use crate::webhook::Vcs;

/// Seconds a provider should wait before redelivering when the store is only busy: the
/// writer's queue drains in milliseconds.
const RETRY_AFTER_BUSY_SECS: &str = "1";
/// Seconds to wait when the store failed outright: long enough for an operator to look.
const RETRY_AFTER_FAILED_SECS: &str = "30";

/// The errors of the service's handlers.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("instance `{0}` does not exist")]
    InstanceNotFound(String),
    #[error("digest `{0}` does not exist in this instance")]
    DigestNotFound(String),
    #[error("inbox `{0}` does not exist in this instance")]
    InboxNotFound(String),
    #[error(
        "the API key is missing or wrong; send it as `Authorization: Bearer KEY` or `?apiKey=KEY`"
    )]
    BadApiKey,
    #[error("`{field}` {problem}")]
    InvalidField {
        field: &'static str,
        problem: Cow<'static, str>,
    },
    #[error("the content type must be `application/json`")]
    UnsupportedMediaType,
    #[error(
        "no provider header: expected one of `X-GitHub-Event`, `X-Gitlab-Event`, `X-Event-Key`"
    )]
    UnknownProvider,
    #[error("this inbox receives {inbox} webhooks, not {sent}")]
    WrongProvider { inbox: Vcs, sent: Vcs },
    #[error("the `{header}` header {problem}")]
    BadSignature {
        header: &'static str,
        problem: &'static str,
    },
    #[error("the `{header}` header {problem}")]
    BadDeliveryId {
        header: &'static str,
        problem: &'static str,
    },
    #[error("{vcs} event `{event}` is not handled here; send push events")]
    UnsupportedEvent { vcs: Vcs, event: String },
    #[error("the push payload {0}")]
    Malformed(String),
    #[error("the store is busy")]
    StoreBusy(#[source] StoreError),
    #[error("the store is unavailable")]
    StoreUnavailable(#[source] StoreError),
}

impl IngestError {
    /// A push payload that lacks `field` or holds the wrong type there.
    pub fn missing(field: impl std::fmt::Display) -> Self {
        Self::Malformed(format!("lacks `{field}` or it has the wrong type"))
    }
}

impl From<StoreError> for IngestError {
    fn from(error: StoreError) -> Self {
        if error.is_busy() {
            Self::StoreBusy(error)
        } else {
            Self::StoreUnavailable(error)
        }
    }
}

impl Fault for IngestError {
    fn status(&self) -> StatusCode {
        match self {
            Self::InstanceNotFound(_) | Self::DigestNotFound(_) | Self::InboxNotFound(_) => {
                StatusCode::NOT_FOUND
            }
            Self::BadApiKey | Self::BadSignature { .. } => StatusCode::UNAUTHORIZED,
            Self::InvalidField { .. } | Self::UnsupportedEvent { .. } => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::UnknownProvider
            | Self::WrongProvider { .. }
            | Self::BadDeliveryId { .. }
            | Self::Malformed(_) => StatusCode::BAD_REQUEST,
            // Providers redeliver on 5xx only, so only a store failure, which a retry can
            // outlive, answers one.
            Self::StoreBusy(_) | Self::StoreUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::InstanceNotFound(_) => "instance-not-found",
            Self::DigestNotFound(_) => "digest-not-found",
            Self::InboxNotFound(_) => "inbox-not-found",
            Self::BadApiKey => "bad-api-key",
            Self::InvalidField { .. } => "invalid-field",
            Self::UnsupportedMediaType => "unsupported-media-type",
            Self::UnknownProvider => "unknown-provider",
            Self::WrongProvider { .. } => "wrong-provider",
            Self::BadSignature { .. } => "bad-signature",
            Self::BadDeliveryId { .. } => "bad-delivery-id",
            Self::UnsupportedEvent { .. } => "unsupported-event",
            Self::Malformed(_) => "malformed-payload",
            Self::StoreBusy(_) => "store-busy",
            Self::StoreUnavailable(_) => "store-unavailable",
        }
    }

    fn headers(&self, headers: &mut HeaderMap) {
        match self {
            Self::StoreBusy(_) => {
                headers.insert(
                    header::RETRY_AFTER,
                    HeaderValue::from_static(RETRY_AFTER_BUSY_SECS),
                );
            }
            Self::StoreUnavailable(_) => {
                headers.insert(
                    header::RETRY_AFTER,
                    HeaderValue::from_static(RETRY_AFTER_FAILED_SECS),
                );
            }
            Self::BadApiKey => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            _ => {}
        }
    }
}

faultline::impl_into_response!(IngestError);
