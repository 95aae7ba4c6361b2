//! Usernames: look-alikes cannot coexist nor log in as one, the normal form is stored, skeletons
//! are filled at start; an unknown field is refused with its name.

use super::*;
use crate::common::execute;

// -- Usernames --------------------------------------------------------------

on_both!(
    names_that_look_alike_cannot_coexist_and_log_in_as_one,
    |app| {
        expect(StatusCode::CREATED, app.register("ana").await);
        // Cyrillic а (U+0430), full-width ａｎａ, capitals, and a ligature-free
        // mix: each one looks like "ana".
        for name in ["\u{430}na", "ａｎａ", "ANA", "Ana", "\u{430}\u{43d}a"] {
            let (status, error) = app.another_client().register(name).await;
            if name == "\u{430}\u{43d}a" {
                // Cyrillic "н" is not a Latin "n": another name.
                assert_eq!(status, StatusCode::CREATED, "{name}: {error}");
                continue;
            }
            assert_eq!(status, StatusCode::CONFLICT, "{name}: {error}");
            assert_eq!(error["error"]["code"], "username_taken", "{name}");
        }
        let players: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM players")
            .fetch_one(&app.service.db.pool)
            .await
            .unwrap();
        assert_eq!(players, 2);
        let other = app.another_client();
        let me = expect(
            StatusCode::OK,
            other.login("ＡＮＡ", "a long password").await,
        );
        assert_eq!(me["username"], "ana", "the name as registered");
    }
);

on_both!(a_username_is_stored_in_its_normal_form, |app| {
    let me = expect(StatusCode::CREATED, app.register("ｂｏｂ_ＢＯＢ").await);
    assert_eq!(me["username"], "bob_BOB");
    let error = expect(
        StatusCode::UNPROCESSABLE_ENTITY,
        app.another_client().register("a\u{200b}na").await,
    );
    assert_eq!(error["error"]["code"], "validation");
});

on_both!(
    skeletons_left_empty_are_filled_at_start_and_a_clash_keeps_none,
    |db: &TestDb| {
        let (service, _) = db.service().await;
        crate::common::player(&service, "ana").await;
        crate::common::player(&service, "bob").await;
        // As before the skeleton column: none, and a name that an older
        // server let in beside "ana".
        execute(
            &service.db.pool,
            &["UPDATE players SET username_skeleton = NULL"],
        )
        .await;
        let account: i64 = sqlx::query_scalar(
            "INSERT INTO accounts (kind, balance_cents) VALUES ('player', 0) RETURNING id",
        )
        .fetch_one(&service.db.pool)
        .await
        .unwrap();
        sqlx::query(
            "INSERT INTO players (username, username_key, password_hash, account_id, \
             adult_declared_at_ms, rules_accepted_at_ms, created_at_ms) \
             SELECT 'ＡＮＡ', 'ａｎａ', password_hash, $1, 0, 0, 0 FROM players WHERE username = 'ana'",
        )
        .bind(account)
        .execute(&service.db.pool)
        .await
        .unwrap();
        assert_eq!(service.backfill_username_skeletons().await.unwrap(), 2);
        assert_eq!(service.backfill_username_skeletons().await.unwrap(), 0);
        let skeletons: Vec<(String, Option<String>)> =
            sqlx::query_as("SELECT username, username_skeleton FROM players ORDER BY id")
                .fetch_all(&service.db.pool)
                .await
                .unwrap();
        assert_eq!(skeletons[0].1.as_deref(), Some("ana"));
        assert!(skeletons[1].1.is_some());
        assert_eq!(skeletons[2].1, None, "a clash keeps none");
        assert_eq!(
            service.player_by_username("ANA").await.unwrap().username,
            "ana"
        );
    }
);

// -- Unknown fields -----------------------------------------------------------

on_both!(
    an_unknown_field_is_refused_with_its_name_and_creates_nothing,
    |app| {
        let error = expect(
            StatusCode::UNPROCESSABLE_ENTITY,
            app.post(
                "/api/register",
                json!({"username": "ana", "password": "a long password", "adult": true,
                       "accept_rules": true, "deposit_limit": 1000}),
            )
            .await,
        );
        assert_eq!(error["error"]["code"], "validation");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("unknown field `deposit_limit`"),
            "{message}"
        );
        let players: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM players")
            .fetch_one(&app.service.db.pool)
            .await
            .unwrap();
        assert_eq!(players, 0, "no account exists");
        app.player("ana", 1_000).await;
        for (path, body, field) in [
            (
                "/api/login",
                json!({"username": "ana", "password": "x", "remember": true}),
                "remember",
            ),
            (
                "/api/demo/deposit",
                json!({"amount_cents": 100, "currency": "EUR"}),
                "currency",
            ),
            (
                "/api/limits",
                json!({"deposit_limit_cents": 100, "stake_limit": 5}),
                "stake_limit",
            ),
            ("/api/exclusion", json!({"period": "7d", "days": 1}), "days"),
        ] {
            let (status, error) = app.post(path, body).await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{path}: {error}");
            let message = error["error"]["message"].as_str().unwrap();
            assert!(message.contains(&format!("`{field}`")), "{path}: {message}");
        }
        let error = expect(
            StatusCode::UNPROCESSABLE_ENTITY,
            app.history("?limit=5&offset=10").await,
        );
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("offset")
        );
        assert_eq!(app.balance().await, 1_000, "nothing moved");
    }
);
