//! `tresor simulate`: deals whole blocks of a game through its generator and
//! evaluator and reports the level counts against the table, the payout
//! against the table's rate, what the scenes looked like, and a chi-square
//! test of where the winning units fall in their blocks; and, beside the
//! odds sheet's exact chances, what buyers of 1, 10 and 100 units of one
//! block got (`buys.rs`).

mod buys;

use super::game::{
    GameFile, Refusal, level_counts, load_game, output_failed, parse_secret, refuse, stake_table,
};
use buys::BuyCounts;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use sha2::{Digest, Sha256};
use std::io::{self, Write};
use std::process::ExitCode;
use tresor_game::{
    BlockSecret, Game, Level, PrizeTable, ScenarioSeeder, Scene, SceneRules, Symbol,
};

#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// The stake in cents of the simulated blocks: 50, 100 or 200 for the
    /// island.
    #[arg(long)]
    pub stake: i64,
    /// How many whole blocks to deal, 1 or more.
    #[arg(long)]
    pub blocks: u32,
    /// 64 hexadecimal digits from which the block secrets are derived
    /// (block b's secret is sha256(seed || b as u32 LE)); 64 zeros by default
    /// so that a report can be reproduced.
    #[arg(long)]
    pub seed: Option<String>,
    #[command(flatten)]
    pub game: GameFile,
}

/// The chi-square bucket count: winning units are counted in 100 runs of
/// consecutive positions (4,500 for the island).
const BUCKETS: usize = 100;
/// The 99.9 % quantile of the chi-square law with 99 degrees of freedom.
const CHI2_CRITICAL_999_DF99: f64 = 148.230;
/// Units staged between two progress-bar updates.
const CHUNK: usize = 10_000;

/// What the staged games of one slice of units looked like.
#[derive(Debug, Clone)]
struct Stats {
    units: u64,
    /// Units whose scene did not evaluate to their level.
    mismatches: u64,
    prizes_cents: i64,
    losing: u64,
    winners_per_bucket: [u64; BUCKETS],
    /// The island: chests opened per game; the scratch card: 0.
    opened_per_game: [u64; 13],
    /// The island: losing games showing a symbol; the scratch card: losing
    /// cards showing a pair.
    losing_with_symbols: u64,
    losing_with_empty: u64,
    decided_on_throw: [u64; 4],
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            units: 0,
            mismatches: 0,
            prizes_cents: 0,
            losing: 0,
            winners_per_bucket: [0; BUCKETS],
            opened_per_game: [0; 13],
            losing_with_symbols: 0,
            losing_with_empty: 0,
            decided_on_throw: [0; 4],
        }
    }
}

impl Stats {
    fn add(&mut self, other: &Stats) {
        self.units += other.units;
        self.mismatches += other.mismatches;
        self.prizes_cents += other.prizes_cents;
        self.losing += other.losing;
        self.losing_with_symbols += other.losing_with_symbols;
        self.losing_with_empty += other.losing_with_empty;
        let pairs = self
            .opened_per_game
            .iter_mut()
            .zip(&other.opened_per_game)
            .chain(
                self.decided_on_throw
                    .iter_mut()
                    .zip(&other.decided_on_throw),
            )
            .chain(
                self.winners_per_bucket
                    .iter_mut()
                    .zip(&other.winners_per_bucket),
            );
        for (a, b) in pairs {
            *a += b;
        }
    }

    /// Tallies one island scene.
    fn island(
        &mut self,
        scene: &tresor_game::Scenario,
        level: Level,
        rules: &tresor_game::IslandRules,
    ) {
        let mut revealed = [Symbol::Skull; 12];
        let mut n_revealed = 0;
        let mut opened = 0;
        let mut empty = false;
        for (_, chest) in scene.opened() {
            opened += 1;
            match chest.content.symbol() {
                Some(symbol) => {
                    revealed[n_revealed] = symbol;
                    n_revealed += 1;
                }
                None => empty = true,
            }
        }
        if rules.evaluate(&revealed[..n_revealed]) != Ok(level) {
            self.mismatches += 1;
        }
        self.opened_per_game[opened] += 1;
        if level.is_win() {
            if let Some(throw) = scene.decisive_throw() {
                self.decided_on_throw[throw] += 1;
            }
        } else {
            self.losing_with_symbols += u64::from(n_revealed > 0);
            self.losing_with_empty += u64::from(empty);
        }
    }

