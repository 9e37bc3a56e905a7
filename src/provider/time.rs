//! Provider times -> `YYYY-MM-DDTHH:MM:SS.sssZ` (UTC, always three fraction
//! digits), for the normalizer.
//!
//! Accepted inputs: epoch milliseconds as a JSON number (integer, or a finite
//! float truncated toward zero) or as a numeric string, and date-time strings in
//! RFC 3339 or the common ISO 8601 shapes (`T` or space separator, optional
//! fraction, `Z`, `±HH:MM` or `±HHMM` offset; no offset means UTC; a bare
//! `YYYY-MM-DD` means midnight UTC). Epoch values are never guessed to be
//! seconds. Anything else, and any instant outside the years 0000..=9999 (which
//! the fixed-width format cannot express), is unparsable: `None`, and the
//! caller omits the field. Sub-millisecond precision is truncated (floored).

use chrono::{DateTime, NaiveDate, NaiveDateTime};
use serde_json::Value;

/// Formats epoch milliseconds as `YYYY-MM-DDTHH:MM:SS.sssZ`.
///
/// Returns `None` when the instant falls outside the years 0000..=9999.
pub fn format_epoch_ms(ms: i64) -> Option<String> {
    EpochText::of_ms(ms).map(|text| text.as_str().to_owned())
}

/// A time as the document writes it, `YYYY-MM-DDTHH:MM:SS.sssZ`, held in
/// its 24 bytes: a writer copies it out without a `String` for each time
/// (a board's elements have up to four each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochText([u8; 24]);

impl EpochText {
    /// Epoch milliseconds as text; `None` outside the years 0000..=9999.
    pub fn of_ms(ms: i64) -> Option<EpochText> {
        // Arithmetic rather than chrono: the day from the proleptic
        // Gregorian calendar's 400-year cycles ([`civil_from_days`]), the
        // time of day from the remainder, written two digits at a time
        // ([`two_digits`]). The tests hold it to chrono's formatting across
        // the whole range.
        const MS_PER_DAY: i64 = 86_400_000;
        let (year, month, day) = civil_from_days(ms.div_euclid(MS_PER_DAY));
        let year = u32::try_from(year).ok().filter(|y| *y <= 9999)?;
        // Below a day's milliseconds, so it fits a u32.
        let of_day = ms.rem_euclid(MS_PER_DAY) as u32;
        let mut out = *b"0000-00-00T00:00:00.000Z";
        let milli = of_day % 1000;
        let fields = [
            (0, year / 100),
            (2, year % 100),
            (5, month),
            (8, day),
            (11, of_day / 3_600_000),
            (14, of_day / 60_000 % 60),
            (17, of_day / 1000 % 60),
            (21, milli % 100),
        ];
        for (at, value) in fields {
            two_digits(&mut out, at, value);
        }
        // Below 10: a millisecond count is below 1000.
        out[20] = b'0' + (milli / 100) as u8;
        Some(EpochText(out))
    }

    /// The text's bytes: ASCII digits and separators only, so a writer
    /// puts them between quotes as they are.
    pub fn bytes(&self) -> &[u8; 24] {
        &self.0
    }

    /// The text: ASCII digits and separators only.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

/// Writes `value % 100` as two digits at `at` (at most 22) of `out`, from a
/// table of the hundred pairs: one lookup where digit-by-digit writing
/// took two divisions.
fn two_digits(out: &mut [u8; 24], at: usize, value: u32) {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839\
        4041424344454647484950515253545556575859\
        6061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899";
    let pair = (value % 100) as usize * 2;
    if let (Some(slot), Some(digits)) = (out.get_mut(at..at + 2), PAIRS.get(pair..pair + 2)) {
        slot.copy_from_slice(digits);
    }
}

/// The (year, month, day) of the proleptic Gregorian calendar that is
/// `days` days after 1970-01-01: Howard Hinnant's `civil_from_days`, with
/// years counted from March so that the leap day ends a year. `days` is a
/// whole `i64` of milliseconds in days (within about 300 million years of
/// 1970), far from where any step here could overflow.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    const DAYS_PER_ERA: i64 = 146_097;
    // From 0000-03-01, the start of an era.
    let z = days + 719_468;
    let era = z.div_euclid(DAYS_PER_ERA);
    let day_of_era = z.rem_euclid(DAYS_PER_ERA); // [0, 146096]
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153; // [0, 11]
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Normalizes a raw provider time (see the module docs for what is accepted).
///
/// Returns `None` for anything unparsable, which the caller omits.
pub fn normalize_time(value: &Value) -> Option<String> {
    time_ms(value).and_then(format_epoch_ms)
}

/// The epoch milliseconds a raw provider time stands for, before the range
/// check of [`EpochText::of_ms`]; `None` for anything unparsable.
pub fn time_ms(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => match n.as_i64() {
            Some(ms) => Some(ms),
            None => float_ms(n.as_f64()?),
        },
        Value::String(s) => parse_time_str(s),
        Value::Null | Value::Bool(_) | Value::Array(_) | Value::Object(_) => None,
    }
}

