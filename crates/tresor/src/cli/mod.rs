//! The command line: one `tresor` binary with a subcommand per task.
//!
//! Bad input gets one clear line on stderr and exit code 2; a check that does
//! not hold (a block that fails verification, a broken audit chain) exits 1.

pub mod game;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// L'Ile au Trésor: the game server and the operator's commands.
#[derive(Debug, Parser)]
#[command(name = "tresor", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Re-derive, check or print a block from its secret.
    #[command(subcommand)]
    Block(game::BlockCommand),
    /// Print one unit's outcome and scenario as JSON.
    Scenario(game::ScenarioArgs),
    /// Deal whole blocks through the generator and evaluator and report.
    Simulate(game::SimulateArgs),
}

/// Prints a command-line error as one line (help and version as they are).
pub fn usage_error(error: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match error.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = error.print();
            ExitCode::SUCCESS
        }
        _ => {
            let rendered = error.render().to_string();
            let line = rendered
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid arguments");
            eprintln!("{}", line.trim());
            ExitCode::from(2)
        }
    }
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        None => {
            eprintln!("tresor serve is not built yet");
            ExitCode::from(2)
        }
        Some(Command::Block(command)) => game::run_block(command),
        Some(Command::Scenario(args)) => game::run_scenario(args),
        Some(Command::Simulate(args)) => game::run_simulate(args),
    }
}
