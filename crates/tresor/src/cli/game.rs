//! The game-core commands: `block generate|verify`, `scenario` and `simulate`,
//! which let anyone re-derive a closed block, replay a unit's game, and check
//! the generator and evaluator over whole blocks (`docs/AUDIT.md`).

use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use sha2::{Digest, Sha256};
use std::fmt;
use std::io::{self, BufWriter, Write};
use std::process::ExitCode;
use tresor_game::{
    BlockSecret, Commitment, LEVELS, Level, ScenarioSeeder, Stake, UNITS_PER_BLOCK, block_outcomes,
    evaluate, generate_scenario,
};

#[derive(Debug, Subcommand)]
pub enum BlockCommand {
    /// Print the block's commitment, then its 450,000 outcome levels, one per
    /// line (0 for a losing unit). The output does not depend on the stake.
    Generate {
        /// The block secret, 64 hexadecimal digits.
        #[arg(long)]
        secret: String,
        /// The stake in cents: 50, 100 or 200.
        #[arg(long)]
        stake: i64,
    },
    /// Re-derive a closed block from its published secret and check it against
    /// its commitment and the prize table.
    Verify {
        /// The published block secret, 64 hexadecimal digits.
        #[arg(long)]
        secret: String,
        /// The commitment published before the block's first sale, 64
        /// hexadecimal digits.
        #[arg(long)]
        commitment: String,
        /// The block's stake in cents: 50, 100 or 200.
        #[arg(long)]
        stake: i64,
    },
}

#[derive(Debug, Args)]
pub struct ScenarioArgs {
    /// The block secret, 64 hexadecimal digits.
    #[arg(long)]
    pub secret: String,
    /// The block's stake in cents: 50, 100 or 200.
    #[arg(long)]
    pub stake: i64,
    /// The unit's index in its block, 0 to 449,999.
    #[arg(long)]
    pub index: u32,
}

#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// The stake in cents of the simulated blocks: 50, 100 or 200.
    #[arg(long)]
    pub stake: i64,
    /// How many whole blocks of 450,000 units to deal, 1 or more.
    #[arg(long)]
    pub blocks: u32,
    /// 64 hexadecimal digits from which the block secrets are derived
    /// (block b's secret is sha256(seed || b as u32 LE)); 64 zeros by default
    /// so that a report can be reproduced.
    #[arg(long)]
    pub seed: Option<String>,
}

/// Bad input: one line on stderr and exit code 2.
#[derive(Debug)]
struct Refusal(String);

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn refuse(refusal: Refusal) -> ExitCode {
    eprintln!("error: {refusal}");
    ExitCode::from(2)
}

fn parse_secret(text: &str, what: &str) -> Result<BlockSecret, Refusal> {
    BlockSecret::parse_hex(text)
        .map_err(|_| Refusal(format!("{what} must be exactly 64 hexadecimal digits")))
}

fn parse_stake(cents: i64) -> Result<Stake, Refusal> {
    Stake::try_from(cents).map_err(|e| Refusal(e.to_string()))
}

/// Ends a command whose output failed: a closed pipe (`| head`) is not an
/// error worth a message, anything else is one line and exit code 1.
fn output_failed(error: &io::Error) -> ExitCode {
    if error.kind() == io::ErrorKind::BrokenPipe {
        ExitCode::SUCCESS
    } else {
        eprintln!("error: cannot write the output: {error}");
        ExitCode::from(1)
    }
}

pub fn run_block(command: BlockCommand) -> ExitCode {
    match command {
        BlockCommand::Generate { secret, stake } => {
            let secret = match parse_secret(&secret, "--secret") {
                Ok(secret) => secret,
                Err(refusal) => return refuse(refusal),
            };
            // The stake is checked so that a typo is caught, but the shuffle
            // does not depend on it: blocks of every stake share one table.
            if let Err(refusal) = parse_stake(stake) {
                return refuse(refusal);
            }
            match write_block(&secret) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => output_failed(&error),
            }
        }
        BlockCommand::Verify {
            secret,
            commitment,
            stake,
        } => {
            let checked = parse_secret(&secret, "--secret").and_then(|secret| {
                let commitment = Commitment::parse_hex(&commitment).map_err(|_| {
                    Refusal("--commitment must be exactly 64 hexadecimal digits".into())
                })?;
                Ok((secret, commitment, parse_stake(stake)?))
            });
            match checked {
                Ok((secret, commitment, stake)) => verify_block(&secret, commitment, stake),
                Err(refusal) => refuse(refusal),
            }
        }
    }
}

/// Prints the commitment and every outcome level through one locked,
/// buffered stdout: 900,000 bytes in a handful of writes.
fn write_block(secret: &BlockSecret) -> io::Result<()> {
    let outcomes = block_outcomes(secret);
    let mut text = Vec::with_capacity(65 + 2 * outcomes.len());
    text.extend_from_slice(secret.commitment().to_hex().as_bytes());
    text.push(b'\n');
    for level in &outcomes {
        text.push(b'0' + level.get());
        text.push(b'\n');
    }
    let mut out = BufWriter::new(io::stdout().lock());
    out.write_all(&text)?;
    out.flush()
}

