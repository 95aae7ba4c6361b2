//! The command line of `tresor-bench`: what the simulated players do, where
//! the servers come from, the flags that do not go together, and what they
//! resolve to for every run of a go.

use clap::{Parser, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;

/// What each simulated player does in a loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mix {
    /// Purchases only (`POST /api/plays`).
    Purchases,
    /// A purchase and its four throws: five requests per game.
    Games,
    /// `GET /healthz` only: the HTTP ceiling of the machine.
    Healthz,
}

/// `tresor-bench`: simulated players against `tresor` servers.
#[derive(Debug, Clone, Parser)]
#[command(name = "tresor-bench", version, about)]
pub struct BenchArgs {
    /// A running server to load (http://127.0.0.1:8080), in demo mode so that
    /// the bench can deposit. Without it, give `--spawn`.
    #[arg(long, required_unless_present_any = ["spawn", "history_plays"])]
    pub url: Option<String>,
    /// Start the servers itself: on a fresh SQLite folder, or on fresh
    /// databases of the PostgreSQL server named by `--database-url`.
    #[arg(long, conflicts_with = "url")]
    pub spawn: bool,
    /// With `--spawn`: a PostgreSQL URL whose server gets a fresh scratch
    /// database per run (dropped afterwards).
    #[arg(long)]
    pub database_url: Option<String>,
    /// With `--spawn`: an existing SQLite data folder to serve (kept), for
    /// measuring a large database; no baseline runs on it.
    #[arg(long, conflicts_with = "database_url")]
    pub data: Option<PathBuf>,
    /// What the simulated players do.
    #[arg(long, value_enum, default_value = "purchases")]
    pub mix: Mix,
    /// Seconds of measured load.
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Seconds of unmeasured load first (connections, caches, page cache).
    #[arg(long, default_value_t = 1.0)]
    pub warmup: f64,
    /// Simulated players, each with one keep-alive connection.
    #[arg(long, default_value_t = 256)]
    pub concurrency: usize,
    /// The stake of every purchase, in cents.
    #[arg(long, default_value_t = 50)]
    pub stake_cents: i64,
    /// Also measure the baselines in the same run (needs `--spawn` for all
    /// but `/healthz`).
    #[arg(long)]
    pub baselines: bool,
    /// With `--spawn`: the tuned server's largest batch (0: its default).
    #[arg(long, default_value_t = 0)]
    pub max_batch: usize,
    /// With `--spawn`: blocks per stake added to the demo emission, so long
    /// runs do not sell out (450,000 units each).
    #[arg(long, default_value_t = 2)]
    pub extra_blocks: u32,
    /// pgbench's clients (`-c`) for the PostgreSQL yardstick: by default the
    /// server's own pool size, so both use as many connections.
    #[arg(long, default_value_t = 16)]
    pub pgbench_clients: usize,
    /// With `--url`: the server's process id, to report its memory.
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// With `--spawn --data DIR`: before serving, bulk-load finished plays
    /// (with their transfers and trail records) until the database holds
    /// this many, to measure purchases on a large database.
    #[arg(long, requires = "data")]
    pub preload_plays: Option<u64>,
    /// Instead of a run: bulk-load this many plays, with their deposits,
    /// stakes, prizes and withdrawals, over `--history-days` Paris days
    /// ending today, into `--data DIR` (SQLite) or `--database-url URL`
    /// (PostgreSQL, kept), to measure `tresor report --by` (issue 45).
    #[arg(long)]
    pub history_plays: Option<u64>,
    /// With `--history-plays`: the Paris days it covers.
    #[arg(long, default_value_t = 120)]
    pub history_days: u32,
    /// Beside the players, a flood of requests the server refuses, paced at
    /// this many per second in all (0: none) over a few extra players of
    /// their own: half throws of a finished play (409 `play_finished`), half
    /// purchases past the 7-day stake cap (403 `stake_limit_reached`).
    #[arg(long, default_value_t = 0)]
    pub refusals_per_second: u32,
    /// Beside the players, free tries (`POST /api/free/plays` at the run's
    /// stake, issue 45) paced at this many per second in all (0: none),
    /// sent by a few visitors without an account: what they cost real sales.
    #[arg(long, default_value_t = 0)]
    pub free_tries_per_second: u32,
    /// With `--spawn --database-url`: this many servers on one database
    /// (writers `server0`, `server1`…, each selling from its own block),
    /// each loaded by its share of the players at the same time; with
    /// `--baselines`, one server's run comes first, in the same go.
    #[arg(long, default_value_t = 1)]
    pub servers: usize,
    /// With `--spawn --database-url`: milliseconds added to every round
    /// trip between each spawned server and PostgreSQL (half each way), by
    /// a proxy of the bench, as a network would; pgbench goes through it too.
    #[arg(long, default_value_t = 0.0)]
    pub pg_delay_ms: f64,
    /// With `--spawn`: a catalogue of this many games, the island and
    /// generated scratch games (each with an emission), to measure whether
    /// the purchase's cost grows with the games on sale; the players still
    /// buy the island's units. Without it, the servers' default catalogue.
    #[arg(long)]
    pub games: Option<usize>,
    /// With `--spawn`: the `tresor` binary whose servers are measured (its
    /// `serve` and `emission create`); by default the `tresor` beside this
    /// binary, where cargo builds both (target/release/).
    #[arg(long, env = "TRESOR_BIN")]
    pub tresor: Option<PathBuf>,
}

/// Refuses flags that do not go together, before anything starts: the
/// line to print (exit code 2).
pub(crate) fn check(args: &BenchArgs) -> Result<(), String> {
    let usage = |text: &str| Err(text.to_owned());
    if args.concurrency == 0 || args.duration <= 0.0 {
        return usage("--concurrency and --duration must be positive");
    }
    if args.servers == 0 {
        return usage("--servers: at least 1");
    }
    let spawned_postgres = args.spawn && args.database_url.is_some();
    if args.servers > 1 && !spawned_postgres {
        return usage(
            "--servers above 1 needs --spawn and --database-url (servers share PostgreSQL)",
        );
    }
    if args.servers > 1 && args.refusals_per_second > 0 {
        return usage("--refusals-per-second runs with one server only");
    }
    if args.servers > 1 && args.free_tries_per_second > 0 {
        return usage("--free-tries-per-second runs with one server only");
    }
    if args.servers > args.concurrency {
        return usage("--servers: at most one per player (--concurrency)");
    }
    if !(args.pg_delay_ms >= 0.0 && args.pg_delay_ms <= 1_000.0) {
        return usage("--pg-delay-ms: from 0 to 1000");
    }
    if args.pg_delay_ms > 0.0 && !spawned_postgres {
        return usage("--pg-delay-ms needs --spawn and --database-url");
    }
    Ok(())
}

/// What every run of one go shares: its flags, the names its lines carry,
/// the `tresor` binary it spawns and the proxy before PostgreSQL.
pub(crate) struct Go {
    pub(crate) args: BenchArgs,
    /// The database as the lines name it ("PostgreSQL +1 ms a round trip").
    pub(crate) backend: String,
    /// ", refusal flood R/s", ", free tries F/s" on the runs the floods go
    /// with, or nothing.
    pub(crate) flood: String,
    /// The `tresor` binary (with `--spawn`).
    pub(crate) exe: PathBuf,
    /// The delay proxy's address, which spawned servers reach PostgreSQL by.
    pub(crate) via: Option<SocketAddr>,
}
