//! The text of an instant as the schema's defaults write it,
//! `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`: UTC, to the millisecond, such as
//! `2026-12-04T16:40:05.123Z`.
//!
//! A delivery's `received_at` is made here and bound as a parameter instead of left to the
//! column's default: SQLite formats a default through its `printf` (`sqlite3_str_vappendf`),
//! about 2,000 instructions of every delivery's insert, where this is a few dozen
//! (`BENCHMARKS.md`, "the 1-connection figure, instructions cut"). The default stays in the
//! schema for every other row. The tests hold this text to SQLite's own for many instants.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds from 1970 to 0000-01-01T00:00:00.000Z, the first instant of a four-digit
/// year (the proleptic Gregorian calendar, as SQLite's dates).
const FIRST_MS: i64 = -62_167_219_200_000;
/// Milliseconds from 1970 to 9999-12-31T23:59:59.999Z, the last instant of a four-digit year.
const LAST_MS: i64 = 253_402_300_799_999;
const MS_PER_DAY: i64 = 86_400_000;
/// Days from 0000-03-01 to 1970-01-01: the calendar below counts years from March, so that
/// a leap day ends its year.
const DAYS_TO_1970_FROM_MARCH_0000: i64 = 719_468;
/// Days in 400 Gregorian years, after which the calendar repeats.
const DAYS_PER_ERA: i64 = 146_097;

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`, 24 ASCII bytes.
pub(super) struct Timestamp([u8; 24]);

impl Timestamp {
    /// The clock's time now, as SQLite's `'now'` reads the same clock (to the millisecond).
    pub(super) fn now() -> Timestamp {
        let ms = match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(after) => i64::try_from(after.as_millis()).unwrap_or(i64::MAX),
            Err(before) => i64::try_from(before.duration().as_millis()).map_or(i64::MIN, |ms| -ms),
        };
        Timestamp::at_unix_ms(ms)
    }

    /// The instant `ms` milliseconds after 1970-01-01T00:00:00.000Z. An instant outside the
    /// years 0000 to 9999, which SQLite cannot write either, is held to the nearest of them.
    pub(super) fn at_unix_ms(ms: i64) -> Timestamp {
        let ms = ms.clamp(FIRST_MS, LAST_MS);
        let (days, in_day) = (ms.div_euclid(MS_PER_DAY), ms.rem_euclid(MS_PER_DAY));
        let (year, month, day) = civil(days);
        let mut text = *b"0000-00-00T00:00:00.000Z";
        put(&mut text[0..4], year);
        put(&mut text[5..7], month);
        put(&mut text[8..10], day);
        put(&mut text[11..13], in_day / 3_600_000);
        put(&mut text[14..16], in_day / 60_000 % 60);
        put(&mut text[17..19], in_day / 1_000 % 60);
        put(&mut text[20..23], in_day % 1_000);
        Timestamp(text)
    }

    pub(super) fn as_str(&self) -> &str {
        // Only ASCII digits were written over an ASCII template.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

/// The year, month and day of `days` after 1970-01-01, in the proleptic Gregorian calendar
/// (Howard Hinnant's `civil_from_days`): years are counted from March, in eras of 400.
fn civil(days: i64) -> (i64, i64, i64) {
    let from_march_0000 = days + DAYS_TO_1970_FROM_MARCH_0000;
    let era = from_march_0000.div_euclid(DAYS_PER_ERA);
    let day_of_era = from_march_0000 - era * DAYS_PER_ERA;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Writes `value`'s last `digits.len()` decimal digits into `digits`, zero-padded.
fn put(digits: &mut [u8], mut value: i64) {
    for digit in digits.iter_mut().rev() {
        *digit = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

#[cfg(test)]
mod tests;
