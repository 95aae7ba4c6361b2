//! Buying units, throwing, settling, the history, and plays under concurrency.

mod browser;

use crate::common::expect;
use crate::common::{TestApp, assert_ledger_balances, scalar};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::collections::HashSet;
use tresor::service::Clock;
use tresor_game::{Content, Symbol, evaluate};

fn revealed(play: &Value) -> Vec<Symbol> {
    let mut symbols = Vec::new();
    for throw in crate::common::items(&play["scenario"]["throws"], "throws") {
        for opened in throw["opened"].as_array().unwrap() {
            let content: Content = serde_json::from_value(opened["content"].clone()).unwrap();
            symbols.extend(content.symbol());
        }
    }
    symbols
}

/// The ids of the plays on a page of the history, in its order.
fn ids_in(page: &Value) -> Vec<i64> {
    page["plays"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_i64().unwrap())
        .collect()
}

on_both!(
    a_purchase_debits_the_stake_and_shows_the_outcome_at_once,
    |app| {
        app.player("ana", 1_000).await;
        let play = expect(
            StatusCode::CREATED,
            app.buy_with_key(100, "first-key").await,
        );
        assert_eq!(play["stake_cents"], 100);
        assert_eq!(play["state"], "in_progress");
        assert_eq!(play["throws_left"], 4);
        assert_eq!(
            play["unit"]["index"], 0,
            "the block's first sale is its unit 0"
        );
        assert!(play["unit"]["block"].is_i64() && play["unit"]["emission"].is_i64());
        assert!(play["outcome"]["level"].is_u64());
        assert_eq!(
            play["scenario"]["throws"],
            json!([]),
            "no throw revealed yet"
        );
        assert_eq!(play["scenario"]["chests"].as_array().unwrap().len(), 9);
        assert_eq!(app.balance().await, 900);
        let (_, me) = app.me().await;
        assert_eq!(me["current_play_id"], play["id"]);
        // The history shows it at once, outcome included (Article 4.1).
        let (_, history) = app.history("").await;
        assert_eq!(history["plays"][0]["id"], play["id"]);
        assert_eq!(history["plays"][0]["outcome"], play["outcome"]);
    }
);

on_both!(four_throws_finish_the_play_and_credit_its_win_once, |app| {
    app.player("ana", 2_000).await;
    for stake in [50, 100, 200] {
        let before = app.balance().await;
        let (_, play) = app.buy(stake).await;
        let id = play["id"].as_i64().unwrap();
        let mut throws = 0;
        for left in (0..4).rev() {
            let play = expect(StatusCode::OK, app.throw(id).await);
            throws += 1;
            assert_eq!(play["throws_left"], left);
            assert_eq!(play["scenario"]["throws"].as_array().unwrap().len(), throws);
            assert_eq!(
                play["state"],
                if left == 0 { "finished" } else { "in_progress" }
            );
        }
        let (status, error) = app.throw(id).await;
        assert_eq!(status, StatusCode::CONFLICT);
        assert_eq!(error["error"]["code"], "play_finished");
        let (_, play) = app.play(id).await;
        let prize = play["outcome"]["prize_cents"].as_i64().unwrap();
        let level = evaluate(&revealed(&play)).expect("a valid reveal");
        assert_eq!(
            u64::from(level.get()),
            play["outcome"]["level"].as_u64().unwrap(),
            "the scene shows its outcome"
        );
        assert_eq!(
            app.balance().await,
            before - stake + prize,
            "debited once, credited once"
        );
    }
    app.assert_ledger_balances().await;
});

