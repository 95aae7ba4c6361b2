//! API tests: every endpoint, its success and its refusals, on SQLite and on
//! PostgreSQL alike. A refused request must change nothing.

pub(crate) mod browser;
mod plays;

use crate::common::expect;
use crate::common::opening::assert_invalid;
use crate::common::scalar;

use reqwest::StatusCode;
use serde_json::{Value, json};

on_both!(
    registering_logs_the_player_in_with_an_empty_balance,
    |app| {
        let me = expect(StatusCode::CREATED, app.register("ana").await);
        assert_eq!(me["username"], "ana");
        assert_eq!(me["balance_cents"], 0);
        assert_eq!(me["current_play_id"], serde_json::Value::Null);
        let (status, me) = app.me().await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(me["username"], "ana");
    }
);

on_both!(
    registration_is_refused_without_both_declarations_or_a_long_password,
    |app| {
        for (body, field) in [
            (
                json!({"username": "bob", "password": "a long password", "adult": false, "accept_rules": true}),
                "adult",
            ),
            (
                json!({"username": "bob", "password": "a long password", "adult": true, "accept_rules": false}),
                "accept_rules",
            ),
            (
                json!({"username": "bob", "password": "a long password", "adult": true}),
                "accept_rules",
            ),
            (
                json!({"username": "bob", "password": "too short", "adult": true, "accept_rules": true}),
                "password",
            ),
            (
                json!({"username": "b", "password": "a long password", "adult": true, "accept_rules": true}),
                "username",
            ),
        ] {
            assert_invalid(&app.post("/api/register", body).await, field);
        }
        let (status, _) = app.me().await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "no session was opened");
        let players: i64 = scalar(&app.service.db.pool, "SELECT COUNT(*) FROM players").await;
        assert_eq!(players, 0, "nothing was created");
    }
);

on_both!(a_username_is_taken_whatever_its_case, |app| {
    app.register("Ana").await;
    let other = app.another_client();
    let (status, error) = other.register("ana").await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(error["error"]["code"], "username_taken");
});

