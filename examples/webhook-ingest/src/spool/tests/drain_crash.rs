//! Crashes of the drainer, against a model of what was acknowledged and not yet drained.
//!
//! A drain step is `next` (which, at the end of a finished segment, first records the next
//! segment's start in the ack file, then deletes the finished segment) and `ack` (which
//! records the position after the record). The ack file is rewritten in place, 20 bytes, and
//! flushed. The test copies the files before each write of the ack file and crashes it
//! there: the new bytes written up to any byte, the rest old or zeros (a torn write), and the
//! new ack whole beside the finished segment not yet deleted. After each reopen:
//!
//! - nothing acknowledged by the writer and not yet drained is lost: the records not drained
//!   are handed out in order, last;
//! - an ack file left whole (old or new) resumes exactly there: nothing drained comes again,
//!   and a finished segment it points past is deleted;
//! - a torn ack file, the one case the design repeats records in, resumes at the start of the
//!   oldest segment still there, so only records of that segment come again, and the store's
//!   idempotency answers them as duplicates.

use std::collections::VecDeque;
use std::fs;
use std::path::Path;

use super::super::segment::{self, Position};
use super::super::{Spool, SpoolConfig};
use super::TempDir;

/// Small segments, so that the drain finishes and deletes several.
const SEGMENT_BYTES: u64 = 64;
/// Records appended before the drain starts.
const RECORDS: usize = 9;
/// Bytes of the ack file.
const ACK_BYTES: usize = 20;

fn config(dir: &Path) -> SpoolConfig {
    SpoolConfig {
        segment_bytes: SEGMENT_BYTES,
        ..SpoolConfig::new(dir)
    }
}

#[tokio::test]
async fn a_crash_while_the_drainer_records_its_place_loses_nothing_and_repeats_only_after_a_torn_ack(
) {
    let live = TempDir::new("drain-crash");
    let spool = Spool::open(config(&live.0)).unwrap();
    let mut undrained = VecDeque::new();
    for n in 0..RECORDS {
        let payload = vec![n as u8 + 1; 10 + n * 3];
        spool.append(payload.clone()).await.unwrap();
        undrained.push_back(payload);
    }
    let mut repeats_seen = false;
    let mut segments_finished = 0;
    while !undrained.is_empty() {
        let before = Snapshot::of(&live.0);
        let entry = spool.next().await.unwrap();
        assert_eq!(Some(&entry.payload), undrained.front());
        let handed = Snapshot::of(&live.0);
        if handed.ack != before.ack {
            // `next` finished a segment: a crash while recording the next one's start, or
            // between that and the deletion.
            segments_finished += 1;
            repeats_seen |= crash_while_writing_the_ack(&before, &handed.ack, &undrained, 0).await;
        }
        spool.ack(&entry).await.unwrap();
        let acked = Snapshot::of(&live.0);
        repeats_seen |= crash_while_writing_the_ack(&handed, &acked.ack, &undrained, 1).await;
        undrained.pop_front();
    }
    assert!(segments_finished >= 2, "the drain finishes segments");
    assert!(
        repeats_seen,
        "some torn ack sends the drainer back over drained records"
    );
}

/// The spool's files at one moment.
struct Snapshot {
    dir: TempDir,
    ack: Vec<u8>,
}

impl Snapshot {
    fn of(live: &Path) -> Self {
        let dir = TempDir::new("drain-crash-copy");
        copy_dir(live, &dir.0);
        let ack = fs::read(dir.0.join(segment::ACK_FILE)).unwrap();
        assert_eq!(ack.len(), ACK_BYTES);
        Self { dir, ack }
    }
}

/// Crashes the write of `new` over the ack file of `before` at every byte, in both shapes,
/// and checks each reopen against `undrained`, of which the new ack, once whole, drains the
/// first `new_drains`. Returns whether any reopen handed out a drained record.
async fn crash_while_writing_the_ack(
    before: &Snapshot,
    new: &[u8],
    undrained: &VecDeque<Vec<u8>>,
    new_drains: usize,
) -> bool {
    let mut repeated = false;
    for written in 0..=ACK_BYTES {
        for rest_zeroed in [false, true] {
            let mut ack = before.ack.clone();
            ack[..written].copy_from_slice(&new[..written]);
            if rest_zeroed {
                ack[written..].fill(0);
            }
            let case =
                format!("ack {written} of {ACK_BYTES} bytes written, rest zeroed: {rest_zeroed}");
            let drained_here = if ack == new { new_drains } else { 0 };
            let left: Vec<Vec<u8>> = undrained.iter().skip(drained_here).cloned().collect();
            repeated |= reopen(&before.dir.0, &ack, new, &left, &case).await;
        }
    }
    repeated
}

/// Reopens a copy of `files` whose ack file holds `ack`, drains it, and checks what comes.
async fn reopen(files: &Path, ack: &[u8], new: &[u8], undrained: &[Vec<u8>], case: &str) -> bool {
    let dir = TempDir::new("drain-crash-reopen");
    copy_dir(files, &dir.0);
    fs::write(dir.0.join(segment::ACK_FILE), ack).unwrap();
    let ids = segment::segment_ids(&dir.0).unwrap();
    let old = fs::read(files.join(segment::ACK_FILE)).unwrap();
    let resume = if ack == old || ack == new {
        decode(ack)
    } else {
        // What the design promises for a torn ack: the oldest segment, from its start.
        Position {
            segment: ids[0],
            offset: 0,
        }
    };
    let expected: Vec<Vec<u8>> = records(&dir.0)
        .into_iter()
        .filter(|(at, _)| *at >= resume)
        .map(|(_, payload)| payload)
        .collect();

    let spool = Spool::open(config(&dir.0)).unwrap();
    assert_eq!(spool.stats().depth, expected.len() as u64, "{case}");
    let drained = super::drain_exactly(&spool, &expected, case).await;
    // Nothing acknowledged and not drained is lost: it is what comes last.
    let repeats = drained
        .len()
        .checked_sub(undrained.len())
        .unwrap_or_else(|| panic!("{case}: records lost"));
    assert!(
        drained[repeats..].iter().eq(undrained.iter()),
        "{case}: records lost"
    );
    if ack == old || ack == new {
        assert_eq!(repeats, 0, "{case}: a whole ack repeats nothing");
        let left = segment::segment_ids(&dir.0).unwrap();
        assert!(
            left.iter().all(|&id| id >= resume.segment),
            "{case}: a finished segment is deleted"
        );
    }
    repeats > 0
}

fn decode(ack: &[u8]) -> Position {
    Position {
        segment: u64::from_le_bytes(ack[0..8].try_into().unwrap()),
        offset: u64::from_le_bytes(ack[8..16].try_into().unwrap()),
    }
}

/// Every whole record of the segments in `dir`, with where it starts.
fn records(dir: &Path) -> Vec<(Position, Vec<u8>)> {
    let mut out = Vec::new();
    for id in segment::segment_ids(dir).unwrap() {
        let mut file = fs::File::open(segment::segment_path(dir, id)).unwrap();
        let len = file.metadata().unwrap().len();
        let mut offset = 0;
        while let Some(record) = segment::read_at(&mut file, offset, len).unwrap() {
            out.push((
                Position {
                    segment: id,
                    offset,
                },
                record.payload,
            ));
            offset = record.end;
        }
    }
    out
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}
