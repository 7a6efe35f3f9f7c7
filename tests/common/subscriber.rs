//! A `tracing` subscriber that only hands each event to a closure, for the tests that need a
//! subscriber that misbehaves or counts: it keeps no span or per-thread state of its own, so
//! what a test checks is faultline's behaviour, not a subscriber's.

use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Enables everything, gives every span the same id, and calls the closure on each event.
pub struct OnEvent<F>(pub F);

impl<F: Fn(&Event<'_>) + Send + Sync + 'static> Subscriber for OnEvent<F> {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        (self.0)(event)
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}
