//! Replays refused: what a verified delivery is remembered by ([`ReplayKey`]), where it is
//! remembered ([`ReplayStore`], [`ReplayMemory`] in memory), and what a repeat gets
//! ([`OnRepeat`]). A delivery is taken only when it was answered 2xx: its key is reserved
//! when it is verified, under a lease, and confirmed or released when its answer leaves
//! ([`reservation`]).
//!
//! A signature proves who wrote a delivery, not that it is the first time it arrives: a
//! delivery captured on the way (a proxy's log, a leaked request dump) verifies again when
//! sent again. The senders that sign a timestamp bound that to their tolerance; the others
//! (GitHub, Bitbucket, Gitea, Forgejo, Shopify, GitLab's token) do not bound it at all, and
//! their delivery id is outside the signature, so a replay under a fresh id looks new.
//! The key is therefore what the sender signed, never an unsigned header.

mod key;
mod memory;
mod reservation;

use std::error::Error as StdError;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

pub use key::ReplayKey;
pub use memory::{ReplayMemory, DEFAULT_REPLAY_CAPACITY};

use crate::request::attach;
use crate::webhooks::delivery::Delivery;
use crate::webhooks::refusal::Refusal;
use reservation::Reservation;

/// How long a delivery is remembered unless told otherwise: a day covers the automatic
/// retries of the senders that retry (Slack's within minutes, Svix's first ones within
/// hours, GitLab's and Shopify's within hours) and the next working hours of someone
/// pressing "Redeliver". For the senders that sign a timestamp it is never shorter than
/// the time that timestamp stays within tolerance, so that no replay outlives its memory.
pub const DEFAULT_REPLAY_WINDOW: Duration = Duration::from_secs(24 * 60 * 60);

/// How long a key stays reserved for a delivery in hand unless told otherwise, when nothing
/// confirms or releases it: the node that holds it died. Longer than any sender waits for an
/// answer (Stripe's and Svix's 15 to 30 s are the longest), so that a delivery still in hand
/// is never taken by a copy; short enough that a sender's retry after a crash (Stripe's
/// first after about a minute, Svix's after five) finds the key free. Handlers that may run
/// longer need a timeout below it, or a longer lease ([`Intake::replay_lease`]).
///
/// [`Intake::replay_lease`]: super::Intake::replay_lease
pub const DEFAULT_REPLAY_LEASE: Duration = Duration::from_secs(60);

/// What a store knew of a key it was asked to reserve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// Neither taken nor in hand: reserved now, until the lease given.
    First,
    /// Reserved for a copy still in hand, whose lease has not ended: its answer will say
    /// whether it is taken.
    Held,
    /// Taken: confirmed by a 2xx answer, and not yet forgotten.
    Repeat,
}