on_both!(
    a_repeated_idempotency_key_returns_the_first_play_and_debits_nothing_more,
    |app| {
        app.player("ana", 1_000).await;
        let (status, first) = app.buy_with_key(100, "same-key").await;
        assert_eq!(status, StatusCode::CREATED);
        let (status, again) = app.buy_with_key(100, "same-key").await;
        assert_eq!(status, StatusCode::CREATED);
        assert_eq!(again["id"], first["id"]);
        assert_eq!(again["unit"], first["unit"]);
        assert_eq!(app.balance().await, 900);
        let (status, error) = app.buy_with_key(200, "same-key").await;
        assert_eq!(status, StatusCode::CONFLICT);
        assert_eq!(error["error"]["code"], "idempotency_conflict");
        assert_eq!(app.balance().await, 900);
        // Keys belong to their player: another player may use the same one.
        let bob = app.another_client();
        bob.player("bob", 500).await;
        let (status, play) = bob.buy_with_key(100, "same-key").await;
        assert_eq!(status, StatusCode::CREATED);
        assert_ne!(play["id"], first["id"]);
    }
);

on_both!(
    purchases_without_a_valid_key_or_stake_or_money_are_refused_and_change_nothing,
    |app| {
        app.player("ana", 150).await;
        let (status, error) = app
            .post_raw(
                "/api/plays",
                r#"{"stake_cents": 100}"#,
                &[("x-requested-with", "tresor")],
            )
            .await;
        assert_eq!(
            (status, error["error"]["code"].as_str()),
            (StatusCode::BAD_REQUEST, Some("invalid_idempotency_key"))
        );
        let (status, error) = app.buy_with_key(100, "spaces are not allowed").await;
        assert_eq!(
            (status, error["error"]["code"].as_str()),
            (StatusCode::BAD_REQUEST, Some("invalid_idempotency_key"))
        );
        let (status, error) = app.buy(150).await;
        assert_eq!(
            (status, error["error"]["code"].as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, Some("unknown_stake"))
        );
        let (status, error) = app.buy(200).await;
        assert_eq!(
            (status, error["error"]["code"].as_str()),
            (StatusCode::PAYMENT_REQUIRED, Some("insufficient_funds"))
        );
        assert_eq!(app.balance().await, 150);
        let (_, history) = app.history("").await;
        assert_eq!(history["plays"], json!([]));
        let sold: i64 = scalar(
            &app.service.db.pool,
            "SELECT CAST(SUM(units_sold) AS BIGINT) FROM blocks",
        )
        .await;
        assert_eq!(sold, 0, "no unit was taken");
    }
);

on_both!(purchases_before_the_sales_opening_are_refused, |app| {
    app.player("ana", 500).await;
    let opens = app.clock.now_ms() + 3_600_000;
    app.service.set_sales_open_at(Some(opens)).await.unwrap();
    let (_, status) = app.get("/api/status").await;
    assert_eq!(status["sales_open"], false);
    let (status, error) = app.buy(100).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(error["error"]["code"], "sales_closed");
    assert_eq!(app.balance().await, 500);
    app.clock.advance_ms(3_600_000);
    app.login("ana", "a long password").await; // the idle session has ended meanwhile
    assert_eq!(app.buy(100).await.0, StatusCode::CREATED);
});

