use rusqlite::Connection;

use super::super::{SqliteStore, SqliteSync};
use time::UtcDateTime;

use super::Timestamp;
use crate::ids::{DeliveryId, DigestId, InboxId, InstanceId};
use crate::provider::Provider;
use crate::store::{Claim, Deliveries, InboxRow, Ingested};

/// Milliseconds from 1970 to 0000-01-01T00:00:00.000Z and to 9999-12-31T23:59:59.999Z, the
/// first and the last instants SQLite writes.
const FIRST_MS: i64 = -62_167_219_200_000;
const LAST_MS: i64 = 253_402_300_799_999;
const MS_PER_DAY: i64 = 86_400_000;

/// Our text for the instant `ms` after 1970.
fn ours(ms: i64) -> Timestamp {
    let nanos = i128::from(ms) * 1_000_000;
    Timestamp::of(UtcDateTime::from_unix_timestamp_nanos(nanos).unwrap())
}

/// SQLite's text for the instant `ms` after 1970, in the schema's format. A real number of
/// seconds with `'unixepoch'` is taken to the nearest millisecond by SQLite, so every
/// millisecond reaches it exactly.
fn sqlite_text(connection: &Connection, ms: i64) -> String {
    connection
        .query_row(
            "SELECT strftime('%Y-%m-%dT%H:%M:%fZ', ?1 / 1000.0, 'unixepoch')",
            [ms],
            |row| row.get(0),
        )
        .unwrap()
}

/// Milliseconds from 1970 to the start of `year`-`month`-`day`, as SQLite counts them.
fn day_start(connection: &Connection, year: i64, month: u32, day: u32) -> i64 {
    let date = format!("{year:04}-{month:02}-{day:02}");
    connection
        .query_row("SELECT unixepoch(?1) * 1000", [date], |row| row.get(0))
        .unwrap()
}

/// Leap years and not (1600, 1700, 1900, 2000, 2024, 2100, 2400 ...), every month's end and
/// the next day's start, and the last and first millisecond of every second, minute, hour
/// and day around them; then a spread of instants over ten thousand years.
#[test]
fn the_text_is_sqlites_strftime_for_every_instant_tried() {
    let connection = Connection::open_in_memory().unwrap();
    let mut instants = vec![
        0,
        -1,
        1,
        FIRST_MS,
        LAST_MS,
        951_782_400_000,
        1_733_330_405_123,
    ];
    let centuries = [1600, 1700, 1900, 2000, 2100, 2400].map(|year| year - 4..=year + 4);
    let years = (0..=9999)
        .step_by(97)
        .chain(1968..=2040)
        .chain(centuries.into_iter().flatten());
    for year in years {
        for month in 1..=12 {
            // The first of the month, and around it the last milliseconds of the month before.
            let start = day_start(&connection, year, month, 1);
            for edge in [0, 999, 1_000, 59_999, 60_000, 3_599_999, 3_600_000] {
                instants.push(start + edge);
                instants.push(start - 1 - edge);
            }
            instants.push(start + 28 * MS_PER_DAY + 43_210_987);
        }
    }
    // A fixed linear congruential sequence, the same instants on every run.
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..20_000 {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let span = (LAST_MS - FIRST_MS + 1) as u64;
        instants.push(FIRST_MS + ((state >> 11) % span) as i64);
    }
    let (mut differ, mut compared) = (Vec::new(), 0);
    for &ms in instants
        .iter()
        .filter(|ms| (FIRST_MS..=LAST_MS).contains(*ms))
    {
        let (ours, sqlites) = (ours(ms), sqlite_text(&connection, ms));
        if ours.as_str() != sqlites {
            differ.push((ms, ours.as_str().to_owned(), sqlites));
        }
        compared += 1;
    }
    assert!(compared > 60_000, "{compared} instants compared");
    let first = &differ[..differ.len().min(5)];
    assert!(
        differ.is_empty(),
        "{} differ, the first: {first:?}",
        differ.len()
    );
}

