//! `--servers N`: N spawned servers on one fresh PostgreSQL database, as
//! `tests/it/multi_server.rs` runs them (writer `server<i>`, block offset `i`),
//! each loaded by its share of the players at the same time; each server's
//! result is printed, then their sum, beside one server's run.

use crate::args::Go;
use crate::games::Games;
use crate::load::{Target, run_mix};
use crate::players::register_players;
use crate::players::run_id;
use crate::report::{One, RunResult, print_result};
use crate::servers::{Server, Store};
use anyhow::Context;

/// Runs the servers; `one` is one server's headline from the same go.
pub(crate) async fn run(go: &Go, one: Option<One>) -> anyhow::Result<()> {
    let args = &go.args;
    let count = args.servers;
    let games = Games::new(args.games)?;
    let servers = start(go, &games).await?;
    let run = run_id();
    let mut players = Vec::with_capacity(count);
    for (index, server) in servers.iter().enumerate() {
        // Its share: the players left over go to the first servers.
        let share = args.concurrency / count + usize::from(index < args.concurrency % count);
        let names = format!("{run}s{index}");
        players.push(register_players(&server.base, share, &names).await?);
    }
    let labels: Vec<String> = (0..count)
        .map(|index| format!("{}, server {} of {count}", go.backend, index + 1))
        .collect();
    let runs = servers.iter().zip(&players).zip(&labels).enumerate().map(
        |(index, ((server, players), label))| {
            let target = Target {
                label,
                base: &server.base,
                pid: Some(server.pid()),
                shown: index == 0,
            };
            run_mix(target, players, &[], args.mix, args)
        },
    );
    let results = futures_util::future::try_join_all(runs).await?;
    report(go, results, one)?;
    let mut stores = Vec::with_capacity(count);
    for server in servers {
        stores.push(server.stop().await);
    }
    let store = &stores[0];
    store.check_ledger().await?;
    store.drop_database().await;
    Ok(())
}

/// The servers on one fresh database, started one after the other: the
/// first creates the demo emission (and the extra blocks), the others find
/// them.
async fn start(go: &Go, games: &Games) -> anyhow::Result<Vec<Server>> {
    let args = &go.args;
    let count = args.servers;
    let store = Store::fresh(args, "servers", go.via).await?;
    let mut stores = vec![store];
    for _ in 1..count {
        stores.push(stores[0].shared().context("servers share PostgreSQL")?);
    }
    let mut servers = Vec::with_capacity(count);
    for (index, store) in stores.into_iter().enumerate() {
        let mut flags = vec![
            "--writer".to_owned(),
            format!("server{index}"),
            "--block-offset".to_owned(),
            index.to_string(),
        ];
        flags.extend(games.flags());
        let extra_blocks = if index == 0 { args.extra_blocks } else { 0 };
        let server = Server::start(&go.exe, store, args.max_batch, extra_blocks, &flags).await?;
        servers.push(server);
    }
    Ok(servers)
}

/// Each server's result, their sum, and the sum against one server's run.
fn report(go: &Go, mut results: Vec<RunResult>, one: Option<One>) -> anyhow::Result<()> {
    let count = results.len();
    let sum = RunResult::sum(format!("{}, {count} servers in all", go.backend), &results)?;
    // PostgreSQL's CPU is the machine's, spent for all the servers at once:
    // it is shown per purchase of them all, on the sum's line only.
    for result in &mut results {
        if let Some(cpu) = &mut result.cpu {
            cpu.postgres_us = None;
        }
        print_result(result, None);
    }
    print_result(&sum, None);
    if let Some(one) = one {
        println!(
            "    {count} servers: {:.2} × one server's {:.0}/s",
            sum.headline() / one.rate,
            one.rate
        );
        if let Some(line) = one.cpu_against(&sum, count) {
            println!("{line}");
        }
    }
    Ok(())
}
