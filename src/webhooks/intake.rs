//! [`Intake`], what a route verifies with, and [`Verified`], the extractor that reads a
//! delivery under a bound and verifies it.

use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::body::Body;
use axum::extract::{FromRef, FromRequest, Request};
use bytes::Bytes;
use http::header::CONTENT_LENGTH;
use http::HeaderMap;
use http_body_util::{BodyExt, LengthLimitError, Limited};

use crate::webhooks::delivery::{Delivery, Pending};
use crate::webhooks::keys::{Keys, LookupError, Secrets};
use crate::webhooks::refusal::Refusal;
use crate::webhooks::replay::{
    OnRepeat, ReplayStore, Replays, DEFAULT_REPLAY_LEASE, DEFAULT_REPLAY_WINDOW,
};

/// The longest body an intake reads unless told otherwise: GitHub caps its payloads at
/// 25 MB, the largest cap among the senders, so that no push a sender would send is refused.
pub const DEFAULT_MAX_BODY_BYTES: usize = 25 * 1024 * 1024;

/// What the [`Verified`] extractor of a router verifies with: where its keys come from, the
/// bound its bodies are read under, and where it remembers what it took. Put it in the
/// router's state, or in a field of your state reached through `FromRef`: with keys of a
/// type per sender ([`senders`](super::senders)), one state holds an intake per sender.
/// Cheap to clone.
pub struct Intake<K = Keys> {
    secrets: Arc<K>,
    max_body_bytes: usize,
    replays: Option<Replays>,
    replay_window: Duration,
    replay_lease: Duration,
}

impl<K> Clone for Intake<K> {
    fn clone(&self) -> Self {
        Self {
            secrets: Arc::clone(&self.secrets),
            max_body_bytes: self.max_body_bytes,
            replays: self.replays.clone(),
            replay_window: self.replay_window,
            replay_lease: self.replay_lease,
        }
    }
}

impl<K: Secrets> Intake<K> {
    /// An intake whose keys come from `secrets`, per request.
    pub fn new(secrets: K) -> Self {
        Self {
            secrets: Arc::new(secrets),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            replays: None,
            replay_window: DEFAULT_REPLAY_WINDOW,
            replay_lease: DEFAULT_REPLAY_LEASE,
        }
    }

    /// Bodies longer than `bytes` are refused with 413 `webhook-body-too-large`, before
    /// they are read when their `Content-Length` says so. This bound replaces axum's
    /// `DefaultBodyLimit` for the routes that take a [`Verified`].
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Remembers every delivery it takes in `store`, by its [`ReplayKey`](super::ReplayKey),
    /// so that a repeat is flagged or refused as `on_repeat` says. Without it, an intake
    /// remembers nothing: each delivery is judged by its signature (and its timestamp, for
    /// the senders that sign one) alone.
    ///
    /// A delivery is taken when it is answered 2xx, not before: its key is reserved once it
    /// is verified, confirmed when the answer's head is 2xx, and released when it is not,
    /// when the handler panics and when the request is cancelled, so that the sender's
    /// retry is handled anew. A copy that arrives while the first is in hand is answered 503
    /// `webhook-in-progress` with `Retry-After`. The answer is told by the
    /// [`FaultLayer`](crate::FaultLayer) around the route: without one, every delivery is
    /// refused 500 `webhook-replays-without-layer`.
    ///
    /// ```
    /// use faultline::webhooks::senders::GitHub;
    /// use faultline::webhooks::{Intake, OnRepeat, ReplayMemory, SecretSet};
    ///
    /// let memory = ReplayMemory::new();
    /// let intake = Intake::new(GitHub::new(SecretSet::one("It's a Secret to Everybody")?)?)
    ///     .replays(memory.clone(), OnRepeat::Refuse);
    /// assert_eq!(memory.evicted(), 0);
    /// # Ok::<(), faultline::webhooks::SecretError>(())
    /// ```
    pub fn replays(mut self, store: impl ReplayStore, on_repeat: OnRepeat) -> Self {
        self.replays = Some(Replays::new(store, on_repeat));
        self
    }

    /// How long a delivery taken is remembered, [`DEFAULT_REPLAY_WINDOW`] unless told; for
    /// the senders that sign a timestamp, never less than until that timestamp is out of
    /// tolerance.
    pub fn replay_window(mut self, window: Duration) -> Self {
        self.replay_window = window;
        self
    }

    /// How long a delivery's key stays reserved when nothing settles it (the node holding it
    /// died), [`DEFAULT_REPLAY_LEASE`] unless told: longer than any handler runs, or a copy
    /// arriving after the lease is handled while the first still is.
    pub fn replay_lease(mut self, lease: Duration) -> Self {
        self.replay_lease = lease;
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
/// When the intake remembers what it takes ([`Intake::replays`]), a repeat of a delivery it
/// took is then flagged ([`is_duplicate`](Verified::is_duplicate)) or refused.
///
/// `K` is where the keys come from, the type given to [`Intake::new`]: a type of one
/// sender ([`senders::GitHub`](super::senders::GitHub), …), the same for an app of one
/// sender or of several in one state, or a [`Secrets`] lookup of yours. `Verified` alone is
/// `Verified<Keys>`, for keys whose sender is read at run time (from a configuration file:
/// `Intake::new(Keys::new(sender, secrets)?)`). As it reads the body, it is the handler's last
/// argument, as axum's `Bytes` is.
pub struct Verified<K = Keys> {
    delivery: Delivery,
    duplicate: bool,
    keys: PhantomData<fn() -> K>,
}

impl<K> Verified<K> {
    /// The verified delivery.
    pub fn into_delivery(self) -> Delivery {
        self.delivery
    }

    /// Whether the intake took this delivery before (answered it 2xx), within its replay
    /// window: a sender's redelivery, or a replay. Answer it 2xx without keeping it again.
    /// False for a retry of a delivery answered otherwise, and always false for an intake
    /// that remembers nothing.
    pub fn is_duplicate(&self) -> bool {
        self.duplicate
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
        let duplicate = match &intake.replays {
            Some(replays) => {
                let times = (intake.replay_window, intake.replay_lease);
                replays
                    .check(&delivery, now, times, keys.tolerance())
                    .await?
            }
            None => false,
        };
        Ok(Self {
            delivery,
            duplicate,
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
