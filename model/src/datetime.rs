//! `Edm.DateTime`: a UTC instant counted in 100 ns ticks.

use chrono::{Datelike, NaiveDate};
use std::fmt;

/// A UTC instant with 100 ns precision, restricted to the Table service's range
/// 1601-01-01T00:00:00Z … 9999-12-31T23:59:59.9999999Z.
///
/// Stored as .NET ticks (100 ns units since 0001-01-01T00:00:00Z), so ordering, hashing and
/// comparison are integer operations and no DateTime is re-parsed during a scan.
///
/// ```
/// use tableq_model::DateTime;
/// let t = DateTime::parse("2013-08-02T17:37:43.9004348Z").unwrap();
/// assert_eq!(t.to_string(), "2013-08-02T17:37:43.9004348Z");
/// // Offsets are normalised to UTC, trailing zeros of the fraction are dropped.
/// assert_eq!(DateTime::parse("2013-08-02T19:37:43.500+02:00").unwrap().to_string(),
///            "2013-08-02T17:37:43.5Z");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DateTime(i64);

/// Why a DateTime text was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DateTimeError {
    /// The text is not of the form `YYYY-MM-DDTHH:MM:SS[.f{1,7}][Z|±hh:mm]` or names a
    /// date or time that does not exist.
    #[error("`{0}` is not a valid DateTime: expected YYYY-MM-DDTHH:MM:SS[.fffffff][Z|±hh:mm]")]
    Invalid(String),
    /// The instant lies outside 1601-01-01T00:00:00Z … 9999-12-31T23:59:59.9999999Z.
    #[error(
        "DateTime `{0}` is out of range: allowed are 1601-01-01T00:00:00Z … 9999-12-31T23:59:59.9999999Z"
    )]
    OutOfRange(String),
}

const TICKS_PER_SECOND: i64 = 10_000_000;
/// Seconds from 0001-01-01 to 1970-01-01.
const UNIX_EPOCH_SECONDS: i64 = 62_135_596_800;

impl DateTime {
    /// The earliest representable instant, 1601-01-01T00:00:00Z.
    pub const MIN: DateTime = DateTime(504_911_232_000_000_000);
    /// The latest representable instant, 9999-12-31T23:59:59.9999999Z.
    pub const MAX: DateTime = DateTime(3_155_378_975_999_999_999);

    /// Builds a DateTime from .NET ticks, or `None` outside the service's range.
    pub const fn from_ticks(ticks: i64) -> Option<DateTime> {
        if ticks < Self::MIN.0 || ticks > Self::MAX.0 {
            None
        } else {
            Some(DateTime(ticks))
        }
    }

    /// The .NET ticks (100 ns units since 0001-01-01T00:00:00Z).
    pub const fn ticks(self) -> i64 {
        self.0
    }

    /// Builds a DateTime from a chrono UTC instant (sub-100 ns digits are truncated),
    /// or `None` outside the service's range.
    pub fn from_chrono(t: chrono::DateTime<chrono::Utc>) -> Option<DateTime> {
        let secs = t.timestamp().checked_add(UNIX_EPOCH_SECONDS)?;
        let ticks = secs
            .checked_mul(TICKS_PER_SECOND)?
            .checked_add(i64::from(t.timestamp_subsec_nanos() / 100))?;
        Self::from_ticks(ticks)
    }

    /// The instant as a chrono UTC value.
    pub fn to_chrono(self) -> chrono::DateTime<chrono::Utc> {
        let secs = self.0.div_euclid(TICKS_PER_SECOND) - UNIX_EPOCH_SECONDS;
        let nanos = (self.0.rem_euclid(TICKS_PER_SECOND) * 100) as u32;
        // In range by construction: 1601..=9999 is well inside chrono's range.
        chrono::DateTime::from_timestamp(secs, nanos).unwrap_or_default()
    }

    /// The current time, truncated to 100 ns.
    pub fn now() -> DateTime {
        Self::from_chrono(chrono::Utc::now()).unwrap_or(Self::MAX)
    }

