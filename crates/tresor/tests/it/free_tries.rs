//! Free tries (issue 45, docs/GAMES.md "Free tries"): drawn at the stake's
//! table odds from the server's own generator, staged like a real unit,
//! writing nothing at all (no row, no writer job, no real unit), throttled
//! per address apart from purchases, refused to an excluded or capped player.

mod browser;

use crate::common::{TestApp, expect};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tresor::error::Error;
use tresor::protect::{ExclusionLength, RateLimits};
use tresor::service::{Settings, free_level, free_try};
use tresor::store::Backend;
use tresor::trail::Actor;
use tresor_game::{Game, PrizeTable, ile_au_tresor};

/// The chi-square statistic's value that a true table passes 999 times in
/// 1,000, by degrees of freedom (1 to 9).
const CHI2_999: [f64; 9] = [
    10.828, 13.816, 16.266, 18.467, 20.515, 22.458, 24.322, 26.124, 27.877,
];

const DRAWS: u32 = 200_000;

/// Draws `DRAWS` free levels of `table` and returns the chi-square statistic
/// and its degrees of freedom against `counts` (the table's literal units
/// per block, losing first), rare levels pooled until each bin expects 5.
fn chi_square(game: &Game, table: &PrizeTable, counts: [u32; 10]) -> (f64, usize) {
    let units = f64::from(game.units_per_block());
    assert_eq!(counts.iter().sum::<u32>(), game.units_per_block());
    let mut seen = [0u32; 10];
    for _ in 0..DRAWS {
        seen[usize::from(free_level(game, table).get())] += 1;
    }
    for (level, &count) in counts.iter().enumerate() {
        if count == 0 {
            assert_eq!(seen[level], 0, "level {level} is not in the table");
        }
    }
    // Bins: the losing units, then the winning levels rarest first pooled
    // until a bin expects at least 5 draws.
    let expected = |c: u32| f64::from(DRAWS) * f64::from(c) / units;
    let mut bins: Vec<(f64, f64)> = vec![(expected(counts[0]), f64::from(seen[0]))];
    let mut pending = (0.0, 0.0);
    for level in 1..10 {
        if counts[level] == 0 {
            continue;
        }
        pending.0 += expected(counts[level]);
        pending.1 += f64::from(seen[level]);
        if pending.0 >= 5.0 {
            bins.push(pending);
            pending = (0.0, 0.0);
        }
    }
    let last = bins.len() - 1;
    bins[last].0 += pending.0;
    bins[last].1 += pending.1;
    let statistic = bins.iter().map(|(e, o)| (o - e) * (o - e) / e).sum();
    (statistic, bins.len() - 1)
}

/// `table` holds `counts`, and the free draws of `game` at its stake fit
/// them: the chi-square over 7 degrees of freedom (`pooled` says which
/// levels were pooled) under its 99.9 % quantile.
fn assert_draws_fit(game: &Game, table: &PrizeTable, counts: [u32; 10], pooled: &str) {
    assert_eq!(table.counts(), counts);
    let (statistic, freedom) = chi_square(game, table, counts);
    assert_eq!(freedom, 7, "{pooled}");
    assert!(
        statistic < CHI2_999[freedom - 1],
        "chi-square {statistic:.2} over {freedom} degrees of freedom"
    );
}

#[test]
fn two_hundred_thousand_free_draws_match_the_islands_table() {
    let island = ile_au_tresor();
    let table = island.table(100).expect("the island's 1 € stake");
    // The island's table, literally (docs/GAMES.md): losing units first.
    let counts = [
        330_396, 1, 3, 100, 1_000, 500, 2_000, 26_000, 38_000, 52_000,
    ];
    assert_draws_fit(island, table, counts, "levels 1 and 2 pooled with 3");
}

