//! The spool's unit tests; its model, with a crash at each byte of a write, in `model.rs`, a
//! power cut at each answer in `power_cut.rs` (on the disk model of `disk.rs`), and crashes
//! of the drainer in `drain_crash.rs`.

mod disk;
mod drain_crash;
mod model;
mod open;
mod power_cut;

use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use super::segment::{self, HEADER_BYTES};
use super::{Spool, SpoolConfig, SpoolError};

/// Drains `spool` of exactly `expected`, in order, acknowledging each, and checks that
/// nothing comes after them; `case` names the crash in a failure. Returns what was drained.
async fn drain_exactly(spool: &Spool, expected: &[Vec<u8>], case: &str) -> Vec<Vec<u8>> {
    let mut drained = Vec::new();
    for _ in 0..expected.len() {
        let entry = spool.next().await.unwrap();
        spool.ack(&entry).await.unwrap();
        drained.push(entry.payload);
    }
    assert_eq!(drained, expected, "{case}");
    let more = super::lock(&spool.reader).next();
    assert!(
        matches!(more, Ok(None)),
        "{case}: a record past those expected"
    );
    drained
}

/// A fresh directory per test, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "webhook-ingest-spool-{name}-{}-{n}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        Self(dir)
    }

    fn config(&self) -> SpoolConfig {
        SpoolConfig::new(&self.0)
    }

    fn segments(&self) -> Vec<u64> {
        segment::segment_ids(&self.0).unwrap()
    }

    fn segment(&self, id: u64) -> PathBuf {
        segment::segment_path(&self.0, id)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

async fn drain(spool: &Spool, n: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for _ in 0..n {
        let entry = spool.next().await.unwrap();
        spool.ack(&entry).await.unwrap();
        out.push(entry.payload);
    }
    out
}

#[tokio::test]
async fn what_is_appended_comes_back_byte_for_byte_in_order() {
    let dir = TempDir::new("round-trip");
    let spool = Spool::open(dir.config()).unwrap();
    let payloads: Vec<Vec<u8>> = (0..50u8)
        .map(|n| (0..n).map(|i| i.wrapping_mul(31)).collect())
        .collect();
    for payload in &payloads {
        spool.append(payload.clone()).await.unwrap();
    }
    assert_eq!(spool.stats().depth, 50);
    // What a log line of the spool shows: its directory and stats.
    let shown = format!("{spool:?}");
    assert!(
        shown.starts_with("Spool { dir: ") && shown.contains("depth: 50,"),
        "{shown}"
    );
    assert_eq!(drain(&spool, 50).await, payloads);
    let stats = spool.stats();
    assert_eq!((stats.depth, stats.depth_bytes), (0, 0));
    assert_eq!((stats.spooled, stats.drained), (50, 50));
}

#[cfg(unix)]
#[tokio::test]
async fn its_files_are_readable_by_the_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("modes");
    let spool = Spool::open(dir.config()).unwrap();
    spool.append(b"body".to_vec()).await.unwrap();
    let mode = |path: &PathBuf| fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir.0), 0o700);
    assert_eq!(mode(&dir.segment(1)), 0o600);
    assert_eq!(mode(&dir.0.join(segment::ACK_FILE)), 0o600);
}

/// How long ago the oldest record of the test below arrived: 90.5 s, so that its age in whole
/// seconds is 90 whatever the milliseconds the test itself takes.
const OLD_ARRIVAL_MILLIS: u64 = 90_500;

/// A spool in `dir` reopened with one record that arrived [`OLD_ARRIVAL_MILLIS`] ago, as a
/// spool written then and reopened now holds it.
fn reopened_with_an_old_record(dir: &TempDir) -> Spool {
    drop(Spool::open(dir.config()).unwrap());
    let mut old = Vec::new();
    segment::encode(super::now_millis() - OLD_ARRIVAL_MILLIS, b"old", &mut old);
    fs::write(dir.segment(1), &old).unwrap();
    Spool::open(dir.config()).unwrap()
}

