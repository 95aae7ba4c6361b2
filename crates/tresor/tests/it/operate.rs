//! The operator's side: reports that match the ledger and the prize table,
//! block suspension, the sales opening and the site message, and the public
//! block list that never shows a secret too early. Each test runs on SQLite
//! and on PostgreSQL, through the real `tresor` binary and the HTTP router.

use crate::common::{Api, TestDb, describe, player, purchase, scalar};
use axum::http::StatusCode;
use serde_json::{Value, json};
use std::collections::HashMap;
use tresor::service::{Service, rfc3339};
use tresor::store::Backend;
use tresor::trail;
use tresor_game::{LEVELS, Level, Stake, UNITS_PER_BLOCK, block_outcomes};

/// The ids of the blocks, in the service's order.
async fn block_ids(service: &Service) -> Vec<i64> {
    service
        .blocks()
        .await
        .expect("blocks")
        .iter()
        .map(|b| b.id)
        .collect()
}

/// Runs `tresor report --format json` and parses it.
fn report_json(db: &TestDb, extra: &[&str]) -> Value {
    let mut args = vec!["report", "--format", "json"];
    args.extend_from_slice(extra);
    let output = db.tresor_ok(&args);
    serde_json::from_slice(&output.stdout).expect("the report is JSON")
}

fn blocks_of(report: &Value) -> Vec<Value> {
    let mut blocks = Vec::new();
    for emission in crate::common::items(&report["emissions"], "emissions") {
        for stake in crate::common::items(&emission["stakes"], "stakes") {
            for block in crate::common::items(&stake["blocks"], "blocks") {
                blocks.push(block.clone());
            }
        }
    }
    blocks
}

/// The trail's actions, in order.
async fn actions(service: &Service) -> Vec<String> {
    trail::all(&service.db.pool)
        .await
        .expect("the trail")
        .into_iter()
        .map(|r| r.action)
        .collect()
}

