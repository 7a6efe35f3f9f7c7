//! Every way a request to the service can fail, with the status and stable code it answers.
//!
//! The floors below answer small errors of their own ([`UnknownProvider`], [`Malformed`],
//! [`VerifyError`], [`StoreError`], [`SpoolError`]); this one wraps them, and the floors above
//! (the pipeline, the routes) answer it.
//!
//! Messages are public for 4xx, so they name what the client must fix and never carry an API
//! key, a webhook secret or a signature: header names yes, header values no.

use std::borrow::Cow;

use faultline::Fault;

use crate::payload::Malformed;
use crate::provider::{Provider, UnknownProvider};
use crate::spool::SpoolError;
use crate::store::StoreError;
use crate::verify::VerifyError;

/// The errors of the service's handlers.
///
/// A 4xx is only for what no redelivery can fix; a 5xx only for store trouble that the
/// spool cannot absorb. GitHub redelivers nothing on its own, so everything else a provider
/// sends is answered 2xx.
#[derive(Debug, thiserror::Error, Fault)]
#[fault(status = 400)]
pub enum IngestError {
    #[error("instance `{0}` does not exist")]
    #[fault(status = 404, code = "instance-not-found")]
    InstanceNotFound(String),
    #[error("digest `{0}` does not exist in this instance")]
    #[fault(status = 404, code = "digest-not-found")]
    DigestNotFound(String),
    #[error("inbox `{0}` does not exist in this instance")]
    #[fault(status = 404, code = "inbox-not-found")]
    InboxNotFound(String),
    #[error(
        "the API key is missing or wrong; send it as `Authorization: Bearer KEY` or `?apiKey=KEY`"
    )]
    #[fault(
        status = 401,
        code = "bad-api-key",
        header = "www-authenticate: Bearer"
    )]
    BadApiKey,
    #[error("`{field}` {problem}")]
    #[fault(status = 422, code = "invalid-field")]
    InvalidField {
        field: &'static str,
        problem: Cow<'static, str>,
    },
    #[error("the content type must be `application/json`")]
    #[fault(status = 415, code = "unsupported-media-type")]
    UnsupportedMediaType,
    #[error(transparent)]
    #[fault(transparent)]
    UnknownProvider(#[from] UnknownProvider),
    #[error("this inbox receives {inbox} webhooks, not {sent}")]
    #[fault(code = "wrong-provider")]
    WrongProvider { inbox: Provider, sent: Provider },
    /// A signature or a delivery id refused: `bad-signature` (401) or `bad-delivery-id`.
    #[error(transparent)]
    #[fault(transparent)]
    Unverified(#[from] VerifyError),
    #[error(transparent)]
    #[fault(transparent)]
    Malformed(#[from] Malformed),
    /// The writer's queue is full; it drains in milliseconds, so a retry a second later
    /// finds room.
    #[error("the store is busy")]
    #[fault(status = 503, code = "store-busy", retry_after = 1)]
    StoreBusy(#[source] StoreError),
    /// The store cannot take the delivery and the spool is at `--spool-max-bytes`: the one
    /// 5xx a delivery gets for store trouble once a spool is configured. A minute lets the
    /// drainer make room.
    #[error("the store is unavailable and the spool is full")]
    #[fault(status = 503, code = "spool-full", retry_after = 60)]
    SpoolFull,
    /// The store cannot take the delivery, its inbox was not known here at the last refresh,
    /// and the deliveries nobody could verify yet are at their bound (or this body is past
    /// their per-body cap). A minute lets the store come back or the drainer make room.
    #[error("the store is unavailable and deliveries to inboxes unknown here are at their bound")]
    #[fault(status = 503, code = "unverified-bound", retry_after = 60)]
    UnverifiedBound,
    /// The store cannot take the delivery and writing it to the spool failed (a disk error).
    #[error("the store is unavailable and the spool cannot be written")]
    #[fault(status = 503, code = "spool-unavailable", retry_after = 30)]
    SpoolUnavailable(#[source] SpoolError),
    /// An inbox was made or rotated, and the file of known inboxes could not be written (a
    /// disk error): its secret is not answered, since this node could not verify its
    /// deliveries after a restart while the store is down. The spool's disk needs a look.
    #[error("the file of known inboxes cannot be written")]
    #[fault(status = 503, code = "known-inboxes-unwritable", retry_after = 30)]
    KnownInboxesUnwritable(#[source] std::io::Error),
    /// The store failed outright; half a minute gives an operator time to look.
    #[error("the store is unavailable")]
    #[fault(status = 503, code = "store-unavailable", retry_after = 30)]
    StoreUnavailable(#[source] StoreError),
}

impl IngestError {
    /// Whether the store could not answer: a drained delivery waits for it rather than being
    /// refused.
    pub fn is_store_trouble(&self) -> bool {
        matches!(self, Self::StoreBusy(_) | Self::StoreUnavailable(_))
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

impl From<SpoolError> for IngestError {
    fn from(error: SpoolError) -> Self {
        match error {
            SpoolError::Full => Self::SpoolFull,
            error => Self::SpoolUnavailable(error),
        }
    }
}