    /// Parses the strict form `YYYY-MM-DDTHH:MM:SS[.f{1,7}][Z|±hh:mm]` used both by the JSON
    /// wire format and by `datetime'…'` filter literals. Seconds are required; a missing
    /// offset means UTC.
    pub fn parse(text: &str) -> Result<DateTime, DateTimeError> {
        let invalid = || DateTimeError::Invalid(text.to_owned());
        let b = text.as_bytes();
        let digits = |range: std::ops::Range<usize>| -> Option<u32> {
            let s = b.get(range)?;
            s.iter().try_fold(0u32, |acc, &c| {
                c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
            })
        };
        if b.len() < 19
            || b[4] != b'-'
            || b[7] != b'-'
            || b[10] != b'T'
            || b[13] != b':'
            || b[16] != b':'
        {
            return Err(invalid());
        }
        let (year, month, day) = (digits(0..4), digits(5..7), digits(8..10));
        let (hour, minute, second) = (digits(11..13), digits(14..16), digits(17..19));
        let (Some(year), Some(month), Some(day), Some(hour), Some(minute), Some(second)) =
            (year, month, day, hour, minute, second)
        else {
            return Err(invalid());
        };
        let mut pos = 19;
        let mut fraction_ticks: i64 = 0;
        if b.get(pos) == Some(&b'.') {
            pos += 1;
            let start = pos;
            while pos < b.len() && b[pos].is_ascii_digit() {
                pos += 1;
            }
            let n = pos - start;
            if n == 0 || n > 7 {
                return Err(invalid());
            }
            let value = i64::from(digits(start..pos).ok_or_else(invalid)?);
            fraction_ticks = value * 10i64.pow((7 - n) as u32);
        }
        let offset_seconds: i64 = match &b[pos..] {
            [] | [b'Z'] => 0,
            [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
                let hh =
                    digits(pos + 1..pos + 3).filter(|_| h1.is_ascii_digit() && h2.is_ascii_digit());
                let mm =
                    digits(pos + 4..pos + 6).filter(|_| m1.is_ascii_digit() && m2.is_ascii_digit());
                match (hh, mm) {
                    (Some(hh), Some(mm)) if hh <= 23 && mm <= 59 => {
                        let s = i64::from(hh * 3600 + mm * 60);
                        if *sign == b'+' { s } else { -s }
                    }
                    _ => return Err(invalid()),
                }
            }
            _ => return Err(invalid()),
        };
        let date = NaiveDate::from_ymd_opt(year as i32, month, day).ok_or_else(invalid)?;
        if hour > 23 || minute > 59 || second > 59 {
            return Err(invalid());
        }
        let days = i64::from(date.num_days_from_ce() - 1);
        let local_seconds =
            days * 86_400 + i64::from(hour * 3600 + minute * 60 + second) - offset_seconds;
        let ticks = local_seconds * TICKS_PER_SECOND + fraction_ticks;
        DateTime::from_ticks(ticks).ok_or_else(|| DateTimeError::OutOfRange(text.to_owned()))
    }
}

/// The longest text form: `YYYY-MM-DDTHH:MM:SS.fffffffZ`.
pub(crate) const MAX_TEXT_LEN: usize = 28;

impl DateTime {
    /// The text form (see [`Display`](fmt::Display)) in a stack buffer, written digit by
    /// digit: this runs for every Timestamp and ETag the server sends, where `core::fmt`
    /// padding cost several thousand instructions a value.
    pub(crate) fn render(self) -> ([u8; MAX_TEXT_LEN], usize) {
        let seconds = self.0.div_euclid(TICKS_PER_SECOND);
        let (year, month, day) = civil_from_days(seconds.div_euclid(86_400));
        let in_day = seconds.rem_euclid(86_400) as u32;
        let mut buf = *b"0000-00-00T00:00:00.0000000Z";
        let mut put = |at: usize, width: usize, mut value: u32| {
            for i in (at..at + width).rev() {
                buf[i] = b'0' + (value % 10) as u8;
                value /= 10;
            }
        };
        // Years are 1601..=9999 by construction: always four digits.
        put(0, 4, year);
        put(5, 2, month);
        put(8, 2, day);
        put(11, 2, in_day / 3600);
        put(14, 2, in_day / 60 % 60);
        put(17, 2, in_day % 60);
        let frac = self.0.rem_euclid(TICKS_PER_SECOND) as u32;
        let len = if frac == 0 {
            buf[19] = b'Z';
            20
        } else {
            put(20, 7, frac);
            // Trailing zeros of the fraction are dropped.
            let mut end = 27;
            while buf[end - 1] == b'0' {
                end -= 1;
            }
            buf[end] = b'Z';
            end + 1
        };
        (buf, len)
    }
}

/// The proleptic Gregorian (year, month, day) of a day counted from 0001-01-01 (day 0), for
/// days of the DateTime range (years 1601..=9999): whole 400-year eras, then the year of
/// the era counted from March, so that the leap day ends a year (the usual civil-from-days
/// arithmetic, checked against chrono by `render_matches_the_reference`).
fn civil_from_days(days: i64) -> (u32, u32, u32) {
    // Days from 0000-03-01, the start of a 400-year era, to the day.
    let z = days + 306;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    // Months from March: 0 = March … 11 = February.
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = era * 400 + year_of_era + i64::from(month <= 2);
    (year as u32, month as u32, day as u32)
}

impl fmt::Display for DateTime {
    /// `YYYY-MM-DDTHH:MM:SS[.fffffff]Z` with trailing zeros of the fraction dropped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (buf, len) = self.render();
        // ASCII by construction.
        f.write_str(std::str::from_utf8(&buf[..len]).map_err(|_| fmt::Error)?)
    }
}

impl std::str::FromStr for DateTime {
    type Err = DateTimeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DateTime::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Timelike;
    use proptest::prelude::*;

