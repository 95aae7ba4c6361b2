//! The report as a table for a person (`tresor report`, the default
//! format): each game's stakes against their table's payout, each
//! emission's blocks, stakes and prizes left per level, then the money.

use super::{EmissionReport, Figures, GameReport, MoneyFigures, Report};

/// A human-readable table, for `--format table`.
pub fn table(report: &Report) -> String {
    let mut out = String::new();
    if report.emissions.is_empty() {
        out.push_str("no emission yet\n");
    }
    for game in &report.games {
        out.push_str(&game_section(game));
    }
    for emission in &report.emissions {
        out.push_str(&emission_section(emission));
    }
    out.push_str(&money_section(&report.money));
    out
}

/// The columns' titles, above each section's rows.
fn header() -> String {
    format!(
        "  {:<16} {:>9} {:>8} {:>8} {:>15} {:>15} {:>15} {:>12} {:>15} {:>7}\n",
        "",
        "state",
        "sold",
        "left",
        "stakes €",
        "wins won €",
        "credited €",
        "pending €",
        "prizes left €",
        "payout"
    )
}

/// One row of figures under [`header`].
fn row(label: &str, state: &str, f: &Figures) -> String {
    format!(
        "  {:<16} {:>9} {:>8} {:>8} {:>15} {:>15} {:>15} {:>12} {:>15} {:>7}\n",
        label,
        state,
        f.units_sold,
        f.units_left,
        euros(f.stakes_taken_cents),
        euros(f.wins_won_cents),
        euros(f.wins_credited_cents),
        euros(f.wins_pending_cents),
        euros(f.prizes_left_cents),
        f.payout_percent
            .as_deref()
            .map(|p| format!("{p}%"))
            .unwrap_or_else(|| "-".to_owned()),
    )
}

/// A game's emissions summed; the state column gives the table's payout
/// rate, to compare the payout column with.
fn game_section(g: &GameReport) -> String {
    let mut out = format!(
        "game {} « {} » (emissions {:?}; state: the table's payout)\n",
        g.name.game, g.name.name_fr, g.emissions
    );
    out.push_str(&header());
    for s in &g.stakes {
        out.push_str(&row(
            &format!("game stake {} c", s.stake_cents),
            &format!("{}%", s.table_payout_percent),
            &s.figures,
        ));
    }
    out.push_str(&row("game total", "", &g.figures));
    out
}

/// An emission's blocks and stakes, then the prizes left of each stake.
fn emission_section(e: &EmissionReport) -> String {
    let mut out = format!("emission {} « {} » ({})\n", e.id, e.name, e.state);
    out.push_str(&header());
    for s in &e.stakes {
        for b in &s.blocks {
            out.push_str(&row(&format!("block {}", b.id), &b.state, &b.figures));
        }
        out.push_str(&row(
            &format!("stake {} c", s.stake_cents),
            &format!("{} blk", s.figures.blocks),
            &s.figures,
        ));
    }
    out.push_str(&row("emission", "", &e.figures));
    for s in &e.stakes {
        out.push_str(&format!(
            "  prizes left at stake {} c (level: units left × prize = liability €)\n",
            s.stake_cents
        ));
        for level in &s.figures.levels {
            out.push_str(&format!(
                "    level {}: {:>7} / {:>7} × {:>12} = {:>15}\n",
                level.level,
                level.units_left,
                level.units_in_table,
                euros(level.prize_cents),
                euros(level.prizes_left_cents),
            ));
        }
    }
    out.push('\n');
    out
}

/// The money side, one line a figure.
fn money_section(m: &MoneyFigures) -> String {
    let mut out = String::from("Money\n");
    for (label, cents) in [
        ("deposits through the provider", m.provider_deposits_cents),
        ("demo deposits and operator credits", m.other_deposits_cents),
        ("received, to refund", m.to_refund_cents),
        ("withdrawals pending", m.withdrawals_pending_cents),
        ("withdrawals paid", m.withdrawals_paid_cents),
        ("kept in reserve", m.reserves_cents),
        ("stakes taken (every writer)", m.stakes_taken_cents),
        ("wins credited (every writer)", m.wins_credited_cents),
        ("players' balances", m.player_balances_cents),
        ("ledger sum (always 0)", m.ledger_sum_cents),
    ] {
        out.push_str(&format!("  {label:<36} {:>15}\n", euros(cents)));
    }
    out
}

/// Euros with two decimals and thin grouping, for the table.
pub(super) fn euros(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let cents = cents.unsigned_abs();
    let whole = (cents / 100).to_string();
    let groups: Vec<&str> = whole
        .as_bytes()
        .rchunks(3)
        .rev()
        .map(|g| std::str::from_utf8(g).expect("ASCII digits"))
        .collect();
    let grouped = groups.join(" ");
    format!("{sign}{grouped}.{:02}", cents % 100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn euros_group_thousands_and_keep_cents() {
        assert_eq!(euros(0), "0.00");
        assert_eq!(euros(5), "0.05");
        assert_eq!(euros(15_750_000), "157 500.00");
        assert_eq!(euros(-123_456), "-1 234.56");
    }
}
