//! The game-core commands: `block generate|verify` and `scenario`, which let
//! anyone re-derive a closed block and replay a unit's game (`docs/AUDIT.md`),
//! for « L'Ile au Trésor » or, with `--game FILE`, any game of the catalogue
//! (docs/GAMES.md). `simulate` is in `simulate.rs`.

use crate::games::refuse_another_island;
use clap::{Args, Subcommand};
use std::fmt;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tresor_game::{
    BlockSecret, Commitment, Game, Level, PrizeTable, ScenarioSeeder, Scene, ile_au_tresor,
};

/// `--game FILE`: the game a command is about.
#[derive(Debug, Clone, Args)]
pub struct GameFile {
    /// A game definition file (docs/GAMES.md), checked before use; without
    /// it, « L'Ile au Trésor » (`games/ile-au-tresor.toml`, built in).
    #[arg(long = "game", value_name = "FILE")]
    pub game: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum BlockCommand {
    /// Print the block's commitment, then its outcome levels (450,000 for
    /// the island), one per line (0 for a losing unit). The island's output
    /// does not depend on the stake.
    Generate {
        /// The block secret, 64 hexadecimal digits.
        #[arg(long)]
        secret: String,
        /// The stake in cents: 50, 100 or 200 for the island.
        #[arg(long)]
        stake: i64,
        #[command(flatten)]
        game: GameFile,
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
        /// The block's stake in cents: 50, 100 or 200 for the island.
        #[arg(long)]
        stake: i64,
        #[command(flatten)]
        game: GameFile,
    },
}

#[derive(Debug, Args)]
pub struct ScenarioArgs {
    /// The block secret, 64 hexadecimal digits.
    #[arg(long)]
    pub secret: String,
    /// The block's stake in cents: 50, 100 or 200 for the island.
    #[arg(long)]
    pub stake: i64,
    /// The unit's index in its block, from 0 (449,999 is the island's last).
    #[arg(long)]
    pub index: u32,
    #[command(flatten)]
    pub game: GameFile,
}

/// Bad input: one line on stderr and exit code 2.
#[derive(Debug)]
pub(super) struct Refusal(pub(super) String);

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub(super) fn refuse(refusal: Refusal) -> ExitCode {
    eprintln!("error: {refusal}");
    ExitCode::from(2)
}

pub(super) fn parse_secret(text: &str, what: &str) -> Result<BlockSecret, Refusal> {
    BlockSecret::parse_hex(text)
        .map_err(|_| Refusal(format!("{what} must be exactly 64 hexadecimal digits")))
}

/// The game of `--game FILE`, read and checked (every rule but the payout
/// cap, which is the operator's and not an auditor's business; a file of the
/// island's id only as built in), or the island.
pub(super) fn load_game(file: &GameFile) -> Result<&'static Game, Refusal> {
    let Some(path) = &file.game else {
        return Ok(ile_au_tresor());
    };
    read_game(path, &format!("--game {}", path.display()))
}

/// The game of the definition file at `path`, read, parsed and checked;
/// a refusal names it `name`.
pub(super) fn read_game(path: &Path, name: &str) -> Result<&'static Game, Refusal> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| Refusal(format!("{name}: cannot read it: {error}")))?;
    let game = Game::parse(&text)
        .map_err(|error| Refusal(format!("{name}: {error}")))?
        .leak();
    refuse_another_island(game, &text)
        .and_then(|()| game.check(10_000))
        .map_err(|error| Refusal(format!("{name}: {error}")))?;
    Ok(game)
}

/// "50, 100 and 200 cents".
fn list_stakes(game: &Game) -> String {
    let stakes: Vec<String> = game
        .tables()
        .iter()
        .map(|t| t.stake_cents().to_string())
        .collect();
    match stakes.split_last() {
        Some((last, [])) => format!("{last} cents"),
        Some((last, rest)) => format!("{} and {last} cents", rest.join(", ")),
        None => String::new(),
    }
}

