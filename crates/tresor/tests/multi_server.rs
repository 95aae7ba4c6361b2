//! Two real `tresor serve` processes on one PostgreSQL database, under load:
//! players spread over both servers, some playing on both at once. Checks the
//! invariants of the play server's concurrency test across servers: the
//! ledger balances, no unit is sold twice, every win is credited once, every
//! acknowledged play is in its player's history, each server sells from its
//! own block, and the game trail verifies.

mod common;

use common::{
    Server, TestDb, assert_ledger_balances, cookie_client, free_port, get_json, post,
    register_and_deposit, unthrottled_flags,
};
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::process::Command;
use std::time::{Duration, Instant};
use tresor::store::Backend;

const PLAYERS: usize = 24;
const LOAD: Duration = Duration::from_secs(5);

/// `tresor serve` on `db`, unthrottled, numbering its blocks from `block_offset`.
async fn start_server(db: &TestDb, block_offset: u32) -> Server {
    let mut flags = vec!["--block-offset".to_owned(), block_offset.to_string()];
    flags.extend(unthrottled_flags());
    Server::start(db, free_port(), &flags).await
}

/// POSTs to a server that must answer with JSON.
async fn post_ok(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
    key: Option<&str>,
) -> (u16, Value) {
    post(client, url, body, key)
        .await
        .unwrap_or_else(|| panic!("{url} answers with JSON"))
}

/// What one player saw: each acknowledged play with its unit, and whether it
/// finished it.
#[derive(Debug, Default)]
struct Seen {
    plays: Vec<(i64, (i64, i64), bool)>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_servers_on_one_postgres_sell_each_unit_once_and_keep_every_account_right() {
    let Some(db) = TestDb::new(Backend::Postgres).await else {
        return;
    };
    // The first server creates the demo emission; the second finds it.
    let servers = vec![start_server(&db, 0).await, start_server(&db, 1).await];
    let bases: Vec<String> = servers.iter().map(|server| server.base.clone()).collect();

    // Players register on one server or the other; every third one plays on
    // both (cookies are per host, not per port, so its session goes along).
    let mut clients = Vec::new();
    for p in 0..PLAYERS {
        let client = cookie_client();
        register_and_deposit(&client, &bases[p % 2], &format!("player{p}"), 20_000).await;
        clients.push(client);
    }

    let deadline = Instant::now() + LOAD;
    let mut tasks = Vec::new();
    for (p, client) in clients.iter().cloned().enumerate() {
        let bases = bases.clone();
        tasks.push(tokio::spawn(async move {
            let traveller = p % 3 == 0;
            let mut seen = Seen::default();
            let mut n = 0usize;
            while Instant::now() < deadline {
                n += 1;
                let server = if traveller {
                    &bases[n % 2]
                } else {
                    &bases[p % 2]
                };
                let key = format!("p{p}-n{n}");
                let (status, play) = post_ok(
                    &client,
                    &format!("{server}/api/plays"),
                    &json!({"stake_cents": 50}),
                    Some(&key),
                )
                .await;
                if status == 402 {
                    break; // out of money: this player is done
                }
                assert_eq!(status, 201, "purchase on {server}: {play}");
                let id = play["id"].as_i64().unwrap();
                let unit = (
                    play["unit"]["block"].as_i64().unwrap(),
                    play["unit"]["index"].as_i64().unwrap(),
                );
                // Every other game is played to the end, a traveller's throws
                // alternating between the servers; the others are settled by
                // the player's next purchase.
                let finish = n.is_multiple_of(2);
                if finish {
                    for t in 0..4 {
                        let server = if traveller {
                            &bases[(n + t) % 2]
                        } else {
                            server
                        };
                        let (status, body) = post_ok(
                            &client,
                            &format!("{server}/api/plays/{id}/throws"),
                            &json!({}),
                            None,
                        )
                        .await;
                        assert_eq!(status, 200, "throw on {server}: {body}");
                    }
                }
                seen.plays.push((id, unit, finish));
            }
            seen
        }));
    }
    let mut seen = Vec::new();
    for task in tasks {
        seen.push(task.await.unwrap());
    }
    let acknowledged: usize = seen.iter().map(|s| s.plays.len()).sum();
    assert!(
        acknowledged >= PLAYERS * 5,
        "the servers sold under load ({acknowledged} plays)"
    );

    // Every acknowledged play is in its player's history, seen from either
    // server, and nothing else is.
    for (p, (client, seen)) in clients.iter().zip(&seen).enumerate() {
        let mut listed = BTreeSet::new();
        let mut cursor = String::new();
        loop {
            let base = &bases[(p + listed.len()) % 2];
            let page = get_json(
                client,
                &format!("{base}/api/plays?limit=100&cursor={cursor}"),
            )
            .await;
            for play in page["plays"].as_array().unwrap() {
                listed.insert(play["id"].as_i64().unwrap());
            }
            match page["next_cursor"].as_str() {
                Some(next) => cursor = next.to_owned(),
                None => break,
            }
        }
        let ids: BTreeSet<i64> = seen.plays.iter().map(|(id, _, _)| *id).collect();
        assert_eq!(
            listed, ids,
            "player{p}'s history holds exactly the plays it was sold"
        );
    }

    for server in servers {
        server.kill();
    }
    let store = db.connect().await;
    let pool = &store.pool;
    assert_ledger_balances(&store).await;

    // No unit sold twice, and each block's counter matches its plays.
    let units: Vec<(i64, i64)> = seen
        .iter()
        .flat_map(|s| s.plays.iter().map(|(_, unit, _)| *unit))
        .collect();
    let distinct: BTreeSet<(i64, i64)> = units.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        units.len(),
        "no unit was acknowledged twice"
    );
    let twice: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM (SELECT block_id, unit_index FROM plays GROUP BY block_id, unit_index HAVING COUNT(*) > 1) t",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(twice, 0, "no unit is stored twice");
    let counters: Vec<(i64, i64, i64)> = sqlx::query_as(
        "SELECT b.id, b.units_sold, (SELECT COUNT(*) FROM plays p WHERE p.block_id = b.id) FROM blocks b",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    for (block, sold, plays) in &counters {
        assert_eq!(
            sold, plays,
            "block {block}: units_sold counts its plays (no lost update)"
        );
    }
    let plays: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM plays")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(
        plays as usize, acknowledged,
        "one play per acknowledged purchase"
    );
    // Blocks are the shards: each server sold from its own block.
    let by_block: HashMap<i64, i64> =
        sqlx::query_as::<_, (i64, i64)>("SELECT block_id, COUNT(*) FROM plays GROUP BY block_id")
            .fetch_all(pool)
            .await
            .unwrap()
            .into_iter()
            .collect();
    assert!(
        by_block.len() >= 2,
        "the two servers sold from different blocks: {by_block:?}"
    );