async fn report_figures_equal_the_ledger_summed_independently(db: &TestDb) {
    let (service, _clock) = db.service().await;
    service
        .create_emission("Test", &Stake::ALL, 1)
        .await
        .expect("create an emission");
    // Per block: units sold, stakes taken, wins won, wins credited (as seen by
    // the players' balances), wins pending.
    #[derive(Default, Debug)]
    struct Sums {
        sold: i64,
        stakes: i64,
        won: i64,
        credited: i64,
        pending: i64,
        per_level: HashMap<u8, i64>,
    }
    let mut sums: HashMap<i64, Sums> = HashMap::new();
    for p in 0..4 {
        let player = player(&service, &format!("player{p}")).await;
        service.credit(&player, 50_000).await.expect("credit");
        let mut previous: Option<(i64, i64, bool)> = None;
        for g in 0..50 {
            let stake = [50, 100, 200][(g + p) % 3];
            let before = service
                .balance_cents(player.account_id)
                .await
                .expect("balance");
            let bought = service
                .buy(&player, purchase(stake, &format!("p{p}g{g}")))
                .await
                .expect("buy");
            let play = service.play(&player, bought.play_id).await.expect("play");
            let after = service
                .balance_cents(player.account_id)
                .await
                .expect("balance");
            // A play left mid-way was settled by this purchase: its prize
            // shows in the balance beside this stake.
            if let Some((block, prize, false)) = previous {
                assert_eq!(after, before - stake + prize);
                let s = sums.entry(block).or_default();
                s.credited += prize;
                s.pending -= prize;
            }
            let s = sums.entry(play.unit.block).or_default();
            s.sold += 1;
            s.stakes += stake;
            s.won += play.outcome.prize_cents;
            s.pending += play.outcome.prize_cents;
            *s.per_level.entry(play.outcome.level.get()).or_default() += 1;
            let finish = g % 3 != 0;
            if finish {
                let before = service
                    .balance_cents(player.account_id)
                    .await
                    .expect("balance");
                for _ in 0..4 {
                    service.throw(&player, bought.play_id).await.expect("throw");
                }
                let after = service
                    .balance_cents(player.account_id)
                    .await
                    .expect("balance");
                assert_eq!(after - before, play.outcome.prize_cents);
                s.credited += play.outcome.prize_cents;
                s.pending -= play.outcome.prize_cents;
            }
            previous = Some((play.unit.block, play.outcome.prize_cents, finish));
        }
    }
    let report = report_json(db, &[]);
    let blocks = blocks_of(&report);
    assert_eq!(blocks.len(), 3);
    for block in &blocks {
        let id = block["id"].as_i64().expect("an id");
        let f = &block["figures"];
        let s = sums.remove(&id).unwrap_or_default();
        assert_eq!(f["units_sold"], json!(s.sold), "block {id}");
        assert_eq!(f["units_left"], json!(i64::from(UNITS_PER_BLOCK) - s.sold));
        assert_eq!(f["stakes_taken_cents"], json!(s.stakes), "block {id}");
        assert_eq!(f["wins_won_cents"], json!(s.won), "block {id}");
        assert_eq!(f["wins_credited_cents"], json!(s.credited), "block {id}");
        assert_eq!(f["wins_pending_cents"], json!(s.pending), "block {id}");
        for level in crate::common::items(&f["levels"], "levels") {
            let n = level["level"].as_u64().expect("a level") as u8;
            let sold = s.per_level.get(&n).copied().unwrap_or(0);
            assert_eq!(level["units_sold"], json!(sold), "block {id} level {n}");
            assert_eq!(
                level["units_left"].as_i64().expect("left") + sold,
                level["units_in_table"].as_i64().expect("table")
            );
        }
    }
    // And the report's totals equal the ledger's transfers.
    let pool = &service.db.pool;
    let ledger = |kind: &'static str| async move {
        sqlx::query_scalar::<_, i64>(
            "SELECT CAST(COALESCE(SUM(amount_cents), 0) AS BIGINT) FROM transfers WHERE kind = $1",
        )
        .bind(kind)
        .fetch_one(pool)
        .await
        .expect("a sum")
    };
    let total = &report["emissions"][0]["figures"];
    assert_eq!(total["stakes_taken_cents"], json!(ledger("stake").await));
    assert_eq!(total["wins_credited_cents"], json!(ledger("prize").await));
    let balances: i64 = scalar(
        pool,
        "SELECT CAST(SUM(balance_cents) AS BIGINT) FROM accounts",
    )
    .await;
    assert_eq!(balances, 0, "all balances sum to zero");

    // The other formats say the same: each CSV line's figures are the
    // JSON's, for its block, its stake or the emission.
    let output = db.tresor_ok(&["report", "--format", "csv"]);
    let csv = String::from_utf8_lossy(&output.stdout);
    assert_eq!(csv.lines().count(), 1 + 3 * 2 + 1, "{csv}");
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let mut compared = 0;
    for line in lines {
        let row: std::collections::HashMap<&str, &str> =
            header.iter().copied().zip(line.split(',')).collect();
        assert_eq!(row.len(), header.len(), "{line}");
        let emission = &report["emissions"][0];
        let figures = match row["scope"] {
            "block" => blocks
                .iter()
                .find(|b| row["block"].parse::<i64>().ok() == b["id"].as_i64())
                .map(|b| &b["figures"])
                .expect("a block of the JSON"),
            "stake" => crate::common::items(&emission["stakes"], "stakes")
                .iter()
                .find(|s| row["stake_cents"].parse::<i64>().ok() == s["stake_cents"].as_i64())
                .map(|s| &s["figures"])
                .expect("a stake of the JSON"),
            "emission" => &emission["figures"],
            other => panic!("scope {other}"),
        };
        for field in [
            "units_sold",
            "stakes_taken_cents",
            "wins_won_cents",
            "wins_credited_cents",
            "wins_pending_cents",
        ] {
            assert_eq!(row[field], figures[field].to_string(), "{field} in {line}");
        }
        compared += 1;
    }
    assert_eq!(compared, 3 * 2 + 1);

    // And the plain text: each row's figures are its block's, stake's or
    // the emission's in the JSON, each level's line its level's, and the
    // money lines the JSON's money.
    let output = db.tresor_ok(&["report"]);
    let text = String::from_utf8_lossy(&output.stdout);
    let emission = &report["emissions"][0];
    let stakes = crate::common::items(&emission["stakes"], "stakes");
    let (mut rows, mut levels, mut money) = (0, 0, 0);
    let mut level_stake = None;
    for line in text.lines() {
        let chars: Vec<char> = line.chars().collect();
        let label: String = chars.iter().take(18).collect::<String>().trim().to_owned();
        let mut words = label.split(' ');
        let figures = match (words.next(), words.next()) {
            (Some("block"), Some(id)) => blocks
                .iter()
                .find(|b| id.parse::<i64>().ok() == b["id"].as_i64())
                .map(|b| &b["figures"])
                .expect("a block of the JSON"),
            (Some("stake"), Some(cents)) => stakes
                .iter()
                .find(|s| cents.parse::<i64>().ok() == s["stake_cents"].as_i64())
                .map(|s| &s["figures"])
                .expect("a stake of the JSON"),
            (Some("emission"), None) => &emission["figures"],
            (Some("prizes"), _) => {
                // "  prizes left at stake 50 c (level: …)": the level lines follow.
                let cents: i64 = label_after(line, "at stake ").parse().expect("a stake");
                level_stake = Some(
                    stakes
                        .iter()
                        .find(|s| s["stake_cents"].as_i64() == Some(cents))
                        .expect("a stake of the JSON"),
                );
                continue;
            }
            (Some("level"), Some(n)) => {
                // "    level 3:   left /   table ×   prize =   liability"
                let n: u64 = n.trim_end_matches(':').parse().expect("a level");
                let stake = level_stake.expect("level lines follow their stake");
                let level = crate::common::items(&stake["figures"]["levels"], "levels")
                    .iter()
                    .find(|l| l["level"].as_u64() == Some(n))
                    .expect("a level of the JSON");
                let rest = line.split_once(':').expect("a level line").1;
                let (left, rest) = rest.split_once('/').expect("left / table");
                let (table, rest) = rest.split_once('×').expect("table × prize");
                let (prize, liability) = rest.split_once('=').expect("prize = liability");
                assert_eq!(left.trim(), level["units_left"].to_string(), "{line}");
                assert_eq!(table.trim(), level["units_in_table"].to_string(), "{line}");
                assert_eq!(
                    Some(cents_of(prize)),
                    level["prize_cents"].as_i64(),
                    "{line}"
                );
                assert_eq!(
                    Some(cents_of(liability)),
                    level["prizes_left_cents"].as_i64(),
                    "{line}"
                );
                levels += 1;
                continue;
            }
            _ => {
                if let Some((name, field)) =
                    MONEY_LINES.iter().find(|(name, _)| label_is(line, name))
                {
                    let amount = &line[line.find(name).unwrap() + name.len()..];
                    assert_eq!(
                        Some(cents_of(amount)),
                        report["money"][field].as_i64(),
                        "{line}"
                    );
                    money += 1;
                }
                continue;
            }
        };
        // The columns, fixed widths after the 18 of the label: state, sold,
        // left, stakes, wins won, credited, pending, prizes left, payout
        // (euros are grouped with spaces, so widths, not words).
        let mut at = 18;
        let mut column = |width: usize| {
            let cell: String = chars[at + 1..(at + 1 + width).min(chars.len())]
                .iter()
                .collect();
            at += 1 + width;
            cell.trim().to_owned()
        };
        let _state = column(9);
        assert_eq!(
            column(8),
            figures["units_sold"].to_string(),
            "sold in {line}"
        );
        assert_eq!(
            column(8),
            figures["units_left"].to_string(),
            "left in {line}"
        );
        for field in [
            "stakes_taken_cents",
            "wins_won_cents",
            "wins_credited_cents",
            "wins_pending_cents",
            "prizes_left_cents",
        ] {
            let width = if field == "wins_pending_cents" {
                12
            } else {
                15
            };
            assert_eq!(
                Some(cents_of(&column(width))),
                figures[field].as_i64(),
                "{field} in {line}"
            );
        }
        let payout = column(7);
        match figures["payout_percent"].as_str() {
            Some(percent) => assert_eq!(payout, format!("{percent}%"), "{line}"),
            None => assert_eq!(payout, "-", "{line}"),
        }
        rows += 1;
    }
    assert_eq!(
        rows,
        3 * 2 + 1,
        "every block, stake and the emission:\n{text}"
    );
    let level_count: usize = stakes
        .iter()
        .map(|s| crate::common::items(&s["figures"]["levels"], "levels").len())
        .sum();
    assert!(level_count > 0);
    assert_eq!(levels, level_count, "every level of every stake:\n{text}");
    assert_eq!(money, MONEY_LINES.len(), "every money line:\n{text}");
    let output = db.tresor(&["report", "--emission", "99"]);
    assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
}