#[test]
fn a_few_instants_read_as_written() {
    let cases = [
        (0, "1970-01-01T00:00:00.000Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (951_782_400_000, "2000-02-29T00:00:00.000Z"),
        (1_733_330_405_123, "2024-12-04T16:40:05.123Z"),
        (FIRST_MS, "0000-01-01T00:00:00.000Z"),
        (FIRST_MS + 160 * MS_PER_DAY + 1, "0000-06-09T00:00:00.001Z"),
        (LAST_MS, "9999-12-31T23:59:59.999Z"),
    ];
    for (ms, text) in cases {
        assert_eq!(ours(ms).as_str(), text, "{ms}");
    }
    // A fraction of a millisecond is dropped, as SQLite's clock drops it.
    let at = UtcDateTime::from_unix_timestamp_nanos(1_999_999).unwrap();
    assert_eq!(Timestamp::of(at).as_str(), "1970-01-01T00:00:00.001Z");
}

/// SQLite writes no year before 0000: an earlier instant is held to its first. `time`
/// reaches no year past 9999, so neither does this text; were its `large-dates` feature
/// turned on by some dependency, this would fail, and such years would need the same.
#[test]
fn an_instant_outside_four_digit_years_is_held_to_the_nearest() {
    assert_eq!(ours(FIRST_MS - 1).as_str(), "0000-01-01T00:00:00.000Z");
    assert_eq!(
        Timestamp::of(UtcDateTime::MIN).as_str(),
        "0000-01-01T00:00:00.000Z"
    );
    assert_eq!(UtcDateTime::MAX.year(), 9999);
}

/// `now` reads the clock SQLite's `'now'` reads: a default written between two of ours lies
/// between them (the text's order is time's).
#[test]
fn now_is_the_clock_the_default_reads() {
    let connection = Connection::open_in_memory().unwrap();
    for _ in 0..100 {
        let before = Timestamp::now();
        let default: String = connection
            .query_row("SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now')", [], |row| {
                row.get(0)
            })
            .unwrap();
        let after = Timestamp::now();
        assert!(
            before.as_str() <= default.as_str(),
            "{} > {default}",
            before.as_str()
        );
        assert!(
            default.as_str() <= after.as_str(),
            "{default} > {}",
            after.as_str()
        );
    }
}

/// A delivery's `received_at`, bound by its insert, is the instant it was stored, in the
/// text the column's default writes for every other row.
#[tokio::test]
async fn a_delivery_is_stored_with_the_instant_it_was_received() {
    let store = SqliteStore::open(":memory:", SqliteSync::Full).unwrap();
    store
        .write(|c| {
            c.execute_batch(
                "INSERT INTO instances (id, key_hash) VALUES ('in', x'00');
                 INSERT INTO digests (id, instance_id, description) VALUES ('dg', 'in', 'd');
                 INSERT INTO inboxes (id, instance_id, digest_id, vcs, name, secret)
                     VALUES ('ib', 'in', 'dg', 'github', 'n', 's');",
            )
        })
        .await
        .unwrap();
    let inbox = InboxRow {
        id: InboxId::stored("ib".into()),
        digest_id: DigestId::stored("dg".into()),
        provider: Provider::Github,
        secret: "s".into(),
        previous: None,
    };
    let claim = Claim::new(DeliveryId::parse("d1").unwrap(), None, &inbox.id);
    let before = Timestamp::now();
    let instance = InstanceId::stored("in".into());
    let stored = store.ingest(instance, inbox, claim, Vec::new()).await;
    let after = Timestamp::now();
    assert_eq!(stored.unwrap(), Ingested::Stored(0));
    let (received_at, default): (String, String) = store
        .read(|c| {
            c.query_row(
                "SELECT received_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now') FROM deliveries",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
        })
        .await
        .unwrap();
    let (before, after) = (before.as_str(), after.as_str());
    assert!(before <= received_at.as_str() && received_at.as_str() <= after);
    assert!(received_at <= default, "{received_at} > {default}");
    assert_eq!(received_at.len(), default.len());
}
