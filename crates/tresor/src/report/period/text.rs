//! The period report as a table for a person and as CSV (the JSON is the
//! types, serialised).

use super::{Money, Period, PeriodReport, Sales};
use crate::report::table::euros;

/// A human-readable table, for `--format table`: the sales by period and
/// game, then the money by period.
pub fn table(report: &PeriodReport) -> String {
    let mut out = format!(
        "Figures by {}, {} days, {} to {}\n\nSales\n",
        report.by, report.time_zone, report.from, report.to
    );
    out.push_str(&format!(
        "  {:<12} {:<24} {:>10} {:>15} {:>15} {:>15}\n",
        "period", "game", "units", "stakes €", "prizes €", "GGY €"
    ));
    let sales_row = |period: &str, game: &str, s: &Sales| {
        format!(
            "  {:<12} {:<24} {:>10} {:>15} {:>15} {:>15}\n",
            period,
            game,
            s.units,
            euros(s.stakes_cents),
            euros(s.prizes_cents),
            euros(s.gross_gaming_yield_cents)
        )
    };
    for period in &report.periods {
        out.push_str(&sales_row(&period.period, "all games", &period.sales));
        for game in &period.games {
            out.push_str(&sales_row("", &game.game, &game.sales));
        }
    }
    out.push_str(&sales_row("total", "all games", &report.totals.sales));
    for game in &report.totals.games {
        out.push_str(&sales_row("", &game.game, &game.sales));
    }
    out.push_str("\nMoney (balances at the end of each period)\n");
    out.push_str(&format!(
        "  {:<12} {:>15} {:>17} {:>16} {:>18} {:>17} {:>15}\n",
        "period",
        "deposits €",
        "withdrawals paid €",
        "prizes paid €",
        "players' balances €",
        "withdrawals due €",
        "reserve €"
    ));
    for period in &report.periods {
        out.push_str(&money_row(&period.period, &period.money));
    }
    out.push_str(&money_row("total", &report.totals.money));
    out
}

fn money_row(period: &str, m: &Money) -> String {
    format!(
        "  {:<12} {:>15} {:>17} {:>16} {:>18} {:>17} {:>15}\n",
        period,
        euros(m.deposits_cents),
        euros(m.withdrawals_paid_cents),
        euros(m.prizes_credited_cents),
        euros(m.player_balances_cents),
        euros(m.withdrawals_pending_cents),
        euros(m.reserves_cents)
    )
}

/// The CSV header: a line per period (scope `period`), per period and game
/// (`game`, money columns empty), then the totals (`total`, `total_game`).
pub const CSV_HEADER: &str = "period,scope,game,start_utc,end_utc,units,stakes_cents,\
    prizes_cents,gross_gaming_yield_cents,deposits_cents,withdrawals_paid_cents,\
    prizes_credited_cents,opening_player_balances_cents,player_balances_cents,\
    withdrawals_pending_cents,opening_reserves_cents,reserves_cents";

/// One line per period, per period and game, and the totals, in cents.
pub fn csv(report: &PeriodReport) -> String {
    let mut out = format!("{CSV_HEADER}\n");
    for period in &report.periods {
        out.push_str(&period_lines(period));
    }
    let t = &report.totals;
    let range = (report.from.as_str(), report.to.as_str());
    out.push_str(&line("total", "total", "", range, &t.sales, Some(&t.money)));
    for game in &t.games {
        out.push_str(&line(
            "total",
            "total_game",
            &game.game,
            range,
            &game.sales,
            None,
        ));
    }
    out
}

fn period_lines(period: &Period) -> String {
    let bounds = (period.start_utc.as_str(), period.end_utc.as_str());
    let name = &period.period;
    let mut out = line(
        name,
        "period",
        "",
        bounds,
        &period.sales,
        Some(&period.money),
    );
    for game in &period.games {
        out.push_str(&line(name, "game", &game.game, bounds, &game.sales, None));
    }
    out
}

fn line(
    period: &str,
    scope: &str,
    game: &str,
    (start, end): (&str, &str),
    s: &Sales,
    money: Option<&Money>,
) -> String {
    let money = money.map_or_else(
        || ",,,,,,,".to_owned(),
        |m| {
            format!(
                "{},{},{},{},{},{},{},{}",
                m.deposits_cents,
                m.withdrawals_paid_cents,
                m.prizes_credited_cents,
                m.opening_player_balances_cents,
                m.player_balances_cents,
                m.withdrawals_pending_cents,
                m.opening_reserves_cents,
                m.reserves_cents
            )
        },
    );
    format!(
        "{period},{scope},{game},{start},{end},{},{},{},{},{money}\n",
        s.units, s.stakes_cents, s.prizes_cents, s.gross_gaming_yield_cents
    )
}
