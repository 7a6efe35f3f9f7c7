//! How many connections are open, against the bound the accept loop holds them to; served
//! beside the ledger's metrics.

use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// Descriptors kept back from the connection bound for everything else the process opens:
/// the listener, the database and its journal files, the log, the runtime's own.
const RESERVED_DESCRIPTORS: usize = 64;
/// The most connections the default allows, whatever the descriptor limit: an idle hyper
/// connection holds some 25 KB, so this caps their memory near 250 MB.
const MAX_DEFAULT_CONNECTIONS: usize = 10_000;
/// The descriptor limit assumed where it cannot be read: the usual soft limit of Linux.
const FALLBACK_DESCRIPTOR_LIMIT: usize = 1024;

/// The default connection bound: the process's descriptor limit less a reserve, so `accept`
/// never fails for want of a descriptor, and at most 10,000 (an idle connection holds some
/// 25 KB: that caps their memory near 250 MB).
pub fn default_max_connections() -> usize {
    descriptor_limit()
        .unwrap_or(FALLBACK_DESCRIPTOR_LIMIT)
        .saturating_sub(RESERVED_DESCRIPTORS)
        .clamp(1, MAX_DEFAULT_CONNECTIONS)
}

/// The soft limit on open files, as Linux shows it in `/proc/self/limits`.
fn descriptor_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// The connection counts: cheap to clone, shared by the accept loop and `/metrics`.
#[derive(Debug, Clone, Default)]
pub struct Connections {
    open: Gauge<u64, AtomicU64>,
    accepted: Counter,
    limit: Gauge<u64, AtomicU64>,
}

impl Connections {
    /// Connections open now.
    pub fn open(&self) -> u64 {
        self.open.get()
    }

    /// Connections accepted since the start.
    pub fn accepted(&self) -> u64 {
        self.accepted.get()
    }

    pub(crate) fn set_limit(&self, limit: usize) {
        self.limit.set(u64::try_from(limit).unwrap_or(u64::MAX));
    }

    /// Counts a connection open until the returned guard is dropped.
    pub(crate) fn opened(&self) -> OpenConnection {
        self.accepted.inc();
        self.open.inc();
        OpenConnection {
            open: self.open.clone(),
        }
    }

    /// Registers the counts in `registry`, which `/metrics` encodes.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "webhook_ingest_open_connections",
            "Connections open now",
            self.open.clone(),
        );
        registry.register(
            "webhook_ingest_connection_limit",
            "Connections served at once; more wait in the listen backlog",
            self.limit.clone(),
        );
        registry.register(
            "webhook_ingest_connections_accepted",
            "Connections accepted since the start",
            self.accepted.clone(),
        );
    }
}

/// One open connection, counted until dropped.
pub(crate) struct OpenConnection {
    open: Gauge<u64, AtomicU64>,
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.open.dec();
    }
}

#[cfg(test)]
mod tests;
