//! A sold-out block reports exactly its table; a suspended block is not sold and sales go on
//! from another.

use super::*;
use crate::common::sellout::{Reveal, Table, sell_a_whole_block};

on_both!(
    a_sold_out_block_reports_exactly_its_table,
    a_suspended_block_is_not_sold_and_sales_go_on_from_another_block,
);

/// A block sold out through the service reports exactly its table, level by
/// level, and publishes its secret. « Petit coffre »'s blocks hold 2,000
/// units (`tests/it/games/petit-coffre.toml`); the island's 450,000 are sold
/// whole by `tests/whole_blocks/`, which CI runs beside the build.
async fn a_sold_out_block_reports_exactly_its_table(db: &TestDb) {
    // The file's own figures at 5 €, not the code's reading of them.
    let table = Table {
        units: 2_000,
        prizes_cents: 500_000,
        counts: &[1_674, 1, 5, 20, 100, 200],
        payout_percent: "50.00",
    };
    let service = sell_a_whole_block(db, "petit-coffre", 500, 8, Reveal::Never, &table).await;
    let report = report_json(db, &[]);
    let blocks = blocks_of(&report);
    assert_eq!(blocks.len(), 1, "the one block of the emission");
    let block = &blocks[0];
    assert_eq!(block["state"], "sold_out");
    let f = &block["figures"];
    assert_eq!(f["units_sold"], json!(2_000));
    assert_eq!(f["units_left"], json!(0));
    assert_eq!(f["stakes_taken_cents"], json!(1_000_000));
    assert_eq!(f["wins_won_cents"], json!(500_000));
    assert_eq!(f["prizes_left_cents"], json!(0));
    assert_eq!(f["payout_percent"], "50.00");
    assert_eq!(
        f["wins_credited_cents"].as_i64().expect("credited")
            + f["wins_pending_cents"].as_i64().expect("pending"),
        500_000
    );
    // Level, units and prize as the file writes them.
    let table = [
        (1, 1, 100_000),
        (2, 5, 20_000),
        (3, 20, 5_000),
        (4, 100, 1_000),
        (5, 200, 500),
    ];
    let levels = crate::common::items(&f["levels"], "levels");
    assert_eq!(levels.len(), table.len(), "every level of the table");
    for (level, (number, units, prize)) in levels.iter().zip(table) {
        assert_eq!(level["level"], json!(number));
        assert_eq!(level["units_in_table"], json!(units), "level {number}");
        assert_eq!(level["units_sold"], json!(units), "level {number}");
        assert_eq!(level["units_left"], json!(0), "level {number}");
        assert_eq!(level["prize_cents"], json!(prize), "level {number}");
        assert_eq!(level["prizes_left_cents"], json!(0), "level {number}");
    }
    // Sold out, the block's secret is public and matches its commitment.
    let api = Api::new(&service);
    let answer = api.get("/api/blocks").await;
    let listed = &answer.body["blocks"][0];
    let file = crate::common::games::test_games().join("petit-coffre.toml");
    let verify = crate::common::tresor(&[
        "block",
        "verify",
        "--game",
        file.to_str().expect("a UTF-8 path"),
        "--secret",
        listed["secret"].as_str().expect("the secret is published"),
        "--commitment",
        listed["commitment"].as_str().expect("a commitment"),
        "--stake",
        "500",
    ]);
    assert_exit(&verify, 0);
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
