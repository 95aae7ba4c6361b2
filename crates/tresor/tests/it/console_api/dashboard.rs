//! The dashboard's counts and the ban list imported from the console.

use super::*;
use crate::common::items;

/// The winning units the dashboard says are left to sell at 1 € (its
/// liability, level by level).
fn winning_units_left_at_100(board: &Value) -> i64 {
    items(&board["liability"], "liability")
        .iter()
        .filter(|l| l["stake_cents"] == 100)
        .map(|l| l["left"].as_i64().unwrap())
        .sum()
}

on_both!(
    a_ban_list_of_megabytes_is_imported_from_the_console_and_bans_at_once,
    |app| {
        let (alice, _) = logged_in(&app, "alice", Role::Operator).await;
        let player = real_money_player(&app, &alice, "zoe", 1_000).await;
        let account = app.service.player_by_username("zoe").await.unwrap();
        let born = app
            .service
            .account(&account)
            .await
            .unwrap()
            .identity
            .unwrap()
            .birth_date;
        // 60,000 names (about 2 MiB, past the 64 KiB of any other request),
        // one of them the player's.
        let mut csv = String::from("birth_name,first_names,birth_date\n");
        for n in 0..60_000 {
            csv.push_str(&format!("Someone {n},Jean Paul,1970-01-01\n"));
        }
        csv.push_str(&format!("NAME OF ZOE,anne-marie,{born}\n"));
        assert!(csv.len() > 1 << 20);
        let body = alice.ok("/console/api/banlist", json!({"csv": csv})).await;
        assert_eq!(body["entries"], 60_001);
        assert_eq!(body["banned"], json!(["zoe"]));
        let view = app.service.account(&account).await.unwrap();
        assert!(view.banned, "the player is banned at once");
        assert!(
            trail(&app)
                .await
                .iter()
                .any(|(actor, action)| actor == "staff:alice" && action == "ban_list_imported"),
            "the import is in the trail under the operator's name"
        );

        // A malformed list is refused whole and changes nothing.
        let before = state_of(&app).await;
        let answer = alice
            .post(
                "/console/api/banlist",
                json!({"csv": "birth_name,first_names,birth_date\nX,Y,1970-13-45\n"}),
            )
            .await;
        assert_refused(&answer, StatusCode::UNPROCESSABLE_ENTITY, "validation");
        assert_eq!(state_of(&app).await, before);
        assert!(app.service.account(&account).await.unwrap().banned);
        let _ = player;
    }
);

on_both!(the_dashboard_counts_purchases_and_sales, |app| {
    // Purchases and the polls below stay within one minute.
    let into_minute = app.service.now_ms() % 60_000;
    if into_minute > 50_000 {
        app.clock.advance_ms(60_000 - into_minute + 1_000);
    }
    let (viewer, _) = logged_in(&app, "vera", Role::Viewer).await;
    let board = viewer.read("/console/api/dashboard").await;
    let minutes = board["purchases_per_minute"].as_array().unwrap();
    assert_eq!(minutes.len(), 60);
    assert!(minutes.iter().all(|m| m["count"] == 0));
    assert_eq!(board["totals"]["stakes_cents"], 0);
    let left_before = winning_units_left_at_100(&board);
    assert_eq!(board["liability"].as_array().unwrap().len(), 3 * 9);
    assert!(board["writer"]["queue"].is_number());

    app.player("bob", 1_000).await;
    for _ in 0..3 {
        let play = expect(StatusCode::CREATED, app.buy(100).await);
        app.finish(play["id"].as_i64().unwrap()).await;
    }
    expect(StatusCode::CREATED, app.buy(50).await);
    // A dashboard younger than a second is answered again as it was.
    let (_, cached) = viewer.get("/console/api/dashboard").await;
    assert_eq!(cached["at"], board["at"]);
    app.clock.advance_ms(1_500);
    let board = viewer.read("/console/api/dashboard").await;
    let minutes = board["purchases_per_minute"].as_array().unwrap();
    assert_eq!(minutes.len(), 60);
    assert_eq!(
        minutes
            .iter()
            .map(|m| m["count"].as_i64().unwrap())
            .sum::<i64>(),
        4
    );
    assert_eq!(minutes.last().unwrap()["count"], 4, "{minutes:?}");
    let stake_100 = board["per_stake"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stake_cents"] == 100)
        .unwrap()
        .clone();
    assert_eq!(stake_100["sold"], 3);
    assert_eq!(stake_100["stakes_cents"], 300);
    assert_eq!(stake_100["expected_prizes_cents"], 210);
    assert_eq!(board["totals"]["stakes_cents"], 350);
    // The prizes won are the plays' own.
    let won: i64 =
        sqlx::query_scalar("SELECT CAST(COALESCE(SUM(prize_cents), 0) AS BIGINT) FROM plays")
            .fetch_one(&app.service.db.pool)
            .await
            .unwrap();
    assert_eq!(board["totals"]["prizes_cents"], won);
    let sold_blocks: i64 = board["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["sold"].as_i64().unwrap())
        .sum();
    assert_eq!(sold_blocks, 4);
    let left_after = winning_units_left_at_100(&board);
    let winning_units: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM plays WHERE stake_cents = 100 AND level > 0")
            .fetch_one(&app.service.db.pool)
            .await
            .unwrap();
    assert_eq!(left_before - left_after, winning_units);
    assert!(board["writer"]["batches"].as_u64().unwrap() > 0);
    // Two minutes later the purchases moved one minute back per minute.
    app.clock.advance_ms(120_000);
    let (_, board) = viewer.get("/console/api/dashboard").await;
    let minutes = board["purchases_per_minute"].as_array().unwrap();
    assert_eq!(
        minutes
            .iter()
            .map(|m| m["count"].as_i64().unwrap())
            .sum::<i64>(),
        4
    );
    assert_eq!(minutes.last().unwrap()["count"], 0);
    // The report is the operator's, as `tresor report --format json`.
    let report = viewer.read("/console/api/report").await;
    assert_eq!(report["money"]["ledger_sum_cents"], 0);
});
