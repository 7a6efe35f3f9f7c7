//! The text of an instant as the schema's defaults write it,
//! `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`: UTC, to the millisecond, such as
//! `2026-12-04T16:40:05.123Z`.
//!
//! A delivery's `received_at` is made here and bound as a parameter instead of left to the
//! column's default: SQLite formats a default through its `printf` (`sqlite3_str_vappendf`),
//! about 2,000 instructions of every delivery's insert, where this writes the `time` crate's
//! calendar date into a fixed template (`BENCHMARKS.md`, "the 1-connection figure,
//! instructions cut"). The default stays in the schema for every other row. The tests hold
//! this text to SQLite's own for many instants.

use time::UtcDateTime;

/// The text of SQLite's first instant, to which an earlier one is held: SQLite writes no
/// year before 0000 (`time` reaches back to -9999). `time` reaches no year past 9999 (its
/// `large-dates` feature off, which a test checks), nor does SQLite.
const FIRST: &[u8; 24] = b"0000-01-01T00:00:00.000Z";

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`, 24 ASCII bytes.
pub(super) struct Timestamp([u8; 24]);

impl Timestamp {
    /// The clock's time now, as SQLite's `'now'` reads the same clock (to the millisecond).
    pub(super) fn now() -> Timestamp {
        Timestamp::of(UtcDateTime::now())
    }

    /// The instant `at`, its milliseconds' fraction dropped as SQLite drops it.
    pub(super) fn of(at: UtcDateTime) -> Timestamp {
        let (year, month, day) = at.to_calendar_date();
        if year < 0 {
            return Timestamp(*FIRST);
        }
        let (hour, minute, second, milli) = at.as_hms_milli();
        let mut text = *b"0000-00-00T00:00:00.000Z";
        put(&mut text[0..4], year.unsigned_abs());
        put(&mut text[5..7], u8::from(month).into());
        put(&mut text[8..10], day.into());
        put(&mut text[11..13], hour.into());
        put(&mut text[14..16], minute.into());
        put(&mut text[17..19], second.into());
        put(&mut text[20..23], milli.into());
        Timestamp(text)
    }

    pub(super) fn as_str(&self) -> &str {
        // Only ASCII digits were written over an ASCII template.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

/// Writes `value`'s last `digits.len()` decimal digits into `digits`, zero-padded.
fn put(digits: &mut [u8], mut value: u32) {
    for digit in digits.iter_mut().rev() {
        *digit = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

#[cfg(test)]
mod tests;