on_both!(
    a_closed_emission_sells_nothing_and_publishes_its_secrets,
    |app| {
        app.player("ana", 500).await;
        let (_, blocks) = app.get("/api/blocks").await;
        for block in crate::common::items(&blocks["blocks"], "blocks") {
            assert_eq!(block["secret"], Value::Null, "no secret while on sale");
            assert_eq!(block["state"], "open");
        }
        app.buy(100).await;
        let emission = blocks["blocks"][0]["emission"].as_i64().unwrap();
        app.service.close_emission(emission).await.unwrap();
        let (status, error) = app.buy(100).await;
        assert_eq!(status, StatusCode::CONFLICT);
        assert_eq!(error["error"]["code"], "sold_out");
        let (_, blocks) = app.get("/api/blocks").await;
        for block in crate::common::items(&blocks["blocks"], "blocks") {
            assert_eq!(block["state"], "closed");
            let secret =
                tresor_game::BlockSecret::parse_hex(block["secret"].as_str().unwrap()).unwrap();
            assert_eq!(
                secret.commitment().to_hex(),
                block["commitment"].as_str().unwrap()
            );
        }
        let sold: Vec<i64> = blocks["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["units_sold"].as_i64().unwrap())
            .collect();
        assert_eq!(
            sold.iter().sum::<i64>(),
            1,
            "unsold units stay counted, never lost"
        );
    }
);

on_both!(a_player_sees_and_plays_only_their_own_plays, |app| {
    app.player("ana", 500).await;
    let (_, play) = app.buy(100).await;
    let id = play["id"].as_i64().unwrap();
    let bob = app.another_client();
    bob.player("bob", 500).await;
    assert_eq!(bob.play(id).await.0, StatusCode::NOT_FOUND);
    assert_eq!(bob.throw(id).await.0, StatusCode::NOT_FOUND);
    assert_eq!(bob.play(999_999).await.0, StatusCode::NOT_FOUND);
    assert_eq!(bob.play_raw("abc").await, StatusCode::NOT_FOUND);
    let (_, history) = bob.history("").await;
    assert_eq!(history["plays"], json!([]));
    assert_eq!(
        app.play(id).await.1["throws_left"],
        4,
        "bob's attempts changed nothing"
    );
});

on_both!(
    buying_again_settles_the_unfinished_play_and_a_left_play_resumes,
    |app| {
        app.player("ana", 5_000).await;
        let (_, first) = app.buy(200).await;
        let id = first["id"].as_i64().unwrap();
        app.throw(id).await;
        // Resume: the play is where it stopped.
        let (_, again) = app.play(id).await;
        assert_eq!(again["throws_left"], 3);
        assert_eq!(again["scenario"]["throws"].as_array().unwrap().len(), 1);
        let before = app.balance().await;
        let (_, second) = app.buy(50).await;
        let (_, first) = app.play(id).await;
        assert_eq!(first["state"], "finished");
        assert_eq!(first["throws_left"], 0);
        let prize = first["outcome"]["prize_cents"].as_i64().unwrap();
        assert_eq!(
            app.balance().await,
            before + prize - 50,
            "the first win was credited once"
        );
        assert_eq!(app.throw(id).await.0, StatusCode::CONFLICT);
        let (_, me) = app.me().await;
        assert_eq!(me["current_play_id"], second["id"]);
        app.assert_ledger_balances().await;
    }
);

on_both!(
    an_abandoned_play_is_settled_after_the_configured_delay,
    |app| {
        app.player("ana", 5_000).await;
        let mut ids = Vec::new();
        let bob = app.another_client();
        bob.player("bob", 5_000).await;
        for client in [&app, &bob] {
            let (_, play) = client.buy(200).await;
            ids.push(play["id"].as_i64().unwrap());
        }
        assert_eq!(app.service.settle_abandoned().await.unwrap(), 0, "not yet");
        app.clock
            .advance_ms(app.service.settings.auto_settle_after_s * 1000 + 1);
        assert_eq!(app.service.settle_abandoned().await.unwrap(), 2);
        assert_eq!(
            app.service.settle_abandoned().await.unwrap(),
            0,
            "settled once"
        );
        app.login("ana", "a long password").await; // the idle session has ended meanwhile
        let (_, play) = app.play(ids[0]).await;
        assert_eq!(play["state"], "finished");
        assert_eq!(
            app.balance().await,
            5_000 - 200 + play["outcome"]["prize_cents"].as_i64().unwrap()
        );
        app.assert_ledger_balances().await;
    }
);

on_both!(the_history_pages_newest_first_with_a_cursor, |app| {
    app.player("ana", 5_000).await;
    let mut ids = Vec::new();
    for _ in 0..5 {
        let (_, play) = app.buy(50).await;
        ids.push(play["id"].as_i64().unwrap());
    }
    let (_, page) = app.history("?limit=2").await;
    assert_eq!(ids_in(&page), vec![ids[4], ids[3]]);
    let cursor = page["next_cursor"].as_str().unwrap().to_owned();
    let (_, page) = app.history(&format!("?limit=2&cursor={cursor}")).await;
    assert_eq!(ids_in(&page), vec![ids[2], ids[1]]);
    let cursor = page["next_cursor"].as_str().unwrap().to_owned();
    let (_, page) = app.history(&format!("?limit=2&cursor={cursor}")).await;
    assert_eq!(page["plays"].as_array().unwrap().len(), 1);
    assert_eq!(page["next_cursor"], Value::Null);
    // Every play but the last was settled by the next purchase.
    assert_eq!(page["plays"][0]["state"], "finished");
    for bad in ["?limit=0", "?limit=101", "?limit=x", "?cursor=abc"] {
        let (status, error) = app.history(bad).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
        assert_eq!(error["error"]["code"], "validation");
    }
});

on_both!(concurrent_players_never_share_a_unit_and_the_ledger_balances);

/// 50 players buy 20 units each at once, finishing most games, leaving some
/// mid-way (settled by their next purchase or later by the settler).
async fn concurrent_players_never_share_a_unit_and_the_ledger_balances(app: TestApp) {
    const PLAYERS: usize = 50;
    const PLAYS: usize = 20;
    let mut tasks = Vec::new();
    for p in 0..PLAYERS {
        let client = app.another_client();
        tasks.push(tokio::spawn(async move {
            client.player(&format!("player{p}"), 10_000).await;
            let mut ids = Vec::new();
            for n in 0..PLAYS {
                let stake = [50, 100, 200][(p + n) % 3];
                let play = expect(StatusCode::CREATED, client.buy(stake).await);
                let id = play["id"].as_i64().unwrap();
                ids.push(id);
                // Leave every fifth game mid-way.
                let throws = if (p + n) % 5 == 0 { (p + n) % 4 } else { 4 };
                for _ in 0..throws {
                    expect(StatusCode::OK, client.throw(id).await);
                }
            }
            let (_, history) = client.history("?limit=100").await;
            let listed: HashSet<i64> = ids_in(&history).into_iter().collect();
            assert_eq!(
                listed,
                ids.iter().copied().collect(),
                "every play is in its player's history"
            );
            ids
        }));
    }
    let mut all = HashSet::new();
    for task in tasks {
        for id in task.await.unwrap() {
            assert!(all.insert(id));
        }
    }
    assert_eq!(all.len(), PLAYERS * PLAYS);
    app.clock
        .advance_ms(app.service.settings.auto_settle_after_s * 1000 + 1);
    app.service.settle_abandoned().await.unwrap();
    let pool = &app.service.db.pool;
    let distinct_units: i64 = scalar(
        pool,
        "SELECT COUNT(*) FROM (SELECT DISTINCT block_id, unit_index FROM plays) u",
    )
    .await;
    assert_eq!(
        distinct_units as usize,
        PLAYERS * PLAYS,
        "no unit sold twice"
    );
    let sold: i64 = scalar(pool, "SELECT CAST(SUM(units_sold) AS BIGINT) FROM blocks").await;
    assert_eq!(
        sold as usize,
        PLAYERS * PLAYS,
        "block counters match the plays"
    );
    let unsettled: i64 = scalar(pool, "SELECT COUNT(*) FROM plays WHERE state <> 'finished'").await;
    assert_eq!(unsettled, 0);
    let prizes: i64 = scalar(pool, "SELECT COUNT(*) FROM transfers WHERE kind = 'prize'").await;
    let winners: i64 = scalar(pool, "SELECT COUNT(*) FROM plays WHERE prize_cents > 0").await;
    assert_eq!(prizes, winners, "every win credited once");
    assert_ledger_balances(&app.service.db).await;
}
