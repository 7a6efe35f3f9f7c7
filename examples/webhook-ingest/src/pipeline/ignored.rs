//! Events the service acknowledges and does not store, counted per provider and event name.
//!
//! A hook subscribed to more than pushes (merge requests, issues, stars) sends those events
//! too. They are answered `202 {"status":"ignored"}`: a 4xx would count as a failed delivery,
//! and GitLab pauses, then disables, a hook after failures in a row, which stops its pushes
//! too. The count shows which hooks are subscribed to more than they need.
//!
//! The event name comes from a header the sender chooses, so the label set is bounded: past
//! [`MAX_EVENT_NAMES`] distinct names, or for a name longer than [`MAX_EVENT_NAME_BYTES`], the
//! count goes to the one label [`OTHER_EVENT`].
//!
//! ```
//! use webhook_ingest::pipeline::ignored::IgnoredEvents;
//! use webhook_ingest::provider::Provider;
//!
//! use prometheus_client::encoding::prometheus_text;
//! use prometheus_client::registry::Registry;
//!
//! let ignored = IgnoredEvents::default();
//! ignored.count(Provider::Gitlab, "Merge Request Hook");
//! ignored.count(Provider::Gitlab, "Merge Request Hook");
//! let mut registry = Registry::default();
//! ignored.register(&mut registry);
//! let mut exposition = String::new();
//! prometheus_text::encode(&mut exposition, &registry).unwrap();
//! assert!(exposition.contains(
//!     "webhook_ingest_ignored_events_total{provider=\"gitlab\",event=\"Merge Request Hook\"} 2"
//! ));
//! ```

use std::sync::{Arc, Mutex, PoisonError};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use crate::provider::Provider;

/// Distinct (provider, event) labels kept: GitHub has about 70 event kinds, GitLab and
/// Bitbucket a dozen or two each, so every real name fits and a forger's inventions do not.
pub const MAX_EVENT_NAMES: usize = 128;
/// Longest event name given its own label; the longest real one is well under 40 bytes.
pub const MAX_EVENT_NAME_BYTES: usize = 64;
/// The label the names past the bounds share.
pub const OTHER_EVENT: &str = "_other";

/// The labels of one count, in the order the exposition writes them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct EventLabels {
    provider: &'static str,
    event: String,
}

impl EventLabels {
    fn new(provider: Provider, event: &str) -> Self {
        Self {
            provider: provider.as_str(),
            event: event.to_owned(),
        }
    }
}

/// The counts of ignored events; cheap to clone, shared by the handlers and the drainer.
#[derive(Debug, Clone, Default)]
pub struct IgnoredEvents {
    counts: Family<EventLabels, Counter>,
    /// How many labels the family holds; locked while a new one is made, so that the bound
    /// is checked and the label added as one step. A label already there is counted without
    /// it.
    labels: Arc<Mutex<usize>>,
}

impl IgnoredEvents {
    /// Counts one ignored `event` of `provider`.
    pub fn count(&self, provider: Provider, event: &str) {
        let labels = EventLabels::new(provider, event);
        if let Some(counter) = self.counts.get(&labels) {
            counter.inc();
            return;
        }
        let mut made = self.labels.lock().unwrap_or_else(PoisonError::into_inner);
        let own_label = self.counts.get(&labels).is_some()
            || (event.len() <= MAX_EVENT_NAME_BYTES && *made < MAX_EVENT_NAMES - 1);
        let labels = if own_label {
            labels
        } else {
            EventLabels::new(provider, OTHER_EVENT)
        };
        if self.counts.get(&labels).is_none() {
            *made += 1;
        }
        self.counts.get_or_create(&labels).inc();
    }

    /// The count of `event` of `provider` (of [`OTHER_EVENT`] for the names folded into it).
    pub fn get(&self, provider: Provider, event: &str) -> u64 {
        let labels = EventLabels::new(provider, event);
        self.counts.get(&labels).map_or(0, |counter| counter.get())
    }

    /// Registers the counts in `registry`, which `/metrics` encodes.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "webhook_ingest_ignored_events",
            "Deliveries of events the service does not store, answered 202",
            self.counts.clone(),
        );
    }
}

#[cfg(test)]
mod tests;