    /// Tallies one scratch card.
    fn scratch(
        &mut self,
        card: &tresor_game::Card,
        level: Level,
        rules: &tresor_game::ScratchRules,
        amounts: &[i64],
    ) {
        if rules.evaluate(amounts, &card.cells) != Ok(level) {
            self.mismatches += 1;
        }
        if !level.is_win() {
            let pair = card
                .cells
                .iter()
                .enumerate()
                .any(|(i, c)| card.cells[i + 1..].contains(c));
            self.losing_with_symbols += u64::from(pair);
        }
    }
}

/// Stages, evaluates and tallies units `from..to` of one block.
fn stage_units(
    game: &'static Game,
    table: &PrizeTable,
    outcomes: &[Level],
    seeder: &ScenarioSeeder,
    (from, to): (usize, usize),
    progress: &ProgressBar,
) -> Stats {
    let mut stats = Stats::default();
    let amounts: Vec<i64> = table.levels().iter().map(|p| p.prize_cents).collect();
    let units = outcomes.len();
    for chunk_start in (from..to).step_by(CHUNK) {
        let chunk_end = (chunk_start + CHUNK).min(to);
        for (index, &level) in outcomes
            .iter()
            .enumerate()
            .take(chunk_end)
            .skip(chunk_start)
        {
            // A checked game stages every unit; one that did not would be
            // a scene that does not show its level.
            let Ok(scene) = game.stage(table, level, &seeder.seed(index as u32)) else {
                stats.mismatches += 1;
                stats.units += 1;
                continue;
            };
            match (&scene, game.scene()) {
                (Scene::Island(scenario), SceneRules::Island(rules)) => {
                    stats.island(scenario, level, rules);
                }
                (Scene::Scratch(card), SceneRules::Scratch(rules)) => {
                    stats.scratch(card, level, rules, &amounts);
                }
                _ => stats.mismatches += 1,
            }
            stats.units += 1;
            stats.prizes_cents += scene.outcome().prize_cents;
            if level.is_win() {
                stats.winners_per_bucket[index * BUCKETS / units] += 1;
            } else {
                stats.losing += 1;
            }
        }
        progress.inc((chunk_end - chunk_start) as u64);
    }
    stats
}

/// Block `number`'s secret in a simulation: sha256(seed || number as u32 LE).
fn simulated_secret(seed: &[u8; 32], number: u32) -> BlockSecret {
    let mut hash = Sha256::new();
    hash.update(seed);
    hash.update(number.to_le_bytes());
    BlockSecret::from_bytes(hash.finalize().into())
}

