//! The command line: one `tresor` binary with a subcommand per task.
//!
//! Bad input gets one clear line on stderr and exit code 2; a check that does
//! not hold (a block that fails verification, a broken audit chain) exits 1.

pub mod accounts;
pub mod audit;
pub mod backup;
pub mod catalog;
pub mod db;
pub mod documents;
pub mod game;
pub mod log;
pub mod mail;
pub mod monitor;
pub mod operator;
pub mod receipt;
pub mod serve;
pub mod sheet;
pub mod simulate;
pub mod staff;
pub mod writer_name;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// L'Ile au Trésor: the game server and the operator's commands. With no
/// command, `tresor` serves, with the flags and TRESOR_* settings of
/// `tresor serve`.
#[derive(Debug, Parser)]
#[command(
    name = "tresor",
    version,
    about,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// `tresor serve`'s settings, for `tresor` alone.
    #[command(flatten)]
    pub serve: serve::ServeArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the game server and the web page (the default command; a new
    /// default database is then created in demo mode).
    Serve(serve::ServeArgs),
    /// Create, list and close emissions.
    #[command(subcommand)]
    Emission(operator::EmissionCommand),
    /// Operator actions on players.
    #[command(subcommand)]
    Player(operator::PlayerCommand),
    /// Re-derive, check or print a block from its secret; suspend or resume
    /// its sales.
    #[command(subcommand)]
    Block(BlockCli),
    /// Check game definition files and print their payout rates.
    #[command(subcommand)]
    Game(catalog::GameCommand),
    /// Print one unit's outcome and scenario as JSON.
    Scenario(game::ScenarioArgs),
    /// Deal whole blocks through the generator and evaluator and report.
    Simulate(simulate::SimulateArgs),
    /// Check or export the game trail.
    #[command(subcommand)]
    Audit(audit::AuditCommand),
    /// Units, stakes, wins and prizes left per emission, stake and block.
    Report(audit::ReportArgs),
    /// Set when sales open.
    #[command(subcommand)]
    Sales(operator::SalesCommand),
    /// Set or clear the message shown on the site.
    Announce(operator::AnnounceArgs),
    /// List, verify, suspend and unsuspend player accounts.
    #[command(subcommand, visible_alias = "accounts")]
    Account(accounts::AccountCommand),
    /// List players' identity documents, open one, verify or refuse it.
    #[command(subcommand, visible_alias = "documents")]
    Document(documents::DocumentCommand),
    /// List, approve and reject withdrawals.
    #[command(subcommand)]
    Withdrawal(accounts::WithdrawalCommand),
    /// Import the national gambling-ban list.
    #[command(subcommand)]
    Banlist(accounts::BanlistCommand),
    /// Publish a new version of the rules.
    #[command(subcommand)]
    Rules(accounts::RulesCommand),
    /// Balances of closed accounts kept in reserve.
    Reserves(accounts::ReservesArgs),
    /// The key that seals block secrets at rest.
    #[command(subcommand)]
    Secrets(operator::SecretsCommand),
    /// The operator's console accounts: add, list, role, disable, reset-totp.
    #[command(subcommand)]
    Operator(staff::StaffCommand),
    /// The signed log's key: make one, rotate to a new one.
    #[command(subcommand)]
    Log(log::LogCommand),
    /// Back the SQLite database up, online, into a new folder (compressed,
    /// with a manifest).
    Backup(backup::BackupArgs),
    /// Restore a backup into a new data folder, checked and verified.
    Restore(backup::RestoreArgs),
    /// Run a program that dies with the process that started it (how
    /// `tresor serve` runs Litestream).
    #[command(hide = true)]
    DieWithParent(backup::DieWithParentArgs),
}

/// `tresor block`: the game crate's commands (generate, verify) beside the
/// operator's sales control (suspend, resume), kept in separate enums.
#[derive(Debug, Subcommand)]
pub enum BlockCli {
    #[command(flatten)]
    Game(game::BlockCommand),
    /// Take a block out of sale (recorded in the game trail).
    Suspend(operator::BlockIdArgs),
    /// Put a suspended block back on sale (recorded in the game trail).
    Resume(operator::BlockIdArgs),
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
            // Clap's first line ends with ':' when the detail (say, which
            // argument is missing) follows on the next lines: keep them on one.
            let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty());
            let mut line = lines.next().unwrap_or("invalid arguments").to_owned();
            if line.ends_with(':') {
                let detail: Vec<&str> = lines.take_while(|l| !l.starts_with("Usage:")).collect();
                line = format!("{line} {}", detail.join(", "));
            }
            eprintln!("{line}");
            ExitCode::from(2)
        }
    }
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        None => {
            let demo_if_created = cli.serve.db.is_default();
            run_async(serve::run_serve(cli.serve, demo_if_created))
        }
        Some(Command::Serve(args)) => run_async(serve::run_serve(args, false)),
        Some(Command::Emission(command)) => run_async(operator::run_emission(command)),
        Some(Command::Player(command)) => run_async(operator::run_player(command)),
        Some(Command::Block(BlockCli::Game(command))) => game::run_block(command),
        Some(Command::Block(BlockCli::Suspend(args))) => {
            run_async(operator::run_block_control(args, true))
        }
        Some(Command::Block(BlockCli::Resume(args))) => {
            run_async(operator::run_block_control(args, false))
        }
        Some(Command::Game(command)) => catalog::run_game(command),
        Some(Command::Scenario(args)) => game::run_scenario(args),
        Some(Command::Simulate(args)) => simulate::run_simulate(args),
        Some(Command::Audit(command)) => run_async(audit::run_audit(command)),
        Some(Command::Report(args)) => run_async(audit::run_report(args)),
        Some(Command::Sales(command)) => run_async(operator::run_sales(command)),
        Some(Command::Announce(args)) => run_async(operator::run_announce(args)),
        Some(Command::Account(command)) => run_async(accounts::run_account(command)),
        Some(Command::Document(command)) => run_async(documents::run_document(command)),
        Some(Command::Withdrawal(command)) => run_async(accounts::run_withdrawal(command)),
        Some(Command::Banlist(command)) => run_async(accounts::run_banlist(command)),
        Some(Command::Rules(command)) => run_async(accounts::run_rules(command)),
        Some(Command::Reserves(args)) => run_async(accounts::run_reserves(args)),
        Some(Command::Secrets(command)) => run_async(operator::run_secrets(command)),
        Some(Command::Operator(command)) => run_async(staff::run_staff(command)),
        Some(Command::Log(command)) => run_async(log::run_log(command)),
        Some(Command::Backup(args)) => run_async(backup::run_backup(args)),
        Some(Command::Restore(args)) => run_async(backup::run_restore(args)),
        Some(Command::DieWithParent(args)) => backup::die_with_parent(args),
    }
}

/// Bad input found after parsing (an unknown stake, say): exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// A writer's log that does not hold against its last signed checkpoint
/// (someone without the key rewrote it): exit code 3, nothing started.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct LogDoesNotHold(pub String);

/// A check that did not hold: exit code 1 (not a usage error).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CheckFailed(pub String);

/// Runs an async command on a fresh runtime, logging on stderr; errors are
/// printed as one line, their exit code by their kind. `tresor-bench` runs
/// its go by it too, so that both programs log and exit alike.
pub fn run_async(command: impl std::future::Future<Output = anyhow::Result<()>>) -> ExitCode {
    init_tracing();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            if error.downcast_ref::<Usage>().is_some() {
                ExitCode::from(2)
            } else if error.downcast_ref::<LogDoesNotHold>().is_some() {
                ExitCode::from(3)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