/// The money lines of the plain-text report and the JSON fields they show.
const MONEY_LINES: [(&str, &str); 10] = [
    ("deposits through the provider", "provider_deposits_cents"),
    ("demo deposits and operator credits", "other_deposits_cents"),
    ("received, to refund", "to_refund_cents"),
    ("withdrawals pending", "withdrawals_pending_cents"),
    ("withdrawals paid", "withdrawals_paid_cents"),
    ("kept in reserve", "reserves_cents"),
    ("stakes taken (every writer)", "stakes_taken_cents"),
    ("wins credited (every writer)", "wins_credited_cents"),
    ("players' balances", "player_balances_cents"),
    ("ledger sum (always 0)", "ledger_sum_cents"),
];

/// Whether `line` is the text report's line labelled `name`.
fn label_is(line: &str, name: &str) -> bool {
    line.trim_start().starts_with(name)
}

/// The word after `prefix` in `line`.
fn label_after<'a>(line: &'a str, prefix: &str) -> &'a str {
    let rest = &line[line.find(prefix).expect("the prefix") + prefix.len()..];
    rest.split(' ').next().unwrap_or("")
}

/// Cents from the text report's euros ("-1 234.56"): grouping spaces and
/// the point dropped.
fn cents_of(euros: &str) -> i64 {
    let euros = euros.trim();
    assert!(
        euros.len() > 3 && euros.as_bytes()[euros.len() - 3] == b'.',
        "euros with two decimals: {euros:?}"
    );
    euros
        .chars()
        .filter(|c| *c != ' ' && *c != '.')
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("euros: {euros:?}"))
}

