//! What `/metrics` shows of a spool: its stats, read at each scrape.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use super::Spool;

/// A spool's stats, encoded as they are when scraped: they live in the spool, which moves
/// them with every append and drain, and `/health` shows the same ones.
#[derive(Debug)]
struct StatsCollector(Spool);

impl Collector for StatsCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        let stats = self.0.stats();
        let gauges = [
            (
                "depth",
                "Deliveries spooled and not yet drained.",
                stats.depth,
            ),
            (
                "bytes",
                "Bytes of the records not yet drained.",
                stats.depth_bytes,
            ),
            (
                "oldest_age_seconds",
                "Age of the oldest record not yet drained.",
                stats.oldest_age_seconds,
            ),
        ];
        for (name, help, value) in gauges {
            let gauge = ConstGauge::new(value);
            gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)?;
        }
        // Counters: the encoder adds `_total` to each name.
        let counters = [
            ("spooled", "Deliveries spooled since start.", stats.spooled),
            (
                "drained",
                "Deliveries drained into the store since start.",
                stats.drained,
            ),
            (
                "cut",
                "Torn or damaged tails cut off when the spool was opened.",
                stats.cut,
            ),
            (
                "cut_bytes",
                "Bytes cut off when the spool was opened.",
                stats.cut_bytes,
            ),
            (
                "full",
                "Deliveries refused 503 because the spool was full.",
                stats.full,
            ),
        ];
        for (name, help, value) in counters {
            let counter = ConstCounter::new(value);
            counter.encode(encoder.encode_descriptor(
                name,
                help,
                None,
                counter.metric_type(),
            )?)?;
        }
        Ok(())
    }
}

impl Spool {
    /// Registers the spool's stats in `registry`, which `/metrics` encodes, each name
    /// starting `prefix_` (`webhook_ingest_spool_depth`, …).
    pub fn register(&self, prefix: &str, registry: &mut Registry) {
        registry
            .sub_registry_with_prefix(prefix)
            .register_collector(Box::new(StatsCollector(self.clone())));
    }
}
