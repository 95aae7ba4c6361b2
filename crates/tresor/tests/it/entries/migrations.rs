//! Databases from before 0021 and 0022 migrate and still verify.

use super::*;

on_both!(
    a_database_from_before_0021_migrates_and_still_verifies,
    a_database_from_before_0022_migrates_and_still_verifies,
);

/// Puts a database back in the shape the code before migration 0021 left
/// it: every stored hash a row of `log_hashes` (as that code wrote them),
/// no tiles, the trail's indexes by time and action, the transfers' indexes
/// over every account, plays without their record's leaf, and 0021 not
/// applied.
async fn back_to_before_0021(pool: &sqlx::AnyPool, backend: Backend) {
    let hex = match backend {
        Backend::Sqlite => "hex(hashes)",
        Backend::Postgres => "encode(hashes, 'hex')",
    };
    let tiles: Vec<(i64, i64, i64, i64, String)> = sqlx::query_as(&format!(
        "SELECT log_id, level, chunk, first_pos, {hex} FROM log_tiles"
    ))
    .fetch_all(pool)
    .await
    .expect("the tiles");
    assert!(!tiles.is_empty(), "the log's hashes are kept by tile");
    for (log_id, level, chunk, first, hashes) in tiles {
        let bytes = hex::decode(hashes).expect("hex");
        for (k, hash) in bytes.chunks_exact(32).enumerate() {
            let n = chunk as u64 * tresor::trail::tiles::WIDTH + first as u64 + k as u64;
            sqlx::query("INSERT INTO log_hashes (log_id, idx, hash) VALUES ($1, $2, $3)")
                .bind(log_id)
                .bind(tlog_tiles::stored_hash_index(level as u8, n) as i64)
                .bind(hash.to_vec())
                .execute(pool)
                .await
                .expect("a stored hash as the code before wrote it");
        }
    }
    for statement in [
        "DROP TABLE log_tiles",
        "DROP INDEX trail_v1_seals",
        "CREATE INDEX trail_by_action ON trail (action, seq)",
        "CREATE INDEX trail_by_time ON trail (at_ms)",
        "DROP INDEX transfers_by_debit",
        "DROP INDEX transfers_by_credit",
        "CREATE INDEX transfers_by_debit ON transfers (debit_account_id)",
        "CREATE INDEX transfers_by_credit ON transfers (credit_account_id)",
        "ALTER TABLE plays DROP COLUMN buy_log_id",
        "ALTER TABLE plays DROP COLUMN buy_idx",
        "DELETE FROM _sqlx_migrations WHERE version = 21",
    ] {
        sqlx::query(statement)
            .execute(pool)
            .await
            .unwrap_or_else(|error| panic!("{statement}: {error}"));
    }
}

/// Every receipt of `plays` checks against the installation's key.
async fn assert_receipts_check(service: &Service, plays: &[(Player, i64)]) {
    let key = service.db.log_key.as_ref().expect("a log key");
    let key = tresor::logcheck::VerifierKey::parse(key.vkey()).expect("the verifier key");
    for (player, play) in plays {
        let receipt = service
            .play_receipt(player, *play)
            .await
            .expect("read a receipt")
            .unwrap_or_else(|| panic!("play {play} has its receipt"));
        let receipt: tresor::logcheck::Receipt =
            serde_json::from_value(serde_json::to_value(&receipt).expect("JSON"))
                .expect("a receipt");
        tresor::logcheck::check_receipt(&receipt, &key)
            .unwrap_or_else(|error| panic!("play {play}'s receipt: {error:?}"));
    }
}

