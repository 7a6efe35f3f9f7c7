//! The deliveries an inbox refused, kept so that an operator who fixes the cause (most often a
//! wrong secret) can tell which ones to redeliver: none of the providers redelivers a
//! 4xx by itself.
//!
//! A refusal is kept only for an inbox that exists, and only for what the sender must fix: a
//! bad signature, a malformed push or delivery id, the wrong provider, a body too large or not
//! JSON. Keeping one is best effort: a failure is logged and counted
//! (`webhook_ingest_refusals_unrecorded_total` in `/metrics`) and never changes the answer.
//! The store keeps the newest `REFUSALS_KEPT_PER_INBOX` per inbox; what is kept is the delivery
//! id, the time, the status and the code, never the body or a header's value.
//!
//! At most `--refusals-per-second` are kept, over every inbox: a refused request is one write
//! of the store, fsynced as a delivery is, and made-up signatures sent to a real inbox's URL
//! must not buy that write each. Past the rate a refusal gets the same answer and is only
//! counted (`webhook_ingest_refusals_skipped_total`).
//!
//! Every refusal is counted here, in one [`Refusals`]: beside what became of keeping each, the
//! spooled deliveries refused when drained (`webhook_ingest_spool_refused_total`) and the
//! unverified ones refused at their spool's bounds (`webhook_ingest_unverified_refused_total`).
//! The spool is storage only: it says it is full, the pipeline counts the refusal.

use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use axum::http::{HeaderMap, StatusCode};
use faultline::Fault;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use super::Pipeline;
use crate::error::IngestError;
use crate::ids::{InboxId, InstanceId};
use crate::provider;
use crate::store::{RefusedDelivery, Store};
use crate::verify::webhook;

/// Refusals kept per second at most, by default. A sender with a wrong secret sends at its
/// usual pace, a few per second per repository, so that a misconfiguration is listed whole;
/// at this rate the writes a flood makes cost the store's writer a few per cent of what it
/// commits in a second.
pub const DEFAULT_REFUSALS_PER_SECOND: u32 = 100;

/// The label of each count of unverified deliveries refused at the unverified spool's
/// bounds: why the delivery was refused.
type Reason = [(&'static str, &'static str); 1];
const FULL: Reason = [("reason", "full")];
const TOO_LARGE: Reason = [("reason", "too_large")];

/// Every refusal the service counts, in one place: the deliveries refused at the unverified
/// spool's bounds, the spooled ones refused when drained, and what became of keeping each
/// refusal for its inbox's list (kept, not kept, past the rate). The route and the drainers
/// count through it, `/metrics` and `/health` read it.
#[derive(Debug)]
pub struct Refusals {
    recorded: Counter,
    unrecorded: Counter,
    skipped: Counter,
    rate: Rate,
    /// Spooled deliveries refused when drained.
    at_drain: Counter,
    /// The two counts below, labelled by reason.
    unverified: Family<Reason, Counter>,
    unverified_full: Counter,
    unverified_too_large: Counter,
}

impl Default for Refusals {
    fn default() -> Self {
        Self::new(DEFAULT_REFUSALS_PER_SECOND)
    }
}

/// Refusals kept in the current second, against the most allowed per second.
#[derive(Debug)]
struct Rate {
    per_second: u32,
    since: Instant,
    /// The second (from `since`) and how many were kept in it.
    window: Mutex<(u64, u32)>,
}

impl Rate {
    /// Whether one more refusal may be kept in `second`.
    fn take(&self, second: u64) -> bool {
        let mut window = self.window.lock().unwrap_or_else(PoisonError::into_inner);
        if window.0 != second {
            *window = (second, 0);
        }
        let allowed = window.1 < self.per_second;
        if allowed {
            window.1 += 1;
        }
        allowed
    }

    /// Whether one more refusal may be kept now.
    fn take_now(&self) -> bool {
        self.take(self.since.elapsed().as_secs())
    }
}

impl Refusals {
    /// Counts that keep at most `per_second` refusals a second (0: none). Both reasons of
    /// the unverified spool are counted from zero, so that both are exposed before the first.
    pub fn new(per_second: u32) -> Self {
        let unverified = Family::default();
        Self {
            recorded: Counter::default(),
            unrecorded: Counter::default(),
            skipped: Counter::default(),
            rate: Rate {
                per_second,
                since: Instant::now(),
                window: Mutex::new((0, 0)),
            },
            at_drain: Counter::default(),
            unverified_full: unverified.get_or_create_owned(&FULL),
            unverified_too_large: unverified.get_or_create_owned(&TOO_LARGE),
            unverified,
        }
    }

    /// Refusals not kept because more came within their second than the rate allows.
    pub fn skipped(&self) -> u64 {
        self.skipped.get()
    }

    /// Refusals kept in the store.
    pub fn recorded(&self) -> u64 {
        self.recorded.get()
    }

    /// Refusals of a known inbox that the store could not keep.
    pub fn unrecorded(&self) -> u64 {
        self.unrecorded.get()
    }

    /// Counts one spooled delivery refused when drained.
    pub(crate) fn refused_at_drain(&self) {
        self.at_drain.inc();
    }

    /// Spooled deliveries refused when drained, since start.
    pub fn at_drain(&self) -> u64 {
        self.at_drain.get()
    }

    /// Counts one unverified delivery refused because the unverified spool's bound was
    /// reached.
    pub(crate) fn refused_unverified_full(&self) {
        self.unverified_full.inc();
    }