/// Sells every unit of `block_id` but the last `keep`, writing the plays and
/// transfers the way the service would, in bulk (a whole block through the
/// service is another test's business and takes minutes on PostgreSQL).
async fn sell_block_in_bulk(service: &Service, block_id: i64, keep: usize) {
    let pool = &service.db.pool;
    let secret = crate::common::block_secrets(&service.db)
        .await
        .into_iter()
        .find(|(id, _)| *id == block_id)
        .expect("the secret")
        .1;
    let stake_cents: i64 = sqlx::query_scalar("SELECT stake_cents FROM blocks WHERE id = $1")
        .bind(block_id)
        .fetch_one(pool)
        .await
        .expect("the stake");
    let stake = Stake::try_from(stake_cents).expect("a stake");
    let outcomes = block_outcomes(&secret);
    let buyer = player(service, "bulk").await;
    // The service's writer stakes into and pays from its own accounts.
    let accounts = crate::common::ledger::writer_accounts(&service.db).await;
    let sold = outcomes.len() - keep;
    let first_id: i64 =
        sqlx::query_scalar::<_, i64>("SELECT CAST(COALESCE(MAX(id), 0) AS BIGINT) FROM plays")
            .fetch_one(pool)
            .await
            .expect("max id")
            + 1;
    let mut tx = pool.begin().await.expect("a transaction");
    let mut stakes = 0i64;
    let mut prizes = 0i64;
    for chunk_start in (0..sold).step_by(1000) {
        let chunk_end = (chunk_start + 1000).min(sold);
        let mut sql = String::from(
            "INSERT INTO plays (id, player_id, block_id, unit_index, stake_cents, level, prize_cents, \
             throws_made, state, idempotency_key, request_hash, created_at_ms, finished_at_ms) VALUES ",
        );
        let mut transfers = String::from(
            "INSERT INTO transfers (debit_account_id, credit_account_id, amount_cents, kind, play_id, \
             created_at_ms) VALUES ",
        );
        let mut first_transfer = true;
        for (index, &level) in outcomes
            .iter()
            .enumerate()
            .take(chunk_end)
            .skip(chunk_start)
        {
            let id = first_id + index as i64;
            let prize = stake.prize_cents(level);
            stakes += stake_cents;
            prizes += prize;
            if index > chunk_start {
                sql.push(',');
            }
            sql.push_str(&format!(
                "({id}, {}, {block_id}, {index}, {stake_cents}, {}, {prize}, 4, 'finished', 'bulk{index}', 'x', 1, 1)",
                buyer.id,
                level.get()
            ));
            if !first_transfer {
                transfers.push(',');
            }
            first_transfer = false;
            transfers.push_str(&format!(
                "({}, {}, {stake_cents}, 'stake', {id}, 1)",
                buyer.account_id, accounts.stakes
            ));
            if prize > 0 {
                transfers.push_str(&format!(
                    ",({}, {}, {prize}, 'prize', {id}, 1)",
                    accounts.prizes, buyer.account_id
                ));
            }
        }
        sqlx::raw_sql(&sql)
            .execute(&mut *tx)
            .await
            .expect("insert plays");
        sqlx::raw_sql(&transfers)
            .execute(&mut *tx)
            .await
            .expect("insert transfers");
    }
    // The buyer's deposits paid for the stakes; balances follow the transfers.
    let deposits = stakes;
    sqlx::query(
        "INSERT INTO transfers (debit_account_id, credit_account_id, amount_cents, kind, created_at_ms) \
         VALUES ($1, $2, $3, 'deposit', 1)",
    )
    .bind(tresor::service::DEPOSITS_ACCOUNT)
    .bind(buyer.account_id)
    .bind(deposits)
    .execute(&mut *tx)
    .await
    .expect("a deposit");
    for (account, delta) in [
        (tresor::service::DEPOSITS_ACCOUNT, -deposits),
        (buyer.account_id, deposits - stakes + prizes),
        (accounts.stakes, stakes),
        (accounts.prizes, -prizes),
    ] {
        sqlx::query("UPDATE accounts SET balance_cents = balance_cents + $1 WHERE id = $2")
            .bind(delta)
            .bind(account)
            .execute(&mut *tx)
            .await
            .expect("a balance");
    }
    sqlx::query("UPDATE blocks SET units_sold = $1 WHERE id = $2")
        .bind(sold as i64)
        .bind(block_id)
        .execute(&mut *tx)
        .await
        .expect("units sold");
    if service.db.backend == Backend::Postgres {
        sqlx::query(
            "SELECT setval(pg_get_serial_sequence('plays', 'id'), (SELECT MAX(id) FROM plays))",
        )
        .execute(&mut *tx)
        .await
        .expect("move the id sequence");
    }
    tx.commit().await.expect("commit");
}

