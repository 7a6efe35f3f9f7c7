//! The one path of a delivery, from the bytes and headers that arrived to stored, queued in
//! the spool, ignored or refused: `Pipeline::ingest`.
//!
//! The webhook route (`receive`) and the drainer ([`drain`]) both run it. What differs
//! between them is its `Arrival`: the moment the delivery is judged at (now, or when it
//! first arrived), where its inbox is found and its proof read (the request's headers, or
//! the proof the spool kept), and what store trouble does (a request is queued in the
//! spool; a drained record waits for the store). What a refusal answers is the caller's: the
//! route answers it to the sender, the drainer lists it among the inbox's refused deliveries
//! and drops the record.

pub mod drain;
pub mod ignored;
mod inboxes;
pub mod record;
pub mod refusals;
pub mod replays;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::body::Bytes;
use axum::http::request::Parts;
use axum::http::HeaderMap;
use faultline::webhooks::{Keys, ReplayKey};

use crate::error::IngestError;
use crate::ids::{DeliveryId, InboxId, InstanceId};
use crate::payload;
use crate::provider::{Event, Provider};
use crate::spool::Spool;
use crate::store::{Claim, InboxRow, Ingested, Store, StoreError};
use crate::verify::keys;
use crate::verify::refresh::Refreshes;
use crate::verify::secret_cache::SecretCache;
use crate::verify::webhook::{self, Proof};
use record::SpooledDelivery;

/// Everything a delivery's path touches, shared by the route and the drainers; cheap to
/// clone.
#[derive(Clone)]
pub(crate) struct Pipeline {
    pub(crate) store: Store,
    /// How long an inbox's previous secret still passes after a rotation.
    pub(crate) secret_grace: Duration,
    /// The inboxes as last seen, to verify while the store cannot be asked.
    pub(crate) secrets: SecretCache,
    pub(crate) refreshes: Refreshes,
    pub(crate) ignored: ignored::IgnoredEvents,
    /// Every refusal, counted.
    pub(crate) refusals: Arc<refusals::Refusals>,
    /// Where verified deliveries wait while the store cannot take them.
    pub(crate) spool: Option<Spool>,
    /// Where deliveries to inboxes unknown here wait, verified when drained.
    pub(crate) unverified: Option<Spool>,
    pub(crate) unverified_max_body: usize,
    pub(crate) replays_refused: replays::ReplaysRefused,
}

/// A delivery as it reaches the pipeline: whose it is, what its headers say it is, its body.
pub(crate) struct Delivery {
    pub(crate) instance: InstanceId,
    pub(crate) inbox: InboxId,
    /// The provider its headers name.
    pub(crate) provider: Provider,
    /// What its event asks of us.
    pub(crate) event: Event,
    /// The event header's value, as sent (and as the spool keeps it).
    pub(crate) event_name: String,
    pub(crate) body: Bytes,
}

/// Where a delivery comes from, and so what differs on its path.
pub(crate) enum Arrival<'a> {
    /// A request answered now: judged now, on its headers; its inbox from the store through
    /// the library's `Secrets` (as remembered while the store is down); store trouble queues
    /// it in the spool.
    Request(&'a mut Parts),
    /// A record drained from the spool: judged at `received`, the moment it first arrived, on
    /// the proof kept (`None` when it was verified before it was spooled); its inbox from the
    /// store; store trouble is returned, for the drainer to wait out.
    Spooled {
        delivery: DeliveryId,
        proof: Option<Proof>,
        received: SystemTime,
        /// The replay key kept with a delivery verified before it was spooled.
        key: Option<ReplayKey>,
    },
}

/// What became of a delivery that was not refused.
pub(crate) enum Fate {
    /// Stored, or a duplicate of one stored before.
    Stored {
        ingested: Ingested,
        delivery: DeliveryId,
    },
    /// On disk in a spool, to be stored when the store answers.
    Queued {
        delivery: DeliveryId,
    },
    /// An event the service does not store, counted.
    Ignored {
        event: String,
    },
    Ping,
}