    /// Counts one unverified delivery refused because its body was past the per-body cap.
    pub(crate) fn refused_unverified_too_large(&self) {
        self.unverified_too_large.inc();
    }

    /// Unverified deliveries refused at the bound, and past the cap, since start.
    pub fn unverified(&self) -> (u64, u64) {
        (self.unverified_full.get(), self.unverified_too_large.get())
    }

    /// Registers the counts of keeping refusals in `registry`, which `/metrics` encodes.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "webhook_ingest_refusals_recorded",
            "Refused deliveries kept for the inbox's refusal list",
            self.recorded.clone(),
        );
        registry.register(
            "webhook_ingest_refusals_unrecorded",
            "Refused deliveries the store could not keep",
            self.unrecorded.clone(),
        );
        registry.register(
            "webhook_ingest_refusals_skipped",
            "Refused deliveries not kept: past --refusals-per-second",
            self.skipped.clone(),
        );
    }

    /// Registers the count of spooled deliveries refused when drained: a service with a
    /// spool exposes it.
    pub fn register_at_drain(&self, registry: &mut Registry) {
        registry.register(
            "webhook_ingest_spool_refused",
            "Spooled deliveries refused when drained (a signature that failed its check, an \
             inbox gone); never stored",
            self.at_drain.clone(),
        );
    }

    /// Registers the counts of unverified deliveries refused at the unverified spool's
    /// bounds: a service with that spool exposes them.
    pub fn register_unverified(&self, registry: &mut Registry) {
        registry.register(
            "webhook_ingest_unverified_refused",
            "Deliveries to inboxes unknown here, refused 503 while the store is down: the \
             unverified bound was reached, or the body was past its cap",
            self.unverified.clone(),
        );
    }
}

/// Keeps `refusal` of a delivery to the inbox `inbox` of `instance`, best effort: a store
/// failure is logged and counted, never returned; past the rate it is only counted. Nothing
/// is kept for an inbox that does not exist.
pub async fn record_refusal(
    store: &Store,
    counts: &Refusals,
    instance: &InstanceId,
    inbox: &InboxId,
    refusal: RefusedDelivery,
) {
    if !counts.rate.take_now() {
        counts.skipped.inc();
        return;
    }
    let code = refusal.code.clone();
    match store
        .record_refusal(instance.clone(), inbox.clone(), refusal)
        .await
    {
        Ok(true) => {
            counts.recorded.inc();
        }
        Ok(false) => {}
        Err(error) => {
            counts.unrecorded.inc();
            tracing::warn!(inbox = %inbox, code = %code, error = %error, "refusal not recorded");
        }
    }
}

/// Whether an answer refuses a delivery for something its sender must fix, so that it is
/// worth redelivering once fixed.
fn is_refusal(error: &IngestError) -> bool {
    matches!(
        error,
        IngestError::Unverified(_)
            | IngestError::Malformed(_)
            | IngestError::WrongProvider { .. }
            | IngestError::UnknownProvider(_)
            | IngestError::UnsupportedMediaType
    )
}

/// The delivery id the sender put in its headers, if usable (a body the service did not read
/// in full gives no derived id).
fn sent_delivery(headers: &HeaderMap) -> Option<String> {
    let (provider, _) = provider::detect(headers).ok()?;
    webhook::sent_delivery_id(provider, headers)?
        .ok()
        .map(|id| id.to_string())
}

/// Whether `inbox` may be an inbox of `instance`, read before keeping a refusal: a read runs
/// beside the writer, so junk sent to inboxes that do not exist never queues for the store's
/// writer. A failed read says maybe: the write then fails too, and is counted.
async fn may_exist(state: &Pipeline, instance: &InstanceId, inbox: &InboxId) -> bool {
    !matches!(
        state.store.inbox(instance.clone(), inbox.clone()).await,
        Ok(None)
    )
}

/// Keeps the refusal the webhook route answered with `error`, if it is one worth keeping.
pub(crate) async fn note_error(
    state: &Pipeline,
    instance: &InstanceId,
    inbox: &InboxId,
    headers: &HeaderMap,
    body: &[u8],
    error: &IngestError,
) {
    if !is_refusal(error) || !may_exist(state, instance, inbox).await {
        return;
    }
    let delivery = provider::detect(headers)
        .ok()
        .and_then(|(provider, _)| webhook::delivery_id(provider, headers, body).ok())
        .map(|id| id.to_string());
    let refusal = RefusedDelivery {
        delivery,
        status: error.status().as_u16(),
        code: error.code().to_owned(),
    };
    record_refusal(&state.store, &state.refusals, instance, inbox, refusal).await;
}

/// Keeps the refusal of a body the service would not read: too large.
pub(crate) async fn note_body_refused(
    state: &Pipeline,
    instance: &InstanceId,
    inbox: &InboxId,
    headers: &HeaderMap,
    status: StatusCode,
) {
    // Anything but too large (a client that went away mid-body) is no delivery to redeliver.
    if status != StatusCode::PAYLOAD_TOO_LARGE || !may_exist(state, instance, inbox).await {
        return;
    }
    let refusal = RefusedDelivery {
        delivery: sent_delivery(headers),
        status: status.as_u16(),
        code: "payload-too-large".to_owned(),
    };
    record_refusal(&state.store, &state.refusals, instance, inbox, refusal).await;
}

#[cfg(test)]
mod tests;
