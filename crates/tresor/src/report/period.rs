//! The operator's figures by Paris day or month (`tresor report --by`, the
//! console's « Rapports »): per period and per game, units sold, stakes,
//! prizes won and the gross gaming yield (stakes − prizes); per period the
//! deposits, the withdrawals paid, and at its end what the players' accounts
//! hold, the withdrawals asked and not yet settled, and the reserve of
//! closed accounts.
//!
//! Two reads, each grouped by UTC hour in SQL (both Paris offsets are whole
//! hours, so an hour lies in one Paris day: `paris`): the plays (units,
//! stakes and prizes by block, hence by game) and the ledger's transfers
//! (by kind and side). Each comes from the rollup (`rollup`: the sums of
//! the rows already read, kept) and the rows written since, so a report
//! over millions of plays reads only the new ones. The money comes from the ledger; before it
//! is shown the report is reconciled (`check`): each period's stakes from
//! the plays equal its stake transfers, the periods add up to totals summed
//! apart, each period opens where the one before closed, and what the last
//! closes at, with what moved since, is what the accounts hold now.
//! A report that does not reconcile is refused, naming the period.

use super::GameName;
use super::paris::{self, By, HOUR_MS};
use crate::error::Error;
use serde::Serialize;
use sqlx::AnyPool;
use std::collections::BTreeMap;
use std::fmt;
use time::Date;

mod check;
mod read;
mod rollup;
mod text;

pub use rollup::{Marks, extend_by, keep_extended};
pub use text::{csv, table};

/// The figures by period.
#[derive(Debug, Clone, Serialize)]
pub struct PeriodReport {
    /// "day" or "month".
    pub by: &'static str,
    pub time_zone: &'static str,
    /// The first and last Paris day the report covers.
    pub from: String,
    pub to: String,
    /// Every game sold in the range, in the catalogue's order of emissions.
    pub games: Vec<GameName>,
    pub periods: Vec<Period>,
    pub totals: Totals,
}

/// One period: its games' sales and its money.
#[derive(Debug, Clone, Serialize)]
pub struct Period {
    /// "2026-03-29" or "2026-03".
    pub period: String,
    /// Where it begins and ends (excluded), in UTC.
    pub start_utc: String,
    pub end_utc: String,
    #[serde(skip)]
    pub start_ms: i64,
    #[serde(skip)]
    pub end_ms: i64,
    pub sales: Sales,
    pub games: Vec<GameSales>,
    pub money: Money,
}

/// Units sold, stakes, prizes won (the outcomes of the units sold) and
/// the gross gaming yield.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Sales {
    pub units: i64,
    pub stakes_cents: i64,
    pub prizes_cents: i64,
    pub gross_gaming_yield_cents: i64,
}

impl Sales {
    fn add(&mut self, units: i64, stakes: i64, prizes: i64) {
        self.units += units;
        self.stakes_cents += stakes;
        self.prizes_cents += prizes;
        self.gross_gaming_yield_cents = self.stakes_cents - self.prizes_cents;
    }

    fn add_sales(&mut self, other: &Sales) {
        self.add(other.units, other.stakes_cents, other.prizes_cents);
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct GameSales {
    pub game: String,
    #[serde(flatten)]
    pub sales: Sales,
}

/// A period's money, from the ledger.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Money {
    /// Deposits and operator credits into players' accounts.
    pub deposits_cents: i64,
    /// Withdrawals paid out.
    pub withdrawals_paid_cents: i64,
    /// Prizes credited to players' accounts.
    pub prizes_credited_cents: i64,
    /// What the players' accounts held at the start and hold at the end.
    pub opening_player_balances_cents: i64,
    pub player_balances_cents: i64,
    /// Withdrawals asked and not yet paid, rejected or cancelled, at the end.
    pub withdrawals_pending_cents: i64,
    /// The reserve of closed accounts at the start and at the end.
    pub opening_reserves_cents: i64,
    pub reserves_cents: i64,
}

/// The whole range: the sums of the periods, each figure summed apart.
#[derive(Debug, Clone, Serialize)]
pub struct Totals {
    pub sales: Sales,
    pub games: Vec<GameSales>,
    pub money: Money,
}

/// Why a report was not built.
#[derive(Debug)]
pub enum ReportError {
    Store(Error),
    /// The figures do not reconcile in `period` ("total" for the range).
    Unreconciled {
        period: String,
        what: String,
    },
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReportError::Store(error) => write!(f, "{error}"),
            ReportError::Unreconciled { period, what } => write!(
                f,
                "the report does not reconcile with the ledger in period {period}: {what}"
            ),
        }
    }
}

impl std::error::Error for ReportError {}

impl From<Error> for ReportError {
    fn from(error: Error) -> Self {
        ReportError::Store(error)
    }
}

impl From<sqlx::Error> for ReportError {
    fn from(error: sqlx::Error) -> Self {
        ReportError::Store(error.into())
    }
}

