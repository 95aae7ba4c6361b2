//! `tresor-bench`: a load generator that plays many simulated players against
//! a running server over real HTTP, and measures the same run's baselines.
//!
//! Each simulated player has its own keep-alive connection and its own
//! session, and loops as fast as the server answers (a closed loop: the
//! offered load is the concurrency). Set-up (registration, deposits) is not
//! measured. Latencies go into HDR histograms, one per player, merged at the
//! end so that measuring takes no lock.
//!
//! With `--spawn` the bench starts its own servers (the `tresor` binary beside
//! it, or `--tresor PATH`) on fresh databases, so that a result and its baselines come from
//! one run on one machine state: `/healthz` at the same concurrency (the HTTP
//! ceiling), the same mix against a server that commits each job alone
//! (`TRESOR_MAX_BATCH=1`), and on PostgreSQL pgbench's TPC-B-like script.
//!
//! With `--refusals-per-second R` a few extra players flood the server,
//! beside the measured ones, with requests it refuses (throws of finished
//! plays, purchases past the 7-day stake cap), paced at R per second in all:
//! what such a flood costs the good purchases. With
//! `--free-tries-per-second F` visitors without an account ask F free tries
//! a second in all (issue 45): what free tries cost real sales.
//!
//! With `--servers N` (PostgreSQL) N servers share one database, each loaded
//! by its share of the players at the same time; with `--baselines` one
//! server's run comes first, so that N servers are read against one. With
//! `--pg-delay-ms D` every spawned server (and pgbench) reaches PostgreSQL
//! through a proxy that adds D ms to each round trip, D/2 each way: what a
//! database D ms away costs, measured on one machine. Each spawned run ends
//! with one query that the ledger still sums to zero.

mod args;
mod fleet;
mod flood;
mod free;
mod games;
mod history;
mod load;
mod pgbench;
mod play;
mod players;
mod preload;
mod procstat;
mod proxy;
mod report;
mod run;
mod servers;

use args::BenchArgs;
use clap::Parser;
use std::process::ExitCode;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args = match BenchArgs::try_parse() {
        Ok(args) => args,
        Err(error) => {
            let _ = error.print();
            return if error.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    // Flags that do not go together are refused before anything starts.
    if let Err(usage) = args::check(&args) {
        eprintln!("error: {usage}");
        return ExitCode::from(2);
    }
    // The preload opens the database through the server's own code, which
    // logs: as the `tresor` commands do.
    tresor::cli::run_async(run::run_bench(args))
}