    /// The text form as `core::fmt` writes it: the reference for [`DateTime::render`].
    fn reference_text(t: DateTime) -> String {
        let c = t.to_chrono();
        let mut s = format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            c.year(),
            c.month(),
            c.day(),
            c.hour(),
            c.minute(),
            c.second()
        );
        let mut frac = t.0.rem_euclid(TICKS_PER_SECOND);
        if frac != 0 {
            let mut width = 7;
            while frac % 10 == 0 {
                frac /= 10;
                width -= 1;
            }
            s.push_str(&format!(".{frac:0width$}"));
        }
        s.push('Z');
        s
    }

    proptest! {
        #[test]
        fn render_matches_the_reference(ticks in DateTime::MIN.0..=DateTime::MAX.0) {
            let t = DateTime(ticks);
            let text = t.to_string();
            prop_assert_eq!(&text, &reference_text(t));
            prop_assert_eq!(DateTime::parse(&text), Ok(t));
        }

        #[test]
        fn render_keeps_significant_fraction_digits(
            secs in 0i64..1_000_000,
            frac in prop::sample::select(vec![0i64, 1, 10, 100, 1_000, 10_000, 100_000,
                                              1_000_000, 1_234_500, 9_999_999]),
        ) {
            let t = DateTime(DateTime::MIN.0 + secs * TICKS_PER_SECOND + frac);
            prop_assert_eq!(t.to_string(), reference_text(t));
        }
    }

    #[test]
    fn render_examples() {
        let text = |s: &str| DateTime::parse(s).unwrap().to_string();
        assert_eq!(
            text("2013-08-02T17:37:43.9004348Z"),
            "2013-08-02T17:37:43.9004348Z"
        );
        assert_eq!(
            text("2013-08-02T17:37:43.5000000Z"),
            "2013-08-02T17:37:43.5Z"
        );
        assert_eq!(
            text("2013-08-02T17:37:43.0000001Z"),
            "2013-08-02T17:37:43.0000001Z"
        );
        assert_eq!(text("2000-02-29T00:00:00Z"), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn bounds() {
        assert_eq!(DateTime::parse("1601-01-01T00:00:00Z"), Ok(DateTime::MIN));
        assert_eq!(
            DateTime::parse("9999-12-31T23:59:59.9999999Z"),
            Ok(DateTime::MAX)
        );
        assert_eq!(DateTime::MIN.to_string(), "1601-01-01T00:00:00Z");
        assert_eq!(DateTime::MAX.to_string(), "9999-12-31T23:59:59.9999999Z");
        assert!(matches!(
            DateTime::parse("1600-12-31T23:59:59.9999999Z"),
            Err(DateTimeError::OutOfRange(_))
        ));
        // In range locally but out of range once the offset is applied.
        assert!(matches!(
            DateTime::parse("1601-01-01T00:30:00+01:00"),
            Err(DateTimeError::OutOfRange(_))
        ));
        assert!(matches!(
            DateTime::parse("9999-12-31T23:30:00-01:00"),
            Err(DateTimeError::OutOfRange(_))
        ));
    }

    #[test]
    fn forms() {
        let ok = [
            ("2008-07-10T00:00:00Z", "2008-07-10T00:00:00Z"),
            ("2008-07-10T00:00:00", "2008-07-10T00:00:00Z"),
            ("2008-07-10T00:00:00.1Z", "2008-07-10T00:00:00.1Z"),
            ("2008-07-10T00:00:00.1000000Z", "2008-07-10T00:00:00.1Z"),
            (
                "2008-07-10T00:00:00.0000001Z",
                "2008-07-10T00:00:00.0000001Z",
            ),
            ("2008-07-10T00:00:00-05:30", "2008-07-10T05:30:00Z"),
            ("2000-02-29T12:00:00Z", "2000-02-29T12:00:00Z"),
        ];
        for (input, out) in ok {
            assert_eq!(DateTime::parse(input).unwrap().to_string(), out, "{input}");
        }
        let bad = [
            "",
            "2008-07-10",
            "2008-07-10T00:00Z",
            "2008-07-10T00:00:00.Z",
            "2008-07-10T00:00:00.12345678Z",
            "2008-07-10 00:00:00Z",
            "2008-7-10T00:00:00Z",
            "2008-13-10T00:00:00Z",
            "2001-02-29T00:00:00Z",
            "2008-07-10T24:00:00Z",
            "2008-07-10T00:60:00Z",
            "2008-07-10T00:00:60Z",
            "2008-07-10T00:00:00z",
            "2008-07-10T00:00:00+0100",
            "2008-07-10T00:00:00+24:00",
            "2008-07-10T00:00:00ZZ",
            "+008-07-10T00:00:00Z",
            "２008-07-10T00:00:00Z",
        ];
        for input in bad {
            assert!(
                matches!(DateTime::parse(input), Err(DateTimeError::Invalid(_))),
                "{input:?} should be invalid"
            );
        }
    }

    #[test]
    fn chrono_round_trip() {
        let t = DateTime::parse("2021-06-09T01:17:08.3795894Z").unwrap();
        assert_eq!(DateTime::from_chrono(t.to_chrono()), Some(t));
        assert!(DateTime::from_ticks(DateTime::MIN.ticks() - 1).is_none());
        assert!(DateTime::now() > DateTime::parse("2020-01-01T00:00:00Z").unwrap());
    }
}
