//! Databases from before 0021 and 0022 migrate and still verify. Each is
//! made of the schema of the migrations before it only and of rows written
//! into it with plain SQL as the code of before wrote them
//! ([`crate::common::before`]); today's migrations then run on it.

use super::*;
use crate::common::before::Today;

on_both!(
    a_database_from_before_0021_migrates_and_still_verifies,
    a_database_from_before_0022_migrates_and_still_verifies,
);

/// Writes into `old` (the schema before 0021, today's rows copied) what
/// the code before 0021 wrote where today's writes otherwise: every stored
/// hash of the log a row of `log_hashes`, from today's tiles.
async fn written_before_0021(old: &sqlx::AnyPool, backend: Backend) {
    let hex = match backend {
        Backend::Sqlite => "hex(hashes)",
        Backend::Postgres => "encode(hashes, 'hex')",
    };
    let tiles: Vec<(i64, i64, i64, i64, String)> = sqlx::query_as(&format!(
        "SELECT log_id, level, chunk, first_pos, {hex} FROM today.log_tiles"
    ))
    .fetch_all(old)
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
                .execute(old)
                .await
                .expect("a stored hash as the code before wrote it");
        }
    }
}

/// A database as the code before migration `version` (21 or 22) left it,
/// in `db`: the schema of the migrations before it, the rows `today` wrote
/// copied in, and what that code wrote differently. Checks that every play
/// was copied.
async fn made_before(db: &TestDb, today: &Today, version: i64, plays: usize) {
    let old = db.migrated_before(version).await;
    today.open_on(&old).await;
    let copied = today.copy_into(&old).await;
    eprintln!("copied before {version:04}: {copied:?}");
    let plays_copied = copied.iter().find(|(table, _)| table == "plays");
    assert_eq!(plays_copied.map(|(_, rows)| *rows), Some(plays as i64));
    written_before_0022(&old).await;
    if version == 21 {
        written_before_0021(&old, db.backend).await;
    }
    today.close_on(&old).await;
    old.close().await;
}

/// A service of today writing beside `db` ([`Today`]), with an emission
/// on sale and `count` players named `prefix-N`.
async fn written_today(db: &TestDb, prefix: &str, count: usize) -> (Today, Service, Vec<Player>) {
    let today = Today::beside(db).await;
    let (service, _clock) = today.service().await;
    service
        .create_emission("Before", &Stake::ALL, 1)
        .await
        .expect("an emission");
    let everyone = players(&service, prefix, count).await;
    (today, service, everyone)
}

/// `rounds` purchases by each of `everyone`, keyed `label-ROUND`, added to
/// `plays`.
async fn buy_rounds(
    service: &Service,
    everyone: &[Player],
    label: &str,
    rounds: usize,
    plays: &mut Vec<(Player, i64)>,
) {
    for round in 0..rounds {
        for player in everyone {
            let bought = service
                .buy(player, purchase(50, &format!("{label}-{round}")))
                .await
                .expect("bought");
            plays.push((player.clone(), bought.play_id));
        }
    }
}

/// Every receipt of `plays` checks, the ledger balances, the trail
/// verifies, and so does `tresor audit verify`.
async fn assert_still_verifies(db: &TestDb, service: &Service, plays: &[(Player, i64)]) {
    assert_receipts_check(service, plays).await;
    assert_ledger_balances(&service.db).await;
    assert_trail_verifies(&service.db).await;
    let output = db.tresor(&["audit", "verify"]);
    assert_exit(&output, 0);
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
    let (today, service, everyone) = written_today(db, "b", 7).await;
    let mut plays = Vec::new();
    buy_rounds(&service, &everyone, "before", 3, &mut plays).await;
    service.db.pool.close().await;
    drop(service);
    made_before(db, &today, 21, plays.len()).await;

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
    buy_rounds(&service, &everyone, "after", 3, &mut plays).await;
    let continued: i64 = crate::common::scalar(
        &service.db.pool,
        "SELECT COUNT(*) FROM log_tiles WHERE first_pos > 0",
    )
    .await;
    assert!(
        continued > 0,
        "a chunk begun in log_hashes goes on in a tile"
    );
    assert_still_verifies(db, &service, &plays).await;
}

/// Writes into `old` (a schema before 0022, today's rows copied) what the
/// code before 0022 wrote where today's writes otherwise: the purchase keys
/// in one table, each player's hour of stakes a row of `movement_hours`.
async fn written_before_0022(old: &sqlx::AnyPool) {
    for statement in [
        "INSERT INTO purchase_keys (player_id, key, play_id, at_ms) \
         SELECT player_id, key, play_id, at_ms FROM today.purchase_keys_0 UNION ALL \
         SELECT player_id, key, play_id, at_ms FROM today.purchase_keys_1 UNION ALL \
         SELECT player_id, key, play_id, at_ms FROM today.purchase_keys_2",
        "INSERT INTO movement_hours (player_id, kind, hour_ms, amount_cents) \
         SELECT pl.id, 'stake', a.stake_hour_ms, a.stake_hour_cents \
         FROM today.players pl JOIN today.accounts a ON a.id = pl.account_id \
         WHERE a.stake_hour_ms IS NOT NULL ON CONFLICT (player_id, kind, hour_ms) \
         DO UPDATE SET amount_cents = movement_hours.amount_cents + excluded.amount_cents",
    ] {
        sqlx::query(statement)
            .execute(old)
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
    let (today, service, everyone) = written_today(db, "m", 6).await;
    let mut plays = Vec::new();
    buy_rounds(&service, &everyone, "before", 2, &mut plays).await;
    let used_before = stakes_used(&service, &everyone).await;
    assert!(
        used_before.iter().all(|&cents| cents == 100),
        "{used_before:?}"
    );
    service.db.pool.close().await;
    drop(service);
    made_before(db, &today, 22, plays.len()).await;

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

    assert_still_verifies(db, &service, &plays).await;
}
