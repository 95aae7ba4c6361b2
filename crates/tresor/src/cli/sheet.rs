//! `tresor game sheet FILE… [--format table|json|csv]`: each game's odds
//! sheet, per stake (docs/GAMES.md, "The odds sheet"): each level's prize,
//! units per block and exact odds, the chance to win anything, the payout
//! rate, a unit's mean prize and its standard deviation, the largest prize
//! against the stake, the chance to win back the stake, and for a player
//! buying 1, 10 or 100 units of one block the exact chance of a win and of
//! getting back what was staked. Without a file, « L'Ile au Trésor » as
//! built in. Every file is read and checked before anything is printed: a
//! refusal is one line on stderr, exit code 2, nothing on stdout.

use super::game::{Refusal, euros, output_failed, read_game, refuse};
use clap::{Args, ValueEnum};
use serde::Serialize;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use tresor_game::{Exact, Game, StakeSheet, StakeSheetView, ile_au_tresor, sheet};

#[derive(Debug, Args)]
pub struct SheetArgs {
    /// The definition files (`games/*.toml`); none: « L'Ile au Trésor »,
    /// built in.
    pub files: Vec<PathBuf>,
    /// `table` for reading, `json` or `csv` for a program or a spreadsheet.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
    Csv,
}

/// One game's sheet as `--format json` prints it (the server's `GET
/// /api/games` gives each game's `stakes` the same way, as its `sheet`).
#[derive(Debug, Serialize)]
pub struct GameSheet {
    /// The file it was read from; `null` for the built-in island.
    pub file: Option<String>,
    pub id: String,
    pub name_fr: String,
    pub name_en: String,
    pub units_per_block: u32,
    pub sha256: String,
    pub stakes: Vec<StakeSheetView>,
}

pub fn run_sheet(args: &SheetArgs) -> ExitCode {
    let games = match load(&args.files) {
        Ok(games) => games,
        Err(refusal) => return refuse(refusal),
    };
    let sheets: Vec<(Option<String>, &Game, Vec<StakeSheet>)> = games
        .into_iter()
        .map(|(file, game)| (file, game, sheet(game.tables(), game.units_per_block())))
        .collect();
    let text = match args.format {
        Format::Table => table(&sheets),
        Format::Json => json(&sheets),
        Format::Csv => csv(&sheets),
    };
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => output_failed(&error),
    }
}

/// Every file read and checked (every rule but the operator's payout cap;
/// a file of the island's id only as built in), or the first refusal.
fn load(files: &[PathBuf]) -> Result<Vec<(Option<String>, &'static Game)>, Refusal> {
    if files.is_empty() {
        return Ok(vec![(None, ile_au_tresor())]);
    }
    let mut games = Vec::with_capacity(files.len());
    for path in files {
        let name = path.display().to_string();
        let game = read_game(path, &name)?;
        games.push((Some(name), game));
    }
    Ok(games)
}

type Sheets<'a> = [(Option<String>, &'a Game, Vec<StakeSheet>)];

fn json(sheets: &Sheets) -> String {
    let games: Vec<GameSheet> = sheets
        .iter()
        .map(|(file, game, stakes)| GameSheet {
            file: file.clone(),
            id: game.id().to_string(),
            name_fr: game.name_fr().to_string(),
            name_en: game.name_en().to_string(),
            units_per_block: game.units_per_block(),
            sha256: game.sha256_hex(),
            stakes: stakes.iter().map(StakeSheet::view).collect(),
        })
        .collect();
    let mut text = serde_json::to_string_pretty(&serde_json::json!({ "games": games }))
        .expect("a sheet serializes");
    text.push('\n');
    text
}

/// "1 in 3.76 (26.5787 %, 9967/37500)".
fn chance(exact: &Exact) -> String {
    match exact.one_in(2) {
        Some(one_in) => format!(
            "1 in {one_in} ({} %, {})",
            exact.percent_shown(),
            exact.fraction()
        ),
        None => "never (0 %)".to_string(),
    }
}