/// What a report is asked for: periods of `by` from the Paris day `from` to
/// the Paris day `to`, both included; without them, from the first day
/// anything was sold or moved to the last.
#[derive(Debug, Clone, Copy)]
pub struct Ask {
    pub by: By,
    pub from: Option<Date>,
    pub to: Option<Date>,
    /// Read and extend the rollup of the rows already read (`rollup`);
    /// `false` reads every row of the range live and writes nothing.
    pub rollup: bool,
}

/// Builds and reconciles the report.
pub async fn build(pool: &AnyPool, ask: Ask) -> Result<PeriodReport, ReportError> {
    let marks = match ask.rollup {
        true => {
            let now = crate::clock::Clock::now_ms(&crate::clock::SystemClock);
            Some(rollup::extend(pool, now).await?)
        }
        false => None,
    };
    let (from, to) = match (ask.from, ask.to) {
        (Some(from), Some(to)) => (from, to),
        (from, to) => {
            let (first, last) = read::first_and_last_ms(pool, marks).await?;
            (
                from.unwrap_or(paris::paris_date(first)),
                to.unwrap_or(paris::paris_date(last)),
            )
        }
    };
    if from > to {
        return Err(ReportError::Store(Error::Validation(format!(
            "--from {} is after --to {}",
            paris::format_date(from),
            paris::format_date(to)
        ))));
    }
    let range = paris::day_start_ms(from)..paris::day_start_ms(to.next_day().unwrap_or(to));
    let games = read::games(pool).await?;
    let plays = read::plays(pool, &range, marks).await?;
    let transfers = read::transfers(pool, &range, marks).await?;
    let report = assemble(ask.by, from, to, &games, &plays, &transfers);
    check::reconcile(pool, &report, &range, marks, &plays, &transfers).await?;
    Ok(report)
}

/// The periods of `by` that meet the days `from`..=`to`, each as its first
/// day and its bounds in ms (clipped to the range).
fn periods(by: By, from: Date, to: Date) -> Vec<(Date, i64, i64)> {
    let end_ms = paris::day_start_ms(to.next_day().unwrap_or(to));
    let mut out = Vec::new();
    let mut first = by.period_of(from);
    loop {
        let start = paris::day_start_ms(first.max(from));
        if start >= end_ms {
            break;
        }
        let next = by.next(first);
        out.push((first, start, paris::day_start_ms(next).min(end_ms)));
        first = next;
    }
    out
}

/// Lays the hourly sums out in periods, each with its games and money.
fn assemble(
    by: By,
    from: Date,
    to: Date,
    games: &read::Games,
    plays: &[read::PlayHour],
    transfers: &read::Transfers,
) -> PeriodReport {
    let mut opening = transfers.before;
    let mut out = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for (first, start, end) in periods(by, from, to) {
        let mut per_game: BTreeMap<usize, Sales> = BTreeMap::new();
        let mut sales = Sales::default();
        for play in plays
            .iter()
            .filter(|p| (start..end).contains(&(p.hour * HOUR_MS)))
        {
            let order = games.order_of(play.block_id);
            per_game
                .entry(order)
                .or_default()
                .add(play.units, play.stakes, play.prizes);
            sales.add(play.units, play.stakes, play.prizes);
        }
        let flows = transfers.between(start, end);
        let money = flows.money(&opening);
        opening = opening.after(&flows);
        let games_sold: Vec<GameSales> = per_game
            .into_iter()
            .map(|(order, sales)| {
                let game = games.name(order).game.clone();
                if !seen.contains(&game) {
                    seen.push(game.clone());
                }
                GameSales { game, sales }
            })
            .collect();
        out.push(Period {
            period: by.label(first),
            start_utc: crate::clock::rfc3339(start),
            end_utc: crate::clock::rfc3339(end),
            start_ms: start,
            end_ms: end,
            sales,
            games: games_sold,
            money,
        });
    }
    let totals = totals(&out);
    PeriodReport {
        by: by.name(),
        time_zone: "Europe/Paris",
        from: paris::format_date(from),
        to: paris::format_date(to),
        games: games.names_of(&seen),
        periods: out,
        totals,
    }
}

/// The periods summed: sales and flows added, balances from the first
/// period's opening to the last one's closing.
fn totals(periods: &[Period]) -> Totals {
    let mut sales = Sales::default();
    let mut games: Vec<GameSales> = Vec::new();
    let mut money = Money::default();
    for period in periods {
        sales.add_sales(&period.sales);
        for game in &period.games {
            match games.iter_mut().find(|g| g.game == game.game) {
                Some(mine) => mine.sales.add_sales(&game.sales),
                None => games.push(game.clone()),
            }
        }
        money.deposits_cents += period.money.deposits_cents;
        money.withdrawals_paid_cents += period.money.withdrawals_paid_cents;
        money.prizes_credited_cents += period.money.prizes_credited_cents;
    }
    if let (Some(first), Some(last)) = (periods.first(), periods.last()) {
        money.opening_player_balances_cents = first.money.opening_player_balances_cents;
        money.opening_reserves_cents = first.money.opening_reserves_cents;
        money.player_balances_cents = last.money.player_balances_cents;
        money.withdrawals_pending_cents = last.money.withdrawals_pending_cents;
        money.reserves_cents = last.money.reserves_cents;
    }
    Totals {
        sales,
        games,
        money,
    }
}