/// How many units of each level (losing first) a block holds.
fn level_counts(outcomes: &[Level]) -> [u32; 10] {
    let mut counts = [0u32; 10];
    for level in outcomes {
        counts[usize::from(level.get())] += 1;
    }
    counts
}

/// How many units of each level (losing first) the table puts in a block.
fn table_counts() -> [u32; 10] {
    let mut counts = [0u32; 10];
    for spec in &LEVELS {
        counts[usize::from(spec.level)] = spec.units_per_block;
    }
    counts[0] = UNITS_PER_BLOCK - counts.iter().sum::<u32>();
    counts
}

fn verify_block(secret: &BlockSecret, commitment: Commitment, stake: Stake) -> ExitCode {
    let derived = secret.commitment();
    if derived != commitment {
        println!("FAILED: sha256(secret) is {derived}, not the commitment {commitment}");
        return ExitCode::from(1);
    }
    let counts = level_counts(&block_outcomes(secret));
    let table = table_counts();
    let wrong: Vec<String> = (0..10)
        .filter(|&l| counts[l] != table[l])
        .map(|l| format!("level {l}: {} units, table says {}", counts[l], table[l]))
        .collect();
    if !wrong.is_empty() {
        println!(
            "FAILED: the level counts differ from the table: {}",
            wrong.join("; ")
        );
        return ExitCode::from(1);
    }
    println!(
        "OK: sha256(secret) equals the commitment {commitment}; the block's {UNITS_PER_BLOCK} \
         units hold exactly the table ({} winning units, {} cents of prizes at {stake}).",
        UNITS_PER_BLOCK - table[0],
        stake.block_prizes_cents()
    );
    ExitCode::SUCCESS
}

pub fn run_scenario(args: ScenarioArgs) -> ExitCode {
    let checked = parse_secret(&args.secret, "--secret").and_then(|secret| {
        let stake = parse_stake(args.stake)?;
        if args.index >= UNITS_PER_BLOCK {
            return Err(Refusal(format!(
                "--index {} is past the block: units are numbered 0 to {}",
                args.index,
                UNITS_PER_BLOCK - 1
            )));
        }
        Ok((secret, stake))
    });
    let (secret, stake) = match checked {
        Ok(checked) => checked,
        Err(refusal) => return refuse(refusal),
    };
    let level = block_outcomes(&secret)[args.index as usize];
    let seed = ScenarioSeeder::new(&secret).seed(args.index);
    let scenario = generate_scenario(stake, level, &seed);
    let mut out = io::stdout().lock();
    let written = serde_json::to_writer_pretty(&mut out, &scenario.view(4))
        .map_err(io::Error::from)
        .and_then(|()| writeln!(out))
        .and_then(|()| out.flush());
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => output_failed(&error),
    }
}

/// The chi-square bucket count: winning units are counted in 100 runs of
/// 4,500 consecutive positions.
const BUCKETS: usize = 100;
/// The 99.9 % quantile of the chi-square law with 99 degrees of freedom.
const CHI2_CRITICAL_999_DF99: f64 = 148.230;
/// Units staged between two progress-bar updates.
const CHUNK: usize = 10_000;

/// What the staged games of one slice of units looked like.
#[derive(Debug, Clone)]
struct Stats {
    units: u64,
    /// Units whose revealed symbols did not evaluate to their level.
    mismatches: u64,
    prizes_cents: i64,
    opened_per_game: [u64; 13],
    losing: u64,
    losing_with_symbols: u64,
    losing_with_empty: u64,
    decided_on_throw: [u64; 4],
    winners_per_bucket: [u64; BUCKETS],
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            units: 0,
            mismatches: 0,
            prizes_cents: 0,
            opened_per_game: [0; 13],
            losing: 0,
            losing_with_symbols: 0,
            losing_with_empty: 0,
            decided_on_throw: [0; 4],
            winners_per_bucket: [0; BUCKETS],
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
}

