//! Each writer stakes into its own accounts, and a database from before 0016 gets them.

use super::*;

on_both!(
    a_database_from_before_0016_gets_accounts_for_the_logs_it_has,
    each_writer_stakes_into_its_own_accounts_and_the_report_sums_them,
);

/// Two writers on one database (two servers, each `--writer`; here two
/// services): each stakes into and pays wins from its own accounts, so no
/// ledger row is written by both; the accounts 2 and 3 of the first
/// migration are left as they were; the report's money figures sum every
/// stakes and prizes account, and equal the emission's (issue 20).
async fn each_writer_stakes_into_its_own_accounts_and_the_report_sums_them(db: &TestDb) {
    let (first, clock) = db.service_selling("Test").await;
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
        service.credit(&player, 100_000).await.expect("credit");
        // Eight games at least, and on until this writer has paid a win (a
        // unit wins about once in 2.7: eight games all lost happen once in
        // 40 runs or so, 200 once in never).
        let mut g = 0;
        while g < 8 || won[w] == 0 {
            assert!(g < 200, "no win in 200 games");
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
            g += 1;
        }
    }
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
