//! `--servers N`: N spawned servers on one fresh PostgreSQL database, as
//! `tests/it/multi_server.rs` runs them (writer `server<i>`, block offset `i`),
//! each loaded by its share of the players at the same time; each server's
//! result is printed, then their sum, beside one server's run.

use super::load::{Target, register_players, run_mix};
use super::report::{One, RunResult, print_result};
use super::servers::{Server, Store};
use super::{BenchArgs, check_ledger};
use anyhow::Context;
use std::net::SocketAddr;

/// Runs the servers; `one` is one server's headline from the same go.
pub(super) async fn run(
    args: &BenchArgs,
    backend: &str,
    via: Option<SocketAddr>,
    one: Option<One>,
) -> anyhow::Result<()> {
    let count = args.servers;
    let store = Store::fresh(args, "servers", via).await?;
    let mut servers = Vec::with_capacity(count);
    let mut stores = vec![store];
    for _ in 1..count {
        stores.push(stores[0].shared().context("servers share PostgreSQL")?);
    }
    // One after the other: the first creates the demo emission (and the
    // extra blocks), the others find them.
    let games = super::games::Games::new(args.games)?;
    for (index, store) in stores.into_iter().enumerate() {
        let mut flags = vec![
            "--writer".to_owned(),
            format!("server{index}"),
            "--block-offset".to_owned(),
            index.to_string(),
        ];
        flags.extend(games.flags());
        let extra_blocks = if index == 0 { args.extra_blocks } else { 0 };
        servers.push(Server::start(store, args.max_batch, extra_blocks, &flags).await?);
    }
    let run = hex::encode(&crate::service::os_random_32()[..4]);
    let mut players = Vec::with_capacity(count);
    for (index, server) in servers.iter().enumerate() {
        // Its share: the players left over go to the first servers.
        let share = args.concurrency / count + usize::from(index < args.concurrency % count);
        let names = format!("{run}s{index}");
        players.push(register_players(&server.base, share, &names).await?);
    }
    let labels: Vec<String> = (0..count)
        .map(|index| format!("{backend}, server {} of {count}", index + 1))
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
    let mut results = futures_util::future::try_join_all(runs).await?;
    let sum = RunResult::sum(format!("{backend}, {count} servers in all"), &results)?;
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
    let mut stores = Vec::with_capacity(count);
    for server in servers {
        stores.push(server.stop().await);
    }
    let store = &stores[0];
    check_ledger(store).await?;
    store.drop_database().await;
    Ok(())
}