/// The prize table of `cents`, or a refusal naming the game's stakes.
pub(super) fn stake_table(game: &'static Game, cents: i64) -> Result<&'static PrizeTable, Refusal> {
    game.table(cents).ok_or_else(|| {
        let stakes = list_stakes(game);
        if game.tables().len() == 1 {
            Refusal(format!(
                "unknown stake {cents} cents: the stake is {stakes}"
            ))
        } else {
            Refusal(format!(
                "unknown stake {cents} cents: the stakes are {stakes}"
            ))
        }
    })
}

/// An amount as the rules text writes it: "0,50 €".
pub(super) fn euros(cents: i64) -> String {
    format!("{},{:02} €", cents / 100, cents % 100)
}

/// Ends a command whose output failed: a closed pipe (`| head`) is not an
/// error worth a message, anything else is one line and exit code 1.
pub(super) fn output_failed(error: &io::Error) -> ExitCode {
    if error.kind() == io::ErrorKind::BrokenPipe {
        ExitCode::SUCCESS
    } else {
        eprintln!("error: cannot write the output: {error}");
        ExitCode::from(1)
    }
}

pub fn run_block(command: BlockCommand) -> ExitCode {
    match command {
        BlockCommand::Generate {
            secret,
            stake,
            game,
        } => {
            // The stake is checked so that a typo is caught; the island's
            // shuffle does not depend on it (its stakes share one table).
            let checked = parse_secret(&secret, "--secret").and_then(|secret| {
                let game = load_game(&game)?;
                Ok((secret, game, stake_table(game, stake)?))
            });
            match checked {
                Ok((secret, game, table)) => match write_block(game, table, &secret) {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(error) => output_failed(&error),
                },
                Err(refusal) => refuse(refusal),
            }
        }
        BlockCommand::Verify {
            secret,
            commitment,
            stake,
            game,
        } => {
            let checked = parse_secret(&secret, "--secret").and_then(|secret| {
                let commitment = Commitment::parse_hex(&commitment).map_err(|_| {
                    Refusal("--commitment must be exactly 64 hexadecimal digits".into())
                })?;
                let game = load_game(&game)?;
                Ok((secret, commitment, game, stake_table(game, stake)?))
            });
            match checked {
                Ok((secret, commitment, game, table)) => {
                    verify_block(game, table, &secret, commitment)
                }
                Err(refusal) => refuse(refusal),
            }
        }
    }
}

/// Prints the commitment and every outcome level through one locked,
/// buffered stdout: 900,000 bytes in a handful of writes.
fn write_block(game: &Game, table: &PrizeTable, secret: &BlockSecret) -> io::Result<()> {
    let outcomes = game.outcomes(table, secret);
    let mut text = Vec::with_capacity(65 + 2 * outcomes.len());
    text.extend_from_slice(game.commitment(secret).to_hex().as_bytes());
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
pub(super) fn level_counts(outcomes: &[Level]) -> [u32; 10] {
    let mut counts = [0u32; 10];
    for level in outcomes {
        counts[usize::from(level.get())] += 1;
    }
    counts
}

fn verify_block(
    game: &'static Game,
    table: &PrizeTable,
    secret: &BlockSecret,
    commitment: Commitment,
) -> ExitCode {
    let derived = game.commitment(secret);
    let what = game.commitment_form();
    if derived != commitment {
        println!("FAILED: {what} is {derived}, not the commitment {commitment}");
        return ExitCode::from(1);
    }
    let outcomes = game.outcomes(table, secret);
    let counts = level_counts(&outcomes);
    let expected = table.counts();
    let wrong: Vec<String> = (0..10)
        .filter(|&l| counts[l] != expected[l])
        .map(|l| format!("level {l}: {} units, table says {}", counts[l], expected[l]))
        .collect();
    if !wrong.is_empty() {
        println!(
            "FAILED: the level counts differ from the table: {}",
            wrong.join("; ")
        );
        return ExitCode::from(1);
    }
    // Every unit's scene, staged from its seed as the server staged it,
    // shows exactly the unit's level.
    let seeder = ScenarioSeeder::new(secret);
    for (index, level) in outcomes.iter().enumerate() {
        let scene = match game.stage(table, *level, &seeder.seed(index as u32)) {
            Ok(scene) => scene,
            Err(unstaged) => {
                println!("FAILED: unit {index}: {unstaged}");
                return ExitCode::from(1);
            }
        };
        if let Err(why) = game.check_scene(table, &scene, *level) {
            println!(
                "FAILED: unit {index}'s scene does not show its level {}: {why}",
                level.get()
            );
            return ExitCode::from(1);
        }
    }
    let definition = if game.commitment_covers_definition() {
        format!(
            " (game {}, definition sha256 {})",
            game.id(),
            game.sha256_hex()
        )
    } else {
        String::new()
    };
    println!(
        "OK: {what} equals the commitment {commitment}; the block's {} \
         units hold exactly the table ({} winning units, {} cents of prizes at {}){definition}, \
         and every unit's scene shows its level.",
        game.units_per_block(),
        game.units_per_block() - expected[0],
        table.block_prizes_cents(),
        euros(table.stake_cents())
    );
    ExitCode::SUCCESS
}

pub fn run_scenario(args: ScenarioArgs) -> ExitCode {
    let checked = parse_secret(&args.secret, "--secret").and_then(|secret| {
        let game = load_game(&args.game)?;
        let table = stake_table(game, args.stake)?;
        if args.index >= game.units_per_block() {
            return Err(Refusal(format!(
                "--index {} is past the block: units are numbered 0 to {}",
                args.index,
                game.units_per_block() - 1
            )));
        }
        Ok((secret, game, table))
    });
    let (secret, game, table) = match checked {
        Ok(checked) => checked,
        Err(refusal) => return refuse(refusal),
    };
    let level = game.outcomes(table, &secret)[args.index as usize];
    let seed = ScenarioSeeder::new(&secret).seed(args.index);
    let scene = match game.stage(table, level, &seed) {
        Ok(scene) => scene,
        Err(unstaged) => {
            eprintln!("error: unit {}: {unstaged}", args.index);
            return ExitCode::from(1);
        }
    };
    let mut out = io::stdout().lock();
    let json = match &scene {
        Scene::Island(scenario) => serde_json::to_writer_pretty(&mut out, &scenario.view(4)),
        Scene::Scratch(card) => serde_json::to_writer_pretty(&mut out, card),
    };
    let written = json
        .map_err(io::Error::from)
        .and_then(|()| writeln!(out))
        .and_then(|()| out.flush());
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => output_failed(&error),
    }
}
