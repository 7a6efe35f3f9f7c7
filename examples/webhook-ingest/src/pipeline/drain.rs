//! The drainer: moves spooled deliveries into the store, oldest first, once it answers.
//!
//! A delivery leaves the spool only after the store confirmed it (stored, or a duplicate of
//! one stored before), so a crash between the two drains it again, and the store's
//! idempotency answers that second time as a duplicate. A delivery spooled unverified is
//! checked here; one that fails, or that can no longer be stored (its inbox is gone), is
//! refused through `refuse_at_drain`, listed among the inbox's refused deliveries, and never
//! stored.

use std::time::{Duration, SystemTime};

use faultline::webhooks::ReplayKey;
use faultline::Fault;

use super::record::SpooledDelivery;
use super::refusals::record_refusal;
use super::{Arrival, Delivery, Fate, Pipeline};
use crate::error::IngestError;
use crate::provider;
use crate::spool::{Entry, Spool};
use crate::store::{Ingested, RefusedDelivery};

/// The first wait after the store failed a drain, doubled up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(50);
/// The longest wait: a store that is back is found within two seconds.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// What became of one spooled delivery.
enum Drained {
    Ingested(Ingested),
    Ignored,
    Refused,
}

/// A drainer of one spool: it runs each record through the pipeline.
pub(crate) struct Drainer {
    pub(crate) pipeline: Pipeline,
    pub(crate) spool: Spool,
}

impl Drainer {
    /// Drains for as long as the service runs.
    pub(crate) async fn run(self) {
        let mut store_down = false;
        loop {
            let entry = match self.spool.next().await {
                Ok(entry) => entry,
                Err(error) => {
                    tracing::error!(%error, "reading the spool failed; retrying");
                    tokio::time::sleep(MAX_BACKOFF).await;
                    continue;
                }
            };
            self.deliver_until_done(&entry, &mut store_down).await;
            while let Err(error) = self.spool.ack(&entry).await {
                tracing::error!(%error, "recording a drained delivery in the spool failed");
                tokio::time::sleep(MAX_BACKOFF).await;
            }
        }
    }

    /// Delivers one entry, waiting out the store for as long as it fails.
    async fn deliver_until_done(&self, entry: &Entry, store_down: &mut bool) {
        let mut wait = MIN_BACKOFF;
        loop {
            match self.deliver(entry).await {
                Ok(drained) => {
                    if std::mem::take(store_down) {
                        let depth = self.spool.stats().depth;
                        tracing::info!(depth, "the store answers again; draining the spool");
                    }
                    if let Drained::Ingested(Ingested::Stored(stored)) = drained {
                        tracing::debug!(stored, "spooled delivery stored");
                    }
                    return;
                }
                Err(error) => {
                    if !std::mem::replace(store_down, true) {
                        let depth = self.spool.stats().depth;
                        tracing::warn!(%error, depth, "the store cannot take spooled deliveries yet");
                    }
                    tokio::time::sleep(wait).await;
                    wait = next_wait(wait);
                }
            }
        }
    }

    /// One attempt at one entry through the pipeline, judged as of its arrival; `Err` only
    /// for store trouble, which a later attempt outlives.
    async fn deliver(&self, entry: &Entry) -> Result<Drained, IngestError> {
        let Some(mut record) = SpooledDelivery::decode(&entry.payload) else {
            refuse_at_drain(&self.pipeline, None, "unreadable-record", 500).await;
            return Ok(Drained::Refused);
        };
        let delivery = Delivery {
            instance: record.instance.clone(),
            inbox: record.inbox.clone(),
            provider: record.provider,
            event: provider::classify(record.provider, &record.event),
            event_name: record.event.clone(),
            body: std::mem::take(&mut record.body).into(),
        };
        let arrival = Arrival::Spooled {
            delivery: record.delivery.clone(),
            proof: record.proof.take(),
            received: record.received.unwrap_or_else(SystemTime::now),
            key: record.key.map(ReplayKey::from_bytes),
        };
        match self.pipeline.ingest(delivery, arrival).await {
            Ok(Fate::Stored { ingested, .. }) => Ok(Drained::Ingested(ingested)),
            Ok(Fate::Ignored { .. } | Fate::Ping | Fate::Queued { .. }) => Ok(Drained::Ignored),
            Err(error) if error.is_store_trouble() => Err(error),
            Err(error) => {
                let status = error.status().as_u16();
                refuse_at_drain(&self.pipeline, Some(&record), error.code(), status).await;
                Ok(Drained::Refused)
            }
        }
    }
}

/// The wait after `wait` when the store failed again: doubled, up to [`MAX_BACKOFF`].
fn next_wait(wait: Duration) -> Duration {
    (wait * 2).min(MAX_BACKOFF)
}

/// Every spooled delivery refused at drain time goes through here: it is logged (ids, the
/// code and status the delivery would have been answered, never its body or a secret),
/// counted in [`Refusals`](super::refusals::Refusals), and kept in its inbox's refused deliveries (`GET …/failures`) as a refusal at
/// receive time would be; it is never stored.
pub(crate) async fn refuse_at_drain(
    pipeline: &Pipeline,
    delivery: Option<&SpooledDelivery>,
    code: &'static str,
    status: u16,
) {
    pipeline.refusals.refused_at_drain();
    match delivery {
        Some(delivery) => {
            tracing::warn!(
            instance = %delivery.instance,
            inbox = %delivery.inbox,
            delivery = %delivery.delivery,
            code,
            status,
            "a spooled delivery is refused at drain time and dropped"
            );
            let refusal = RefusedDelivery {
                delivery: Some(delivery.delivery.to_string()),
                status,
                code: code.to_owned(),
            };
            let (store, listed) = (&pipeline.store, &pipeline.refusals);
            record_refusal(store, listed, &delivery.instance, &delivery.inbox, refusal).await;
        }
        None => tracing::error!(code, status, "a spool record is not a delivery; dropped"),
    }
}

#[cfg(test)]
mod tests;
