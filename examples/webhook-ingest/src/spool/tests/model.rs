//! The spool against a model: a `VecDeque` of the records acknowledged and not yet drained.
//!
//! A script appends batches and drains records, on a real spool, keeping the model beside
//! it. Before each batch is appended, the test crashes it at every byte: the files as they
//! are, plus what a crash during that batch's write can leave of it (its bytes written
//! through the file system, then `fdatasync`, then the answers). Two shapes of crash:
//!
//! - cut: the file ends anywhere in the batch's bytes, as a kill during the `write` leaves
//!   it, or a power cut where the file's length reached the disk with its data;
//! - zero-filled: the file has the batch's whole length but its bytes from some point on are
//!   zeros, as a power cut leaves a file whose new length reached the disk before its data.
//!
//! Whichever byte the crash hits (a header half written, a payload half written, the whole
//! batch written but not flushed, flushed but not answered), the reopened spool must hand
//! out the model's records, in order, then those of the batch that are whole on disk (never
//! answered, so their sender retries, and the store takes the copy as a duplicate), and
//! nothing else: no acknowledged record lost, none twice, no torn one. What follows the last
//! whole record is cut off and counted, and the next append lands right after it.

use std::collections::VecDeque;
use std::fs;
use std::io::Write as _;
use std::path::Path;

use super::super::disk::{Disk, OsDisk};
use super::super::segment;
use super::super::{Spool, SpoolConfig};
use super::TempDir;

/// Small segments, so that the script starts new ones (and a crash hits a batch that opens
/// a new segment) and drains whole ones (which deletes them).
const SEGMENT_BYTES: u64 = 96;
/// The script: each batch's payload lengths (one empty, one past a segment's end), and how
/// many records are drained after it.
const SCRIPT: [(&[usize], usize); 5] = [
    (&[3], 0),
    (&[0, 9, 20], 2),
    (&[25], 1),
    (&[1, 2], 0),
    (&[40, 5], 3),
];
/// The arrival time written in the crashed batch's records, as the writer writes it.
const MILLIS: u64 = 1_764_000_000_123;
/// What is appended after the reopen, to see where the next record lands.
const AFTER: &[u8] = b"appended after the reopen";

/// What a crash leaves of the batch it hit.
#[derive(Debug, Clone, Copy)]
enum Crash {
    Cut,
    ZeroFilled,
}

fn config(dir: &Path) -> SpoolConfig {
    SpoolConfig {
        segment_bytes: SEGMENT_BYTES,
        ..SpoolConfig::new(dir)
    }
}

/// The payloads of batch `batch`: no zero byte in them, so that a zero-filled tail always
/// differs from what was written.
fn payloads(batch: usize, lengths: &[usize]) -> Vec<Vec<u8>> {
    lengths
        .iter()
        .enumerate()
        .map(|(n, &len)| {
            let seed = batch * 31 + n * 7;
            (0..len).map(|i| 1 + ((seed + i) % 250) as u8).collect()
        })
        .collect()
}

#[tokio::test]
async fn after_a_crash_at_any_byte_of_a_write_the_spool_holds_exactly_what_was_acknowledged() {
    let base = TempDir::new("model");
    drop(Spool::open(config(&base.0)).unwrap());
    let mut model = VecDeque::new();
    for (batch, &(lengths, drains)) in SCRIPT.iter().enumerate() {
        let batch = payloads(batch, lengths);
        let written = encoded_len(&batch);
        for crash in [Crash::Cut, Crash::ZeroFilled] {
            for at in 0..=written {
                crashed(&base.0, &model, &batch, crash, at).await;
            }
        }
        let spool = Spool::open(config(&base.0)).unwrap();
        for payload in &batch {
            spool.append(payload.clone()).await.unwrap();
            model.push_back(payload.clone());
        }
        for _ in 0..drains {
            let entry = spool.next().await.unwrap();
            assert_eq!(Some(&entry.payload), model.front());
            spool.ack(&entry).await.unwrap();
            model.pop_front();
        }
    }
    assert!(
        segment::segment_ids(&base.0).unwrap().len() > 1,
        "the script spans segments"
    );
}

fn encoded_len(batch: &[Vec<u8>]) -> usize {
    let mut bytes = Vec::new();
    for payload in batch {
        segment::encode(MILLIS, payload, &mut bytes);
    }
    bytes.len()
}

/// A copy of `base` (the files after every acknowledged write), `batch` crashed at byte `at`
/// of its write, reopened and drained against `acknowledged`.
async fn crashed(
    base: &Path,
    acknowledged: &VecDeque<Vec<u8>>,
    batch: &[Vec<u8>],
    crash: Crash,
    at: usize,
) {
    let dir = TempDir::new("model-crash");
    copy_dir(base, &dir.0);
    let mut bytes = Vec::new();
    let mut ends = Vec::new();
    for payload in batch {
        segment::encode(MILLIS, payload, &mut bytes);
        ends.push(bytes.len());
    }
    let on_disk = match crash {
        Crash::Cut => bytes[..at].to_vec(),
        Crash::ZeroFilled => {
            let mut filled = bytes.clone();
            filled[at..].fill(0);
            filled
        }
    };
    write_at_the_writers_end(&dir.0, &on_disk);
    // The batch's records that are whole on disk, up to the first that is not.
    let mut whole = Vec::new();
    let mut start = 0;
    for (payload, &end) in batch.iter().zip(&ends) {
        if end > on_disk.len() || on_disk[start..end] != bytes[start..end] {
            break;
        }
        whole.push(payload.clone());
        start = end;
    }
    let torn = (on_disk.len() - start) as u64;
    let expected: Vec<Vec<u8>> = acknowledged.iter().cloned().chain(whole).collect();
    let case = format!("{crash:?} at byte {at} of {}", bytes.len());

    let spool = Spool::open(config(&dir.0)).unwrap();
    let stats = spool.stats();
    assert_eq!(
        (stats.cut, stats.cut_bytes),
        (u64::from(torn > 0), torn),
        "{case}"
    );
    assert_eq!(stats.depth, expected.len() as u64, "{case}");
    super::drain_exactly(&spool, &expected, &case).await;
    spool.append(AFTER.to_vec()).await.unwrap();
    let entry = spool.next().await.unwrap();
    assert_eq!(entry.payload, AFTER, "{case}");
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// Appends `bytes` where the writer would have written its next batch: the last segment's
/// end, or a new segment once that one reached its size.
fn write_at_the_writers_end(dir: &Path, bytes: &[u8]) {
    let last = *segment::segment_ids(dir).unwrap().last().unwrap();
    let full = fs::metadata(segment::segment_path(dir, last))
        .unwrap()
        .len()
        >= SEGMENT_BYTES;
    let id = if full { last + 1 } else { last };
    let mut file = OsDisk.open(&segment::segment_path(dir, id)).unwrap();
    let end = file.metadata().unwrap().len();
    std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(end)).unwrap();
    file.write_all(bytes).unwrap();
}
