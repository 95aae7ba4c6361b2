//! The `tresor` binary: the server and every operator command.

use clap::Parser;
use std::process::ExitCode;
use tresor::cli::Cli;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return tresor::cli::usage_error(error),
    };
    tresor::cli::run(cli)
}
