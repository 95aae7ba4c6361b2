//! Europe/Paris days and months, daylight saving included, computed from
//! the EU rule rather than a time zone database: summer time (UTC+2) from
//! the last Sunday of March at 01:00 UTC to the last Sunday of October at
//! 01:00 UTC, winter time (UTC+1) otherwise (Directive 2000/84/EC). Both
//! offsets are whole hours, so every UTC hour lies in one Paris day: the
//! report sums by UTC hour in SQL and gives each hour its day here.

use time::{Date, Month, Weekday};

/// Milliseconds in an hour.
pub const HOUR_MS: i64 = 3_600_000;

/// The last Sunday of `month` in `year`, at 01:00 UTC, in ms since the epoch.
fn last_sunday_one_utc(year: i32, month: Month) -> i64 {
    let mut day = Date::from_calendar_date(year, month, month.length(year)).expect("a month end");
    while day.weekday() != Weekday::Sunday {
        day = day.previous_day().expect("a day before");
    }
    day.midnight().assume_utc().unix_timestamp() * 1000 + HOUR_MS
}

/// Paris's offset from UTC at the instant `utc_ms`, in ms: one hour in
/// winter, two in summer.
pub fn offset_ms(utc_ms: i64) -> i64 {
    let year = utc_date(utc_ms).year();
    let summer = last_sunday_one_utc(year, Month::March)..last_sunday_one_utc(year, Month::October);
    if summer.contains(&utc_ms) {
        2 * HOUR_MS
    } else {
        HOUR_MS
    }
}

/// The UTC calendar date of `utc_ms`.
fn utc_date(utc_ms: i64) -> Date {
    time::OffsetDateTime::from_unix_timestamp(utc_ms.div_euclid(1000))
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
        .date()
}

/// The Paris date at the instant `utc_ms`.
pub fn paris_date(utc_ms: i64) -> Date {
    utc_date(utc_ms + offset_ms(utc_ms))
}

/// The instant Paris's day `date` begins, in ms since the epoch. Paris's
/// midnight is 22:00 or 23:00 UTC, never within an hour of a change (at
/// 01:00 UTC), so the offset an hour before the naive instant is the day's.
pub fn day_start_ms(date: Date) -> i64 {
    let naive = date.midnight().assume_utc().unix_timestamp() * 1000;
    naive - offset_ms(naive - HOUR_MS)
}

/// A period's length: a Paris day or a Paris month.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    Day,
    Month,
}

impl By {
    pub fn name(self) -> &'static str {
        match self {
            By::Day => "day",
            By::Month => "month",
        }
    }

    /// The first day of the period that holds `date`.
    pub fn period_of(self, date: Date) -> Date {
        match self {
            By::Day => date,
            By::Month => date.replace_day(1).expect("every month has a first"),
        }
    }

    /// The first day of the period after the one that begins on `first`.
    pub fn next(self, first: Date) -> Date {
        match self {
            By::Day => first.next_day().expect("a day after"),
            By::Month => {
                let (year, month) = match first.month() {
                    Month::December => (first.year() + 1, Month::January),
                    month => (first.year(), month.next()),
                };
                Date::from_calendar_date(year, month, 1).expect("a first of the month")
            }
        }
    }

    /// The period's label: "2026-03-29" for a day, "2026-03" for a month.
    pub fn label(self, first: Date) -> String {
        match self {
            By::Day => format_date(first),
            By::Month => format!("{:04}-{:02}", first.year(), u8::from(first.month())),
        }
    }
}

/// "2026-03-29".
pub fn format_date(date: Date) -> String {
    format!(
        "{:04}-{:02}-{:02}",
        date.year(),
        u8::from(date.month()),
        date.day()
    )
}

/// Reads a calendar date written "YYYY-MM-DD" (a Paris day), or says why not.
pub fn parse_date(text: &str) -> Result<Date, String> {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    let bytes = text.as_bytes();
    let shaped = bytes.len() == 10
        && bytes[4] == b'-'
        && bytes[7] == b'-'
        && bytes
            .iter()
            .enumerate()
            .all(|(i, b)| i == 4 || i == 7 || b.is_ascii_digit());
    if !shaped {
        return Err(format!("not a date written YYYY-MM-DD: {text:?}"));
    }
    Date::parse(text, &format).map_err(|_| format!("no such date: {text:?}"))
}
