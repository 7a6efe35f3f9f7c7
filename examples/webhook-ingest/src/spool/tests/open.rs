//! Where a reopened spool starts when its ack and its segments disagree, and what it says of
//! the records it found.

use std::fs;

use super::super::disk::{Disk, OsDisk};
use super::super::segment::{self, Position};
use super::super::Spool;
use super::{drain, TempDir};
// The service's integration tests' log capture, the same code.
#[path = "../../../tests/common/logs.rs"]
mod logs;
use logs::Logs;

/// Writes the ack file of `dir` by hand, naming `at`.
fn write_ack(dir: &TempDir, at: Position) {
    fs::create_dir_all(&dir.0).unwrap();
    let file = OsDisk.open(&dir.0.join(segment::ACK_FILE)).unwrap();
    segment::write_ack(&OsDisk, &file, &dir.0, at).unwrap();
}

/// One whole record of `payload`.
fn record(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    segment::encode(1, payload, &mut out);
    out
}

#[tokio::test]
async fn an_ack_naming_a_segment_that_is_gone_starts_at_the_oldest_segment_there() {
    let dir = TempDir::new("ack-gone");
    write_ack(
        &dir,
        Position {
            segment: 1,
            offset: 5,
        },
    );
    fs::write(dir.segment(2), record(b"two")).unwrap();
    fs::write(dir.segment(3), record(b"three")).unwrap();
    let spool = Spool::open(dir.config()).unwrap();
    assert_eq!(spool.stats().depth, 2);
    assert_eq!(drain(&spool, 2).await, [b"two".to_vec(), b"three".to_vec()]);
}

#[tokio::test]
async fn a_spool_whose_segments_are_all_gone_numbers_on_from_its_ack() {
    // Were the numbering to start again at 1, an ack left at segment 7 would one day name a
    // new segment 7 before anything was drained, and segments 1 to 6 would be taken for
    // drained and deleted at the next start.
    let dir = TempDir::new("ack-alone");
    write_ack(
        &dir,
        Position {
            segment: 7,
            offset: 30,
        },
    );
    let spool = Spool::open(dir.config()).unwrap();
    spool.append(b"next".to_vec()).await.unwrap();
    assert_eq!(dir.segments(), [7]);
    assert_eq!(drain(&spool, 1).await, [b"next".to_vec()]);
}

/// What opening the spool in `dir` logs.
fn logged_at_open(dir: &TempDir) -> Logs {
    let (logs, capturing) = Logs::capture();
    drop(Spool::open(dir.config()).unwrap());
    drop(capturing);
    logs
}

#[test]
fn a_reopened_spool_says_how_many_records_it_holds_from_before_and_nothing_when_empty() {
    const FOUND: &str = "the spool holds records from before this start";
    let dir = TempDir::new("says");
    write_ack(
        &dir,
        Position {
            segment: 1,
            offset: 0,
        },
    );
    fs::write(dir.segment(1), [record(b"a"), record(b"b")].concat()).unwrap();
    let said = logged_at_open(&dir);
    assert_eq!(said.lines_with(FOUND), 1, "{}", said.text());
    assert_eq!(said.lines_with("records=2"), 1, "{}", said.text());
    let empty = TempDir::new("says-nothing");
    let said = logged_at_open(&empty);
    assert_eq!(said.lines_with(FOUND), 0, "{}", said.text());
}
