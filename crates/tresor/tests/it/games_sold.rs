//! The catalogue sold by the server (issue 36): `GET /api/games`, a scratch
//! card bought, revealed by its one `POST …/throws` and credited; a third
//! game that is only a file (`tests/it/games/pieces-d-or.toml`) emitted by
//! `tresor emission create --game`, sold, played and audited; a whole block
//! of a scratch card sold through the service paying exactly its table (a
//! small one, `tests/it/games/petit-coffre.toml`: 2,000 units a block, each
//! card revealed, in seconds; the catalogue's own « Trésor Express »,
//! 100,000 units, is in `tests/whole_blocks/`);
//! a database made before migration 0023 selling and verifying on; and
//! `tresor serve --games` refusing a bad definition at start.

pub(crate) mod browser;

use crate::common::expect;
use crate::common::games::{settings, shipped, test_games};
use crate::common::sellout::{Reveal, Table, sell_a_whole_block};
use crate::common::{
    TestApp, TestDb, assert_exit, describe, execute, fetch_json, player, scalar, tresor,
};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tresor::model::IdempotencyKey;
use tresor::service::{Purchase, Service};
use tresor::trail::Actor;
use tresor_game::{BlockSecret, Stake, block_outcomes};

/// A service on `db` selling the test catalogue.
async fn service(db: &TestDb) -> Service {
    db.service_with(settings()).await.0
}

async fn buy_game(app: &TestApp, game: &str, stake_cents: i64) -> (StatusCode, Value) {
    let key = hex::encode(&tresor::service::os_random_32()[..12]);
    app.post_raw(
        "/api/plays",
        &json!({"stake_cents": stake_cents, "game": game}).to_string(),
        &[("x-requested-with", "tresor"), ("idempotency-key", &key)],
    )
    .await
}

/// The amount a revealed card shows `identical` times (0: none).
fn winning_amount(cells: &[Value], identical: usize) -> i64 {
    let amounts: Vec<i64> = cells.iter().map(|c| c.as_i64().unwrap()).collect();
    amounts
        .iter()
        .copied()
        .find(|a| amounts.iter().filter(|b| *b == a).count() == identical)
        .unwrap_or(0)
}

