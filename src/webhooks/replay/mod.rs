//! Replays refused: what a verified delivery is remembered by ([`ReplayKey`]), where it is
//! remembered ([`ReplayStore`], [`ReplayMemory`] in memory), and what a repeat gets
//! ([`OnRepeat`]).
//!
//! A signature proves who wrote a delivery, not that it is the first time it arrives: a
//! delivery captured on the way (a proxy's log, a leaked request dump) verifies again when
//! sent again. The senders that sign a timestamp bound that to their tolerance; the others
//! (GitHub, Bitbucket, Gitea, Forgejo, Shopify, GitLab's token) do not bound it at all, and
//! their delivery id is outside the signature, so a replay under a fresh id looks new.
//! The key is therefore what the sender signed, never an unsigned header.

mod key;
mod memory;

use std::error::Error as StdError;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

pub use key::ReplayKey;
pub use memory::{ReplayMemory, DEFAULT_REPLAY_CAPACITY};

use crate::webhooks::delivery::Delivery;
use crate::webhooks::refusal::Refusal;

/// How long a delivery is remembered unless told otherwise: a day covers the automatic
/// retries of the senders that retry (Slack's within minutes, Svix's first ones within
/// hours, GitLab's and Shopify's within hours) and the next working hours of someone
/// pressing "Redeliver". For the senders that sign a timestamp it is never shorter than
/// the time that timestamp stays within tolerance, so that no replay outlives its memory.
pub const DEFAULT_REPLAY_WINDOW: Duration = Duration::from_secs(24 * 60 * 60);

/// Whether a key was remembered already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// Not remembered before: remembered now, until the moment given.
    First,
    /// Remembered already, and not yet forgotten.
    Repeat,
}

/// What a repeat of a delivery already verified gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnRepeat {
    /// The handler runs, and [`Verified::is_duplicate`](super::Verified::is_duplicate)
    /// says true: it answers 2xx without keeping the delivery again. The default, because
    /// every sender treats what is not 2xx as a failure (GitLab disables a hook after a few,
    /// Shopify removes a subscription), and a sender's own redelivery of what it already
    /// sent is the usual repeat.
    #[default]
    Flag,
    /// Refused with 409 `webhook-replayed` before the handler runs.
    Refuse,
}

/// Where verified deliveries are remembered: in memory ([`ReplayMemory`]), or a store a
/// fleet shares (a table with a unique key and an expiry column, a cache with `SET NX EX`),
/// so that a replay sent to another instance is recognised too.
///
/// `remember` must decide atomically: of many calls with one key at once, exactly one gets
/// [`Seen::First`].
///
/// ```
/// use std::time::SystemTime;
/// use faultline::webhooks::{ReplayKey, ReplayStore, Seen};
///
/// /// A store of the service's, here a `Mutex<HashMap>` standing for its database:
/// /// `INSERT … ON CONFLICT (key) DO UPDATE … WHERE expires_at <= now` and whether a row
/// /// was written.
/// #[derive(Default)]
/// struct Table(std::sync::Mutex<std::collections::HashMap<[u8; 32], SystemTime>>);
///
/// impl ReplayStore for Table {
///     type Error = std::convert::Infallible;
///
///     async fn remember(&self, key: ReplayKey, until: SystemTime) -> Result<Seen, Self::Error> {
///         let mut rows = self.0.lock().unwrap();
///         let now = SystemTime::now();
///         match rows.get(key.as_bytes()) {
///             Some(expires) if *expires > now => Ok(Seen::Repeat),
///             _ => {
///                 rows.insert(*key.as_bytes(), until);
///                 Ok(Seen::First)
///             }
///         }
///     }
/// }
/// ```
pub trait ReplayStore: Send + Sync + 'static {
    /// Why the store could not answer: the delivery is refused with 503 and `Retry-After`,
    /// so that the sender retries once the store is back.
    type Error: StdError + Send + Sync + 'static;

    /// Remembers `key` until `until`, and says whether it was remembered already.
    fn remember(
        &self,
        key: ReplayKey,
        until: SystemTime,
    ) -> impl Future<Output = Result<Seen, Self::Error>> + Send;
}

type Answer<'a> = Pin<Box<dyn Future<Output = Result<Seen, Refusal>> + Send + 'a>>;

/// [`ReplayStore`] behind a pointer, so that an intake's type does not name its store.
trait AnyStore: Send + Sync + 'static {
    fn remember(&self, key: ReplayKey, until: SystemTime) -> Answer<'_>;
}

impl<T: ReplayStore> AnyStore for T {
    fn remember(&self, key: ReplayKey, until: SystemTime) -> Answer<'_> {
        Box::pin(async move {
            ReplayStore::remember(self, key, until)
                .await
                .map_err(|error| Refusal::ReplaysUnavailable(Box::new(error)))
        })
    }
}

/// An intake's replay settings: where it remembers, and what a repeat gets.
#[derive(Clone)]
pub(crate) struct Replays {
    store: Arc<dyn AnyStore>,
    on_repeat: OnRepeat,
}

impl Replays {
    pub(crate) fn new(store: impl ReplayStore, on_repeat: OnRepeat) -> Self {
        Self {
            store: Arc::new(store),
            on_repeat,
        }
    }

    /// Whether `delivery`, verified at `now` within `tolerance` (its keys'), is a duplicate to
    /// flag, remembered for `window`; a replay to refuse is an error.
    pub(crate) async fn check(
        &self,
        delivery: &Delivery,
        now: SystemTime,
        window: Duration,
        tolerance: Option<Duration>,
    ) -> Result<bool, Refusal> {
        let key = ReplayKey::of(delivery);
        let until = remembered_until(delivery, now, window, tolerance);
        match (self.store.remember(key, until).await?, self.on_repeat) {
            (Seen::First, _) => Ok(false),
            (Seen::Repeat, OnRepeat::Flag) => Ok(true),
            (Seen::Repeat, OnRepeat::Refuse) => Err(Refusal::Replayed),
        }
    }
}

/// `now` and the window, or later: as long as the delivery's signed timestamp passes the
/// tolerance it was checked within (the intake's, which may differ from the sender's
/// default), so that a replay is refused by one check or the other.
fn remembered_until(
    delivery: &Delivery,
    now: SystemTime,
    window: Duration,
    tolerance: Option<Duration>,
) -> SystemTime {
    let plain = now.checked_add(window).unwrap_or(now);
    let signed = delivery
        .timestamp()
        .zip(tolerance)
        .and_then(|(at, tolerance)| at.checked_add(tolerance));
    signed.map_or(plain, |signed| signed.max(plain))
}
