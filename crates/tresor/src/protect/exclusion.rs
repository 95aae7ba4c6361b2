//! Exclusions: how long one lasts (the player's periods, the operator's
//! days), and excluding a person — the account asked for and every other
//! account of the same person (accounts opened before one account per
//! person held), each ending its sessions, in one writer job.

use super::stored::{load, save};
use crate::clock::rfc3339;
use crate::error::Error;
use crate::model::Player;
use crate::store::{Conn, persons, sql};
use crate::trail::{self, Actor};
use serde_json::json;

use super::MAX_EXCLUSION_DAYS;

/// How long an exclusion lasts: the player's periods, or the operator's days.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExclusionLength {
    Days(i64),
    Months(i32),
}

impl ExclusionLength {
    /// A player's period: `7d`, `1m`, `3m`, `6m` or `1y`.
    pub fn parse_period(text: &str) -> Result<Self, Error> {
        match text {
            "7d" => Ok(ExclusionLength::Days(7)),
            "1m" => Ok(ExclusionLength::Months(1)),
            "3m" => Ok(ExclusionLength::Months(3)),
            "6m" => Ok(ExclusionLength::Months(6)),
            "1y" => Ok(ExclusionLength::Months(12)),
            _ => Err(Error::Validation(
                "period: one of 7d, 1m, 3m, 6m, 1y".to_owned(),
            )),
        }
    }

    /// An operator's number of days.
    pub fn days(days: i64) -> Result<Self, Error> {
        if (1..=MAX_EXCLUSION_DAYS).contains(&days) {
            Ok(ExclusionLength::Days(days))
        } else {
            Err(Error::Validation(format!(
                "days: between 1 and {MAX_EXCLUSION_DAYS}"
            )))
        }
    }

    /// When an exclusion starting at `from_ms` ends. Months are calendar
    /// months (UTC), the 31st becoming the last day of a shorter month.
    pub fn end_ms(self, from_ms: i64) -> i64 {
        match self {
            ExclusionLength::Days(days) => from_ms + days * 24 * 3600 * 1000,
            ExclusionLength::Months(months) => add_months(from_ms, months),
        }
    }

    /// The length as the trail records it.
    pub fn label(self) -> String {
        match self {
            ExclusionLength::Days(days) => format!("{days}d"),
            ExclusionLength::Months(12) => "1y".to_owned(),
            ExclusionLength::Months(months) => format!("{months}m"),
        }
    }
}

fn add_months(from_ms: i64, months: i32) -> i64 {
    let start = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(from_ms) * 1_000_000)
        .expect("a time within the calendar");
    let index = start.year() * 12 + i32::from(u8::from(start.month())) - 1 + months;
    let (year, month) = (index.div_euclid(12), (index.rem_euclid(12) + 1) as u8);
    let month = time::Month::try_from(month).expect("a month from 1 to 12");
    let day = start.day().min(month.length(year));
    let date = time::Date::from_calendar_date(year, month, day).expect("a valid date");
    (start.replace_date(date).unix_timestamp_nanos() / 1_000_000) as i64
}

/// Excludes a player until `until_ms`: every session of the player ends, and
/// play, deposits and login are refused until then. An exclusion can be
/// lengthened, never shortened. Runs inside a writer job.
pub(crate) async fn exclude(
    conn: &mut Conn,
    player: &Player,
    by: &Actor,
    length: ExclusionLength,
    now_ms: i64,
) -> Result<i64, Error> {
    let until_ms = length.end_ms(now_ms);
    let mut stored = load(conn, player.id).await?;
    if let Some(current) = stored.excluded_until_ms.filter(|&t| t > until_ms) {
        return Err(Error::ExclusionShorter {
            until_ms: current,
            asked_until_ms: until_ms,
        });
    }
    stored.excluded_until_ms = Some(until_ms);
    save(conn, player.id, &stored, now_ms).await?;
    let mut ended = end_sessions(conn, player.id, now_ms).await?;
    // The exclusion is the person's: their other accounts (opened before
    // one account per person held) are excluded as long, never shorter.
    let mut also = Vec::new();
    for other in persons::other_accounts(conn, player.id).await? {
        let mut theirs = load(conn, other.id).await?;
        if theirs.excluded_until_ms.is_none_or(|t| t < until_ms) {
            theirs.excluded_until_ms = Some(until_ms);
            save(conn, other.id, &theirs, now_ms).await?;
        }
        ended += end_sessions(conn, other.id, now_ms).await?;
        also.push(other.id);
    }
    trail::append(
        conn,
        now_ms,
        by,
        "exclude",
        json!({"player_id": player.id, "period": length.label()}),
        json!({"excluded_until": rfc3339(until_ms), "sessions_ended": ended,
               "also_excluded_player_ids": also}),
    )
    .await?;
    Ok(until_ms)
}

async fn end_sessions(conn: &mut Conn, player_id: i64, now_ms: i64) -> Result<u64, Error> {
    sql::query("UPDATE sessions SET ended_at_ms = $1 WHERE player_id = $2 AND ended_at_ms IS NULL")
        .bind(now_ms)
        .bind(player_id)
        .execute(&mut *conn)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY_MS: i64 = 24 * 3600 * 1000;

    #[test]
    fn a_month_is_a_calendar_month_and_the_31st_becomes_the_last_day() {
        let jan_31 = time::macros::datetime!(2026-01-31 10:00 UTC).unix_timestamp() * 1000;
        assert_eq!(
            rfc3339(ExclusionLength::Months(1).end_ms(jan_31)),
            "2026-02-28T10:00:00.000Z"
        );
        assert_eq!(
            rfc3339(ExclusionLength::Months(12).end_ms(jan_31)),
            "2027-01-31T10:00:00.000Z"
        );
        assert_eq!(ExclusionLength::Days(7).end_ms(0), 7 * DAY_MS);
    }

    #[test]
    fn periods_parse_and_others_are_refused() {
        for (text, label) in [
            ("7d", "7d"),
            ("1m", "1m"),
            ("3m", "3m"),
            ("6m", "6m"),
            ("1y", "1y"),
        ] {
            assert_eq!(ExclusionLength::parse_period(text).unwrap().label(), label);
        }
        assert!(ExclusionLength::parse_period("2d").is_err());
        assert!(ExclusionLength::days(0).is_err());
    }
}
