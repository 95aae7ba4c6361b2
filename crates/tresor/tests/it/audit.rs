//! The game trail: every exchange is in it, in order, and `tresor audit
//! verify` catches any record changed, removed, added or moved. Each test runs
//! on SQLite and on PostgreSQL.

use crate::common::trail::{audit_verify as verify, drop_guards, some_activity};
use crate::common::{TestDb, assert_exit, execute, player, purchase};
use sqlx::AnyPool;
use std::collections::HashMap;
use tresor::store::Db;
use tresor::trail::{self, Record, Verdict};

/// A database made before the signed log: a v1 chain of `count` records,
/// written as the v1 server did (each record chained to the previous one,
/// `trail_head` naming the last). Only reading commands run on it here, so
/// no log seals it.
pub async fn v1_chain(pool: &AnyPool, count: i64) -> Vec<Record> {
    let mut prev = trail::GENESIS_HASH.to_owned();
    let mut records = Vec::new();
    for seq in 1..=count {
        let (actor, action, request, result) = match seq % 4 {
            0 => (
                "system",
                "settle",
                r#"{"play_id":1}"#,
                r#"{"prize_cents":200}"#,
            ),
            1 => (
                "operator",
                "credit",
                r#"{"amount_cents":1000}"#,
                r#"{"balance_cents":1000}"#,
            ),
            2 => (
                "player:1:alice",
                "buy",
                r#"{"stake_cents":100}"#,
                r#"{"play_id":1}"#,
            ),
            _ => (
                "player:1:alice",
                "throw",
                r#"{"play_id":1}"#,
                r#"{"throws":1}"#,
            ),
        };
        let at_ms = crate::common::START_MS + seq * 1000;
        prev = insert_record(pool, seq, at_ms, [actor, action, request, result], &prev).await;
        records.extend(
            trail::all(pool)
                .await
                .expect("read")
                .into_iter()
                .filter(|r| r.seq == seq),
        );
    }
    sqlx::query("UPDATE trail_head SET seq = $1, hash = $2 WHERE id = 1")
        .bind(count)
        .bind(&prev)
        .execute(pool)
        .await
        .expect("the v1 head");
    // These records were written after migration 0013 (which starts the
    // PostgreSQL sequence after the records it finds): move it past them.
    let _ = sqlx::query("SELECT setval('trail_seq_seq', (SELECT MAX(seq) FROM trail))")
        .execute(pool)
        .await;
    records
}

