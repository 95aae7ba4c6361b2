//! `tresor bench`: a load generator that plays many simulated players against
//! a running server over real HTTP, and measures the same run's baselines.
//!
//! Each simulated player has its own keep-alive connection and its own
//! session, and loops as fast as the server answers (a closed loop: the
//! offered load is the concurrency). Set-up (registration, deposits) is not
//! measured. Latencies go into HDR histograms, one per player, merged at the
//! end so that measuring takes no lock.
//!
//! With `--spawn` the bench starts its own servers (the `tresor` binary it is
//! part of) on fresh databases, so that a result and its baselines come from
//! one run on one machine state: `/healthz` at the same concurrency (the HTTP
//! ceiling), the same mix against a server that commits each job alone
//! (`TRESOR_MAX_BATCH=1`), and on PostgreSQL pgbench's TPC-B-like script.
//!
//! With `--refusals-per-second R` a few extra players flood the server,
//! beside the measured ones, with requests it refuses (throws of finished
//! plays, purchases past the 7-day stake cap), paced at R per second in all:
//! what such a flood costs the good purchases.
//!
//! With `--servers N` (PostgreSQL) N servers share one database, each loaded
//! by its share of the players at the same time; with `--baselines` one
//! server's run comes first, so that N servers are read against one. With
//! `--pg-delay-ms D` every spawned server (and pgbench) reaches PostgreSQL
//! through a proxy that adds D ms to each round trip, D/2 each way: what a
//! database D ms away costs, measured on one machine. Each spawned run ends
//! with one query that the ledger still sums to zero.

mod fleet;
mod games;
mod load;
mod pgbench;
mod preload;
mod proxy;
mod report;
mod servers;

pub use servers::unthrottled;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use load::{Refuser, Target, register_players, run_mix, setup_refusers};
use pgbench::pgbench;
use preload::preload;
use proxy::DelayProxy;
use report::print_result;
use servers::{Server, Store};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

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

/// `tresor bench`.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// A running server to load (http://127.0.0.1:8080), in demo mode so that
    /// the bench can deposit. Without it, give `--spawn`.
    #[arg(long, required_unless_present = "spawn")]
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
    /// Beside the players, a flood of requests the server refuses, paced at
    /// this many per second in all (0: none) over a few extra players of
    /// their own: half throws of a finished play (409 `play_finished`), half
    /// purchases past the 7-day stake cap (403 `stake_limit_reached`).
    #[arg(long, default_value_t = 0)]
    pub refusals_per_second: u32,
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
}