/// The oldest record's age in whole seconds, checked within `range`.
fn assert_age(spool: &Spool, range: std::ops::RangeInclusive<u64>, case: &str) {
    let age = spool.stats().oldest_age_seconds;
    assert!(range.contains(&age), "{case}: {age} s");
}

#[tokio::test]
async fn the_oldest_records_age_is_counted_from_its_arrival_in_whole_seconds() {
    let dir = TempDir::new("age");
    let spool = reopened_with_an_old_record(&dir);
    assert_age(&spool, 90..=95, "reopened");
    // A record appended after it does not make the spool younger.
    spool.append(b"new".to_vec()).await.unwrap();
    assert_age(&spool, 90..=95, "one appended");
    // Drained, the next record handed out is the oldest: it arrived just now.
    assert_eq!(drain(&spool, 1).await, [b"old".to_vec()]);
    assert_eq!(spool.next().await.unwrap().payload, b"new");
    assert_age(&spool, 0..=5, "the old one drained");
}

#[tokio::test]
async fn a_spool_drained_empty_has_no_oldest_record() {
    let dir = TempDir::new("age-empty");
    let spool = reopened_with_an_old_record(&dir);
    assert_eq!(drain(&spool, 1).await, [b"old".to_vec()]);
    assert_age(&spool, 0..=0, "drained empty");
}

#[tokio::test]
async fn a_torn_last_record_is_cut_off_on_open_and_counted() {
    let dir = TempDir::new("torn");
    {
        let spool = Spool::open(dir.config()).unwrap();
        spool.append(b"whole-1".to_vec()).await.unwrap();
        spool.append(b"whole-2".to_vec()).await.unwrap();
    }
    let whole_len = fs::metadata(dir.segment(1)).unwrap().len();
    // A record whose header promises 100 bytes, of which a crash let 10 reach the disk.
    let mut torn = Vec::new();
    segment::encode(1, &[7; 100], &mut torn);
    torn.truncate(HEADER_BYTES as usize + 10);
    fs::OpenOptions::new()
        .append(true)
        .open(dir.segment(1))
        .unwrap()
        .write_all(&torn)
        .unwrap();

    let spool = Spool::open(dir.config()).unwrap();
    let stats = spool.stats();
    assert_eq!((stats.cut, stats.cut_bytes), (1, torn.len() as u64));
    assert_eq!(stats.depth, 2);
    assert_eq!(fs::metadata(dir.segment(1)).unwrap().len(), whole_len);
    spool.append(b"after".to_vec()).await.unwrap();
    assert_eq!(
        drain(&spool, 3).await,
        [b"whole-1".to_vec(), b"whole-2".to_vec(), b"after".to_vec()]
    );
}

#[tokio::test]
async fn a_record_whose_checksum_fails_is_cut_with_what_follows() {
    let dir = TempDir::new("corrupt");
    {
        let spool = Spool::open(dir.config()).unwrap();
        for payload in [&b"first"[..], b"second", b"third"] {
            spool.append(payload.to_vec()).await.unwrap();
        }
    }
    // Flip one payload byte of the second record.
    let mut bytes = fs::read(dir.segment(1)).unwrap();
    let second = (HEADER_BYTES + 5) as usize;
    bytes[second + HEADER_BYTES as usize] ^= 0x20;
    fs::write(dir.segment(1), &bytes).unwrap();

    let spool = Spool::open(dir.config()).unwrap();
    let stats = spool.stats();
    assert_eq!(stats.cut, 1);
    assert_eq!(stats.cut_bytes, bytes.len() as u64 - second as u64);
    assert_eq!(stats.depth, 1);
    assert_eq!(drain(&spool, 1).await, [b"first".to_vec()]);
}