/// The inbox a delivery goes to.
struct Found {
    row: InboxRow,
    /// Whether the store answered for it, so that it can take the delivery too.
    in_store: bool,
    /// The keys the library's `Secrets` made of it, for a request.
    keys: Option<Keys>,
}

impl Pipeline {
    /// The pipeline: finds the delivery's inbox, checks its provider and its proof as of its
    /// arrival, answers a ping or an ignored event, reads the commits of a push, and stores
    /// them, or queues the delivery in the spool when the store cannot take it (a request
    /// only). Every refusal is an `Err`, store trouble too; the caller decides what each
    /// answers.
    pub(crate) async fn ingest(
        &self,
        delivery: Delivery,
        mut arrival: Arrival<'_>,
    ) -> Result<Fate, IngestError> {
        let found = match (self.find(&delivery, &mut arrival).await?, &arrival) {
            (Some(found), _) => found,
            (None, Arrival::Request(parts)) => {
                return self.queue_unverified(delivery, &parts.headers).await;
            }
            // A drained record's inbox comes from the store, which answered or failed.
            (None, Arrival::Spooled { .. }) => return Err(StoreError::Connecting.into()),
        };
        let Delivery {
            instance,
            provider,
            event,
            event_name,
            body,
            ..
        } = delivery;
        let now = SystemTime::now();
        let key = self.verify(&found, provider, &body, &arrival, now)?;
        let shape = match event {
            Event::Ping => return Ok(Fate::Ping),
            Event::Ignored(event) => {
                self.ignored.count(provider, &event);
                return Ok(Fate::Ignored { event });
            }
            Event::Push(shape) => shape,
        };
        let delivery = arrival.delivery_id(provider, &body)?;
        let commits = payload::parse_push(shape, &body)?;
        let inbox = found.row.id.clone();
        if found.in_store {
            let claim = Claim::new(delivery.clone(), key, &inbox);
            let stored = self
                .store
                .ingest(instance.clone(), found.row, claim, commits)
                .await;
            match stored {
                Ok(ingested) => {
                    if ingested == Ingested::Replayed {
                        self.replays_refused.count(provider);
                    }
                    return Ok(Fate::Stored { ingested, delivery });
                }
                Err(error) if arrival.is_request() && self.spool.is_some() => {
                    tracing::debug!(%error, "the store cannot take the delivery");
                }
                Err(error) => return Err(error.into()),
            }
        }
        let record = SpooledDelivery {
            instance,
            inbox,
            provider,
            event: event_name,
            delivery,
            proof: None,
            received: Some(now),
            key: key.map(|key| *key.as_bytes()),
            body: body.to_vec(),
        };
        queue(self.spool.as_ref(), record).await
    }

    /// The delivery's inbox; `None` for a request to an inbox neither the store (which did
    /// not answer) nor this node knows, when a spool can keep it unverified.
    async fn find(
        &self,
        delivery: &Delivery,
        arrival: &mut Arrival<'_>,
    ) -> Result<Option<Found>, IngestError> {
        let Arrival::Request(parts) = arrival else {
            let (instance, inbox) = (delivery.instance.clone(), delivery.inbox.clone());
            let row = self.store.inbox(instance, inbox).await?;
            let row = row.ok_or_else(|| IngestError::InboxNotFound(delivery.inbox.to_string()))?;
            inboxes::remember(self, &delivery.instance, &row);
            let (in_store, keys) = (true, None);
            return Ok(Some(Found {
                row,
                in_store,
                keys,
            }));
        };
        parts.extensions.insert(inboxes::Addressed {
            instance: delivery.instance.clone(),
            inbox: delivery.inbox.clone(),
        });
        let looked_up = faultline::webhooks::Secrets::keys(self, parts).await;
        let found = parts.extensions.get::<inboxes::Looked>().cloned();
        match (looked_up, found) {
            (Ok(keys), Some(looked)) => {
                let (row, in_store) = looked.into_row();
                let keys = Some(keys);
                Ok(Some(Found {
                    row,
                    in_store,
                    keys,
                }))
            }
            (Err(error), _) => inboxes::unavailable(self, error, &delivery.inbox).map(|()| None),
            (Ok(_), None) => Err(IngestError::InboxNotFound(delivery.inbox.to_string())),
        }
    }

