//! [`Intake`], what a route verifies with, and [`Verified`], the extractor that reads a
//! delivery under a bound and verifies it.

use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::Arc;
use std::time::SystemTime;

use axum::body::Body;
use axum::extract::{FromRef, FromRequest, Request};
use bytes::Bytes;
use http::header::CONTENT_LENGTH;
use http::HeaderMap;
use http_body_util::{BodyExt, LengthLimitError, Limited};

use crate::webhooks::delivery::{Delivery, Pending};
use crate::webhooks::refusal::Refusal;
use crate::webhooks::secret::{Keys, LookupError, SecretError, SecretSet, Secrets};
use crate::webhooks::sender::Sender;

/// The longest body an intake reads unless told otherwise: GitHub caps its payloads at
/// 25 MB, the largest cap among the senders, so that no push a sender would send is refused.
pub const DEFAULT_MAX_BODY_BYTES: usize = 25 * 1024 * 1024;

/// What the [`Verified`] extractor of a router verifies with: where its keys come from, and
/// the bound its bodies are read under. Put it in the router's state (or give it to the
/// state through `FromRef`). Cheap to clone.
pub struct Intake<K = Keys> {
    secrets: Arc<K>,
    max_body_bytes: usize,
}

impl<K> Clone for Intake<K> {
    fn clone(&self) -> Self {
        Self {
            secrets: Arc::clone(&self.secrets),
            max_body_bytes: self.max_body_bytes,
        }
    }
}

impl Intake<Keys> {
    /// An intake for one sender and a fixed set of secrets, refused as
    /// [`Keys::new`] refuses secrets in the wrong form for the sender.
    pub fn fixed(sender: Sender, secrets: SecretSet) -> Result<Self, SecretError> {
        Ok(Self::new(Keys::new(sender, secrets)?))
    }
}

impl<K: Secrets> Intake<K> {
    /// An intake whose keys come from `secrets`, per request.
    pub fn new(secrets: K) -> Self {
        Self {
            secrets: Arc::new(secrets),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }

    /// Bodies longer than `bytes` are refused with 413 `webhook-body-too-large`, before
    /// they are read when their `Content-Length` says so. This bound replaces axum's
    /// `DefaultBodyLimit` for the routes that take a [`Verified`].
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// The keys of `secrets`, for a service that also verifies outside an extractor.
    pub fn secrets(&self) -> &K {
        &self.secrets
    }
}

/// The extractor of a verified delivery: a handler that takes it runs only for a delivery
/// whose signature matches its body. Anything else is answered with a [`Refusal`] (a
/// problem+json body, counted by the ledger under its code) before the handler runs.
///
/// It finds its [`Intake`] in the router's state. In order, it looks the keys up, reads the
/// sender's headers (refusing a missing, duplicated or malformed one and a timestamp out of
/// the window), reads the body under the intake's bound, and checks the signature over it.
/// The body is the one buffer the request arrived in, not a copy.
///
/// `K` is where the keys come from: [`Keys`] for a fixed set, or a [`Secrets`] of yours.
/// As it reads the body, it is the handler's last argument, as axum's `Bytes` is.
pub struct Verified<K = Keys> {
    delivery: Delivery,
    keys: PhantomData<fn() -> K>,
}

impl<K> Verified<K> {
    /// The verified delivery.
    pub fn into_delivery(self) -> Delivery {
        self.delivery
    }
}

impl<K> Deref for Verified<K> {
    type Target = Delivery;

    fn deref(&self) -> &Delivery {
        &self.delivery
    }
}

impl<K> std::fmt::Debug for Verified<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.delivery.fmt(f)
    }
}

impl<S, K> FromRequest<S> for Verified<K>
where
    S: Send + Sync,
    K: Secrets,
    Intake<K>: FromRef<S>,
{
    type Rejection = Refusal;

    async fn from_request(request: Request, state: &S) -> Result<Self, Refusal> {
        let intake = Intake::<K>::from_ref(state);
        let (mut parts, body) = request.into_parts();
        let keys = intake.secrets.keys(&mut parts).await.map_err(refused)?;
        let now = SystemTime::now();
        let pending = Pending::read(keys.sender(), keys.tolerance(), &parts.headers, now)?;
        let body = read_body(body, &parts.headers, intake.max_body_bytes).await?;
        let delivery = pending.finish(body, keys.secrets(), now)?;
        Ok(Self {
            delivery,
            keys: PhantomData,
        })
    }
}

fn refused(error: LookupError) -> Refusal {
    match error {
        LookupError::UnknownInbox => Refusal::UnknownInbox,
        LookupError::Unavailable(source) => Refusal::SecretsUnavailable(source),
    }
}

/// The whole body, at most `limit` bytes: refused at once when its `Content-Length` says
/// more, and as soon as it has sent more when it says nothing.
async fn read_body(body: Body, headers: &HeaderMap, limit: usize) -> Result<Bytes, Refusal> {
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(Refusal::BodyTooLarge { limit });
    }
    match Limited::new(body, limit).collect().await {
        // One chunk, the usual case, is handed over as it is; several are joined once.
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<LengthLimitError>() => Err(Refusal::BodyTooLarge { limit }),
        Err(_) => Err(Refusal::BodyUnreadable),
    }
}