/// A finite float of milliseconds, truncated toward zero.
fn float_ms(ms: f64) -> Option<i64> {
    // i64::MAX as f64 rounds up to 2^63, hence the strict upper bound.
    if !ms.is_finite() || ms < i64::MIN as f64 || ms >= i64::MAX as f64 {
        return None;
    }
    Some(ms.trunc() as i64)
}

fn parse_time_str(raw: &str) -> Option<i64> {
    let s = raw.trim();
    if s.is_empty() {
        return None;
    }
    if is_numeric(s) {
        return match s.parse::<i64>() {
            Ok(ms) => Some(ms),
            Err(_) => float_ms(s.parse::<f64>().ok()?),
        };
    }
    parse_date_time(s)
}

/// `-?digits(.digits)?`: what a numeric epoch string looks like. Stricter than
/// `f64::from_str`, which would also take `inf`, `NaN` or `1e3`.
fn is_numeric(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let (int, frac) = match digits.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (digits, None),
    };
    !int.is_empty()
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.is_none_or(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
}

/// Date-time strings to epoch milliseconds, trying RFC 3339 first.
fn parse_date_time(s: &str) -> Option<i64> {
    if let Ok(at) = DateTime::parse_from_rfc3339(s) {
        return Some(at.timestamp_millis());
    }
    // Offsets written `+0100`, or with a space separator.
    for format in ["%Y-%m-%dT%H:%M:%S%.f%z", "%Y-%m-%d %H:%M:%S%.f%z"] {
        if let Ok(at) = DateTime::parse_from_str(s, format) {
            return Some(at.timestamp_millis());
        }
    }
    // No offset: UTC. A trailing `Z` after a space-separated time is accepted too.
    let naive = s.strip_suffix(['Z', 'z']).unwrap_or(s);
    for format in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M",
    ] {
        if let Ok(at) = NaiveDateTime::parse_from_str(naive, format) {
            return Some(at.and_utc().timestamp_millis());
        }
    }
    let date = NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()?;
    Some(date.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Datelike, Utc};
    use serde_json::json;

    #[test]
    fn epoch_ms_is_what_chrono_formats() {
        // Years 0000 to 9999 in uneven steps, every digit position exercised.
        let (first, last) = (-62_167_219_200_000_i64, 253_402_300_799_999_i64);
        let mut ms = first;
        while ms <= last {
            let at = DateTime::<Utc>::from_timestamp_millis(ms).unwrap();
            let want = at.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
            assert_eq!(format_epoch_ms(ms).as_deref(), Some(want.as_str()), "{ms}");
            ms += 123_456_789_011;
        }
        assert!(format_epoch_ms(first).is_some() && format_epoch_ms(last).is_some());
        assert_eq!(format_epoch_ms(first - 1), None);
        assert_eq!(format_epoch_ms(last + 1), None);
    }

    /// Every day of the years 0000 to 9999 and one beyond each end, at a
    /// time of day that moves from day to day, against chrono.
    #[test]
    fn every_day_is_what_chrono_formats() {
        const DAY: i64 = 86_400_000;
        let (first, last) = (
            -62_167_219_200_000_i64 / DAY - 1,
            253_402_300_799_999_i64 / DAY + 1,
        );
        let by_chrono = |ms: i64| {
            DateTime::<Utc>::from_timestamp_millis(ms)
                .filter(|at| (0..=9999).contains(&at.year()))
                .map(|at| at.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
        };
        let days = (first..=last).map(|day| day * DAY + (day * 7_919_993).rem_euclid(DAY));
        for ms in days.chain([i64::MIN, i64::MIN + 1, -1, i64::MAX - 1, i64::MAX]) {
            assert_eq!(format_epoch_ms(ms), by_chrono(ms), "{ms}");
        }
    }

    #[test]
    fn epoch_ms_table() {
        let cases: &[(i64, Option<&str>)] = &[
            (0, Some("1970-01-01T00:00:00.000Z")),
            (1, Some("1970-01-01T00:00:00.001Z")),
            (-1, Some("1969-12-31T23:59:59.999Z")),
            (1_700_000_000_123, Some("2023-11-14T22:13:20.123Z")),
            (253_402_300_799_999, Some("9999-12-31T23:59:59.999Z")),
            (253_402_300_800_000, None),
            (-62_167_219_200_000, Some("0000-01-01T00:00:00.000Z")),
            (-62_167_219_200_001, None),
            (i64::MAX, None),
            (i64::MIN, None),
        ];
        for (ms, want) in cases {
            assert_eq!(format_epoch_ms(*ms).as_deref(), *want, "{ms}");
        }
    }

    #[test]
    fn normalize_time_table() {
        let cases: &[(Value, Option<&str>)] = &[
            (
                json!(1_700_000_000_123_i64),
                Some("2023-11-14T22:13:20.123Z"),
            ),
            (json!(1_700_000_000_123.9), Some("2023-11-14T22:13:20.123Z")),
            (json!(-1.5), Some("1969-12-31T23:59:59.999Z")),
            (json!("1700000000123"), Some("2023-11-14T22:13:20.123Z")),
            (json!(" 1700000000123 "), Some("2023-11-14T22:13:20.123Z")),
            (json!("1700000000123.5"), Some("2023-11-14T22:13:20.123Z")),
            (json!("-1"), Some("1969-12-31T23:59:59.999Z")),
            (
                json!("2024-03-01T10:20:30Z"),
                Some("2024-03-01T10:20:30.000Z"),
            ),
            (
                json!("2024-03-01T10:20:30.5Z"),
                Some("2024-03-01T10:20:30.500Z"),
            ),
            (
                json!("2024-03-01T10:20:30.123456789Z"),
                Some("2024-03-01T10:20:30.123Z"),
            ),
            (
                json!("2024-03-01T10:20:30+02:00"),
                Some("2024-03-01T08:20:30.000Z"),
            ),
            (
                json!("2024-03-01T10:20:30-0130"),
                Some("2024-03-01T11:50:30.000Z"),
            ),
            (
                json!("2024-03-01 10:20:30Z"),
                Some("2024-03-01T10:20:30.000Z"),
            ),
            (
                json!("2024-03-01 10:20:30+00:00"),
                Some("2024-03-01T10:20:30.000Z"),
            ),
            (
                json!("2024-03-01T10:20:30"),
                Some("2024-03-01T10:20:30.000Z"),
            ),
            (json!("2024-03-01T10:20"), Some("2024-03-01T10:20:00.000Z")),
            (json!("2024-03-01"), Some("2024-03-01T00:00:00.000Z")),
            // A leap second counts into the next second.
            (
                json!("2016-12-31T23:59:60Z"),
                Some("2017-01-01T00:00:00.000Z"),
            ),
            (json!("2024-02-30T00:00:00Z"), None),
            (json!("yesterday"), None),
            (json!(""), None),
            (json!("inf"), None),
            (json!("NaN"), None),
            (json!("1e3"), None),
            (json!("99999999999999999999"), None),
            (json!(1e300), None),
            (json!(18_446_744_073_709_551_615_u64), None),
            (json!(null), None),
            (json!(true), None),
            (json!([1]), None),
            (json!({"t": 1}), None),
        ];
        for (value, want) in cases {
            assert_eq!(normalize_time(value).as_deref(), *want, "{value}");
        }
    }
}