on_both!(
    the_api_lists_the_catalogue_and_sells_a_scratch_card_revealed_by_one_throw,
    settings(),
    |app| {
        app.service
            .create_game_emission(Actor::Operator, "Pièces", "pieces-d-or", &[300, 1_000], 1)
            .await
            .unwrap();

        // The lobby: island first, each stake's table rate, on sale or not.
        let games = expect(StatusCode::OK, app.get("/api/games").await);
        let ids: Vec<&str> = crate::common::items(&games, "games")
            .iter()
            .map(|g| g["id"].as_str().unwrap())
            .collect();
        assert_eq!(
            ids,
            [
                "ile-au-tresor",
                "tresor-express",
                "pieces-d-or",
                "petit-coffre"
            ]
        );
        assert_eq!(games[0]["kind"], "island");
        assert_eq!(games[0]["name"]["fr"], "L'Ile au Trésor");
        assert_eq!(
            games[0]["stakes"],
            json!([
                {"cents": 50, "payout_percent": "70.00", "on_sale": true},
                {"cents": 100, "payout_percent": "70.00", "on_sale": true},
                {"cents": 200, "payout_percent": "70.00", "on_sale": true},
            ])
        );
        assert_eq!(games[1]["stakes"][0]["on_sale"], false, "{games}");
        assert_eq!(games[2]["kind"], "scratch");
        assert_eq!(
            games[2]["name"],
            json!({"fr": "Pièces d'or", "en": "Gold Coins"})
        );
        assert_eq!(
            games[2]["scene"],
            json!({"rows": 4, "columns": 3, "identical": 3})
        );
        assert_eq!(
            games[2]["stakes"],
            json!([
                {"cents": 300, "payout_percent": "63.67", "on_sale": true},
                {"cents": 1000, "payout_percent": "67.00", "on_sale": true},
            ])
        );

        app.player("ana", 5_000).await;
        // Refusals: an unknown game, a stake the game does not sell, a game
        // with no emission.
        let body = expect(
            StatusCode::NOT_FOUND,
            buy_game(&app, "no-such-game", 100).await,
        );
        assert_eq!(body["error"]["code"], "unknown_game");
        let body = expect(
            StatusCode::UNPROCESSABLE_ENTITY,
            buy_game(&app, "pieces-d-or", 100).await,
        );
        assert_eq!(body["error"]["code"], "unknown_stake");
        let body = expect(
            StatusCode::FORBIDDEN,
            buy_game(&app, "tresor-express", 100).await,
        );
        assert_eq!(body["error"]["code"], "sales_closed");
        assert_eq!(app.balance().await, 5_000);

        // A scratch card: bought hidden, revealed by one throw.
        let bought = expect(
            StatusCode::CREATED,
            buy_game(&app, "pieces-d-or", 300).await,
        );
        assert_eq!(
            bought["game"],
            json!({"id": "pieces-d-or", "name": {"fr": "Pièces d'or", "en": "Gold Coins"}, "kind": "scratch"})
        );
        assert_eq!(
            bought["scenario"],
            json!({"kind": "scratch", "rows": 4, "columns": 3, "identical": 3, "cells": null})
        );
        assert_eq!(bought["throws_left"], 1);
        assert_eq!(bought["state"], "in_progress");
        assert!(
            bought["receipt"]["record"]["request"]
                .as_str()
                .unwrap()
                .contains("pieces-d-or")
        );
        let id = bought["id"].as_i64().unwrap();
        assert_eq!(app.balance().await, 4_700);
        let revealed = expect(StatusCode::OK, app.throw(id).await);
        assert_eq!(revealed["state"], "finished");
        assert_eq!(revealed["throws_left"], 0);
        let cells = revealed["scenario"]["cells"].as_array().unwrap().clone();
        assert_eq!(cells.len(), 12);
        let prize = revealed["outcome"]["prize_cents"].as_i64().unwrap();
        assert_eq!(winning_amount(&cells, 3), prize, "{revealed}");
        assert_eq!(app.balance().await, 4_700 + prize);
        let body = expect(StatusCode::CONFLICT, app.throw(id).await);
        assert_eq!(body["error"]["code"], "play_finished");
        let (status, again) = app.play(id).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(again["scenario"], revealed["scenario"]);

        // A card left hidden is settled by the next purchase, shown whole.
        let (_, left) = buy_game(&app, "pieces-d-or", 300).await;
        let left_id = left["id"].as_i64().unwrap();
        // The island as before: no `kind` in its scenario.
        let island = expect(StatusCode::CREATED, app.buy(100).await);
        assert_eq!(island["game"]["kind"], "island");
        assert_eq!(island["throws_left"], 4);
        assert!(island["scenario"].get("kind").is_none(), "{island}");
        assert!(island["scenario"]["chests"].is_array(), "{island}");
        let finished = app.finish(island["id"].as_i64().unwrap()).await;
        assert_eq!(finished["state"], "finished");
        let (_, settled) = app.play(left_id).await;
        assert_eq!(settled["state"], "finished");
        assert_eq!(settled["throws_left"], 0);
        let cells = settled["scenario"]["cells"].as_array().unwrap();
        assert_eq!(
            winning_amount(cells, 3),
            settled["outcome"]["prize_cents"].as_i64().unwrap()
        );

        // The history and the statement name each play's game.
        let (status, history) = app.history("").await;
        assert_eq!(status, StatusCode::OK);
        let games: Vec<&str> = crate::common::items(&history["plays"], "plays")
            .iter()
            .map(|p| p["game"]["id"].as_str().unwrap())
            .collect();
        assert_eq!(games, ["ile-au-tresor", "pieces-d-or", "pieces-d-or"]);
        let statement = expect(
            StatusCode::OK,
            app.get("/api/account/statement?limit=100").await,
        );
        let stakes: Vec<&str> = crate::common::items(&statement["movements"], "movements")
            .iter()
            .filter(|m| m["movement"] == "stake")
            .map(|m| m["game"]["id"].as_str().unwrap())
            .collect();
        assert_eq!(stakes, ["ile-au-tresor", "pieces-d-or", "pieces-d-or"]);
        app.assert_ledger_balances().await;
    }
);

