//! The game-core commands: `block generate|verify`, `scenario`, `simulate`.
//!
//! PLACEHOLDER until the game-core work lands.

use clap::{Args, Subcommand};
use std::process::ExitCode;

#[derive(Debug, Subcommand)]
pub enum BlockCommand {
    /// Print the block's commitment, then its 450,000 outcome levels.
    Generate {
        /// The block secret, 64 hexadecimal digits.
        #[arg(long)]
        secret: String,
        /// The stake in cents: 50, 100 or 200.
        #[arg(long)]
        stake: i64,
    },
}

#[derive(Debug, Args)]
pub struct ScenarioArgs {
    #[arg(long)]
    pub secret: String,
    #[arg(long)]
    pub stake: i64,
    #[arg(long)]
    pub index: u32,
}

#[derive(Debug, Args)]
pub struct SimulateArgs {
    #[arg(long)]
    pub stake: i64,
    #[arg(long)]
    pub blocks: u32,
}

pub fn run_block(_command: BlockCommand) -> ExitCode {
    ExitCode::from(2)
}

pub fn run_scenario(_args: ScenarioArgs) -> ExitCode {
    ExitCode::from(2)
}

pub fn run_simulate(_args: SimulateArgs) -> ExitCode {
    ExitCode::from(2)
}