async fn a_sold_out_block_reports_exactly_its_table(db: &TestDb) {
    let (service, _clock) = db.service().await;
    let emission = service
        .create_emission("Test", &[Stake::ALL[0]], 1)
        .await
        .expect("create an emission");
    let block_id = service.blocks().await.expect("blocks")[0].id;
    sell_block_in_bulk(&service, block_id, 20).await;
    // The last units go through the service, which marks the block sold out.
    let last = player(&service, "last").await;
    service.credit(&last, 1_000_000).await.expect("credit");
    for i in 0..20 {
        let bought = service
            .buy(&last, purchase(50, &format!("last{i}")))
            .await
            .expect("buy");
        if i % 2 == 0 {
            for _ in 0..4 {
                service.throw(&last, bought.play_id).await.expect("throw");
            }
        }
    }
    assert_eq!(
        service
            .buy(&last, purchase(50, "one-too-many"))
            .await
            .err()
            .map(|e| e.to_string()),
        Some(tresor::error::Error::SoldOut.to_string())
    );
    let report = report_json(db, &["--emission", &emission.to_string()]);
    let block = &blocks_of(&report)[0];
    assert_eq!(block["state"], "sold_out");
    let f = &block["figures"];
    let stake = Stake::ALL[0];
    assert_eq!(f["units_sold"], json!(UNITS_PER_BLOCK));
    assert_eq!(f["units_left"], json!(0));
    assert_eq!(
        f["stakes_taken_cents"],
        json!(i64::from(UNITS_PER_BLOCK) * 50)
    );
    assert_eq!(f["wins_won_cents"], json!(stake.block_prizes_cents()));
    assert_eq!(f["prizes_left_cents"], json!(0));
    assert_eq!(f["payout_percent"], "70.00");
    assert_eq!(
        f["wins_credited_cents"].as_i64().expect("credited")
            + f["wins_pending_cents"].as_i64().expect("pending"),
        stake.block_prizes_cents()
    );
    let levels = crate::common::items(&f["levels"], "levels");
    assert_eq!(levels.len(), LEVELS.len(), "every level of the table");
    for (level, spec) in levels.iter().zip(&LEVELS) {
        assert_eq!(level["units_sold"], json!(spec.units_per_block));
        assert_eq!(level["units_left"], json!(0));
        assert_eq!(
            level["prize_cents"],
            json!(stake.prize_cents(Level::new(spec.level).expect("a level")))
        );
    }
    // Sold out, the block's secret is public and matches its commitment.
    let api = Api::new(&service);
    let answer = api.get("/api/blocks").await;
    let listed = &answer.body["blocks"][0];
    let secret = listed["secret"].as_str().expect("the secret is published");
    let bytes = hex::decode(secret).expect("hex");
    assert_eq!(
        tresor::service::sha256_hex(&bytes),
        listed["commitment"].as_str().expect("a commitment")
    );
}

async fn a_suspended_block_is_not_sold_and_sales_go_on_from_another_block(db: &TestDb) {
    let (service, _clock) = db.service().await;
    service
        .create_emission("Test", &[Stake::ALL[1]], 2)
        .await
        .expect("create an emission");
    let ids = block_ids(&service).await;
    let (first, second) = (ids[0], ids[1]);
    let api = Api::new(&service);
    let cookie = api.register("alice").await;
    let alice = service.player_by_username("alice").await.expect("alice");
    service.credit(&alice, 10_000).await.expect("credit");
    let buy = |key: &'static str| {
        let api = api.clone();
        let cookie = cookie.clone();
        async move { api.buy(&cookie, 100, key).await }
    };

    db.tresor_ok(&["block", "suspend", &first.to_string()]);
    let answer = buy("k1").await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text);
    assert_eq!(
        answer.body["unit"]["block"],
        json!(second),
        "sold from the other block"
    );

    db.tresor_ok(&["block", "suspend", &second.to_string()]);
    let answer = buy("k2").await;
    assert_eq!(answer.status, StatusCode::CONFLICT, "{}", answer.text);
    assert_eq!(answer.body["error"]["code"], "sold_out");
    let status = api.get("/api/status").await;
    assert_eq!(status.body["sales_open"], json!(false), "{}", status.text);

    // Suspended blocks keep their secrets.
    let listed = api.get("/api/blocks").await;
    for block in crate::common::items(&listed.body["blocks"], "blocks") {
        assert_eq!(block["state"], "suspended");
        assert_eq!(block["secret"], Value::Null);
    }

    // Bad requests: one line, exit 2.
    for args in [
        ["block".to_owned(), "suspend".to_owned(), second.to_string()],
        ["block".to_owned(), "resume".to_owned(), "9999".to_owned()],
        [
            "block".to_owned(),
            "suspend".to_owned(),
            "not-a-number".to_owned(),
        ],
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = db.tresor(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", describe(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    }

    db.tresor_ok(&["block", "resume", &first.to_string()]);
    let answer = buy("k3").await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text);
    assert_eq!(answer.body["unit"]["block"], json!(first));

    let trail = trail::all(&service.db.pool).await.expect("the trail");
    let control: Vec<(String, String)> = trail
        .iter()
        .filter(|r| r.action.starts_with("block_"))
        .map(|r| (r.actor.clone(), format!("{} {}", r.action, r.request)))
        .collect();
    assert_eq!(
        control,
        vec![
            (
                "operator".to_owned(),
                format!("block_suspend {{\"block_id\":{first}}}")
            ),
            (
                "operator".to_owned(),
                format!("block_suspend {{\"block_id\":{second}}}")
            ),
            (
                "operator".to_owned(),
                format!("block_resume {{\"block_id\":{first}}}")
            ),
        ]
    );
}

