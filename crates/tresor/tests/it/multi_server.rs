//! Two real `tresor serve` processes on one PostgreSQL database, under load:
//! players spread over both servers, some playing on both at once. Checks the
//! invariants of the play server's concurrency test across servers: the
//! ledger balances, no unit is sold twice, every win is credited once, every
//! acknowledged play is in its player's history, each server sells from its
//! own block, and the game trail verifies.

use crate::common::process::own_blocks_flags;
use crate::common::{
    Harness, Server, assert_ledger_balances, cookie_client, describe, get_json, post,
    register_and_deposit, scalar,
};
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

const PLAYERS: usize = 24;
const LOAD: Duration = Duration::from_secs(5);

/// `tresor serve` on the test's database, unthrottled, numbering its blocks
/// from `block_offset`, appending to its own log (writer `server{offset}`).
async fn start_server(h: &Harness, block_offset: u32) -> Server {
    let writer = format!("server{block_offset}");
    h.server(&own_blocks_flags(block_offset, Some(&writer)))
        .await
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

/// One acknowledged play: its id, its unit (block, index), which server
/// sold it, and whether the player finished it.
#[derive(Debug, Clone, Copy)]
struct Sold {
    id: i64,
    unit: (i64, i64),
    server: usize,
    finished: bool,
}

/// What one player saw: each acknowledged play.
#[derive(Debug, Default)]
struct Seen {
    plays: Vec<Sold>,
}

on_postgres!(two_servers_on_one_postgres_sell_each_unit_once_and_keep_every_account_right);

async fn two_servers_on_one_postgres_sell_each_unit_once_and_keep_every_account_right(h: &Harness) {
    // The first server creates the demo emission; the second finds it.
    let servers = vec![start_server(h, 0).await, start_server(h, 1).await];
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
                let seller = if traveller { n % 2 } else { p % 2 };
                let server = &bases[seller];
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
                seen.plays.push(Sold {
                    id,
                    unit,
                    server: seller,
                    finished: finish,
                });
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
        let ids: BTreeSet<i64> = seen.plays.iter().map(|sold| sold.id).collect();
        assert_eq!(
            listed, ids,
            "player{p}'s history holds exactly the plays it was sold"
        );
    }

    for server in servers {
        server.kill();
    }
    let store = h.connect().await;
    let pool = &store.pool;
    assert_ledger_balances(&store).await;

    // No unit sold twice, and each block's counter matches its plays.
    let units: Vec<(i64, i64)> = seen
        .iter()
        .flat_map(|s| s.plays.iter().map(|sold| sold.unit))
        .collect();
    let distinct: BTreeSet<(i64, i64)> = units.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        units.len(),
        "no unit was acknowledged twice"
    );
    let twice: i64 = scalar(pool, "SELECT COUNT(*) FROM (SELECT block_id, unit_index FROM plays GROUP BY block_id, unit_index HAVING COUNT(*) > 1) t").await;
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
    let plays: i64 = scalar(pool, "SELECT COUNT(*) FROM plays").await;
    assert_eq!(
        plays as usize, acknowledged,
        "one play per acknowledged purchase"
    );
    // Blocks are the shards: each server sold from its own block, the
    // `--block-offset`-th open block of the stake by id (no block sells
    // out: a block has 450,000 units).
    let blocks: Vec<i64> =
        sqlx::query_scalar("SELECT id FROM blocks WHERE stake_cents = 50 ORDER BY id")
            .fetch_all(pool)
            .await
            .unwrap();
    assert!(blocks.len() >= 2, "a block for each server: {blocks:?}");
    let mut by_server = [0usize; 2];
    for sold in seen.iter().flat_map(|s| &s.plays) {
        assert_eq!(
            sold.unit.0, blocks[sold.server],
            "play {} sold by server {} from its own block",
            sold.id, sold.server
        );
        by_server[sold.server] += 1;
    }
    assert!(
        by_server.iter().all(|&n| n > 0),
        "both servers sold: {by_server:?}"
    );
    let stored: Vec<(i64, i64)> = sqlx::query_as("SELECT id, block_id FROM plays")
        .fetch_all(pool)
        .await
        .unwrap();
    let sold_from: HashMap<i64, i64> = seen
        .iter()
        .flat_map(|s| &s.plays)
        .map(|sold| (sold.id, sold.unit.0))
        .collect();
    for (id, block) in &stored {
        assert_eq!(
            sold_from.get(id),
            Some(block),
            "play {id} stored in the block its purchase named"
        );
    }

    // Every win credited once: one prize transfer per finished winning play,
    // of its prize, and none for a play still in progress.
    let wrong: i64 = scalar(pool, "SELECT COUNT(*) FROM plays p WHERE \
           (p.state = 'finished' AND p.prize_cents > 0 AND 1 <> \
              (SELECT COUNT(*) FROM transfers t WHERE t.kind = 'prize' AND t.play_id = p.id AND t.amount_cents = p.prize_cents)) \
        OR ((p.state = 'in_progress' OR p.prize_cents = 0) AND 0 <> \
              (SELECT COUNT(*) FROM transfers t WHERE t.kind = 'prize' AND t.play_id = p.id))").await;
    assert_eq!(
        wrong, 0,
        "every win is credited exactly once, and only wins"
    );
    // Every game played to the end is finished, named by its play id.
    let finished: BTreeSet<i64> =
        sqlx::query_scalar("SELECT id FROM plays WHERE state = 'finished'")
            .fetch_all(pool)
            .await
            .unwrap()
            .into_iter()
            .collect();
    let played_out: Vec<i64> = seen
        .iter()
        .flat_map(|s| &s.plays)
        .filter(|sold| sold.finished)
        .map(|sold| sold.id)
        .collect();
    assert!(!played_out.is_empty(), "games were played to the end");
    for id in played_out {
        assert!(
            finished.contains(&id),
            "play {id}, played to the end, is finished"
        );
    }
    store.pool.close().await;

    // The game trail written by both servers is one unbroken chain.
    let output = h.tresor(&["audit", "verify"]);
    assert!(
        output.status.success(),
        "tresor audit verify: {}",
        describe(&output)
    );
}

