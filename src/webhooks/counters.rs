//! The intake's counters that the ledger exports ([`Ledger::export`](crate::Ledger::export)),
//! named once here so that no service writes their text by hand.

use crate::count::{Counter, ExportCounters};
use crate::webhooks::replay::ReplayMemory;

/// The name under which [`ReplayMemory::evicted`] is exported.
pub const REPLAYS_EVICTED: &str = "faultline_webhook_replays_evicted_total";
/// The name under which [`ReplayMemory::expired`] is exported.
pub const REPLAYS_EXPIRED: &str = "faultline_webhook_replays_expired_total";

/// A replay memory's counters on `/metrics`: `ledger.export(memory.clone())`. Several
/// memories given to one ledger are summed under each name.
impl ExportCounters for ReplayMemory {
    fn counters(&self) -> Vec<Counter> {
        vec![
            Counter::new(
                REPLAYS_EVICTED,
                "Replay keys forgotten before their time, the memory full: deliveries whose \
                 replay would pass again.",
                self.evicted(),
            ),
            Counter::new(
                REPLAYS_EXPIRED,
                "Replay keys forgotten at the end of their window.",
                self.expired(),
            ),
        ]
    }
}
