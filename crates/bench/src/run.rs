//! One go of the bench: the servers it spawns or is given, the runs on each
//! (the measured one and its baselines), and the ledger's check after each.

use crate::args::{BenchArgs, Go, Mix};
use crate::flood::{Refuser, setup_refusers};
use crate::load::{Target, run_mix};
use crate::pgbench::pgbench;
use crate::players::{Player, register_players, run_id};
use crate::preload::preload;
use crate::proxy::DelayProxy;
use crate::report::{self, RunResult, print_result};
use crate::servers::{self, Server, Store};
use crate::{fleet, games};
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub(crate) async fn run_bench(args: BenchArgs) -> anyhow::Result<()> {
    if let Some(plays) = args.history_plays {
        let data = args.data.as_deref();
        let url = args.database_url.as_deref();
        return crate::history::history(data, url, plays, args.history_days).await;
    }
    // The binary is found before anything is printed or started.
    let exe = if args.spawn {
        servers::tresor_binary(args.tresor.as_deref())?
    } else {
        PathBuf::new()
    };
    let mut flood = if args.refusals_per_second > 0 {
        format!(", refusal flood {}/s", args.refusals_per_second)
    } else {
        String::new()
    };
    if args.free_tries_per_second > 0 {
        flood += &format!(", free tries {}/s", args.free_tries_per_second);
    }
    print_header(&args, &flood, args.spawn.then_some(exe.as_path()));
    if let (Some(plays), Some(data)) = (args.preload_plays, &args.data) {
        preload(data, plays).await?;
    }
    let proxy = delay_proxy(&args)?;
    let go = Go {
        backend: backend(&args),
        flood,
        exe,
        via: proxy.as_ref().map(|proxy| proxy.address),
        args,
    };
    if let Some(url) = &go.args.url {
        against_url(url, &go).await?;
    } else {
        let one = if go.args.servers == 1 || go.args.baselines {
            Some(one_server(&go).await?)
        } else {
            None
        };
        if go.args.servers > 1 {
            fleet::run(&go, one).await?;
        }
    }
    println!("load average after: {}", load_average());
    Ok(())
}

/// The database as the result lines name it.
fn backend(args: &BenchArgs) -> String {
    match &args.database_url {
        Some(_) if args.pg_delay_ms > 0.0 => {
            format!("PostgreSQL +{} ms a round trip", args.pg_delay_ms)
        }
        Some(_) => "PostgreSQL".to_owned(),
        None => "SQLite".to_owned(),
    }
}

/// The go's first lines: what is run, the machine's load, and which
/// `tresor` binary is measured (its age shows a stale build).
fn print_header(args: &BenchArgs, flood: &str, exe: Option<&Path>) {
    println!(
        "tresor-bench: mix {:?}, {} players{flood}, {} s (+{} s warm-up), stake {} c; load average before: {}",
        args.mix,
        args.concurrency,
        args.duration,
        args.warmup,
        args.stake_cents,
        load_average()
    );
    if let Some(exe) = exe {
        let age = std::fs::metadata(exe)
            .and_then(|meta| meta.modified())
            .ok()
            .and_then(|built| built.elapsed().ok())
            .map(|age| format!(", built {} min ago", age.as_secs() / 60))
            .unwrap_or_default();
        println!("servers: {}{age}", exe.display());
    }
}