/// « Pièces d'or » exists only as its file: `tresor emission create --game`
/// pins it, the service sells and plays it, the dashboard and the report
/// give it against its table, and once closed its block is re-derived by
/// `tresor block verify --game FILE` and the trail verifies.
async fn the_third_game_is_emitted_sold_played_and_audited_from_its_file_alone(db: &TestDb) {
    let folder = test_games();
    let folder = folder.to_str().unwrap();
    let created = db.tresor_ok(&[
        "emission",
        "create",
        "--games",
        folder,
        "--game",
        "pieces-d-or",
        "--blocks",
        "1",
    ]);
    let text = String::from_utf8_lossy(&created.stdout);
    assert!(text.contains("with 2 blocks"), "{text}");
    let unknown = db.tresor(&["emission", "create", "--games", folder, "--game", "nope"]);
    assert_exit(&unknown, 2);

    let service = service(db).await;
    let buyer = player(&service, "buyer").await;
    service.credit(&buyer, 10_000).await.unwrap();
    let game = service.game(Some("pieces-d-or")).unwrap();
    let mut prizes = 0;
    for n in 0..6 {
        let bought = service
            .buy(
                &buyer,
                Purchase {
                    game,
                    stake_cents: 300,
                    idempotency_key: IdempotencyKey::parse(&format!("k{n}")).unwrap(),
                },
            )
            .await
            .unwrap();
        let played = service.throw(&buyer, bought.play_id).await.unwrap();
        assert_eq!(played.throws_left, 0);
        prizes += played.outcome.prize_cents;
    }
    assert_eq!(
        scalar(
            &service.db.pool,
            "SELECT balance_cents FROM accounts WHERE kind = 'player'"
        )
        .await,
        10_000 - 6 * 300 + prizes
    );

    // The console's dashboard and the report, per game, against the table.
    let board = tresor::service::Dashboard::default();
    let dashboard = service.dashboard(&board).await.unwrap();
    let per_game = crate::common::items(&dashboard["per_game"], "per_game");
    let pieces = per_game
        .iter()
        .find(|g| g["game"]["id"] == "pieces-d-or")
        .expect("the third game on the dashboard");
    assert_eq!(pieces["stakes_cents"], 1_800);
    assert_eq!(pieces["prizes_cents"], prizes);
    assert_eq!(pieces["per_stake"][0]["table_payout_percent"], "63.67");
    assert_eq!(
        pieces["expected_prizes_cents"],
        json!(6 * 9_550_000 / 50_000)
    );
    let report: Value =
        serde_json::from_slice(&db.tresor_ok(&["report", "--format", "json"]).stdout).unwrap();
    let emission = &report["emissions"][0];
    assert_eq!(emission["game"], "pieces-d-or");
    assert_eq!(emission["stakes"][0]["table_payout_percent"], "63.67");
    assert_eq!(emission["figures"]["wins_won_cents"], prizes);
    assert_eq!(report["games"][0]["game"], "pieces-d-or");
    assert_eq!(report["games"][0]["figures"]["stakes_taken_cents"], 1_800);

    // Closed, its blocks are published and verify with the file alone.
    let emission_id = emission["id"].as_i64().unwrap().to_string();
    db.tresor_ok(&["emission", "close", &emission_id]);
    let list: Value =
        serde_json::from_slice(&db.tresor_ok(&["emission", "list", "--json"]).stdout).unwrap();
    let file = test_games().join("pieces-d-or.toml");
    let file = file.to_str().unwrap();
    for block in crate::common::items(&list[0]["blocks"], "blocks") {
        assert_eq!(block["game"], "pieces-d-or");
        assert_eq!(block["units_per_block"], 50_000);
        let secret = block["secret"].as_str().unwrap();
        let stake = block["stake_cents"].to_string();
        let verify = tresor(&[
            "block",
            "verify",
            "--game",
            file,
            "--secret",
            secret,
            "--commitment",
            block["commitment"].as_str().unwrap(),
            "--stake",
            &stake,
        ]);
        assert_exit(&verify, 0);
        // The island's rules would not verify it.
        let island = tresor(&[
            "block",
            "verify",
            "--secret",
            secret,
            "--commitment",
            block["commitment"].as_str().unwrap(),
            "--stake",
            "100",
        ]);
        assert_ne!(island.status.code(), Some(0), "{}", describe(&island));
    }
    // Every unit sold was sold at the level its block's shuffle gives.
    let table = game.table(300).unwrap();
    let block = &list[0]["blocks"][0];
    let secret = BlockSecret::parse_hex(block["secret"].as_str().unwrap()).unwrap();
    let outcomes = game.outcomes(table, &secret);
    let plays: Vec<(i64, i64)> =
        sqlx::query_as("SELECT unit_index, level FROM plays WHERE block_id = $1")
            .bind(block["id"].as_i64().unwrap())
            .fetch_all(&service.db.pool)
            .await
            .unwrap();
    assert_eq!(plays.len(), 6);
    for (index, level) in plays {
        assert_eq!(i64::from(outcomes[index as usize].get()), level);
    }
    db.tresor_ok(&["audit", "verify"]);
    crate::common::assert_ledger_balances(&service.db).await;
}