fn progress(length: u64, message: &'static str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(length),
        indicatif::ProgressDrawTarget::stderr(),
    );
    bar.set_style(
        indicatif::ProgressStyle::with_template("{msg:>22} [{bar:30}] {pos}/{len} {elapsed}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_message(message);
    bar
}

/// The refusers of `--refusals-per-second`, none without it.
async fn flood_refusers(base: &str, args: &BenchArgs, run: &str) -> anyhow::Result<Vec<Refuser>> {
    if args.refusals_per_second == 0 {
        return Ok(Vec::new());
    }
    setup_refusers(base, args.refusals_per_second, args.stake_cents, run)
        .await
        .context("cannot set up the refusal flood")
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// Refuses flags that do not go together, before anything starts.
fn check(args: &BenchArgs) -> Result<(), super::Usage> {
    let usage = |text: &str| Err(super::Usage(text.to_owned()));
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

pub async fn run_bench(args: BenchArgs) -> anyhow::Result<()> {
    check(&args)?;
    let backend = match &args.database_url {
        Some(_) if args.pg_delay_ms > 0.0 => {
            format!("PostgreSQL +{} ms a round trip", args.pg_delay_ms)
        }
        Some(_) => "PostgreSQL".to_owned(),
        None => "SQLite".to_owned(),
    };
    // The flood is named in the runs it goes with (not the /healthz ceiling).
    let flood = if args.refusals_per_second > 0 {
        format!(", refusal flood {}/s", args.refusals_per_second)
    } else {
        String::new()
    };
    println!(
        "tresor bench: mix {:?}, {} players{flood}, {} s (+{} s warm-up), stake {} c; load average before: {}",
        args.mix,
        args.concurrency,
        args.duration,
        args.warmup,
        args.stake_cents,
        load_average()
    );
    if let (Some(plays), Some(data)) = (args.preload_plays, &args.data) {
        preload(data, plays).await?;
    }
    // Every spawned server reaches PostgreSQL through the delay proxy.
    let proxy = match &args.database_url {
        Some(url) if args.pg_delay_ms > 0.0 => {
            let upstream = servers::postgres_address(url)?;
            let delay = Duration::from_secs_f64(args.pg_delay_ms / 1000.0);
            Some(DelayProxy::start(upstream, delay).context("cannot start the delay proxy")?)
        }
        _ => None,
    };
    let via = proxy.as_ref().map(|proxy| proxy.address);
    if let Some(url) = &args.url {
        against_url(url, &args, &flood).await?;
    } else {
        let one = if args.servers == 1 || args.baselines {
            Some(one_server(&args, &backend, &flood, via).await?)
        } else {
            None
        };
        if args.servers > 1 {
            fleet::run(&args, &backend, via, one).await?;
        }
    }
    println!("load average after: {}", load_average());
    Ok(())
}

/// The run against a server of `--url`, with the `/healthz` ceiling first
/// when asked.
async fn against_url(url: &str, args: &BenchArgs, flood: &str) -> anyhow::Result<()> {
    let base = url.trim_end_matches('/').to_owned();
    let run = hex::encode(&crate::service::os_random_32()[..4]);
    let players = register_players(&base, args.concurrency, &run).await?;
    let refusers = flood_refusers(&base, args, &run).await?;
    let mut ceiling = None;
    if args.baselines {
        let target = Target {
            label: "/healthz (HTTP ceiling)",
            base: &base,
            pid: None,
            shown: true,
        };
        let result = run_mix(target, &players, &[], Mix::Healthz, args).await?;
        ceiling = Some(result.headline());
        print_result(&result, None);
    }
    let label = format!("{url}{flood}");
    let target = Target {
        label: &label,
        base: &base,
        pid: args.server_pid,
        shown: true,
    };
    let result = run_mix(target, &players, &refusers, args.mix, args).await?;
    print_result(&result, ceiling);
    Ok(())
}

/// One spawned server (the tuned one) and, with `--baselines`, the same
/// run's `/healthz` ceiling, one transaction per job and pgbench. Returns
/// the tuned server's headline.
async fn one_server(
    args: &BenchArgs,
    backend: &str,
    flood: &str,
    via: Option<SocketAddr>,
) -> anyhow::Result<report::One> {
    let mut ceiling = None;
    let store = Store::fresh(args, "tuned", via).await?;
    let games = games::Games::new(args.games)?;
    let server = Server::start(store, args.max_batch, args.extra_blocks, &games.flags()).await?;
    games.announce(&server.base).await?;
    let run = hex::encode(&crate::service::os_random_32()[..4]);
    let players = register_players(&server.base, args.concurrency, &run).await?;
    let refusers = flood_refusers(&server.base, args, &run).await?;
    if args.baselines {
        let target = Target {
            label: "/healthz (HTTP ceiling)",
            base: &server.base,
            pid: Some(server.pid()),
            shown: true,
        };
        let result = run_mix(target, &players, &[], Mix::Healthz, args).await?;
        ceiling = Some(result.headline());
        print_result(&result, None);
    }
    let label = format!(
        "{backend}, group commit{}{flood}",
        if args.max_batch > 0 {
            format!(" (max batch {})", args.max_batch)
        } else {
            String::new()
        }
    );
    let target = Target {
        label: &label,
        base: &server.base,
        pid: Some(server.pid()),
        shown: true,
    };
    let result = run_mix(target, &players, &refusers, args.mix, args).await?;
    print_result(&result, ceiling);
    let tuned = result.headline();
    let one = report::One::of(&result);
    let tuned_result = result;
    let store = server.stop().await;
    if let Some(bytes) = store.size_bytes().await {
        println!(
            "    database size after the run: {:.1} MiB",
            bytes as f64 / 1048576.0
        );
    }
    check_ledger(&store).await?;
    store.drop_database().await;
    drop(store);

    if args.baselines && args.data.is_none() {
        // One transaction per job, on a fresh database of the same kind.
        let store = Store::fresh(args, "single", via).await?;
        let server = Server::start(store, 1, args.extra_blocks, &games.flags()).await?;
        let players = register_players(&server.base, args.concurrency, &run).await?;
        let refusers = flood_refusers(&server.base, args, &run).await?;
        let label = format!("{backend}, one transaction per job{flood}");
        let target = Target {
            label: &label,
            base: &server.base,
            pid: Some(server.pid()),
            shown: true,
        };
        let result = run_mix(target, &players, &refusers, args.mix, args).await?;
        print_result(&result, ceiling);
        println!(
            "    group commit: {:.2} × one transaction per job",
            tuned / result.headline()
        );
        let store = server.stop().await;
        check_ledger(&store).await?;
        store.drop_database().await;

        if let Some(admin_url) = &args.database_url {
            let measured = pgbench(admin_url, via, args.pgbench_clients, args.duration)?;
            let tps = measured.tps;
            println!(
                "{:<34} {:>9.0} tps (pgbench -c {} -j 2 -T {}, scale 10{})",
                "pgbench TPC-B-like",
                tps,
                args.pgbench_clients,
                args.duration.ceil(),
                if via.is_some() {
                    format!(", +{} ms a round trip", args.pg_delay_ms)
                } else {
                    String::new()
                }
            );
            if let Some(us) = measured.cpu_us_per_transaction {
                println!("    PostgreSQL CPU per pgbench transaction: {us:.0} µs");
            }
            println!("    tresor: {:.2} × pgbench's tps", tuned / tps);
            if let Some(line) =
                report::cpu_against_pgbench(&tuned_result, measured.cpu_us_per_transaction)
            {
                println!("{line}");
            }
        }
    }
    Ok(one)
}

/// The measurement's guard: the run's ledger sums to zero (one query, once
/// its servers stopped), else the run is reported as failed.
async fn check_ledger(store: &Store) -> anyhow::Result<()> {
    let sum = store
        .ledger_sum()
        .await
        .context("cannot read the ledger after the run")?;
    if sum != 0 {
        bail!("the ledger sums to {sum} cents after the run, not zero: the measurement is void");
    }
    println!("    ledger after the run: the balances sum to zero");
    Ok(())
}