/// Stages, evaluates and tallies units `from..to` of one block.
fn stage_units(
    outcomes: &[Level],
    seeder: &ScenarioSeeder,
    stake: Stake,
    from: usize,
    to: usize,
    progress: &ProgressBar,
) -> Stats {
    let mut stats = Stats::default();
    let bucket_width = outcomes.len() / BUCKETS;
    for chunk_start in (from..to).step_by(CHUNK) {
        let chunk_end = (chunk_start + CHUNK).min(to);
        for (index, &level) in outcomes
            .iter()
            .enumerate()
            .take(chunk_end)
            .skip(chunk_start)
        {
            let scenario = generate_scenario(stake, level, &seeder.seed(index as u32));
            let mut revealed = [tresor_game::Symbol::Skull; 12];
            let mut n_revealed = 0;
            let mut opened = 0;
            let mut empty = false;
            for (_, chest) in scenario.opened() {
                opened += 1;
                match chest.content.symbol() {
                    Some(symbol) => {
                        revealed[n_revealed] = symbol;
                        n_revealed += 1;
                    }
                    None => empty = true,
                }
            }
            if evaluate(&revealed[..n_revealed]) != Ok(level) {
                stats.mismatches += 1;
            }
            stats.units += 1;
            stats.opened_per_game[opened] += 1;
            stats.prizes_cents += scenario.outcome.prize_cents;
            if level.is_win() {
                stats.winners_per_bucket[(index / bucket_width).min(BUCKETS - 1)] += 1;
                if let Some(throw) = scenario.decisive_throw() {
                    stats.decided_on_throw[throw] += 1;
                }
            } else {
                stats.losing += 1;
                stats.losing_with_symbols += u64::from(n_revealed > 0);
                stats.losing_with_empty += u64::from(empty);
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
    let checked = parse_stake(args.stake).and_then(|stake| {
        if args.blocks == 0 {
            return Err(Refusal("--blocks must be 1 or more".into()));
        }
        let seed = match &args.seed {
            Some(text) => *parse_secret(text, "--seed")?.as_bytes(),
            None => [0u8; 32],
        };
        Ok((stake, seed))
    });
    let (stake, seed) = match checked {
        Ok(checked) => checked,
        Err(refusal) => return refuse(refusal),
    };
    match simulate(stake, args.blocks, &seed, &mut io::stdout().lock()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => output_failed(&error),
    }
}

/// Deals `blocks` blocks and writes the report; `Ok(false)` when a block
/// broke its table or a scene did not evaluate to its unit's level.
fn simulate(stake: Stake, blocks: u32, seed: &[u8; 32], out: &mut impl Write) -> io::Result<bool> {
    writeln!(
        out,
        "simulating {blocks} block(s) of {UNITS_PER_BLOCK} units at {} cents, seed {}",
        stake.cents(),
        hex::encode(seed)
    )?;
    let total_units = u64::from(blocks) * u64::from(UNITS_PER_BLOCK);
    let progress = ProgressBar::new(total_units).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} units {per_sec} eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let table = table_counts();
    let mut all = Stats::default();
    let mut level_totals = [0u64; 10];
    let mut blocks_exact = 0u32;
    for number in 0..blocks {
        let secret = simulated_secret(seed, number);
        let outcomes = block_outcomes(&secret);
        let seeder = ScenarioSeeder::new(&secret);
        let counts = level_counts(&outcomes);
        let exact = counts == table;
        blocks_exact += u32::from(exact);
        for (total, count) in level_totals.iter_mut().zip(counts) {
            *total += u64::from(count);
        }
        // Each thread stages one contiguous share of the block's units.
        let share = outcomes.len().div_ceil(threads);
        let block_stats: Vec<Stats> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let (outcomes, seeder, progress) = (&outcomes, &seeder, &progress);
                    let from = (t * share).min(outcomes.len());
                    let to = ((t + 1) * share).min(outcomes.len());
                    scope.spawn(move || stage_units(outcomes, seeder, stake, from, to, progress))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("staging a unit does not panic"))
                .collect()
        });
        let mut stats = Stats::default();
        for part in &block_stats {
            stats.add(part);
        }
        progress.suspend(|| {
            writeln!(
                out,
                "block {} (commitment {}): level counts {}, prizes {} cents",
                number + 1,
                secret.commitment(),
                if exact {
                    "equal the table"
                } else {
                    "DIFFER FROM THE TABLE"
                },
                stats.prizes_cents
            )
        })?;
        all.add(&stats);
    }
    progress.finish_and_clear();
    assert_eq!(all.units, total_units, "every unit was staged");

    writeln!(out, "\nunits per level (all blocks):")?;
    writeln!(out, "  level  per block (table)  dealt  expected")?;
    for level in (1..10).chain([0]) {
        writeln!(
            out,
            "  {:>5}  {:>17}  {:>9}  {:>9}",
            if level == 0 {
                "lose".to_string()
            } else {
                level.to_string()
            },
            table[level],
            level_totals[level],
            u64::from(table[level]) * u64::from(blocks)
        )?;
    }
    writeln!(
        out,
        "blocks holding exactly the table: {blocks_exact} of {blocks}"
    )?;
    writeln!(
        out,
        "scenes whose reveal does not evaluate to the unit's level: {}",
        all.mismatches
    )?;
    let sales_cents = stake.cents() * i64::from(blocks) * i64::from(UNITS_PER_BLOCK);
    writeln!(
        out,
        "payout: {} cents of prizes for {} cents of sales = {:.4} %",
        all.prizes_cents,
        sales_cents,
        100.0 * all.prizes_cents as f64 / sales_cents as f64
    )?;

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
    )?;
    out.flush()?;
    Ok(blocks_exact == blocks && all.mismatches == 0)
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
    fn the_table_counts_fill_a_block() {
        let table = table_counts();
        assert_eq!(table[0], 330_396);
        assert_eq!(table.iter().sum::<u32>(), UNITS_PER_BLOCK);
    }
}
