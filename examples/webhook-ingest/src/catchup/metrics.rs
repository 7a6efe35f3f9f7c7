//! What catch-up shows: per inbox, on `/metrics`, the failed deliveries it found, the
//! redeliveries it asked for, those recovered (stored after the ask), the passes its provider
//! stopped early and why, the time of the last pass that went to its end, and whether the
//! provider (GitHub or GitLab) refuses its credentials; and on `/health`, the inboxes whose
//! credentials are refused, with the reason.
//!
//! The counters count what this node did, so a fleet's are summed; the last success and the
//! refusal are read from the store, which the fleet shares, so every node shows the same.

use std::sync::{Arc, Mutex, PoisonError};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use serde_json::{json, Value};

use crate::store::catchup::CatchUpRow;

/// The labels of every series: the inbox and its instance, as `instance_id`, since
/// Prometheus keeps `instance` for the node it scrapes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct InboxLabels {
    pub instance_id: String,
    pub inbox: String,
}

impl InboxLabels {
    pub fn of(row: &CatchUpRow) -> InboxLabels {
        InboxLabels {
            instance_id: row.instance.to_string(),
            inbox: row.inbox.to_string(),
        }
    }
}

/// The labels of the passes a provider stopped: the inbox's, its provider (`github`,
/// `gitlab`) and why (`refused`, `rate_limited`, `unavailable`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct StoppedLabels {
    pub instance_id: String,
    pub inbox: String,
    pub provider: &'static str,
    pub reason: &'static str,
}

/// An inbox with catch-up, and why its provider refuses its credentials, if it does.
type Seen = (InboxLabels, Option<String>);

/// Catch-up's counts and what the last read of the store said; cheap to clone.
#[derive(Clone, Default)]
pub struct CatchUpMetrics {
    pub found_failed: Family<InboxLabels, Counter>,
    pub asked: Family<InboxLabels, Counter>,
    pub recovered: Family<InboxLabels, Counter>,
    pub stopped: Family<StoppedLabels, Counter>,
    last_success: Family<InboxLabels, Gauge>,
    refused: Family<InboxLabels, Gauge>,
    /// The inboxes with catch-up at the last read, with the refusal of each if any.
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl CatchUpMetrics {
    /// Takes in what the store says of every inbox with catch-up.
    pub fn saw(&self, rows: &[CatchUpRow]) {
        let mut seen = Vec::with_capacity(rows.len());
        for row in rows {
            let labels = InboxLabels::of(row);
            self.last_success
                .get_or_create(&labels)
                .set(row.last_success_ms / 1000);
            self.refused
                .get_or_create(&labels)
                .set(i64::from(row.failing.is_some()));
            // Made at zero, so that a rate over them starts from the first scrape.
            self.found_failed.get_or_create(&labels).inc_by(0);
            self.asked.get_or_create(&labels).inc_by(0);
            self.recovered.get_or_create(&labels).inc_by(0);
            seen.push((labels, row.failing.clone()));
        }
        let gone: Vec<_> = {
            let old = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
            old.iter()
                .filter(|(labels, _)| !seen.iter().any(|(l, _)| l == labels))
                .map(|(l, _)| l.clone())
                .collect()
        };
        for labels in gone {
            self.last_success.remove(&labels);
            self.refused.remove(&labels);
        }
        *self.seen.lock().unwrap_or_else(PoisonError::into_inner) = seen;
    }

    /// Registers the series in `registry`, which `/metrics` encodes.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "webhook_ingest_catchup_found_failed",
            "Deliveries the provider (GitHub or GitLab) lists as failed, found by this node's catch-up",
            self.found_failed.clone(),
        );
        registry.register(
            "webhook_ingest_catchup_redelivery_asked",
            "Redeliveries this node's catch-up asked the provider (GitHub or GitLab) for",
            self.asked.clone(),
        );
        registry.register(
            "webhook_ingest_catchup_recovered",
            "Deliveries asked for and then stored, as this node's catch-up found them",
            self.recovered.clone(),
        );
        registry.register(
            "webhook_ingest_catchup_last_success_timestamp_seconds",
            "When the inbox's last catch-up pass went to its end (or catch-up was given), Unix seconds",
            self.last_success.clone(),
        );
        registry.register(
            "webhook_ingest_catchup_refused",
            "1 while the provider (GitHub or GitLab) refuses the inbox's catch-up credentials",
            self.refused.clone(),
        );
        registry.register(
            "webhook_ingest_catchup_stopped",
            "Catch-up passes of this node the provider stopped early, by reason: refused \
             (credentials or hook), rate_limited, unavailable (5xx after retries, or unreachable)",
            self.stopped.clone(),
        );
    }

    /// Counts a pass over the inbox of `labels` that `provider` stopped, for `reason`.
    pub fn stopped_by(&self, labels: &InboxLabels, provider: &'static str, reason: &'static str) {
        let labels = StoppedLabels {
            instance_id: labels.instance_id.clone(),
            inbox: labels.inbox.clone(),
            provider,
            reason,
        };
        self.stopped.get_or_create(&labels).inc();
    }

    /// What `/health` says: how many inboxes have catch-up, and those whose credentials
    /// the provider refuses, each with the reason.
    pub fn health(&self) -> Value {
        let seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let refused: Vec<Value> = seen
            .iter()
            .filter_map(|(labels, failing)| {
                Some(json!({ "instance": labels.instance_id, "inbox": labels.inbox, "reason": failing.as_ref()? }))
            })
            .collect();
        json!({ "inboxes": seen.len(), "refused": refused })
    }
}