    /// Whether the delivery comes from its inbox's provider and is signed with a secret of
    /// the inbox, judged as of its arrival: its replay key when it is and one can be made.
    fn verify(
        &self,
        found: &Found,
        provider: Provider,
        body: &Bytes,
        arrival: &Arrival<'_>,
        now: SystemTime,
    ) -> Result<Option<ReplayKey>, IngestError> {
        if found.row.provider != provider {
            return Err(IngestError::WrongProvider {
                inbox: found.row.provider,
                sent: provider,
            });
        }
        let grace = self.secret_grace;
        let key = match (arrival, &found.keys) {
            (Arrival::Request(parts), Some(keys)) => {
                Some(keys::verify_with(keys, &parts.headers, body, now)?)
            }
            (Arrival::Request(parts), None) => Some(keys::verify(
                &found.row,
                provider,
                &parts.headers,
                body,
                grace,
                now,
            )?),
            (
                Arrival::Spooled {
                    proof: Some(proof),
                    received,
                    ..
                },
                _,
            ) => keys::check_spooled(proof, &found.row, provider, body, grace, *received)?,
            (
                Arrival::Spooled {
                    proof: None, key, ..
                },
                _,
            ) => *key,
        };
        Ok(key)
    }

    /// A request to an inbox whose secret is not at hand. Everything that can be checked
    /// without the secret is checked now (a proof that is there and well formed, a delivery
    /// id, a push that parses); the signature itself when drained. A ping stores nothing, so
    /// it is answered as always. What anyone could send goes to the small unverified spool,
    /// and past its bound or its per-body cap is 503.
    async fn queue_unverified(
        &self,
        delivery: Delivery,
        headers: &HeaderMap,
    ) -> Result<Fate, IngestError> {
        let (provider, body) = (delivery.provider, &delivery.body);
        let received = SystemTime::now();
        keys::check_headers(provider, headers, received)?;
        let proof = Proof::read(provider, headers);
        if let Event::Ping = delivery.event {
            return Ok(Fate::Ping);
        }
        // The cap before the parse: a flood of large bodies costs no parsing.
        let Some(unverified) = &self.unverified else {
            return Err(IngestError::UnverifiedBound);
        };
        if body.len() > self.unverified_max_body {
            self.refusals.refused_unverified_too_large();
            return Err(IngestError::UnverifiedBound);
        }
        let id = webhook::delivery_id(provider, headers, body)?;
        if let Event::Push(shape) = delivery.event {
            payload::parse_push(shape, body)?;
        }
        let record = SpooledDelivery {
            instance: delivery.instance,
            inbox: delivery.inbox,
            provider,
            event: delivery.event_name,
            delivery: id,
            proof: Some(proof),
            received: Some(received),
            key: None,
            body: delivery.body.to_vec(),
        };
        match queue(Some(unverified), record).await {
            Err(IngestError::SpoolFull) => {
                self.refusals.refused_unverified_full();
                Err(IngestError::UnverifiedBound)
            }
            fate => fate,
        }
    }
}

impl Arrival<'_> {
    /// The delivery id: the one the provider sent (or one derived from the body) for a
    /// request, the one kept for a drained record.
    fn delivery_id(&self, provider: Provider, body: &[u8]) -> Result<DeliveryId, IngestError> {
        match self {
            Arrival::Request(parts) => Ok(webhook::delivery_id(provider, &parts.headers, body)?),
            Arrival::Spooled { delivery, .. } => Ok(delivery.clone()),
        }
    }

    fn is_request(&self) -> bool {
        matches!(self, Arrival::Request(_))
    }
}

/// Appends `record` to `spool` and answers queued once it is on disk; without a spool, the
/// store's trouble is the answer.
async fn queue(spool: Option<&Spool>, record: SpooledDelivery) -> Result<Fate, IngestError> {
    let spool = spool.ok_or(IngestError::StoreUnavailable(StoreError::Connecting))?;
    let delivery = record.delivery.clone();
    spool.append(record.encode()).await?;
    Ok(Fate::Queued { delivery })
}