    // Every win credited once: one prize transfer per finished winning play,
    // of its prize, and none for a play still in progress.
    let wrong: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM plays p WHERE \
           (p.state = 'finished' AND p.prize_cents > 0 AND 1 <> \
              (SELECT COUNT(*) FROM transfers t WHERE t.kind = 'prize' AND t.play_id = p.id AND t.amount_cents = p.prize_cents)) \
        OR ((p.state = 'in_progress' OR p.prize_cents = 0) AND 0 <> \
              (SELECT COUNT(*) FROM transfers t WHERE t.kind = 'prize' AND t.play_id = p.id))",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(
        wrong, 0,
        "every win is credited exactly once, and only wins"
    );
    let finished_by_players: usize = seen
        .iter()
        .map(|s| s.plays.iter().filter(|(_, _, f)| *f).count())
        .sum();
    let finished: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM plays WHERE state = 'finished'")
        .fetch_one(pool)
        .await
        .unwrap();
    assert!(
        finished as usize >= finished_by_players,
        "every game played to the end is finished"
    );
    store.pool.close().await;

    // The game trail written by both servers is one unbroken chain.
    let mut audit = Command::new(env!("CARGO_BIN_EXE_tresor"));
    audit.args(["audit", "verify", "--database-url", &db.url]);
    db.env(&mut audit);
    let output = audit.output().unwrap();
    assert!(
        output.status.success(),
        "tresor audit verify: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