/// A whole block of « Petit coffre » (2,000 units at 5 €) sold through the
/// service by concurrent players, each card revealed: the prizes paid are
/// exactly its table, level by level, and the report says so.
async fn a_whole_block_of_a_scratch_card_sold_through_the_service_pays_exactly_its_table(
    db: &TestDb,
) {
    // The file's own figures (tests/it/games/petit-coffre.toml), not the
    // code's reading of it.
    let table = Table {
        units: 2_000,
        prizes_cents: 500_000,
        counts: &[1_674, 1, 5, 20, 100, 200],
        payout_percent: "50.00",
    };
    sell_a_whole_block(db, "petit-coffre", 500, 16, Reveal::Each, &table).await;
}

/// A database made before migration 0023, with an island block half way
/// through its sales (a play on it in progress): the migration makes its
/// emission the island's, pinned to the built-in definition, keeps the
/// block's commitment and its play, and the block sells on at the levels of
/// its shuffle and verifies once published.
async fn a_database_made_before_0023_keeps_selling_and_verifying(db: &TestDb) {
    let pool = db.migrated_before(23).await;
    // As the code before the catalogue wrote them (a clear secret, sealed
    // at the next start as any older database's).
    let secret = BlockSecret::from_bytes([7; 32]);
    let outcomes = block_outcomes(&secret);
    execute(
        &pool,
        &["INSERT INTO accounts (id, kind, balance_cents) VALUES (100, 'player', 0)"],
    )
    .await;
    let old_player: i64 = sqlx::query_scalar(
        "INSERT INTO players (username, username_key, password_hash, account_id, \
         adult_declared_at_ms, rules_accepted_at_ms, created_at_ms) \
         VALUES ('old', 'old', 'x', 100, 1, 1, 1) RETURNING id",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    let emission: i64 = sqlx::query_scalar(
        "INSERT INTO emissions (name, state, created_at_ms) VALUES ('Before', 'open', 1) RETURNING id",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    let commitment = secret.commitment().to_hex();
    let block: i64 = sqlx::query_scalar(
        "INSERT INTO blocks (emission_id, stake_cents, secret, commitment, units_sold, state, \
         created_at_ms) VALUES ($1, 100, $2, $3, 1, 'open', 1) RETURNING id",
    )
    .bind(emission)
    .bind(secret.as_bytes().to_vec())
    .bind(&commitment)
    .fetch_one(&pool)
    .await
    .unwrap();
    let level = outcomes[0];
    let stake = Stake::try_from(100).unwrap();
    sqlx::query(
        "INSERT INTO plays (player_id, block_id, unit_index, stake_cents, level, prize_cents, \
         throws_made, state, idempotency_key, request_hash, created_at_ms) \
         VALUES ($1, $2, 0, 100, $3, $4, 0, 'in_progress', 'k0', 'h', 1)",
    )
    .bind(old_player)
    .bind(block)
    .bind(i64::from(level.get()))
    .bind(stake.prize_cents(level))
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;

    // The new code opens it: migration 0023 runs on it.
    let service = service(db).await;
    let pool = &service.db.pool;
    let (game_id, sha, definition): (String, String, Option<String>) =
        sqlx::query_as("SELECT game_id, game_sha256, definition FROM emissions")
            .fetch_one(pool)
            .await
            .unwrap();
    assert_eq!(game_id, "ile-au-tresor");
    assert_eq!(sha, tresor_game::ile_au_tresor().sha256_hex());
    assert_eq!(definition, None);
    let (game_id, units, kept, sold): (String, i64, String, i64) = sqlx::query_as(
        "SELECT game_id, units_per_block, commitment, units_sold FROM blocks WHERE id = $1",
    )
    .bind(block)
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(
        (game_id.as_str(), units, kept.as_str(), sold),
        ("ile-au-tresor", 450_000, commitment.as_str(), 1)
    );
    assert_eq!(
        scalar(pool, "SELECT COUNT(*) FROM plays WHERE unit_index = 0").await,
        1,
        "the play made before is kept"
    );
    assert!(service.pinned_versions().await.unwrap().is_empty());

    // It sells on, from unit 1, at its shuffle's levels.
    let buyer = player(&service, "buyer").await;
    service.credit(&buyer, 1_000).await.unwrap();
    for n in 1..=3i64 {
        let bought = service
            .buy(&buyer, crate::common::purchase(100, &format!("k{n}")))
            .await
            .unwrap();
        let view = service.play(&buyer, bought.play_id).await.unwrap();
        assert_eq!(view.unit.index, n);
        assert_eq!(view.unit.block, block);
        assert_eq!(view.outcome.level, outcomes[n as usize]);
        assert_eq!(view.game.id, "ile-au-tresor");
        for _ in 0..4 {
            service.throw(&buyer, bought.play_id).await.unwrap();
        }
    }
    // Published, it verifies with the island's rules, and the re-check too.
    service.close_emission(emission).await.unwrap();
    let verify = tresor(&[
        "block",
        "verify",
        "--secret",
        &secret.to_hex(),
        "--commitment",
        &commitment,
        "--stake",
        "100",
    ]);
    assert_exit(&verify, 0);
    let recheck = service.recheck_block(block).await.unwrap();
    assert!(recheck.ok, "{recheck:?}");
    assert_eq!(recheck.plays_checked, 4);
}

on_both!(
    the_third_game_is_emitted_sold_played_and_audited_from_its_file_alone,
    a_whole_block_of_a_scratch_card_sold_through_the_service_pays_exactly_its_table,
    a_database_made_before_0023_keeps_selling_and_verifying,
);

/// `tresor serve --games DIR` checks every file before it opens anything:
/// a refusal names the file, the line and the rule (exit 2).
#[test]
fn serve_refuses_a_catalogue_with_a_bad_definition_naming_file_line_and_rule() {
    let folder = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(test_games().join("petit-coffre.toml")).unwrap();
    std::fs::write(folder.path().join("petit-coffre.toml"), &good).unwrap();
    let data = tempfile::tempdir().unwrap();
    let data_arg = data.path().join("data");
    let serve = |extra: &[&str]| {
        let mut args = vec![
            "serve",
            "--demo",
            "--games",
            folder.path().to_str().unwrap(),
            "--data",
            data_arg.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
        ];
        args.extend_from_slice(extra);
        tresor(&args)
    };
    // Above the operator's cap: 50 % against 40.
    let output = serve(&["--max-payout-percent", "40"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_exit(&output, 2);
    assert!(stderr.contains("petit-coffre.toml: line"), "{stderr}");
    assert!(stderr.contains("[payout-cap]"), "{stderr}");
    // Levels that do not fill the block.
    let bad = good.replace(
        "losing_units_per_block = 1_674",
        "losing_units_per_block = 1_675",
    );
    std::fs::write(folder.path().join("petit-coffre.toml"), bad).unwrap();
    let output = serve(&[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_exit(&output, 2);
    assert!(stderr.contains("petit-coffre.toml: line 15"), "{stderr}");
    assert!(stderr.contains("[levels-sum]"), "{stderr}");
    assert!(!data_arg.exists(), "nothing was opened");
}

/// The demo from the repository's folder: both shipped games on sale.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_sells_every_game_of_its_catalogue() {
    let db = TestDb::sqlite().await;
    let games = shipped("tresor-express.toml");
    let folder = games.parent().unwrap().to_str().unwrap().to_owned();
    let server = crate::common::Server::start(&db, &["--games".to_owned(), folder]).await;
    let games = fetch_json(&format!("{}/api/games", server.base)).await;
    // Each game's stakes on sale, by name: a game offered with no stake
    // at all is not on sale.
    let on_sale: Vec<(&str, Vec<i64>)> = crate::common::items(&games, "games")
        .iter()
        .map(|g| {
            (
                g["id"].as_str().unwrap(),
                g["stakes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|s| s["on_sale"] == true)
                    .map(|s| s["cents"].as_i64().unwrap_or_else(|| panic!("{s}")))
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        on_sale,
        [
            ("ile-au-tresor", vec![50, 100, 200]),
            ("tresor-express", vec![100, 200])
        ],
        "{games}"
    );
}