#[test]
fn two_hundred_thousand_free_draws_match_a_scratch_cards_table() {
    let express = Game::parse(include_str!("../../../../games/tresor-express.toml"))
        .expect("the shipped scratch card")
        .leak();
    let table = express.table(200).expect("its 2 € stake");
    let counts = [68_775, 1, 4, 20, 200, 500, 2_000, 8_500, 20_000, 0];
    assert_draws_fit(express, table, counts, "levels 1 and 2 pooled");
    // Staged by the same generator as a real unit: the card shows its level.
    for _ in 0..200 {
        let free = free_try(express, table).expect("a checked game stages");
        let answer = serde_json::to_value(&free).unwrap();
        assert_eq!(answer["free"], true);
        assert_eq!(answer["scenario"]["kind"], "scratch");
        assert_eq!(answer["scenario"]["cells"].as_array().unwrap().len(), 9);
    }
}

/// Every table's row count, the writer's queued jobs and the real blocks'
/// units sold: what a free try must leave as it found.
async fn everything(app: &TestApp) -> (Vec<(String, i64)>, u64, i64) {
    let pool = &app.service.db.pool;
    let tables: Vec<String> = sqlx::query_scalar(match app.service.db.backend {
        Backend::Sqlite => {
            "SELECT name FROM sqlite_master WHERE type = 'table' \
             AND name NOT LIKE 'sqlite_%' ORDER BY name"
        }
        Backend::Postgres => {
            "SELECT CAST(table_name AS TEXT) FROM information_schema.tables \
             WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name"
        }
    })
    .fetch_all(pool)
    .await
    .unwrap();
    assert!(tables.len() > 20, "{tables:?}");
    let mut counts = Vec::new();
    for table in tables {
        let n: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM \"{table}\""))
            .fetch_one(pool)
            .await
            .unwrap();
        counts.push((table, n));
    }
    let sold: i64 =
        sqlx::query_scalar("SELECT CAST(COALESCE(SUM(units_sold), 0) AS BIGINT) FROM blocks")
            .fetch_one(pool)
            .await
            .unwrap();
    (counts, app.service.writer.stats.queued.get(), sold)
}

/// A visitor's free try: no cookie.
async fn visitor_try(app: &TestApp, body: Value) -> (StatusCode, Value) {
    let response = reqwest::Client::new()
        .post(format!("{}/api/free/plays", app.address))
        .header("x-requested-with", "tresor")
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.json().await.unwrap())
}

on_both!(free_tries_write_nothing_and_touch_no_real_block, |app| {
    let ana = app.player("ana", 1_000).await;
    expect(StatusCode::CREATED, app.buy(100).await);
    let me_before = expect(StatusCode::OK, app.get("/api/me").await);
    let before = everything(&app).await;
    assert_eq!(before.2, 1, "one real unit sold");
    let mut levels = std::collections::BTreeSet::new();
    for round in 0..40 {
        let body = json!({"game": "ile-au-tresor", "stake_cents": 100});
        let answer = if round % 2 == 0 {
            expect(StatusCode::OK, visitor_try(&app, body).await)
        } else {
            expect(StatusCode::OK, app.post("/api/free/plays", body).await)
        };
        assert_eq!(answer["free"], true, "{answer}");
        assert_eq!(answer["state"], "finished");
        assert!(answer.get("id").is_none() && answer.get("unit").is_none());
        assert_eq!(answer["scenario"]["throws"].as_array().unwrap().len(), 4);
        let level = answer["outcome"]["level"].as_u64().unwrap();
        levels.insert(level);
    }
    assert!(!levels.is_empty());
    assert_eq!(
        everything(&app).await,
        before,
        "rows, writer jobs, units sold"
    );
    let me_after = expect(StatusCode::OK, app.get("/api/me").await);
    assert_eq!(me_after["balance_cents"], me_before["balance_cents"]);
    // The route decides, not the client: a flag is refused.
    let flagged = visitor_try(&app, json!({"stake_cents": 100, "free": false})).await;
    assert_eq!(flagged.0, StatusCode::UNPROCESSABLE_ENTITY, "{}", flagged.1);
    assert_eq!(flagged.1["error"]["code"], "validation");
    let unknown = visitor_try(&app, json!({"stake_cents": 123})).await;
    assert_eq!(unknown.1["error"]["code"], "unknown_stake", "{}", unknown.1);
    assert_eq!(everything(&app).await, before);
    drop(ana);
});

