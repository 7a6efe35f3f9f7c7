//! Replays refused, counted per provider: deliveries whose replay key (what the sender
//! signed) an inbox holds already under another delivery id, answered 200 and not stored. A
//! sender's own redelivery keeps its id and is a duplicate, not counted here; a count that
//! grows is someone sending captured deliveries again.
//!
//! ```
//! use webhook_ingest::pipeline::replays::ReplaysRefused;
//! use webhook_ingest::provider::Provider;
//!
//! use prometheus_client::encoding::prometheus_text;
//! use prometheus_client::registry::Registry;
//!
//! let refused = ReplaysRefused::default();
//! refused.count(Provider::Github);
//! let mut registry = Registry::default();
//! refused.register(&mut registry);
//! let mut exposition = String::new();
//! prometheus_text::encode(&mut exposition, &registry).unwrap();
//! assert!(exposition.contains("webhook_ingest_replays_refused_total{provider=\"github\"} 1"));
//! assert_eq!(refused.get(Provider::Github), 1);
//! ```

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use crate::provider::Provider;

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ProviderLabel {
    provider: &'static str,
}

/// The counts of replays refused; cheap to clone, shared by the route and the drainers.
#[derive(Debug, Clone, Default)]
pub struct ReplaysRefused {
    counts: Family<ProviderLabel, Counter>,
}

impl ReplaysRefused {
    /// Counts one replay of a delivery of `provider`.
    pub fn count(&self, provider: Provider) {
        self.counts.get_or_create(&label(provider)).inc();
    }

    /// The count of `provider`.
    pub fn get(&self, provider: Provider) -> u64 {
        self.counts
            .get(&label(provider))
            .map_or(0, |counter| counter.get())
    }

    /// Registers the counts in `registry`, which `/metrics` encodes.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "webhook_ingest_replays_refused",
            "Deliveries not stored because their inbox holds what their sender signed under \
             another delivery id: replays, answered 200",
            self.counts.clone(),
        );
    }
}

fn label(provider: Provider) -> ProviderLabel {
    ProviderLabel {
        provider: provider.as_str(),
    }
}

#[cfg(test)]
mod tests;