#[tokio::test]
async fn concurrent_appends_each_come_back_once_in_the_order_they_were_flushed() {
    const TASKS: u64 = 32;
    const EACH: u64 = 25;
    let dir = TempDir::new("ordering");
    let spool = Spool::open(dir.config()).unwrap();
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| {
            let spool = spool.clone();
            tokio::spawn(async move {
                for n in 0..EACH {
                    spool
                        .append(format!("{task}:{n}").into_bytes())
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let drained = drain(&spool, (TASKS * EACH) as usize).await;
    let mut last_of_task = vec![None; TASKS as usize];
    for payload in &drained {
        let text = String::from_utf8(payload.clone()).unwrap();
        let (task, n) = text.split_once(':').unwrap();
        let (task, n): (usize, u64) = (task.parse().unwrap(), n.parse().unwrap());
        // Each task appended its records one after another: they come back in that order.
        assert_eq!(last_of_task[task].map_or(0, |last: u64| last + 1), n);
        last_of_task[task] = Some(n);
    }
    assert!(last_of_task.iter().all(|last| *last == Some(EACH - 1)));
    assert_eq!(spool.stats().spooled, TASKS * EACH);
}

#[tokio::test]
async fn past_its_bound_an_append_is_refused_and_counted_until_a_drain_makes_room() {
    let dir = TempDir::new("bounds");
    let record = HEADER_BYTES + 100;
    let config = SpoolConfig {
        max_bytes: 3 * record,
        ..dir.config()
    };
    let spool = Spool::open(config).unwrap();
    for _ in 0..3 {
        spool.append(vec![1; 100]).await.unwrap();
    }
    assert_eq!(spool.append(vec![2; 100]).await, Err(SpoolError::Full));
    assert_eq!(spool.append(vec![2; 1]).await, Err(SpoolError::Full));
    let stats = spool.stats();
    assert_eq!(
        (stats.depth, stats.depth_bytes, stats.full),
        (3, 3 * record, 2)
    );
    drain(&spool, 1).await;
    spool.append(vec![3; 100]).await.unwrap();
    assert_eq!(spool.stats().depth, 3);
}

#[tokio::test]
async fn a_reopened_spool_hands_out_only_what_was_not_drained_and_deletes_drained_segments() {
    let dir = TempDir::new("reopen");
    let config = SpoolConfig {
        segment_bytes: 3 * (HEADER_BYTES + 4),
        ..dir.config()
    };
    {
        let spool = Spool::open(config.clone()).unwrap();
        for n in 0..10u32 {
            spool.append(n.to_le_bytes().to_vec()).await.unwrap();
        }
        assert!(dir.segments().len() >= 3, "{:?}", dir.segments());
        let drained = drain(&spool, 7).await;
        assert_eq!(drained[6], 6u32.to_le_bytes());
        // Taken, not acknowledged: a crash now hands it out again.
        let taken = spool.next().await.unwrap();
        assert_eq!(taken.payload, 7u32.to_le_bytes());
    }
    let before = dir.segments();
    let spool = Spool::open(config).unwrap();
    let stats = spool.stats();
    assert_eq!(
        (stats.depth, stats.depth_bytes),
        (3, 3 * (HEADER_BYTES + 4))
    );
    let rest = drain(&spool, 3).await;
    let rest: Vec<u32> = rest
        .iter()
        .map(|p| u32::from_le_bytes(p[..].try_into().unwrap()))
        .collect();
    assert_eq!(rest, [7, 8, 9]);
    let after = dir.segments();
    assert!(after.len() < before.len(), "{before:?} then {after:?}");
    assert_eq!(spool.stats().depth, 0);
}

#[tokio::test]
async fn an_empty_spool_reopens_empty() {
    let dir = TempDir::new("empty");
    drop(Spool::open(dir.config()).unwrap());
    let spool = Spool::open(dir.config()).unwrap();
    assert_eq!(spool.stats(), Default::default());
    let waited = tokio::time::timeout(std::time::Duration::from_millis(50), spool.next()).await;
    assert!(waited.is_err(), "an empty spool handed something out");
}

/// A record of the reader tests below: a 4-byte payload.
const SMALL_RECORD: u64 = HEADER_BYTES + 4;

/// A spool in `dir` whose segments hold two small records, with `n` appended.
async fn small_records(dir: &TempDir, n: u32) -> Spool {
    let config = SpoolConfig {
        segment_bytes: 2 * SMALL_RECORD,
        ..dir.config()
    };
    let spool = Spool::open(config).unwrap();
    for n in 0..n {
        spool.append(n.to_le_bytes().to_vec()).await.unwrap();
    }
    spool
}

/// Flips one byte of segment `id` at `offset`.
fn damage(dir: &TempDir, id: u64, offset: u64) {
    let path = dir.segment(id);
    let mut bytes = fs::read(&path).unwrap();
    bytes[offset as usize] ^= 0xff;
    fs::write(&path, bytes).unwrap();
}

#[tokio::test]
async fn a_record_damaged_on_disk_after_its_answer_is_an_error_never_skipped() {
    let dir = TempDir::new("damaged");
    let spool = small_records(&dir, 5).await;
    assert!(dir.segments().len() >= 2, "{:?}", dir.segments());
    // The second record of the first segment, which the writer has left: its payload.
    damage(&dir, 1, SMALL_RECORD + HEADER_BYTES);
    assert_eq!(drain(&spool, 1).await, [0u32.to_le_bytes().to_vec()]);
    for _ in 0..2 {
        let error = spool
            .next()
            .await
            .expect_err("a damaged record handed out or skipped");
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidData, "{error}");
    }
    // Nothing after it was lost: its segment is still there.
    assert!(dir.segment(1).exists());
    assert_eq!(spool.stats().depth, 4);
}

#[tokio::test]
async fn a_segment_being_written_that_lost_its_end_is_an_error_and_stays() {
    let dir = TempDir::new("shortened");
    let spool = small_records(&dir, 2).await;
    assert_eq!(dir.segments(), [1]);
    // The segment the writer writes, cut after its first record.
    let file = fs::OpenOptions::new()
        .write(true)
        .open(dir.segment(1))
        .unwrap();
    file.set_len(SMALL_RECORD).unwrap();
    assert_eq!(drain(&spool, 1).await, [0u32.to_le_bytes().to_vec()]);
    let error = spool.next().await.expect_err("a lost record skipped");
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidData, "{error}");
    assert!(
        dir.segment(1).exists(),
        "the segment being written was deleted"
    );
}

#[tokio::test]
async fn the_bytes_left_to_drain_fall_by_each_record_drained() {
    let dir = TempDir::new("depth-bytes");
    let spool = small_records(&dir, 3).await;
    assert_eq!(spool.stats().depth_bytes, 3 * SMALL_RECORD);
    for left in [2, 1, 0] {
        drain(&spool, 1).await;
        let stats = spool.stats();
        assert_eq!(
            (stats.depth, stats.depth_bytes),
            (left, left * SMALL_RECORD)
        );
    }
}

#[tokio::test]
async fn the_largest_payload_a_record_can_hold_comes_back_and_a_larger_one_is_refused() {
    let dir = TempDir::new("largest");
    let spool = Spool::open(dir.config()).unwrap();
    let largest = segment::MAX_PAYLOAD_BYTES as usize;
    let refused = spool.append(vec![0; largest + 1]).await;
    assert!(matches!(refused, Err(SpoolError::TooLarge)), "{refused:?}");
    assert_eq!(spool.stats().depth, 0);
    // The service's largest body, with the delivery's fields around it, fits with room.
    assert!(crate::DEFAULT_BODY_LIMIT + (1 << 20) < largest);
    spool.append(vec![7; largest]).await.unwrap();
    let entry = spool.next().await.unwrap();
    assert!(entry.payload.len() == largest && entry.payload.iter().all(|&b| b == 7));
}