async fn purchases_before_the_sales_opening_are_refused_with_sales_closed(db: &TestDb) {
    let (service, clock) = db.service().await;
    service
        .create_emission("Test", &Stake::ALL, 1)
        .await
        .expect("create an emission");
    let api = Api::new(&service);
    let cookie = api.register("alice").await;
    let alice = service.player_by_username("alice").await.expect("alice");
    service.credit(&alice, 10_000).await.expect("credit");

    let opening = rfc3339(crate::common::START_MS + 600_000);
    db.tresor_ok(&["sales", "open-at", &opening]);
    let status = api.get("/api/status").await;
    assert_eq!(status.body["sales_open"], json!(false), "{}", status.text);
    assert_eq!(status.body["opens_at"], json!(opening));
    let answer = api.buy(&cookie, 50, "a").await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN, "{}", answer.text);
    assert_eq!(answer.body["error"]["code"], "sales_closed");
    assert_eq!(
        service
            .balance_cents(alice.account_id)
            .await
            .expect("balance"),
        10_000
    );

    // At the opening time, sales open by themselves.
    clock.advance_ms(600_000);
    assert_eq!(api.get("/api/status").await.body["sales_open"], json!(true));
    let answer = api.buy(&cookie, 50, "b").await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text);

    // Set far ahead then cleared: open again.
    db.tresor_ok(&["sales", "open-at", "2099-01-01T00:00:00+01:00"]);
    assert_eq!(
        api.get("/api/status").await.body["sales_open"],
        json!(false)
    );
    db.tresor_ok(&["sales", "open-at", "--clear"]);
    let status = api.get("/api/status").await;
    assert_eq!(status.body["sales_open"], json!(true));
    assert_eq!(status.body["opens_at"], Value::Null);

    for args in [
        &["sales", "open-at", "tomorrow"][..],
        &["sales", "open-at"][..],
        &["sales", "open-at", "2099-01-01T00:00:00Z", "--clear"][..],
    ] {
        let out = db.tresor(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", describe(&out));
    }
    let actions = actions(&service).await;
    assert_eq!(actions.iter().filter(|a| *a == "sales_open_at").count(), 3);
}

