//! The report as CSV (`tresor report --format csv`): one line per block,
//! stake and emission, with the units left at each level.

use super::{Figures, Report};

/// Nine levels at most (docs/GAMES.md): a table with fewer leaves the rest
/// empty.
const LEVELS: usize = 9;

/// One line per emission, stake and block, for `--format csv`.
pub fn csv(report: &Report) -> String {
    let mut out = String::from(
        "emission,stake_cents,block,scope,state,units,units_sold,units_left,stakes_taken_cents,\
         wins_won_cents,wins_credited_cents,wins_pending_cents,prizes_left_cents,payout_percent",
    );
    for level in 1..=LEVELS {
        out.push_str(&format!(",level{level}_left"));
    }
    out.push('\n');
    for e in &report.emissions {
        for s in &e.stakes {
            let stake = s.stake_cents.to_string();
            for b in &s.blocks {
                let block = b.id.to_string();
                out.push_str(&line(e.id, &stake, &block, "block", &b.state, &b.figures));
            }
            out.push_str(&line(e.id, &stake, "", "stake", "", &s.figures));
        }
        out.push_str(&line(e.id, "", "", "emission", &e.state, &e.figures));
    }
    out
}

/// One line of figures, its scope named by the first five columns.
fn line(emission: i64, stake: &str, block: &str, scope: &str, state: &str, f: &Figures) -> String {
    let mut line = format!(
        "{emission},{stake},{block},{scope},{state},{},{},{},{},{},{},{},{},{}",
        f.units,
        f.units_sold,
        f.units_left,
        f.stakes_taken_cents,
        f.wins_won_cents,
        f.wins_credited_cents,
        f.wins_pending_cents,
        f.prizes_left_cents,
        f.payout_percent.as_deref().unwrap_or(""),
    );
    for level in 0..LEVELS {
        match f.levels.get(level) {
            Some(level) => line.push_str(&format!(",{}", level.units_left)),
            None => line.push(','),
        }
    }
    line.push('\n');
    line
}