/// Writes record `seq` of `[actor, action, request, result]` at `at_ms`,
/// its hash chained to `prev` as the server computes it: its hash.
async fn insert_record(
    pool: &AnyPool,
    seq: i64,
    at_ms: i64,
    fields: [&str; 4],
    prev: &str,
) -> String {
    let [actor, action, request, result] = fields;
    let hash = trail::record_hash(seq, at_ms, actor, action, request, result, prev);
    sqlx::query(
        "INSERT INTO trail (seq, at_ms, actor, action, request, result, prev_hash, hash) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(seq)
    .bind(at_ms)
    .bind(actor)
    .bind(action)
    .bind(request)
    .bind(result)
    .bind(prev)
    .bind(&hash)
    .execute(pool)
    .await
    .expect("a record");
    hash
}

/// A v1 database (see [`v1_chain`]) that verifies, its guards dropped.
async fn prepared(db: &TestDb) -> (Db, AnyPool, Vec<Record>) {
    let store = db.connect().await;
    let pool = store.pool.clone();
    let records = v1_chain(&pool, 24).await;
    let (code, out) = verify(db, &[]);
    assert_eq!(code, Some(0), "an untouched trail verifies: {out}");
    assert!(out.contains("intact"), "{out}");
    drop_guards(&pool, db.backend).await;
    (store, pool, records)
}

fn assert_broken_at(db: &TestDb, seq: i64) {
    let (code, out) = verify(db, &[]);
    assert_eq!(code, Some(1), "a tampered trail fails: {out}");
    assert!(
        out.contains(&format!("broken at record {seq}:")),
        "names record {seq}: {out}"
    );
}

async fn an_untouched_trail_verifies_and_the_database_refuses_edits(db: &TestDb) {
    let (service, _clock) = db.service().await;
    some_activity(&service, false).await;
    let (code, out) = verify(db, &[]);
    assert_eq!(code, Some(0), "{out}");
    let pool = &service.db.pool;
    for statement in [
        "UPDATE trail SET actor = 'operator' WHERE seq = 3",
        "DELETE FROM trail WHERE seq = 3",
    ] {
        assert!(
            sqlx::query(statement).execute(pool).await.is_err(),
            "the database refuses: {statement}"
        );
    }
    let verdict = trail::verify(pool, |_| {}).await.expect("verify");
    assert!(matches!(verdict, Verdict::Intact { .. }), "{verdict:?}");
}

async fn verify_names_a_record_whose_field_was_changed(db: &TestDb) {
    let (_service, pool, records) = prepared(db).await;
    let target = records
        .iter()
        .find(|r| r.action == "settle")
        .expect("a settlement");
    // The intruder doubles a prize in the result text.
    sqlx::query("UPDATE trail SET result = $1 WHERE seq = $2")
        .bind(
            target
                .result
                .replace("\"prize_cents\":", "\"prize_cents\":9"),
        )
        .bind(target.seq)
        .execute(&pool)
        .await
        .expect("edit a record");
    assert_broken_at(db, target.seq);
}

/// A [`prepared`] trail edited by `statements` is broken at record `seq`.
async fn broken_by(db: &TestDb, statements: &[&str], seq: i64) {
    let (_service, pool, _records) = prepared(db).await;
    execute(&pool, statements).await;
    assert_broken_at(db, seq);
}

async fn verify_names_a_record_whose_time_was_changed(db: &TestDb) {
    broken_by(db, &["UPDATE trail SET at_ms = at_ms + 1 WHERE seq = 7"], 7).await;
}

async fn verify_names_a_deleted_record(db: &TestDb) {
    broken_by(db, &["DELETE FROM trail WHERE seq = 5"], 5).await;
}

async fn verify_names_the_last_record_when_it_was_deleted(db: &TestDb) {
    let (_service, pool, records) = prepared(db).await;
    let last = records.last().expect("a record").seq;
    execute(&pool, &[&format!("DELETE FROM trail WHERE seq = {last}")]).await;
    assert_broken_at(db, last);
}

async fn verify_names_a_record_inserted_in_the_middle(db: &TestDb) {
    let (_service, pool, records) = prepared(db).await;
    // The intruder makes room after record 6 and slips in a deposit whose
    // hash is computed exactly as the server would: it chains to record 6, so
    // the first record that no longer holds is the one after it.
    let renumber = [
        "UPDATE trail SET seq = -seq WHERE seq > 6",
        "UPDATE trail SET seq = 1 - seq WHERE seq < 0",
    ];
    execute(&pool, &renumber).await;
    let prev = &records[5];
    assert_eq!(prev.seq, 6);
    let deposit = [
        "operator",
        "credit",
        r#"{"amount_cents":1000000,"player_id":1}"#,
        r#"{"balance_cents":1000000}"#,
    ];
    insert_record(&pool, 7, prev.at_ms, deposit, &prev.hash).await;
    assert_broken_at(db, 8);
}

async fn verify_names_a_record_added_at_the_end(db: &TestDb) {
    let (_service, pool, records) = prepared(db).await;
    let last = records.last().expect("a record");
    let seq = last.seq + 1;
    let credit = ["operator", "credit", "{}", "{}"];
    insert_record(&pool, seq, last.at_ms, credit, &last.hash).await;
    // Perfectly chained, but the head (moved by every real append) does not
    // know it.
    assert_broken_at(db, seq);
}

async fn verify_names_the_first_of_two_swapped_records(db: &TestDb) {
    let swap = [
        "UPDATE trail SET seq = -1 WHERE seq = 9",
        "UPDATE trail SET seq = 9 WHERE seq = 12",
        "UPDATE trail SET seq = 12 WHERE seq = -1",
    ];
    broken_by(db, &swap, 9).await;
}

async fn every_purchase_throw_and_settlement_of_a_few_hundred_games_is_in_the_trail_in_order(
    db: &TestDb,
) {
    let (service, clock) = db.service_selling("Test").await;
    const PLAYERS: usize = 12;
    const GAMES: usize = 25;
    let mut tasks = Vec::new();
    for p in 0..PLAYERS {
        let service = service.clone();
        tasks.push(tokio::spawn(async move {
            let player = player(&service, &format!("player{p}")).await;
            service.credit(&player, 100_000).await.expect("credit");
            // (play id, throws made) per game, in the order played.
            let mut games = Vec::new();
            for g in 0..GAMES {
                let stake = [50, 100, 200][(p + g) % 3];
                let bought = service
                    .buy(&player, purchase(stake, &format!("p{p}g{g}")))
                    .await
                    .expect("buy");
                // Vary how far each game goes: some finish, some are left
                // for the next purchase (or, the last, for the background task)
                // to settle.
                let throws = (p * 7 + g * 3) % 5;
                for _ in 0..throws {
                    service.throw(&player, bought.play_id).await.expect("throw");
                }
                games.push((bought.play_id, throws));
            }
            (player, games)
        }));
    }
    let mut played = Vec::new();
    for task in tasks {
        played.push(task.await.expect("a player's task"));
    }
    clock.advance_ms(service.settings.auto_settle_after_s * 1000 + 1);
    service
        .settle_abandoned()
        .await
        .expect("settle abandoned plays");

    let records = trail::all(&service.db.pool).await.expect("read the trail");
    let verdict = trail::verify(&service.db.pool, |_| {})
        .await
        .expect("verify");
    assert!(matches!(verdict, Verdict::Intact { .. }), "{verdict:?}");
    for (i, record) in records.iter().enumerate() {
        assert_eq!(record.seq, i as i64 + 1, "gapless numbers");
    }

    // Every record that names a play, grouped by play, in trail order. A
    // purchase's record also holds the settlement of the play it settles
    // (`settled`, with its reason and what it paid: migration 0022), which
    // counts as that play's settlement, recorded just before it is bought.
    let mut by_play: HashMap<i64, Vec<(i64, String)>> = HashMap::new();
    for record in &records {
        let request: serde_json::Value = serde_json::from_str(&record.request).expect("JSON");
        let result: serde_json::Value = serde_json::from_str(&record.result).expect("JSON");
        for settled in result["settled"].as_array().into_iter().flatten() {
            assert_eq!(record.action, "buy", "{record:?}");
            let play_id = settled["play_id"].as_i64().expect("the play settled");
            assert!(settled["prize_cents"].is_i64(), "{record:?}");
            assert_eq!(settled["credited_cents"], settled["prize_cents"]);
            let reason = settled["reason"].as_str().unwrap_or("?");
            let what = format!("settle:{reason}");
            by_play.entry(play_id).or_default().push((record.seq, what));
        }
        let play_id = request["play_id"].as_i64().or(result["play_id"].as_i64());
        if let Some(play_id) = play_id {
            let what = match record.action.as_str() {
                "settle" => format!("settle:{}", request["reason"].as_str().unwrap_or("?")),
                other => other.to_owned(),
            };
            by_play.entry(play_id).or_default().push((record.seq, what));
        }
    }
    let mut games = 0;
    for (player, plays) in &played {
        let actor = format!("player:{}:{}", player.id, player.username);
        let mut last_seq = 0;
        let mut settled_by_this_purchase = false;
        for (i, &(play_id, throws)) in plays.iter().enumerate() {
            games += 1;
            let events = &by_play[&play_id];
            let mut expected = vec!["buy".to_owned()];
            expected.extend(std::iter::repeat_n("throw".to_owned(), throws));
            expected.push(match (throws, i + 1 == plays.len()) {
                (4, _) => "settle:fourth_throw".to_owned(),
                (_, false) => "settle:next_purchase".to_owned(),
                (_, true) => "settle:abandoned".to_owned(),
            });
            let actual: Vec<String> = events.iter().map(|(_, what)| what.clone()).collect();
            assert_eq!(actual, expected, "play {play_id} of {actor}");
            // A player's games come one after the other in the trail, and a
            // game left mid-way is settled by the next purchase, in its record.
            let first = events[0].0;
            if settled_by_this_purchase {
                assert_eq!(first, last_seq, "play {play_id} settles the previous one");
            } else {
                assert!(first > last_seq, "play {play_id} after the previous one");
            }
            settled_by_this_purchase = expected.last().is_some_and(|e| e == "settle:next_purchase");
            last_seq = events.last().expect("events").0;
            let buy = &records[(first - 1) as usize];
            assert_eq!(buy.actor, actor);
        }
    }
    assert_eq!(games, PLAYERS * GAMES);

    // The console's trail search for settlements finds every one, those
    // recorded in a purchase's record too.
    let filter = trail::search::Filter {
        action: Some("settle".to_owned()),
        ..Default::default()
    };
    let found = trail::search::search(&service.db.pool, &filter, 100_000)
        .await
        .expect("search the trail");
    let settlements: Vec<i64> = by_play
        .values()
        .flatten()
        .filter(|(_, what)| what.starts_with("settle:"))
        .map(|(seq, _)| *seq)
        .collect::<std::collections::BTreeSet<i64>>()
        .into_iter()
        .rev()
        .collect();
    assert_eq!(found.iter().map(|r| r.seq).collect::<Vec<_>>(), settlements);
}

/// A v1 database's chain becomes the first leaf of the first log; the v1
/// chain rewritten afterwards, hashes and head recomputed (which v1 alone
/// cannot catch), no longer matches its signed seal.
async fn a_v1_chain_is_sealed_into_the_log_and_a_later_rewrite_is_caught(db: &TestDb) {
    let store = db.connect().await;
    let pool = store.pool.clone();
    let v1 = v1_chain(&pool, 12).await;
    let (service, _clock) = db.service().await;
    some_activity(&service, false).await;
    let (code, out) = verify(db, &[]);
    assert_eq!(code, Some(0), "sealed and verified: {out}");
    let sealed: (String, i64) = sqlx::query_as(
        "SELECT t.request, t.idx FROM trail t JOIN logs l ON l.id = t.log_id \
         WHERE t.action = 'trail_v1_sealed'",
    )
    .fetch_one(&pool)
    .await
    .expect("one seal");
    assert_eq!(sealed.1, 0, "the first leaf");
    let head = &v1.last().expect("v1 records").hash;
    assert!(
        sealed.0.contains("\"records\":12") && sealed.0.contains(head.as_str()),
        "{sealed:?}"
    );
    // The insider rewrites v1 record 5 and recomputes the whole v1 chain.
    drop_guards(&pool, db.backend).await;
    let mut prev = trail::GENESIS_HASH.to_owned();
    for record in &v1 {
        let result = if record.seq == 5 {
            "{\"balance_cents\":9000}"
        } else {
            record.result.as_str()
        };
        let hash = trail::record_hash(
            record.seq,
            record.at_ms,
            &record.actor,
            &record.action,
            &record.request,
            result,
            &prev,
        );
        sqlx::query("UPDATE trail SET result = $1, prev_hash = $2, hash = $3 WHERE seq = $4")
            .bind(result)
            .bind(&prev)
            .bind(&hash)
            .bind(record.seq)
            .execute(&pool)
            .await
            .expect("rewrite");
        prev = hash;
    }
    execute(
        &pool,
        &[&format!(
            "UPDATE trail_head SET hash = '{prev}' WHERE id = 1"
        )],
    )
    .await;
    let (code, out) = verify(db, &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("not the one its seal names"), "{out}");
}

on_both!(
    a_v1_chain_is_sealed_into_the_log_and_a_later_rewrite_is_caught,
    an_untouched_trail_verifies_and_the_database_refuses_edits,
    verify_names_a_record_whose_field_was_changed,
    verify_names_a_record_whose_time_was_changed,
    verify_names_a_deleted_record,
    verify_names_the_last_record_when_it_was_deleted,
    verify_names_a_record_inserted_in_the_middle,
    verify_names_a_record_added_at_the_end,
    verify_names_the_first_of_two_swapped_records,
    every_purchase_throw_and_settlement_of_a_few_hundred_games_is_in_the_trail_in_order,
);

on_both!(
    audit_export_rejects_a_time_that_is_not_rfc_3339,
    |db: &TestDb| {
        let output = db.tresor(&["audit", "export", "--from", "yesterday"]);
        assert_exit(&output, 2);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    }
);