async fn an_announcement_is_shown_by_the_status_api_until_cleared(db: &TestDb) {
    let (service, _clock) = db.service().await;
    let api = Api::new(&service);
    assert_eq!(api.get("/api/status").await.body["message"], Value::Null);
    let text = "Maintenance ce soir à 22 h — « L'Ile au Trésor » revient demain";
    db.tresor_ok(&["announce", text]);
    assert_eq!(api.get("/api/status").await.body["message"], json!(text));
    db.tresor_ok(&["announce", "--clear"]);
    assert_eq!(api.get("/api/status").await.body["message"], Value::Null);
    for args in [&["announce"][..], &["announce", "   "][..]] {
        let out = db.tresor(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", describe(&out));
    }
    let records = trail::all(&service.db.pool).await.expect("the trail");
    let announces: Vec<&str> = records
        .iter()
        .filter(|r| r.action == "announce")
        .map(|r| r.actor.as_str())
        .collect();
    assert_eq!(announces, ["operator", "operator"]);
}

async fn the_public_block_list_never_shows_the_secret_of_a_block_on_sale(db: &TestDb) {
    let (service, _clock) = db.service().await;
    let emission = service
        .create_emission("Test", &Stake::ALL, 2)
        .await
        .expect("create an emission");
    let ids = block_ids(&service).await;
    service.suspend_block(ids[1]).await.expect("suspend");
    let alice = player(&service, "alice").await;
    service.credit(&alice, 1_000).await.expect("credit");
    service.buy(&alice, purchase(100, "a")).await.expect("buy");
    let secrets: Vec<Vec<u8>> = crate::common::block_secrets(&service.db)
        .await
        .iter()
        .map(|(_, secret)| secret.as_bytes().to_vec())
        .collect();
    let api = Api::new(&service);
    let answer = api.get("/api/blocks").await;
    assert_eq!(answer.status, StatusCode::OK);
    for secret in &secrets {
        assert!(
            !answer.text.contains(&hex::encode(secret)),
            "a secret leaked"
        );
        assert!(
            !answer
                .text
                .to_lowercase()
                .contains(&hex::encode_upper(secret).to_lowercase())
        );
    }
    for block in crate::common::items(&answer.body["blocks"], "blocks") {
        assert_eq!(block["secret"], Value::Null, "{block}");
    }
    // Nor does the trail or its export hold any secret.
    let out = db.tresor_ok(&["audit", "export"]);
    let export = String::from_utf8_lossy(&out.stdout);
    assert!(export.lines().count() >= 5, "{export}");
    for secret in &secrets {
        assert!(
            !export.contains(&hex::encode(secret)),
            "a secret is in the trail"
        );
    }

    // Closing the emission publishes every secret, each matching its
    // commitment.
    db.tresor_ok(&["emission", "close", &emission.to_string()]);
    let answer = api.get("/api/blocks").await;
    for block in crate::common::items(&answer.body["blocks"], "blocks") {
        let secret = block["secret"].as_str().expect("published");
        assert_eq!(
            tresor::service::sha256_hex(&hex::decode(secret).expect("hex")),
            block["commitment"].as_str().expect("a commitment")
        );
    }
}

async fn audit_export_writes_json_lines_within_the_window(db: &TestDb) {
    let (service, clock) = db.service().await;
    service
        .set_announcement(Some("one".to_owned()))
        .await
        .expect("announce");
    clock.advance_ms(60_000);
    service
        .set_announcement(Some("two".to_owned()))
        .await
        .expect("announce");
    clock.advance_ms(60_000);
    service
        .set_announcement(Some("three".to_owned()))
        .await
        .expect("announce");
    let from = rfc3339(crate::common::START_MS + 30_000);
    let to = rfc3339(crate::common::START_MS + 90_000);
    let out = db.tresor_ok(&["audit", "export", "--from", &from, "--to", &to]);
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = &lines[0];
    assert_eq!(line["action"], "announce");
    assert_eq!(line["at"], json!(rfc3339(crate::common::START_MS + 60_000)));
    // An export carries what is needed to re-check each leaf and its place
    // in the signed log: its receipt (salt, proof, checkpoint).
    let receipt: trail::Receipt =
        serde_json::from_value(line["receipt"].clone()).expect("a receipt");
    assert_eq!(receipt.record.salt, line["salt"].as_str().expect("salt"));
    assert_eq!(line["hash"], json!(hex::encode(receipt.leaf().hash().0)));
    let vkey: String = sqlx::query_scalar("SELECT vkey FROM log_keys ORDER BY id DESC LIMIT 1")
        .fetch_one(&service.db.pool)
        .await
        .expect("the key");
    receipt
        .check(&vkey)
        .expect("the exported record is in the signed log");
}

/// Two writers on one database (two servers, each `--writer`; here two
/// services): each stakes into and pays wins from its own accounts, so no
/// ledger row is written by both; the accounts 2 and 3 of the first
/// migration are left as they were; the report's money figures sum every
/// stakes and prizes account, and equal the emission's (issue 20).
async fn each_writer_stakes_into_its_own_accounts_and_the_report_sums_them(db: &TestDb) {
    let (first, clock) = db.service().await;
    first
        .create_emission("Test", &Stake::ALL, 1)
        .await
        .expect("create an emission");
    let second = Service::new(
        db.connect().await.with_writer("second"),
        clock.clone(),
        tresor::service::Settings::default(),
    );
    second.open_secrets().await.expect("open the block secrets");
    let mut staked = [0i64; 2];
    let mut won = [0i64; 2];
    for (w, service) in [&first, &second].into_iter().enumerate() {
        let player = player(service, &format!("player{w}")).await;
        service.credit(&player, 10_000).await.expect("credit");
        for g in 0..8 {
            let stake = [50, 100, 200][g % 3];
            let bought = service
                .buy(&player, purchase(stake, &format!("w{w}g{g}")))
                .await
                .expect("buy");
            for _ in 0..4 {
                service.throw(&player, bought.play_id).await.expect("throw");
            }
            let play = service.play(&player, bought.play_id).await.expect("play");
            staked[w] += stake;
            won[w] += play.outcome.prize_cents;
        }
    }
    assert!(won.iter().sum::<i64>() > 0, "some play won: {won:?}");
    let pool = &first.db.pool;
    for (w, writer) in ["server", "second"].into_iter().enumerate() {
        let rows: Vec<(i64, String, i64)> = sqlx::query_as(
            "SELECT id, kind, balance_cents FROM accounts WHERE writer = $1 ORDER BY kind",
        )
        .bind(writer)
        .fetch_all(pool)
        .await
        .expect("the writer's accounts");
        assert_eq!(rows.len(), 2, "{writer}: {rows:?}");
        let (prizes, stakes) = (&rows[0], &rows[1]);
        assert_eq!((prizes.1.as_str(), stakes.1.as_str()), ("prizes", "stakes"));
        assert!(
            stakes.0 < -5 && prizes.0 < -5,
            "below the fixed system accounts: {rows:?}"
        );
        assert_eq!(
            stakes.2, staked[w],
            "{writer}: its stakes account holds its stakes"
        );
        assert_eq!(
            prizes.2, -won[w],
            "{writer}: its prizes account paid its wins"
        );
        // Every stake of this writer's player went to its stakes account,
        // every win came from its prizes account.
        let elsewhere: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM transfers t JOIN players u \
               ON u.account_id IN (t.debit_account_id, t.credit_account_id) \
             WHERE u.username = $1 AND ((t.kind = 'stake' AND t.credit_account_id <> $2) \
               OR (t.kind = 'prize' AND t.debit_account_id <> $3))",
        )
        .bind(format!("player{w}"))
        .bind(stakes.0)
        .bind(prizes.0)
        .fetch_one(pool)
        .await
        .expect("the transfers");
        assert_eq!(
            elsewhere, 0,
            "{writer}: stakes and wins in its own accounts"
        );
    }
    let legacy: Vec<(i64, i64)> =
        sqlx::query_as("SELECT id, balance_cents FROM accounts WHERE id IN (2, 3) ORDER BY id")
            .fetch_all(pool)
            .await
            .expect("accounts 2 and 3");
    assert_eq!(
        legacy,
        [(2, 0), (3, 0)],
        "the first migration's accounts are history"
    );
    let report = report_json(db, &[]);
    let money = &report["money"];
    assert_eq!(
        money["stakes_taken_cents"],
        json!(staked.iter().sum::<i64>())
    );
    assert_eq!(money["wins_credited_cents"], json!(won.iter().sum::<i64>()));
    let emission = &crate::common::items(&report["emissions"], "emissions")[0]["figures"];
    assert_eq!(emission["stakes_taken_cents"], money["stakes_taken_cents"]);
    assert_eq!(
        emission["wins_credited_cents"],
        money["wins_credited_cents"]
    );
    assert_eq!(money["ledger_sum_cents"], json!(0));
    crate::common::assert_ledger_balances(&first.db).await;
}