/// The proxy every spawned server reaches PostgreSQL through, with
/// `--pg-delay-ms`.
fn delay_proxy(args: &BenchArgs) -> anyhow::Result<Option<DelayProxy>> {
    Ok(match &args.database_url {
        Some(url) if args.pg_delay_ms > 0.0 => {
            let upstream = servers::postgres_address(url)?;
            let delay = Duration::from_secs_f64(args.pg_delay_ms / 1000.0);
            Some(DelayProxy::start(upstream, delay).context("cannot start the delay proxy")?)
        }
        _ => None,
    })
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

/// The `/healthz` ceiling of the server at `base` with `players`, printed;
/// its headline.
async fn ceiling(
    base: &str,
    pid: Option<u32>,
    players: &[Player],
    args: &BenchArgs,
) -> anyhow::Result<f64> {
    let target = Target {
        label: "/healthz (HTTP ceiling)",
        base,
        pid,
        shown: true,
    };
    let result = run_mix(target, players, &[], Mix::Healthz, args).await?;
    print_result(&result, None);
    Ok(result.headline())
}

/// The run against a server of `--url`, with the `/healthz` ceiling first
/// when asked.
async fn against_url(url: &str, go: &Go) -> anyhow::Result<()> {
    let args = &go.args;
    let base = url.trim_end_matches('/').to_owned();
    let run = run_id();
    let players = register_players(&base, args.concurrency, &run).await?;
    let refusers = flood_refusers(&base, args, &run).await?;
    let mut ceiling_rate = None;
    if args.baselines {
        ceiling_rate = Some(ceiling(&base, None, &players, args).await?);
    }
    let label = format!("{url}{}", go.flood);
    let target = Target {
        label: &label,
        base: &base,
        pid: args.server_pid,
        shown: true,
    };
    let result = run_mix(target, &players, &refusers, args.mix, args).await?;
    print_result(&result, ceiling_rate);
    Ok(())
}

/// One spawned server (the tuned one) and, with `--baselines`, the same
/// go's `/healthz` ceiling, one transaction per job and pgbench. Returns
/// the tuned server's headline.
async fn one_server(go: &Go) -> anyhow::Result<report::One> {
    let args = &go.args;
    let games = games::Games::new(args.games)?;
    let run = run_id();
    let (tuned, ceiling_rate) = tuned_run(go, &games, &run).await?;
    if args.baselines && args.data.is_none() {
        single_run(go, &games, &run, ceiling_rate, tuned.headline()).await?;
        if let Some(admin_url) = &args.database_url {
            pgbench_run(go, admin_url, &tuned)?;
        }
    }
    Ok(report::One::of(&tuned))
}

/// The tuned server's run (group commit), after its `/healthz` ceiling
/// with `--baselines`: its result and the ceiling's headline.
async fn tuned_run(
    go: &Go,
    games: &games::Games,
    run: &str,
) -> anyhow::Result<(RunResult, Option<f64>)> {
    let args = &go.args;
    let store = Store::fresh(args, "tuned", go.via).await?;
    let flags = games.flags();
    let server = Server::start(&go.exe, store, args.max_batch, args.extra_blocks, &flags).await?;
    games.announce(&server.base).await?;
    let players = register_players(&server.base, args.concurrency, run).await?;
    let refusers = flood_refusers(&server.base, args, run).await?;
    let mut ceiling_rate = None;
    if args.baselines {
        ceiling_rate = Some(ceiling(&server.base, Some(server.pid()), &players, args).await?);
    }
    let max_batch = if args.max_batch > 0 {
        format!(" (max batch {})", args.max_batch)
    } else {
        String::new()
    };
    let label = format!("{}, group commit{max_batch}{}", go.backend, go.flood);
    let result = shown_run(go, &server, &label, (&players, &refusers), ceiling_rate).await?;
    let store = server.stop().await;
    if let Some(bytes) = store.size_bytes().await {
        println!(
            "    database size after the run: {:.1} MiB",
            bytes as f64 / 1048576.0
        );
    }
    store.check_ledger().await?;
    store.drop_database().await;
    Ok((result, ceiling_rate))
}

/// The mix of `go` run by `who` (the players, the refusers) against the
/// server we started, its result printed under `label` beside the ceiling.
async fn shown_run(
    go: &Go,
    server: &Server,
    label: &str,
    who: (&[Player], &[Refuser]),
    ceiling_rate: Option<f64>,
) -> anyhow::Result<RunResult> {
    let target = Target {
        label,
        base: &server.base,
        pid: Some(server.pid()),
        shown: true,
    };
    let result = run_mix(target, who.0, who.1, go.args.mix, &go.args).await?;
    print_result(&result, ceiling_rate);
    Ok(result)
}

/// The baseline of one transaction per job, on a fresh database of the
/// same kind, read against the tuned run's headline `tuned`.
async fn single_run(
    go: &Go,
    games: &games::Games,
    run: &str,
    ceiling_rate: Option<f64>,
    tuned: f64,
) -> anyhow::Result<()> {
    let args = &go.args;
    let store = Store::fresh(args, "single", go.via).await?;
    let server = Server::start(&go.exe, store, 1, args.extra_blocks, &games.flags()).await?;
    let players = register_players(&server.base, args.concurrency, run).await?;
    let refusers = flood_refusers(&server.base, args, run).await?;
    let label = format!("{}, one transaction per job{}", go.backend, go.flood);
    let result = shown_run(go, &server, &label, (&players, &refusers), ceiling_rate).await?;
    println!(
        "    group commit: {:.2} × one transaction per job",
        tuned / result.headline()
    );
    let store = server.stop().await;
    store.check_ledger().await?;
    store.drop_database().await;
    Ok(())
}

/// pgbench's TPC-B-like script on the same PostgreSQL server, read against
/// the tuned run.
fn pgbench_run(go: &Go, admin_url: &str, tuned: &RunResult) -> anyhow::Result<()> {
    let args = &go.args;
    let measured = pgbench(admin_url, go.via, args.pgbench_clients, args.duration)?;
    let tps = measured.tps;
    println!(
        "{:<34} {:>9.0} tps (pgbench -c {} -j 2 -T {}, scale 10{})",
        "pgbench TPC-B-like",
        tps,
        args.pgbench_clients,
        args.duration.ceil(),
        if go.via.is_some() {
            format!(", +{} ms a round trip", args.pg_delay_ms)
        } else {
            String::new()
        }
    );
    if let Some(us) = measured.cpu_us_per_transaction {
        println!("    PostgreSQL CPU per pgbench transaction: {us:.0} µs");
    }
    println!("    tresor: {:.2} × pgbench's tps", tuned.headline() / tps);
    if let Some(line) = report::cpu_against_pgbench(tuned, measured.cpu_us_per_transaction) {
        println!("{line}");
    }
    Ok(())
}