/// A database made before 0021 (its log's hashes a row each, no tiles)
/// migrates: its plays find their receipts, the writer appends tiles after
/// the hashes stored before (a chunk begun in `log_hashes` goes on in a
/// tile), and `tresor audit verify` and every receipt still check.
async fn a_database_from_before_0021_migrates_and_still_verifies(db: &TestDb) {
    let (service, _clock) = db.service().await;
    service
        .create_emission("Before", &Stake::ALL, 1)
        .await
        .expect("an emission");
    let everyone = players(&service, "b", 7).await;
    let mut plays = Vec::new();
    for round in 0..3 {
        for player in &everyone {
            let bought = service
                .buy(player, purchase(50, &format!("before-{round}")))
                .await
                .expect("bought");
            plays.push((player.clone(), bought.play_id));
        }
    }
    service.db.pool.close().await;
    drop(service);
    let pool = sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect(&db.url)
        .await
        .expect("connect");
    back_to_before_0022(&pool, db.backend).await;
    back_to_before_0021(&pool, db.backend).await;
    pool.close().await;

    let (service, _clock) = db.service().await;
    let leaves: i64 = crate::common::scalar(
        &service.db.pool,
        "SELECT COUNT(*) FROM plays WHERE buy_log_id IS NOT NULL AND buy_idx IS NOT NULL",
    )
    .await;
    assert_eq!(
        leaves,
        plays.len() as i64,
        "0021 gave every play its record"
    );
    assert_receipts_check(&service, &plays).await;
    for round in 0..3 {
        for player in &everyone {
            let bought = service
                .buy(player, purchase(50, &format!("after-{round}")))
                .await
                .expect("bought");
            plays.push((player.clone(), bought.play_id));
        }
    }
    let continued: i64 = crate::common::scalar(
        &service.db.pool,
        "SELECT COUNT(*) FROM log_tiles WHERE first_pos > 0",
    )
    .await;
    assert!(
        continued > 0,
        "a chunk begun in log_hashes goes on in a tile"
    );
    assert_receipts_check(&service, &plays).await;
    assert_ledger_balances(&service.db).await;
    let verdict = trail::verify(&service.db.pool, |_| {})
        .await
        .expect("verify");
    assert!(matches!(verdict, Verdict::Intact { .. }), "{verdict:?}");
    let output = db.tresor(&["audit", "verify"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        crate::common::describe(&output)
    );
}

/// Puts a database back in the shape the code before migration 0022 left
/// it: each player's hour of stakes a row of `movement_hours` (as that code
/// wrote them), the index of plays in progress, stakes in the index of
/// transfers by debited account, the purchase keys in one table with its
/// index by time, and 0022 not applied.
async fn back_to_before_0022(pool: &sqlx::AnyPool, backend: Backend) {
    let keys = match backend {
        Backend::Sqlite => {
            "CREATE TABLE purchase_keys (player_id INTEGER NOT NULL, key TEXT NOT NULL, \
             play_id INTEGER NOT NULL, at_ms INTEGER NOT NULL, PRIMARY KEY (player_id, key)) \
             WITHOUT ROWID"
        }
        Backend::Postgres => {
            "CREATE TABLE purchase_keys (player_id BIGINT NOT NULL, key TEXT NOT NULL, \
             play_id BIGINT NOT NULL, at_ms BIGINT NOT NULL, PRIMARY KEY (player_id, key))"
        }
    };
    for statement in [
        keys,
        "INSERT INTO purchase_keys (player_id, key, play_id, at_ms) \
         SELECT player_id, key, play_id, at_ms FROM purchase_keys_0 UNION ALL \
         SELECT player_id, key, play_id, at_ms FROM purchase_keys_1 UNION ALL \
         SELECT player_id, key, play_id, at_ms FROM purchase_keys_2",
        "CREATE INDEX purchase_keys_by_time ON purchase_keys (at_ms)",
        "DROP TABLE purchase_keys_0",
        "DROP TABLE purchase_keys_1",
        "DROP TABLE purchase_keys_2",
        "INSERT INTO movement_hours (player_id, kind, hour_ms, amount_cents) \
         SELECT pl.id, 'stake', a.stake_hour_ms, a.stake_hour_cents \
         FROM players pl JOIN accounts a ON a.id = pl.account_id \
         WHERE a.stake_hour_ms IS NOT NULL ON CONFLICT (player_id, kind, hour_ms) \
         DO UPDATE SET amount_cents = movement_hours.amount_cents + excluded.amount_cents",
        "ALTER TABLE accounts DROP COLUMN stake_hour_ms",
        "ALTER TABLE accounts DROP COLUMN stake_hour_cents",
        "CREATE INDEX plays_in_progress ON plays (created_at_ms) WHERE state = 'in_progress'",
        "DROP INDEX transfers_by_debit",
        "CREATE INDEX transfers_by_debit ON transfers (debit_account_id) \
         WHERE debit_account_id > -1000",
        "DELETE FROM _sqlx_migrations WHERE version = 22",
    ] {
        sqlx::query(statement)
            .execute(pool)
            .await
            .unwrap_or_else(|error| panic!("{statement}: {error}"));
    }
}

/// The stakes counted against each player's 7-day cap.
async fn stakes_used(service: &Service, everyone: &[Player]) -> Vec<i64> {
    let mut used = Vec::new();
    for player in everyone {
        let (limits, _) = service.protection(player).await.expect("the caps");
        used.push(limits.stake.used_cents);
    }
    used
}

/// A database made before 0022 (stakes counted in `movement_hours` only,
/// the index of plays in progress, purchase keys in one table) migrates: the stakes counted before
/// still count against the caps, and the new ones add to them; its plays
/// in progress are still found, settled by the next purchase or, left
/// alone, by the settler; its purchase keys still replay; `tresor audit
/// verify`, every receipt and the ledger still check.
async fn a_database_from_before_0022_migrates_and_still_verifies(db: &TestDb) {
    let (service, _clock) = db.service().await;
    service
        .create_emission("Before", &Stake::ALL, 1)
        .await
        .expect("an emission");
    let everyone = players(&service, "m", 6).await;
    let mut plays = Vec::new();
    for round in 0..2 {
        for player in &everyone {
            let bought = service
                .buy(player, purchase(50, &format!("before-{round}")))
                .await
                .expect("bought");
            plays.push((player.clone(), bought.play_id));
        }
    }
    let used_before = stakes_used(&service, &everyone).await;
    assert!(
        used_before.iter().all(|&cents| cents == 100),
        "{used_before:?}"
    );
    service.db.pool.close().await;
    drop(service);
    let pool = sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect(&db.url)
        .await
        .expect("connect");
    back_to_before_0022(&pool, db.backend).await;
    pool.close().await;

    let (service, clock) = db.service().await;
    assert_eq!(stakes_used(&service, &everyone).await, used_before);
    let in_progress = |ids: &[i64]| {
        format!(
            "SELECT COUNT(*) FROM plays WHERE state = 'in_progress' AND id IN ({})",
            ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
        )
    };
    let last: Vec<i64> = plays[everyone.len()..].iter().map(|(_, id)| *id).collect();
    assert_eq!(
        crate::common::scalar(&service.db.pool, &in_progress(&last)).await,
        everyone.len() as i64,
        "each player's last play is in progress at the migration"
    );
    // A key of before replays; half the players buy again, which settles
    // their play of before; the settler finds the others'.
    for (n, player) in everyone.iter().enumerate() {
        let replay = service
            .buy(player, purchase(50, "before-1"))
            .await
            .expect("replayed");
        assert!(replay.replayed, "a key of before replays");
        assert_eq!(replay.play_id, last[n]);
        if n % 2 == 0 {
            let bought = service
                .buy(player, purchase(50, "after"))
                .await
                .expect("bought");
            plays.push((player.clone(), bought.play_id));
        }
    }
    let used_after = stakes_used(&service, &everyone).await;
    for (n, (before, after)) in used_before.iter().zip(&used_after).enumerate() {
        let bought = if n % 2 == 0 { 50 } else { 0 };
        assert_eq!(*after, before + bought, "player {n}: {used_after:?}");
    }
    clock.advance_ms(service.settings.auto_settle_after_s * 1000 + 1);
    let settled = service.settle_abandoned().await.expect("settle");
    assert_eq!(settled, everyone.len(), "the plays left: before and after");
    assert_eq!(
        crate::common::scalar(&service.db.pool, &in_progress(&last)).await,
        0,
        "every play of before is settled"
    );
    assert_eq!(service.settle_abandoned().await.expect("settle"), 0);

    assert_receipts_check(&service, &plays).await;
    assert_ledger_balances(&service.db).await;
    let verdict = trail::verify(&service.db.pool, |_| {})
        .await
        .expect("verify");
    assert!(matches!(verdict, Verdict::Intact { .. }), "{verdict:?}");
    let output = db.tresor(&["audit", "verify"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        crate::common::describe(&output)
    );
}
