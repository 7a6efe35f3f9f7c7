//! The spool of deliveries nobody could verify yet: to an inbox this node did not know at
//! its last refresh (made on another node since), while the store is down.
//!
//! Anyone can send such a delivery, with any signature, so it gets a small spool of its own
//! (a directory inside the main one) with a small bound and a per-body cap: a flood of
//! made-up deliveries fills that and nothing else, and the main spool keeps its room for
//! verified deliveries. Past the bound, or the cap, the answer is 503 with `Retry-After`,
//! never a 2xx; what this spool takes is verified when drained. Because the bound is the
//! spool's own, what it holds after a restart still counts against it.

use std::path::Path;

use super::{Spool, SpoolConfig};

/// The directory inside the main spool's.
pub const UNVERIFIED_DIR: &str = "unverified";
/// The bound unless `--unverified-max-bytes` says otherwise: room for hundreds of ordinary
/// pushes to inboxes made in the last refresh period, and a trifle of any disk.
pub const DEFAULT_UNVERIFIED_MAX_BYTES: u64 = 64 << 20;
/// The largest body taken unverified unless `--unverified-max-body` says otherwise: a push
/// of hundreds of commits is well under it, and a flood needs 64 bodies to fill the bound.
pub const DEFAULT_UNVERIFIED_MAX_BODY: usize = 1 << 20;
/// Its segments are small, so that a drained one is soon deleted: the disk it takes stays
/// near the bound.
const UNVERIFIED_SEGMENT_BYTES: u64 = 8 << 20;

/// Opens the spool of unverified deliveries inside `main_dir`, bounded to `max_bytes`.
pub fn open(main_dir: &Path, max_bytes: u64) -> std::io::Result<Spool> {
    Spool::open(SpoolConfig {
        max_bytes,
        segment_bytes: UNVERIFIED_SEGMENT_BYTES,
        ..SpoolConfig::new(main_dir.join(UNVERIFIED_DIR))
    })
}

#[cfg(test)]
mod tests;