/// What a repeat of a delivery already taken gets.
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
/// fleet shares (a table with a unique key, a lease and an expiry column; a cache with
/// `SET NX PX` and a script for the release), so that a replay sent to another node is
/// recognised too.
///
/// A key goes through three states: free, held (reserved under a lease, its delivery in
/// hand), taken (confirmed, until its expiry). `reserve` must decide atomically: of many
/// calls with one free key at once, exactly one gets [`Seen::First`]; the others get
/// [`Seen::Held`] until the lease ends or the key is settled. `confirm` takes the key
/// whatever it holds; `release` frees it only if it is still held under the lease given, so
/// that a late release does not free a key another node reserved since, nor one taken.
/// Times are given to the millisecond, so that a store of milliseconds keeps them exactly.
///
/// ```
/// use std::collections::HashMap;
/// use std::sync::Mutex;
/// use std::time::SystemTime;
/// use faultline::webhooks::{ReplayKey, ReplayStore, Seen};
///
/// /// A store of the service's, here a `Mutex<HashMap>` standing for its database table of
/// /// (key, taken, expires_at): each method is one statement, as the comments say.
/// #[derive(Default)]
/// struct Table(Mutex<HashMap<[u8; 32], (bool, SystemTime)>>);
///
/// impl ReplayStore for Table {
///     type Error = std::convert::Infallible;
///
///     // INSERT … VALUES (key, false, lease) ON CONFLICT (key) DO UPDATE SET taken = false,
///     // expires_at = excluded.expires_at WHERE expires_at <= now() RETURNING key; and, when
///     // no row came back, SELECT taken.
///     async fn reserve(&self, key: ReplayKey, lease: SystemTime) -> Result<Seen, Self::Error> {
///         let mut rows = self.0.lock().unwrap();
///         match rows.get(key.as_bytes()) {
///             Some((taken, expires)) if *expires > SystemTime::now() => {
///                 Ok(if *taken { Seen::Repeat } else { Seen::Held })
///             }
///             _ => {
///                 rows.insert(*key.as_bytes(), (false, lease));
///                 Ok(Seen::First)
///             }
///         }
///     }
///
///     // INSERT … VALUES (key, true, until) ON CONFLICT (key) DO UPDATE SET taken = true, …
///     async fn confirm(&self, key: ReplayKey, until: SystemTime) -> Result<(), Self::Error> {
///         self.0.lock().unwrap().insert(*key.as_bytes(), (true, until));
///         Ok(())
///     }
///
///     // DELETE … WHERE key = $1 AND NOT taken AND expires_at = $2
///     async fn release(&self, key: ReplayKey, lease: SystemTime) -> Result<(), Self::Error> {
///         let mut rows = self.0.lock().unwrap();
///         if rows.get(key.as_bytes()) == Some(&(false, lease)) {
///             rows.remove(key.as_bytes());
///         }
///         Ok(())
///     }
/// }
/// ```
pub trait ReplayStore: Send + Sync + 'static {
    /// Why the store could not answer: a delivery it could not reserve is refused with 503
    /// and `Retry-After`, so that the sender retries once the store is back.
    type Error: StdError + Send + Sync + 'static;

    /// Reserves `key` until `lease` if it is free (or its lease or expiry has passed), and
    /// says what it found.
    fn reserve(
        &self,
        key: ReplayKey,
        lease: SystemTime,
    ) -> impl Future<Output = Result<Seen, Self::Error>> + Send;

    /// Takes `key` until `until`: its delivery was answered 2xx.
    fn confirm(
        &self,
        key: ReplayKey,
        until: SystemTime,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Frees `key` if it is still held under `lease`: its delivery was answered otherwise,
    /// or not at all.
    fn release(
        &self,
        key: ReplayKey,
        lease: SystemTime,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;
}

type BoxError = Box<dyn StdError + Send + Sync>;
type Reserved<'a> = dyn Future<Output = Result<Seen, Refusal>> + Send + 'a;
/// A confirm or a release under way, owning what it needs.
pub(crate) type Settled = dyn Future<Output = Result<(), BoxError>> + Send;

/// [`ReplayStore`] behind a pointer, so that an intake's type does not name its store; a
/// settle owns its store, so that it may finish after the request.
pub(crate) trait AnyStore: Send + Sync + 'static {
    fn reserve(&self, key: ReplayKey, lease: SystemTime) -> Pin<Box<Reserved<'_>>>;
    fn confirm(self: Arc<Self>, key: ReplayKey, until: SystemTime) -> Pin<Box<Settled>>;
    fn release(self: Arc<Self>, key: ReplayKey, lease: SystemTime) -> Pin<Box<Settled>>;
}

impl<T: ReplayStore> AnyStore for T {
    fn reserve(&self, key: ReplayKey, lease: SystemTime) -> Pin<Box<Reserved<'_>>> {
        let reserved = ReplayStore::reserve(self, key, lease);
        Box::pin(async move {
            reserved
                .await
                .map_err(|error| Refusal::ReplaysUnavailable(Box::new(error)))
        })
    }

    fn confirm(self: Arc<Self>, key: ReplayKey, until: SystemTime) -> Pin<Box<Settled>> {
        Box::pin(async move {
            ReplayStore::confirm(&*self, key, until)
                .await
                .map_err(BoxError::from)
        })
    }

    fn release(self: Arc<Self>, key: ReplayKey, lease: SystemTime) -> Pin<Box<Settled>> {
        Box::pin(async move {
            ReplayStore::release(&*self, key, lease)
                .await
                .map_err(BoxError::from)
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
    /// flag; a replay to refuse, or a copy of one in hand, is an error. A first delivery's
    /// key is reserved for `lease`, and attached to the request, so that the answer settles
    /// it: taken for `window` after a 2xx, released after anything else.
    pub(crate) async fn check(
        &self,
        delivery: &Delivery,
        now: SystemTime,
        (window, lease): (Duration, Duration),
        tolerance: Option<Duration>,
    ) -> Result<bool, Refusal> {
        let key = ReplayKey::of(delivery);
        let until = whole_ms(remembered_until(delivery, now, window, tolerance));
        let lease = whole_ms(now.checked_add(lease).unwrap_or(now));
        match (self.store.reserve(key, lease).await?, self.on_repeat) {
            (Seen::First, _) => {
                let store = Arc::clone(&self.store);
                let reservation = Box::new(Reservation::new(store, key, lease, until));
                // Given back, it is dropped here, and released.
                attach(reservation).map_err(|_| Refusal::ReplaysWithoutLayer)?;
                Ok(false)
            }
            (Seen::Held, _) => Err(Refusal::InProgress),
            (Seen::Repeat, OnRepeat::Flag) => Ok(true),
            (Seen::Repeat, OnRepeat::Refuse) => Err(Refusal::Replayed),
        }
    }
}

/// `at`, cut to the whole millisecond: what a store of milliseconds keeps exactly, so that
/// a release names the lease as the store holds it.
fn whole_ms(at: SystemTime) -> SystemTime {
    let since = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let ms = Duration::from_millis(u64::try_from(since.as_millis()).unwrap_or(u64::MAX));
    SystemTime::UNIX_EPOCH.checked_add(ms).unwrap_or(at)
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