/// A database made before migration 0016, whose writers' logs exist: the
/// migration gives each log its stakes and prizes accounts (the ids the
/// writer would have made), and the writer then stakes into them.
async fn a_database_from_before_0016_gets_accounts_for_the_logs_it_has(db: &TestDb) {
    let pool = db.migrated_before(16).await;
    let installation: String =
        sqlx::query_scalar("SELECT value FROM settings WHERE key = 'installation_id'")
            .fetch_one(&pool)
            .await
            .expect("the installation id");
    for writer in ["cli", "server"] {
        sqlx::query("INSERT INTO logs (writer, origin, size, created_ms) VALUES ($1, $2, 0, 1)")
            .bind(writer)
            .bind(format!("tresor/{installation}/{writer}"))
            .execute(&pool)
            .await
            .expect("a log made before 0016");
    }
    pool.close().await;

    let (service, _clock) = db.service().await;
    let pool = &service.db.pool;
    let made: Vec<(String, i64, String, i64)> = sqlx::query_as(
        "SELECT l.writer, l.id, a.kind, a.id FROM logs l JOIN accounts a ON a.writer = l.writer \
         ORDER BY l.writer, a.kind",
    )
    .fetch_all(pool)
    .await
    .expect("the logs' accounts");
    assert_eq!(made.len(), 4, "two accounts for each log: {made:?}");
    for (writer, log_id, kind, id) in &made {
        let ids = tresor::store::writer_accounts::WriterAccounts::ids_for_log(*log_id);
        let expected = if kind == "stakes" {
            ids.stakes
        } else {
            ids.prizes
        };
        assert_eq!(*id, expected, "{writer}'s {kind} account");
    }
    service
        .create_emission("Test", &Stake::ALL, 1)
        .await
        .expect("create an emission");
    let buyer = player(&service, "buyer").await;
    service.credit(&buyer, 1_000).await.expect("credit");
    service.buy(&buyer, purchase(100, "k1")).await.expect("buy");
    let accounts = crate::common::ledger::writer_accounts(&service.db).await;
    let ids = made
        .iter()
        .find(|(writer, _, kind, _)| writer == "server" && kind == "stakes")
        .expect("server's stakes account");
    assert_eq!(
        accounts.stakes, ids.3,
        "the writer found the account 0016 made"
    );
    let held: i64 = sqlx::query_scalar("SELECT balance_cents FROM accounts WHERE id = $1")
        .bind(accounts.stakes)
        .fetch_one(pool)
        .await
        .expect("its balance");
    assert_eq!(held, 100);
    let report = report_json(db, &[]);
    assert_eq!(report["money"]["stakes_taken_cents"], json!(100));
    crate::common::assert_ledger_balances(&service.db).await;
}

on_both!(
    a_database_from_before_0016_gets_accounts_for_the_logs_it_has,
    each_writer_stakes_into_its_own_accounts_and_the_report_sums_them,
    report_figures_equal_the_ledger_summed_independently,
    a_sold_out_block_reports_exactly_its_table,
    a_suspended_block_is_not_sold_and_sales_go_on_from_another_block,
    purchases_before_the_sales_opening_are_refused_with_sales_closed,
    an_announcement_is_shown_by_the_status_api_until_cleared,
    the_public_block_list_never_shows_the_secret_of_a_block_on_sale,
    audit_export_writes_json_lines_within_the_window,
);