/// The upper tail P(X ≥ x) of the chi-square law with `df` degrees of
/// freedom, by the Wilson–Hilferty normal approximation (good to about three
/// digits at 99 degrees of freedom, which is all a report needs).
fn chi2_p_value(x: f64, df: f64) -> f64 {
    let k = 2.0 / (9.0 * df);
    let z = ((x / df).cbrt() - (1.0 - k)) / k.sqrt();
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// The complementary error function (Numerical Recipes' `erfcc`, relative
/// error below 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

pub fn run_simulate(args: SimulateArgs) -> ExitCode {
    let checked = load_game(&args.game).and_then(|game| {
        let table = stake_table(game, args.stake)?;
        if args.blocks == 0 {
            return Err(Refusal("--blocks must be 1 or more".into()));
        }
        let seed = match &args.seed {
            Some(text) => *parse_secret(text, "--seed")?.as_bytes(),
            None => [0u8; 32],
        };
        Ok((game, table, seed))
    });
    let (game, table, seed) = match checked {
        Ok(checked) => checked,
        Err(refusal) => return refuse(refusal),
    };
    match simulate(game, table, args.blocks, &seed, &mut io::stdout().lock()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => output_failed(&error),
    }
}

/// Deals `blocks` blocks and writes the report; `Ok(false)` when a block
/// broke its table or a scene did not evaluate to its unit's level.
fn simulate(
    game: &'static Game,
    table: &'static PrizeTable,
    blocks: u32,
    seed: &[u8; 32],
    out: &mut impl Write,
) -> io::Result<bool> {
    writeln!(
        out,
        "simulating {blocks} block(s) of {} units at {} cents, seed {}",
        game.units_per_block(),
        table.stake_cents(),
        hex::encode(seed)
    )?;
    writeln!(
        out,
        "game {} ({} scene), definition sha256 {}",
        game.id(),
        game.scene().kind(),
        game.sha256_hex()
    )?;
    let dealt = deal(game, table, blocks, seed, out)?;
    write_levels(table, blocks, &dealt, out)?;
    write_payout(game, table, blocks, &dealt.all, out)?;
    dealt.buys.write(table, game.units_per_block(), out)?;
    match game.scene() {
        SceneRules::Island(_) => write_island_looks(&dealt.all, out)?,
        SceneRules::Scratch(_) => writeln!(
            out,
            "\nlosing cards showing a pair: {:.2} %",
            percent(dealt.all.losing_with_symbols, dealt.all.losing)
        )?,
    }
    write_chi_square(&dealt.all, out)?;
    out.flush()?;
    Ok(dealt.blocks_exact == blocks && dealt.all.mismatches == 0)
}

/// What the blocks dealt: their scenes' statistics, the units of each
/// level, and how many held exactly the table.
struct Dealt {
    all: Stats,
    level_totals: [u64; 10],
    blocks_exact: u32,
    /// The runs of k units of each block (`buys.rs`).
    buys: BuyCounts,
}

/// Deals and stages each block, a line of the report each.
fn deal(
    game: &'static Game,
    table: &'static PrizeTable,
    blocks: u32,
    seed: &[u8; 32],
    out: &mut impl Write,
) -> io::Result<Dealt> {
    let total_units = u64::from(blocks) * u64::from(game.units_per_block());
    let progress = ProgressBar::new(total_units).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} units {per_sec} eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let expected = table.counts();
    let mut dealt = Dealt {
        all: Stats::default(),
        level_totals: [0u64; 10],
        blocks_exact: 0,
        buys: BuyCounts::new(table, game.units_per_block()),
    };
    for number in 0..blocks {
        let secret = simulated_secret(seed, number);
        let outcomes = game.outcomes(table, &secret);
        let counts = level_counts(&outcomes);
        let exact = counts == expected;
        dealt.blocks_exact += u32::from(exact);
        for (total, count) in dealt.level_totals.iter_mut().zip(counts) {
            *total += u64::from(count);
        }
        dealt.buys.count(&outcomes);
        let stats = stage_block(
            game,
            table,
            &outcomes,
            &ScenarioSeeder::new(&secret),
            &progress,
        );
        progress.suspend(|| {
            writeln!(
                out,
                "block {} (commitment {}): level counts {}, prizes {} cents",
                number + 1,
                game.commitment(&secret),
                if exact {
                    "equal the table"
                } else {
                    "DIFFER FROM THE TABLE"
                },
                stats.prizes_cents
            )
        })?;
        dealt.all.add(&stats);
    }
    progress.finish_and_clear();
    assert_eq!(dealt.all.units, total_units, "every unit was staged");
    Ok(dealt)
}

/// Stages a block's units, each thread one contiguous share of them.
fn stage_block(
    game: &'static Game,
    table: &'static PrizeTable,
    outcomes: &[Level],
    seeder: &ScenarioSeeder,
    progress: &ProgressBar,
) -> Stats {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let share = outcomes.len().div_ceil(threads);
    let parts: Vec<Stats> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let from = (t * share).min(outcomes.len());
                let to = ((t + 1) * share).min(outcomes.len());
                scope
                    .spawn(move || stage_units(game, table, outcomes, seeder, (from, to), progress))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("staging a unit does not panic"))
            .collect()
    });
    let mut stats = Stats::default();
    for part in &parts {
        stats.add(part);
    }
    stats
}