on_postgres!(a_players_purchases_on_two_servers_at_once_stay_within_the_stake_cap);

/// Each server appends to its own log, so no shared row orders two servers'
/// batches any more: the buyers' rows are locked instead. A player with a
/// 7-day stake cap of one 1 € unit asks for eight at once, four on each
/// server, twenty times over: one is sold each time, whatever the
/// interleaving (without the lock, both servers' batches read the cap
/// untouched and each sold one).
async fn a_players_purchases_on_two_servers_at_once_stay_within_the_stake_cap(h: &Harness) {
    const CAP_CENTS: i64 = 100;
    let servers = [start_server(h, 0).await, start_server(h, 1).await];
    let bases: Vec<String> = servers.iter().map(|server| server.base.clone()).collect();
    let store = h.connect().await;
    let mut off = Vec::new();
    for round in 0..20 {
        let client = cookie_client();
        let username = format!("capped{round}");
        let body = json!({
            "username": username, "password": "a long password", "adult": true,
            "accept_rules": true, "deposit_limit_cents": 1_000_000, "stake_limit_cents": CAP_CENTS,
        });
        let (status, answer) =
            post_ok(&client, &format!("{}/api/register", bases[0]), &body, None).await;
        assert_eq!(status, 201, "{answer}");
        let deposit = json!({ "amount_cents": 5_000 });
        let (status, answer) = post_ok(
            &client,
            &format!("{}/api/demo/deposit", bases[0]),
            &deposit,
            None,
        )
        .await;
        assert_eq!(status, 200, "{answer}");
        let asks = (0..8).map(|n| {
            let client = client.clone();
            let url = format!("{}/api/plays", bases[n % 2]);
            let key = format!("{username}-{n}");
            async move { post_ok(&client, &url, &json!({"stake_cents": 100}), Some(&key)).await }
        });
        let answers = futures_util::future::join_all(asks).await;
        let sold = answers.iter().filter(|(status, _)| *status == 201).count() as i64;
        for (status, answer) in &answers {
            assert!(
                *status == 201 || answer["error"]["code"] == json!("stake_limit_reached"),
                "{status} {answer}"
            );
        }
        let staked: i64 = scalar(
            &store.pool,
            &format!(
                "SELECT CAST(COALESCE(SUM(p.stake_cents), 0) AS BIGINT) FROM plays p JOIN players u ON u.id = p.player_id \
                 WHERE u.username = '{username}'"
            ),
        )
        .await;
        assert_eq!(staked, sold * 100, "every unit sold is one acknowledged");
        // Exactly one: more passes the cap, none refuses a purchase the
        // cap allows (a server refusing everything would pass `<=`).
        if sold != 1 {
            off.push(format!(
                "{username}: {sold} units sold, {staked} cents staked"
            ));
        }
    }
    assert!(
        off.is_empty(),
        "not exactly one unit sold under a cap of one: {off:?}"
    );
}

on_postgres!(a_session_ended_on_one_server_is_refused_by_the_other_at_the_very_next_purchase);

/// A server takes a purchase's session from its cache (issue 46), which a
/// logout on another server never tells: the batch that would sell reads the
/// session's end, and the very next purchase is refused, nothing sold.
async fn a_session_ended_on_one_server_is_refused_by_the_other_at_the_very_next_purchase(
    h: &Harness,
) {
    let servers = [start_server(h, 0).await, start_server(h, 1).await];
    let client = reqwest::Client::new();
    let send = |base: &str, path: &str, body: Value, cookie: Option<&str>, key: Option<&str>| {
        let mut request = client
            .post(format!("{base}{path}"))
            .header("x-requested-with", "tresor")
            .json(&body);
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        request.send()
    };
    let body = json!({"username": "roamer", "password": "a long password", "adult": true, "accept_rules": true});
    let registered = send(&servers[0].base, "/api/register", body, None, None)
        .await
        .unwrap();
    assert_eq!(registered.status(), 201);
    let cookie = crate::common::cookie::set_cookie(registered.headers());
    let deposit = json!({"amount_cents": 5_000});
    let deposited = send(
        &servers[0].base,
        "/api/demo/deposit",
        deposit,
        Some(&cookie),
        None,
    );
    assert_eq!(deposited.await.unwrap().status(), 200);
    let stake = json!({"stake_cents": 100});
    for n in 0..3 {
        let key = format!("roamer-{n}");
        let bought = send(
            &servers[0].base,
            "/api/plays",
            stake.clone(),
            Some(&cookie),
            Some(&key),
        );
        assert_eq!(bought.await.unwrap().status(), 201);
    }
    let logout = send(
        &servers[1].base,
        "/api/logout",
        json!({}),
        Some(&cookie),
        None,
    );
    assert_eq!(logout.await.unwrap().status(), 204);
    let refused = send(
        &servers[0].base,
        "/api/plays",
        stake,
        Some(&cookie),
        Some("roamer-3"),
    )
    .await
    .unwrap();
    assert_eq!(refused.status(), 401);
    let error: Value = refused.json().await.unwrap();
    assert_eq!(error["error"]["reason"], "session_ended", "{error}");
    let store = h.connect().await;
    let plays = scalar(&store.pool, "SELECT COUNT(*) FROM plays").await;
    assert_eq!(plays, 3, "nothing sold in a session that ended");
}
