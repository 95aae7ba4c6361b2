//! pgbench's TPC-B-like script, the PostgreSQL yardstick of `--baselines`.

use crate::procstat::{postgres_ticks, ticks_us};
use crate::report::progress;
use anyhow::{Context, bail};
use std::net::SocketAddr;
use std::process::{Command, Stdio};

/// What pgbench measured.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PgbenchResult {
    pub(crate) tps: f64,
    /// PostgreSQL's CPU (every `postgres` process, from /proc) per
    /// transaction, in µs, when it could be read.
    pub(crate) cpu_us_per_transaction: Option<f64>,
}

/// pgbench's TPC-B-like script on a scratch database of the same server.
/// With `via`, pgbench reaches the server through the delay proxy, as the
/// servers did.
pub(crate) fn pgbench(
    admin_url: &str,
    via: Option<SocketAddr>,
    clients: usize,
    seconds: f64,
) -> anyhow::Result<PgbenchResult> {
    let (server, _) = admin_url
        .rsplit_once('/')
        .context("a PostgreSQL URL ends with a database name")?;
    let name = format!("tresor_pgbench_{}", std::process::id());
    let url = format!("{server}/{name}");
    let url = match via {
        Some(proxy) => crate::servers::through(&url, proxy)?,
        None => url,
    };
    let psql = |sql: &str| {
        Command::new("psql")
            .args([admin_url, "-qAtc", sql])
            .stdout(Stdio::null())
            .status()
    };
    psql(&format!("DROP DATABASE IF EXISTS {name}"))?;
    if !psql(&format!("CREATE DATABASE {name}"))?.success() {
        bail!("cannot create the pgbench scratch database (is psql installed?)");
    }
    let bar = progress(1, "pgbench -i -s 10");
    let init = Command::new("pgbench")
        .args(["-i", "-s", "10", "-q", &url])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .context("cannot run pgbench (apt-get install postgresql-client)")?;
    bar.finish_and_clear();
    if !init.success() {
        bail!("pgbench -i failed");
    }
    let bar = progress(1, "pgbench TPC-B-like");
    let cpu_before = postgres_ticks();
    let output = Command::new("pgbench")
        .args(["-c", &clients.to_string(), "-j", "2"])
        .args(["-T", &(seconds.ceil() as u64).to_string(), &url])
        .output()
        .context("cannot run pgbench")?;
    let cpu_after = postgres_ticks();
    bar.finish_and_clear();
    let _ = psql(&format!("DROP DATABASE IF EXISTS {name}"));
    let text = String::from_utf8_lossy(&output.stdout);
    let tps = text
        .lines()
        .find_map(|line| {
            let rest = line.strip_prefix("tps = ")?;
            rest.split_whitespace().next()?.parse::<f64>().ok()
        })
        .with_context(|| format!("no tps in pgbench's output: {text}"))?;
    // "number of transactions actually processed: N" (or "N/M").
    let transactions = text.lines().find_map(|line| {
        let rest = line.strip_prefix("number of transactions actually processed: ")?;
        rest.split(['/', ' ']).next()?.parse::<u64>().ok()
    });
    let cpu_us_per_transaction = match (cpu_before, cpu_after, transactions) {
        (Some(before), Some(after), Some(n)) if n > 0 => {
            Some(ticks_us(after.saturating_sub(before)) / n as f64)
        }
        _ => None,
    };
    Ok(PgbenchResult {
        tps,
        cpu_us_per_transaction,
    })
}
