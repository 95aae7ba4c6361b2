//! `tresor game check FILE…`: reads game definitions (docs/GAMES.md), checks
//! every rule and prints each stake's payout rate, or the first refusal with
//! its line and rule (exit code 2).

use crate::games::{Catalog, Entry, refuse_another_island};
use clap::{Args, Subcommand};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tresor_game::{Game, Payout};

#[derive(Debug, Subcommand)]
pub enum GameCommand {
    /// Check game definition files: the grammar, the levels filling each
    /// block, each stake's payout rate against the cap, one combination per
    /// prize, every level's scene staged for a sample of seeds, and distinct
    /// ids across the files given. Prints each stake's payout rate.
    Check(CheckArgs),
    /// Print each game's odds sheet: per stake, each level's exact odds, the
    /// chance to win, the payout rate, a unit's mean prize and deviation,
    /// and a buyer's chances for 1, 10 and 100 units of one block.
    Sheet(super::sheet::SheetArgs),
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The definition files (`games/*.toml`).
    #[arg(required = true)]
    pub files: Vec<std::path::PathBuf>,
    #[command(flatten)]
    pub cap: PayoutCap,
}

/// The highest payout rate a game may have, the operator's setting.
#[derive(Debug, Clone, Copy, Args)]
pub struct PayoutCap {
    /// The highest share of a block's sales its prizes may pay back, in
    /// percent with up to two decimals: a definition above it is refused.
    #[arg(
        long = "max-payout-percent",
        env = "TRESOR_MAX_PAYOUT_PERCENT",
        default_value = "75",
        value_parser = parse_percent
    )]
    pub basis_points: u32,
}

/// The catalogue a command sells from: `--games DIR` and the payout cap.
#[derive(Debug, Clone, Args)]
pub struct CatalogArgs {
    /// The folder of game definitions (`*.toml`, docs/GAMES.md), each checked
    /// at start as `tresor game check` does; « L'Ile au Trésor » is built in
    /// when no file gives it. Default: `./games` if the folder exists, else
    /// the island alone.
    #[arg(long = "games", env = "TRESOR_GAMES", value_name = "DIR")]
    pub games: Option<PathBuf>,
    #[command(flatten)]
    pub cap: PayoutCap,
}

impl CatalogArgs {
    /// Reads and checks every definition of the folder: the first refusal
    /// names its file, line and rule.
    pub fn load(&self) -> Result<Catalog, String> {
        let dir = match &self.games {
            Some(dir) => Some(dir.clone()),
            None => Some(PathBuf::from("games")).filter(|d| d.is_dir()),
        };
        let Some(dir) = dir else {
            return Ok(Catalog::default());
        };
        load_dir(&dir, self.cap.basis_points).map(Catalog::new)
    }
}

/// The checked definitions of `dir`'s `*.toml` files, by file name.
pub fn load_dir(dir: &Path, max_basis_points: u32) -> Result<Vec<Entry>, String> {
    let listing = std::fs::read_dir(dir)
        .map_err(|e| format!("--games {}: cannot read the folder: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = listing
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    let mut ids: HashMap<String, String> = HashMap::new();
    let mut entries = Vec::with_capacity(files.len());
    for path in files {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(&path)
            .map_err(|error| format!("{name}: cannot read it: {error}"))?;
        let game = Game::parse(&text)
            .map_err(|error| format!("{name}: {error}"))?
            .leak();
        refuse_another_island(game, &text)
            .and_then(|()| game.check(max_basis_points))
            .map_err(|error| format!("{name}: {error}"))?;
        if let Some(first) = ids.insert(game.id().to_string(), name.clone()) {
            return Err(format!(
                "{name}: line 1: [duplicate-id] the game id {:?} is also {first}'s",
                game.id()
            ));
        }
        entries.push(Entry::new(game, text));
    }
    Ok(entries)
}

/// "72.5" → 7250: a percent from 0 to 100 with at most two decimals, read
/// without floating point.
fn parse_percent(text: &str) -> Result<u32, String> {
    let refuse = || format!("{text:?} is not a percent from 0 to 100 with at most two decimals");
    let (whole, fraction) = text.trim().split_once('.').unwrap_or((text.trim(), ""));
    if whole.is_empty()
        || fraction.len() > 2
        || !(whole.bytes().chain(fraction.bytes())).all(|b| b.is_ascii_digit())
    {
        return Err(refuse());
    }
    let whole: u32 = whole.parse().map_err(|_| refuse())?;
    let fraction: u32 = format!("{fraction:0<2}").parse().map_err(|_| refuse())?;
    let basis_points = whole
        .checked_mul(100)
        .and_then(|w| w.checked_add(fraction))
        .ok_or_else(refuse)?;
    if basis_points > 10_000 {
        return Err(refuse());
    }
    Ok(basis_points)
}

pub fn run_game(command: GameCommand) -> ExitCode {
    match command {
        GameCommand::Check(args) => check(&args),
        GameCommand::Sheet(args) => super::sheet::run_sheet(&args),
    }
}

fn check(args: &CheckArgs) -> ExitCode {
    let mut ids: HashMap<String, String> = HashMap::new();
    for path in &args.files {
        let name = path.display().to_string();
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) => {
                eprintln!("error: {name}: cannot read it: {error}");
                return ExitCode::from(2);
            }
        };
        let checked = Game::parse(&text).and_then(|game| {
            let game = game.leak();
            refuse_another_island(game, &text)?;
            game.check(args.cap.basis_points)
                .map(|payouts| (game, payouts))
        });
        let (game, payouts) = match checked {
            Ok(checked) => checked,
            Err(error) => {
                eprintln!("error: {name}: {error}");
                return ExitCode::from(2);
            }
        };
        if let Some(first) = ids.insert(game.id().to_string(), name.clone()) {
            eprintln!(
                "error: {name}: line 1: [duplicate-id] the game id {:?} is also {first}'s",
                game.id()
            );
            return ExitCode::from(2);
        }
        print_game(&name, game, &payouts);
    }
    ExitCode::SUCCESS
}

fn print_game(name: &str, game: &Game, payouts: &[Payout]) {
    println!(
        "{name}: OK: {} « {} » ({}), {} scene, {} units per block, sha256 {}",
        game.id(),
        game.name_fr(),
        game.name_en(),
        game.scene().kind(),
        game.units_per_block(),
        game.sha256_hex()
    );
    for (table, payout) in game.tables().iter().zip(payouts) {
        let winning: u32 = table.levels().iter().map(|p| p.units_per_block).sum();
        println!(
            "  stake {} cents: {} levels, {winning} winning units per block, {} cents of prizes \
             for {} cents of sales: payout {payout}",
            table.stake_cents(),
            table.levels().len(),
            payout.prizes_cents,
            payout.sales_cents,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::parse_percent;

    #[test]
    fn percents_read_exactly_in_basis_points() {
        assert_eq!(parse_percent("75"), Ok(7_500));
        assert_eq!(parse_percent("72.5"), Ok(7_250));
        assert_eq!(parse_percent("69.99"), Ok(6_999));
        assert_eq!(parse_percent("100"), Ok(10_000));
        for bad in ["", "-1", "100.01", "7.125", "abc", "1e2", ".5"] {
            assert!(parse_percent(bad).is_err(), "{bad}");
        }
    }
}
