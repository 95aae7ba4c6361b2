//! What `tresor simulate` counts for a player who buys k units of one block
//! (k = 1, 10, 100, the buys `tresor game sheet` gives exactly): each dealt
//! block is cut into runs of k consecutive units, each run one buyer's k
//! units (a shuffled block's runs are draws without replacement, as the
//! sheet's hypergeometric figures assume), and the runs with at least one
//! win and those paying back at least k stakes are counted beside the
//! sheet's exact chance. A run of one unit is a unit, so k = 1 over whole
//! blocks is exact; k = 10 and 100 are samples (the runs of a block are not
//! independent but negatively associated, which is enough for a Chernoff–Hoeffding
//! bound: docs/GAMES.md, "The odds sheet").

use std::io::{self, Write};
use tresor_game::{BUYS, Level, PrizeTable, buy};

/// The runs of k units counted so far.
#[derive(Debug, Clone, Copy)]
struct Runs {
    k: u32,
    runs: u64,
    any_win: u64,
    back_staked: u64,
}

/// The runs of each buy a block holds.
#[derive(Debug)]
pub(super) struct BuyCounts {
    prizes: [i64; 10],
    stake_cents: i64,
    each: Vec<Runs>,
}

impl BuyCounts {
    /// Nothing counted yet, for blocks of `units_per_block` units of
    /// `table`'s stake.
    pub(super) fn new(table: &PrizeTable, units_per_block: u32) -> BuyCounts {
        let mut prizes = [0i64; 10];
        for (level, prize) in (0u8..).zip(prizes.iter_mut()) {
            *prize = Level::new(level)
                .and_then(|l| table.prize_cents(l))
                .unwrap_or(0);
        }
        BuyCounts {
            prizes,
            stake_cents: table.stake_cents(),
            each: BUYS
                .iter()
                .filter(|&&k| k <= units_per_block)
                .map(|&k| Runs {
                    k,
                    runs: 0,
                    any_win: 0,
                    back_staked: 0,
                })
                .collect(),
        }
    }

    /// Counts one block's runs (a last run shorter than k is left out).
    pub(super) fn count(&mut self, outcomes: &[Level]) {
        for runs in &mut self.each {
            let k = runs.k as usize;
            for run in outcomes.chunks_exact(k) {
                let won: i64 = run.iter().map(|l| self.prizes[usize::from(l.get())]).sum();
                runs.runs += 1;
                runs.any_win += u64::from(run.iter().any(|l| l.is_win()));
                runs.back_staked += u64::from(won >= self.stake_cents * k as i64);
            }
        }
    }

    /// One line per buy: the runs counted and the sheet's exact chances.
    pub(super) fn write(
        &self,
        table: &PrizeTable,
        units_per_block: u32,
        out: &mut impl Write,
    ) -> io::Result<()> {
        writeln!(
            out,
            "\nbuying k units of one block, counted over the blocks' runs of k consecutive units \
             (the sheet's chances are exact: tresor game sheet):"
        )?;
        for runs in &self.each {
            let sheet = buy(table, units_per_block, runs.k);
            let back = sheet
                .back_staked
                .map_or_else(|| "not computed".to_string(), |b| b.percent_shown());
            writeln!(
                out,
                "  k = {}: {} runs, at least one win in {} = {:.4} % (sheet {} %), \
                 at least the stakes back in {} = {:.4} % (sheet {back} %)",
                runs.k,
                runs.runs,
                runs.any_win,
                share(runs.any_win, runs.runs),
                sheet.any_win.percent_shown(),
                runs.back_staked,
                share(runs.back_staked, runs.runs),
            )?;
        }
        Ok(())
    }
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}