on_both!(
    malformed_json_and_wrong_types_are_refused_with_json_errors,
    |app| {
        let (status, error) = app
            .post_raw(
                "/api/register",
                "{not json",
                &[("x-requested-with", "tresor")],
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(error["error"]["code"], "invalid_json");
        let (status, error) = app
        .post("/api/register", json!({"username": 12, "password": "a long password", "adult": true, "accept_rules": true}))
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(error["error"]["code"], "validation");
        app.player("ana", 500).await;
        let (status, error) = app
            .post_raw(
                "/api/plays",
                r#"{"stake_cents": "100"}"#,
                &[("x-requested-with", "tresor"), ("idempotency-key", "k")],
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(error["error"]["code"], "validation");
        assert_eq!(app.balance().await, 500);
    }
);

on_both!(
    login_checks_the_password_and_logout_ends_the_session,
    |app| {
        app.register("ana").await;
        app.logout().await;
        let (status, _) = app.me().await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        let (status, error) = app.login("ana", "wrong password").await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(error["error"]["code"], "invalid_credentials");
        let (status, error) = app.login("nobody", "a long password").await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(error["error"]["code"], "invalid_credentials");
        let me = expect(StatusCode::OK, app.login("ANA", "a long password").await);
        assert_eq!(me["username"], "ana");
        let (status, _) = app.me().await;
        assert_eq!(status, StatusCode::OK);
    }
);

on_both!(a_session_expires_after_inactivity, |app| {
    app.register("ana").await;
    app.clock.advance_ms(29 * 60 * 1000);
    assert_eq!(
        app.me().await.0,
        StatusCode::OK,
        "still alive after 29 minutes"
    );
    app.clock.advance_ms(31 * 60 * 1000);
    let (status, error) = app.me().await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "ended after 31 idle minutes"
    );
    assert_eq!(error["error"]["code"], "unauthorized");
});

on_both!(every_endpoint_but_the_public_ones_needs_a_session, |app| {
    for path in ["/api/me", "/api/plays", "/api/plays/1"] {
        let (status, error) = app.get(path).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
        assert_eq!(error["error"]["code"], "unauthorized");
    }
    for path in ["/api/plays/1/throws", "/api/demo/deposit"] {
        assert_eq!(
            app.post(path, json!({"amount_cents": 1})).await.0,
            StatusCode::UNAUTHORIZED,
            "{path}"
        );
    }
    assert_eq!(app.buy(100).await.0, StatusCode::UNAUTHORIZED);
    for path in ["/api/status", "/api/blocks", "/api/island", "/healthz"] {
        assert_eq!(app.get(path).await.0, StatusCode::OK, "{path}");
    }
});

on_both!(
    a_state_changing_request_without_the_csrf_header_is_refused,
    |app| {
        let body = json!({"username": "ana", "password": "a long password", "adult": true, "accept_rules": true});
        let (status, error) = app.post_raw("/api/register", &body.to_string(), &[]).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert_eq!(error["error"]["code"], "csrf");
        assert_eq!(app.me().await.0, StatusCode::UNAUTHORIZED);
    }
);

on_both!(demo_deposits_credit_the_balance_within_their_limit, |app| {
    app.register("ana").await;
    let me = expect(StatusCode::OK, app.deposit(2_000).await);
    assert_eq!(me["balance_cents"], 2_000);
    for amount in [0, -5, 100_001] {
        let (status, error) = app.deposit(amount).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{amount}");
        assert_eq!(error["error"]["code"], "validation");
    }
    assert_eq!(app.balance().await, 2_000);
    app.assert_ledger_balances().await;
});

on_both!(the_status_and_the_island_are_public, |app| {
    let (_, status) = app.get("/api/status").await;
    assert_eq!(status["sales_open"], true);
    assert_eq!(status["demo"], true);
    assert_eq!(status["stakes"], json!([50, 100, 200]));
    let (_, island) = app.get("/api/island").await;
    assert!(island["land"].as_array().unwrap().len() > 9);
    assert!(island["start"].is_array());
});

on_both!(
    health_and_metrics_answer_on_the_operator_listener_only,
    |app| {
        // Alive on both listeners (a load balancer asks the players', an
        // operator's probe the operator's).
        for (status, body) in [app.get("/healthz").await, app.admin_get("/healthz").await] {
            assert_eq!(status, StatusCode::OK);
            assert_eq!(body, "ok");
        }
        app.player("ana", 500).await;
        let (_, play) = app.buy(100).await;
        app.finish(play["id"].as_i64().unwrap()).await;
        // Wins paid would tell a watcher when a top prize is found: players
        // never see the metrics.
        assert_eq!(app.get("/metrics").await.0, StatusCode::NOT_FOUND);
        let (status, metrics) = app.admin_get("/metrics").await;
        assert_eq!(status, StatusCode::OK);
        let metrics = metrics.as_str().unwrap();
        let samples = samples(metrics);
        assert_eq!(
            samples.get("tresor_purchases_total"),
            Some(&1.0),
            "{metrics}"
        );
        assert_eq!(samples.get("tresor_throws_total"), Some(&4.0), "{metrics}");
        assert!(
            samples
                .get("tresor_writer_batch_size_count")
                .is_some_and(|&batches| batches >= 1.0),
            "{metrics}"
        );
        assert!(
            samples
                .keys()
                .any(|name| name.starts_with("tresor_http_request_duration_seconds_bucket{")),
            "{metrics}"
        );
    }
);

/// The samples of a Prometheus text exposition: each series (its name and
/// labels, as written) with its value.
fn samples(metrics: &str) -> std::collections::BTreeMap<String, f64> {
    metrics
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let (series, value) = line
                .rsplit_once(' ')
                .unwrap_or_else(|| panic!("a sample: {line}"));
            let value = value.parse().unwrap_or_else(|_| panic!("a number: {line}"));
            (series.to_owned(), value)
        })
        .collect()
}

on_both!(
    request_metrics_label_only_known_methods_and_matched_routes,
    |app| {
        let client = reqwest::Client::new();
        for n in 0..5 {
            let method = reqwest::Method::from_bytes(format!("INVENTED{n}").as_bytes()).unwrap();
            client
                .request(method, format!("{}/api/status", app.address))
                .send()
                .await
                .unwrap();
            client
                .get(format!("{}/no/such/path/{n}", app.address))
                .send()
                .await
                .unwrap();
        }
        let (_, metrics) = app.admin_get("/metrics").await;
        let metrics = metrics.as_str().unwrap();
        assert!(!metrics.contains("INVENTED"), "{metrics}");
        assert!(!metrics.contains("/no/such/path"), "{metrics}");
        assert!(metrics.contains("method=\"other\""), "{metrics}");
    }
);

on_both!(
    the_public_block_list_hides_units_sold_while_a_block_is_on_sale,
    |app| {
        app.player("ana", 500).await;
        let (status, _) = app.buy(100).await;
        assert_eq!(status, StatusCode::CREATED);
        let (_, blocks) = app.get("/api/blocks").await;
        for block in crate::common::items(&blocks["blocks"], "blocks") {
            assert_eq!(block["state"], "open", "{block}");
            assert_eq!(block["units_sold"], Value::Null, "{block}");
            assert!(block["commitment"].is_string(), "{block}");
        }
        // The operator sees them.
        let sold: i64 = app
            .service
            .blocks()
            .await
            .unwrap()
            .iter()
            .map(|b| b.units_sold.unwrap())
            .sum();
        assert_eq!(sold, 1);
    }
);

on_both!(unknown_api_paths_are_json_404s, |app| {
    let (status, error) = app.get("/api/nothing").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error["error"]["code"], "not_found");
});
