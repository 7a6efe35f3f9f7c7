//! A power cut at each answer of the spool: the files as a power cut leaves them must still
//! hold every record it acknowledged, and none it said was drained.
//!
//! `model.rs` crashes a write at every byte, but in-process every byte written reaches the
//! file whether flushed or not, so a writer that answered before its `fdatasync` (or never
//! called it) would pass there. Here the spool runs on [`PowerCutDisk`], which remembers
//! what each flush made durable: each file is cut back to its bytes as of its last flush,
//! and a segment whose directory entry no flush of the directory had listed is gone.

use std::collections::VecDeque;
use std::path::Path;

use super::super::open::open;
use super::super::segment;
use super::super::{Spool, SpoolConfig};
use super::disk::PowerCutDisk;
use super::TempDir;

/// Small segments, so that appends start new ones and drains delete old ones.
const SEGMENT_BYTES: u64 = 80;
/// Payload lengths appended one by one (an empty one, one past a segment's size).
const LENGTHS: [usize; 12] = [5, 0, 30, 17, 70, 1, 2, 40, 9, 9, 64, 3];
/// A record is drained after every this many appends, so the cut also meets a drained
/// (deleted) segment and an ack that moved.
const DRAIN_EVERY: usize = 3;

fn config(dir: &Path) -> SpoolConfig {
    SpoolConfig {
        segment_bytes: SEGMENT_BYTES,
        ..SpoolConfig::new(dir)
    }
}

#[tokio::test]
async fn a_power_cut_at_any_answer_keeps_every_record_acknowledged() {
    let base = TempDir::new("power-cut");
    let disk = PowerCutDisk::default();
    let spool = open(config(&base.0), Box::new(disk.clone())).unwrap();
    let mut model = VecDeque::new();
    for (n, &len) in LENGTHS.iter().enumerate() {
        let payload: Vec<u8> = (0..len).map(|i| (n * 13 + i) as u8).collect();
        spool.append(payload.clone()).await.unwrap();
        model.push_back(payload);
        power_cut(&disk, &base.0, &model, &format!("the answer to append {n}")).await;
        if n % DRAIN_EVERY == DRAIN_EVERY - 1 {
            let entry = spool.next().await.unwrap();
            assert_eq!(Some(&entry.payload), model.front());
            spool.ack(&entry).await.unwrap();
            model.pop_front();
            power_cut(&disk, &base.0, &model, &format!("the ack after append {n}")).await;
        }
    }
    assert!(
        segment::segment_ids(&base.0).unwrap()[0] > 1,
        "the script deletes drained segments"
    );
}

/// The files of `live` as a power cut at `moment` leaves them, reopened: they hand out
/// exactly `acknowledged`.
async fn power_cut(
    disk: &PowerCutDisk,
    live: &Path,
    acknowledged: &VecDeque<Vec<u8>>,
    moment: &str,
) {
    let dir = TempDir::new("power-cut-copy");
    disk.power_cut(live, &dir.0);
    let spool = Spool::open(config(&dir.0)).unwrap();
    let case = format!("a power cut at {moment}");
    assert_eq!(spool.stats().depth, acknowledged.len() as u64, "{case}");
    let acknowledged: Vec<Vec<u8>> = acknowledged.iter().cloned().collect();
    super::drain_exactly(&spool, &acknowledged, &case).await;
}