fn table(sheets: &Sheets) -> String {
    let mut text = String::new();
    for (file, game, stakes) in sheets {
        let _ = writeln!(
            text,
            "{}: {} « {} » ({}), {} units per block, sha256 {}",
            file.as_deref().unwrap_or("built in"),
            game.id(),
            game.name_fr(),
            game.name_en(),
            game.units_per_block(),
            game.sha256_hex()
        );
        for stake in stakes {
            stake_table(&mut text, stake);
        }
    }
    text
}

fn stake_table(text: &mut String, sheet: &StakeSheet) {
    let _ = writeln!(text, "\nstake {}:", euros(sheet.stake_cents));
    let _ = writeln!(
        text,
        "  {:<6} {:>14} {:>16}  {:>14}  chance",
        "level", "prize", "units per block", "1 in"
    );
    for level in &sheet.levels {
        let name = match level.level {
            0 => "none".to_string(),
            l => l.to_string(),
        };
        let _ = writeln!(
            text,
            "  {:<6} {:>14} {:>16}  {:>14}  {}",
            name,
            euros(level.prize_cents),
            level.units_per_block,
            level.chance.one_in(2).unwrap_or_else(|| "never".into()),
            level.chance.fraction()
        );
    }
    let lines = [
        ("chance to win anything", chance(&sheet.win)),
        (
            "payout rate",
            format!(
                "{} % ({})",
                sheet.payout.percent(2),
                sheet.payout.fraction()
            ),
        ),
        (
            "a unit's prize",
            format!(
                "mean {} cents ({}), standard deviation {} cents",
                sheet.mean_cents.decimal(2),
                sheet.mean_cents.fraction(),
                sheet.sd_cents(2)
            ),
        ),
        (
            "largest prize",
            format!("{} × the stake", sheet.largest_multiple.decimal(2)),
        ),
        ("chance to win back the stake", chance(&sheet.back_stake)),
    ];
    for (what, figure) in lines {
        let _ = writeln!(text, "  {what}: {figure}");
    }
    for buy in &sheet.buys {
        let back = buy.back_staked.as_ref().map_or_else(
            || "not counted (too many prize steps)".to_string(),
            |b| format!("{} %", b.percent_shown()),
        );
        let _ = writeln!(
            text,
            "  buying {} of one block: at least one win {} %, at least the stakes back {back}",
            units(buy.units),
            buy.any_win.percent_shown()
        );
    }
}

fn units(k: u32) -> String {
    if k == 1 {
        "1 unit".to_string()
    } else {
        format!("{k} units")
    }
}

/// One row per figure: `game,stake_cents,figure,level,prize_cents,
/// units_per_block,exact,rounded` (the level's columns empty but for a
/// level's odds; `rounded` to 12 decimals, a percent nowhere).
fn csv(sheets: &Sheets) -> String {
    let mut text =
        String::from("game,stake_cents,figure,level,prize_cents,units_per_block,exact,rounded\n");
    for (_, game, stakes) in sheets {
        for sheet in stakes {
            let mut row = |figure: &str, level: String, exact: &str, rounded: String| {
                let _ = writeln!(
                    text,
                    "{},{},{figure},{level},{exact},{rounded}",
                    game.id(),
                    sheet.stake_cents
                );
            };
            for l in &sheet.levels {
                let level = format!("{},{},{}", l.level, l.prize_cents, l.units_per_block);
                row("odds", level, &l.chance.fraction(), l.chance.decimal(12));
            }
            let figures = [
                ("win", &sheet.win),
                ("payout", &sheet.payout),
                ("mean_cents", &sheet.mean_cents),
                ("variance_cents2", &sheet.variance_cents2),
                ("largest_multiple", &sheet.largest_multiple),
                ("back_stake", &sheet.back_stake),
            ];
            for (figure, exact) in figures {
                row(figure, ",,".into(), &exact.fraction(), exact.decimal(12));
            }
            row("sd_cents", ",,".into(), "", sheet.sd_cents(12));
            for buy in &sheet.buys {
                let any = format!("any_win_{}", buy.units);
                row(
                    &any,
                    ",,".into(),
                    &buy.any_win.fraction(),
                    buy.any_win.decimal(12),
                );
                let back = format!("back_staked_{}", buy.units);
                match &buy.back_staked {
                    Some(b) => row(&back, ",,".into(), &b.fraction(), b.decimal(12)),
                    None => row(&back, ",,".into(), "", String::new()),
                }
            }
        }
    }
    text
}
