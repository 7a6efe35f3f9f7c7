//! A power cut at each answer of the writer: the files cut back to what was flushed when
//! it answered must still hold every record it acknowledged.
//!
//! `model.rs` crashes a write at every byte, but in-process every byte written reaches the
//! file whether flushed or not, so a writer that answered before its `fdatasync` (or never
//! called it) would pass there. Here the writer's test-only record of what it had flushed at
//! its last answer ([`Fsynced`](super::super::writer::Fsynced)) says what a power cut at that
//! moment keeps: each segment is cut to its flushed length, and a segment whose directory
//! entry no flush of the directory had listed by then is gone.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ffi::OsString;
use std::fs;
use std::path::Path;

use super::super::segment;
use super::super::{Spool, SpoolConfig};
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
    let spool = Spool::open(config(&base.0)).unwrap();
    let mut model = VecDeque::new();
    for (n, &len) in LENGTHS.iter().enumerate() {
        let payload: Vec<u8> = (0..len).map(|i| (n * 13 + i) as u8).collect();
        spool.append(payload.clone()).await.unwrap();
        model.push_back(payload);
        let (flushed, entries) = {
            let fsynced = spool.shared.fsynced();
            (
                fsynced.at_last_answer.clone(),
                fsynced.entries_at_last_answer.clone(),
            )
        };
        power_cut(&base.0, &flushed, &entries, &model, n).await;
        if n % DRAIN_EVERY == DRAIN_EVERY - 1 {
            let entry = spool.next().await.unwrap();
            assert_eq!(Some(&entry.payload), model.front());
            spool.ack(&entry).await.unwrap();
            model.pop_front();
        }
    }
    assert!(
        segment::segment_ids(&base.0).unwrap()[0] > 1,
        "the script deletes drained segments"
    );
}

/// A copy of `live` as a power cut right after the writer's answer to append `n` leaves it,
/// reopened: it hands out exactly `acknowledged`.
async fn power_cut(
    live: &Path,
    flushed: &BTreeMap<u64, u64>,
    entries: &BTreeSet<OsString>,
    acknowledged: &VecDeque<Vec<u8>>,
    n: usize,
) {
    let dir = TempDir::new("power-cut-copy");
    fs::create_dir_all(&dir.0).unwrap();
    for entry in fs::read_dir(live).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), dir.0.join(entry.file_name())).unwrap();
    }
    for id in segment::segment_ids(&dir.0).unwrap() {
        let path = segment::segment_path(&dir.0, id);
        if !entries.contains(path.file_name().expect("a segment's name")) {
            // Its directory entry was never flushed: the file is gone.
            fs::remove_file(&path).unwrap();
        } else if let Some(&len) = flushed.get(&id) {
            fs::File::options()
                .write(true)
                .open(&path)
                .and_then(|file| file.set_len(len))
                .unwrap();
        }
    }
    let spool = Spool::open(config(&dir.0)).unwrap();
    let case = format!("a power cut at the answer to append {n}");
    assert_eq!(spool.stats().depth, acknowledged.len() as u64, "{case}");
    let acknowledged: Vec<Vec<u8>> = acknowledged.iter().cloned().collect();
    super::drain_exactly(&spool, &acknowledged, &case).await;
}
