//! A sold-out block reports exactly its table; a suspended block is not sold and sales go on
//! from another.

use super::*;

on_both!(
    a_sold_out_block_reports_exactly_its_table,
    a_suspended_block_is_not_sold_and_sales_go_on_from_another_block,
);

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