/// The units of each level dealt against the table's, and the blocks that
/// held it exactly.
fn write_levels(
    table: &PrizeTable,
    blocks: u32,
    dealt: &Dealt,
    out: &mut impl Write,
) -> io::Result<()> {
    let expected = table.counts();
    writeln!(out, "\nunits per level (all blocks):")?;
    writeln!(out, "  level  per block (table)  dealt  expected")?;
    let deepest = table.levels().len();
    for level in (1..=deepest).chain([0]) {
        writeln!(
            out,
            "  {:>5}  {:>17}  {:>9}  {:>9}",
            if level == 0 {
                "lose".to_string()
            } else {
                level.to_string()
            },
            expected[level],
            dealt.level_totals[level],
            u64::from(expected[level]) * u64::from(blocks)
        )?;
    }
    writeln!(
        out,
        "blocks holding exactly the table: {} of {blocks}",
        dealt.blocks_exact
    )?;
    writeln!(
        out,
        "scenes whose reveal does not evaluate to the unit's level: {}",
        dealt.all.mismatches
    )
}

/// The prizes staged against the sales, and the table's own rate.
fn write_payout(
    game: &Game,
    table: &PrizeTable,
    blocks: u32,
    all: &Stats,
    out: &mut impl Write,
) -> io::Result<()> {
    let sales_cents = table.stake_cents() * i64::from(blocks) * i64::from(game.units_per_block());
    writeln!(
        out,
        "payout: {} cents of prizes for {} cents of sales = {:.4} % (the table's rate: {})",
        all.prizes_cents,
        sales_cents,
        100.0 * all.prizes_cents as f64 / sales_cents as f64,
        game.payout(table)
    )
}

/// What the island's games looked like: chests opened, what losing games
/// showed, the throw that decided each win.
fn write_island_looks(all: &Stats, out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "\nchests opened per game:")?;
    for (opened, &count) in all.opened_per_game.iter().enumerate() {
        if count > 0 {
            writeln!(
                out,
                "  {opened:>2}: {count:>9} ({:.2} %)",
                percent(count, all.units)
            )?;
        }
    }
    writeln!(
        out,
        "losing games showing a symbol: {:.2} %, opening an empty chest: {:.2} %",
        percent(all.losing_with_symbols, all.losing),
        percent(all.losing_with_empty, all.losing)
    )?;
    let winners: u64 = all.decided_on_throw.iter().sum();
    writeln!(out, "throw on which a winning game is decided:")?;
    for (throw, &count) in all.decided_on_throw.iter().enumerate() {
        writeln!(
            out,
            "  throw {}: {count:>9} ({:.2} %)",
            throw + 1,
            percent(count, winners)
        )?;
    }
    Ok(())
}

/// Whether the winning units fall evenly over the blocks' positions.
fn write_chi_square(all: &Stats, out: &mut impl Write) -> io::Result<()> {
    let winners: u64 = all.winners_per_bucket.iter().sum();
    let expected = winners as f64 / BUCKETS as f64;
    let statistic: f64 = all
        .winners_per_bucket
        .iter()
        .map(|&observed| (observed as f64 - expected).powi(2) / expected)
        .sum();
    let df = (BUCKETS - 1) as f64;
    writeln!(
        out,
        "\nwinning units over {BUCKETS} equal position buckets: chi-square {statistic:.2}, \
         {df} degrees of freedom, p = {:.4}; {} the 99.9 % critical value {CHI2_CRITICAL_999_DF99}",
        chi2_p_value(statistic, df),
        if statistic < CHI2_CRITICAL_999_DF99 {
            "below"
        } else {
            "ABOVE"
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chi_square_tail_matches_known_quantiles() {
        assert!((chi2_p_value(CHI2_CRITICAL_999_DF99, 99.0) - 0.001).abs() < 0.0002);
        assert!((chi2_p_value(98.334, 99.0) - 0.5).abs() < 0.01);
    }

    #[test]
    fn the_island_s_table_counts_fill_a_block() {
        let counts = tresor_game::ile_au_tresor().tables()[0].counts();
        assert_eq!(counts[0], 330_396);
        assert_eq!(counts.iter().sum::<u32>(), tresor_game::UNITS_PER_BLOCK);
    }
}