on_both!(
    free_tries_are_refused_to_a_capped_or_excluded_player,
    |app| {
        let ana = crate::common::players::player("ana")
            .limits(50_000, 200)
            .deposit(1_000)
            .on(&app)
            .await;
        expect(StatusCode::CREATED, app.buy(200).await);
        let before = everything(&app).await;
        let (status, refused) = app
            .post("/api/free/plays", json!({"stake_cents": 100}))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
        assert_eq!(refused["error"]["code"], "stake_limit_reached");
        // A visitor, the same address: free to try.
        expect(
            StatusCode::OK,
            visitor_try(&app, json!({"stake_cents": 100})).await,
        );
        app.service
            .exclude(
                &ana.service_player,
                Actor::player(ana.id, "ana"),
                ExclusionLength::Days(7),
            )
            .await
            .unwrap();
        let before = (before, everything(&app).await);
        match app.service.free_play(Some(ana.id), None, 100).await {
            Err(Error::Excluded { .. }) => {}
            other => panic!("an excluded player's free try: {other:?}"),
        }
        // The exclusion ended her sessions; the page still holding the
        // cookie is hers all the same.
        let (status, refused) = app
            .post("/api/free/plays", json!({"stake_cents": 100}))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
        assert_eq!(refused["error"]["code"], "excluded");
        assert_eq!(everything(&app).await, before.1, "a refusal writes nothing");
    }
);

/// `count` requests of `kind` ("free" tries or "buy"s at 1 €) by the
/// logged-in client from `address` (`X-Forwarded-For`): their statuses.
async fn statuses(app: &TestApp, kind: &str, address: &str, count: usize) -> Vec<u16> {
    let mut statuses = Vec::new();
    for n in 0..count {
        // An idempotency key of hex digits, one per address and request.
        let key = format!("{:0>24}", format!("{}{n}", address.replace('.', "")));
        let mut headers = vec![("x-requested-with", "tresor"), ("x-forwarded-for", address)];
        let path = if kind == "free" {
            "/api/free/plays"
        } else {
            headers.push(("idempotency-key", &key));
            "/api/plays"
        };
        let (status, body) = app
            .post_raw(path, &json!({"stake_cents": 100}).to_string(), &headers)
            .await;
        if status == StatusCode::TOO_MANY_REQUESTS {
            assert_eq!(body["error"]["code"], "rate_limited");
        }
        statuses.push(status.as_u16());
    }
    statuses
}

on_both!(
    free_tries_are_throttled_per_address_apart_from_purchases,
    Settings {
        rate_limits: RateLimits {
            free_tries_per_minute_per_address: 5,
            purchases_per_minute_per_address: 3,
            trust_forwarded_for: true,
            ..RateLimits::unthrottled()
        },
        ..TestApp::settings()
    },
    |app| {
        app.player("ana", 1_000).await;
        let (tries, refused) = (vec![200; 5], vec![429; 3]);
        let buys = [201, 201, 201, 429];
        // A flood of free tries leaves the purchases' budget whole...
        assert_eq!(
            statuses(&app, "free", "203.0.113.1", 8).await,
            [tries.clone(), refused.clone()].concat()
        );
        assert_eq!(statuses(&app, "buy", "203.0.113.1", 4).await, buys);
        // ... and purchases leave the free tries' budget whole.
        assert_eq!(statuses(&app, "buy", "203.0.113.2", 4).await, buys);
        assert_eq!(
            statuses(&app, "free", "203.0.113.2", 8).await,
            [tries, refused].concat()
        );
        // Each address its own budget: a visitor from a third one tries.
        let (status, _) = app
            .post_raw(
                "/api/free/plays",
                &json!({"stake_cents": 100}).to_string(),
                &[
                    ("x-requested-with", "tresor"),
                    ("x-forwarded-for", "203.0.113.3"),
                ],
            )
            .await;
        assert_eq!(status, StatusCode::OK);
    }
);

on_both!(control_characters_in_a_free_try_are_refused, |app| {
    let before = everything(&app).await;
    let (status, body) = visitor_try(&app, json!({"game": "ile\u{1}", "stake_cents": 100})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], "control_character");
    assert_eq!(everything(&app).await, before);
});
