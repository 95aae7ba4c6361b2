//! Stake and deposit caps: refused when passed, out of range at registration, raised after 48 hours.

mod browser;

use super::*;

// -- Caps -------------------------------------------------------------------

on_both!(
    a_stake_cap_refuses_the_purchase_that_would_pass_it_and_accepts_the_one_that_fits,
    |app| {
        let me = player("ana").limits(50_000, 250).on(&app).await.me;
        assert_eq!(me["limits"]["stake"]["limit_cents"], 250);
        assert_eq!(me["limits"]["deposit"]["limit_cents"], 50_000);
        assert_eq!(me["excluded_until"], Value::Null);
        assert_eq!(app.deposit(1_000).await.0, StatusCode::OK);
        for _ in 0..2 {
            assert_eq!(app.buy(100).await.0, StatusCode::CREATED);
        }
        let balance = app.balance().await;
        let error = expect(StatusCode::FORBIDDEN, app.buy(100).await);
        let error = &error["error"];
        assert_eq!(error["code"], "stake_limit_reached");
        assert_eq!(error["limit_cents"], 250);
        assert_eq!(error["left_cents"], 50);
        let resets_at = error["resets_at"].as_str().expect("a reset time");
        let message = error["message"].as_str().unwrap();
        for part in ["stake limit of 2.50 €", "0.50 € left", resets_at] {
            assert!(message.contains(part), "{part} in {message}");
        }
        // The reset is when the oldest counted stake (this hour's) is 7 days old.
        let hour_start = app.clock.now_ms() - app.clock.now_ms() % HOUR_MS;
        assert_eq!(resets_at, rfc3339(hour_start + HOUR_MS + 7 * DAY_MS));
        assert_eq!(
            app.balance().await,
            balance,
            "the refused purchase debited nothing"
        );
        expect(StatusCode::CREATED, app.buy(50).await);
        let (_, me) = app.me().await;
        assert_eq!(me["limits"]["stake"]["used_cents"], 250);
        assert_eq!(me["limits"]["stake"]["left_cents"], 0);
        assert_eq!(me["limits"]["stake"]["resets_at"], resets_at);
        // Once the window has passed, the player may play again.
        app.clock.advance_ms(7 * DAY_MS + HOUR_MS);
        app.login("ana", "a long password").await;
        assert_eq!(app.buy(100).await.0, StatusCode::CREATED);
        app.assert_ledger_balances().await;
    }
);

on_both!(
    a_deposit_cap_refuses_the_deposit_that_would_pass_it_and_counts_the_operators_credits,
    |app| {
        player("ana").limits(1_000, 50_000).on(&app).await;
        assert_eq!(app.deposit(600).await.0, StatusCode::OK);
        let error = expect(StatusCode::FORBIDDEN, app.deposit(500).await);
        assert_eq!(error["error"]["code"], "deposit_limit_reached");
        assert_eq!(error["error"]["left_cents"], 400);
        let message = error["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("deposit limit of 10.00 €") && message.contains("4.00 € left"),
            "{message}"
        );
        assert!(
            message.contains(error["error"]["resets_at"].as_str().unwrap()),
            "{message}"
        );
        assert_eq!(
            app.balance().await,
            600,
            "the refused deposit credited nothing"
        );
        // The operator's credit is how money comes in outside demo mode: it counts.
        let ana = app.service.player_by_username("ana").await.unwrap();
        match app.service.credit(&ana, 500).await {
            Err(Error::LimitReached {
                left_cents: 400, ..
            }) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(
            app.deposit(400).await.0,
            StatusCode::OK,
            "the deposit that fits is accepted"
        );
        assert_eq!(app.balance().await, 1_000);
        app.assert_ledger_balances().await;
    }
);

on_both!(
    caps_out_of_range_are_refused_at_registration_and_absent_ones_are_the_defaults,
    |app| {
        for (deposit, stake, field) in [
            (0, 100, "deposit_limit_cents"),
            (100, -5, "stake_limit_cents"),
            (10_000_001, 100, "deposit_limit_cents"),
        ] {
            let refused = player("bob").limits(deposit, stake).register(&app).await;
            assert_invalid(&refused, field);
        }
        let (_, me) = app.register("ana").await;
        assert_eq!(me["limits"]["deposit"]["limit_cents"], 50_000);
        assert_eq!(me["limits"]["stake"]["limit_cents"], 50_000);
        assert_eq!(me["limits"]["window_days"], 7);
        expect(
            StatusCode::UNPROCESSABLE_ENTITY,
            app.post("/api/limits", json!({})).await,
        );
    }
);

on_both!(
    a_raised_cap_applies_only_after_48_hours_and_a_lowered_one_at_once,
    |app| {
        player("ana").limits(50_000, 500).on(&app).await;
        app.deposit(5_000).await;
        let limits = expect(
            StatusCode::OK,
            app.post("/api/limits", json!({"stake_limit_cents": 200}))
                .await,
        );
        assert_eq!(
            limits["stake"]["limit_cents"], 200,
            "a lowered cap applies at once"
        );
        assert_eq!(limits["stake"]["pending"], Value::Null);
        assert_eq!(app.buy(200).await.0, StatusCode::CREATED);
        assert_eq!(app.buy(50).await.0, StatusCode::FORBIDDEN);

        let raised_at = app.clock.now_ms();
        let limits = expect(
            StatusCode::OK,
            app.post("/api/limits", json!({"stake_limit_cents": 1_000}))
                .await,
        );
        assert_eq!(limits["stake"]["limit_cents"], 200, "a raised cap waits");
        assert_eq!(limits["stake"]["pending"]["limit_cents"], 1_000);
        assert_eq!(
            limits["stake"]["pending"]["effective_at"],
            rfc3339(raised_at + 48 * HOUR_MS)
        );

        app.clock.advance_ms(47 * HOUR_MS);
        app.login("ana", "a long password").await;
        assert_eq!(
            app.buy(50).await.0,
            StatusCode::FORBIDDEN,
            "47 hours later the old cap holds"
        );
        app.clock.advance_ms(HOUR_MS);
        let (_, me) = app.login("ana", "a long password").await;
        assert_eq!(
            me["limits"]["stake"]["limit_cents"], 1_000,
            "48 hours later the raise applies"
        );
        assert_eq!(me["limits"]["stake"]["pending"], Value::Null);
        assert_eq!(app.buy(200).await.0, StatusCode::CREATED);

        // Lowering while a raise is pending drops the raise.
        app.post("/api/limits", json!({"deposit_limit_cents": 90_000}))
            .await;
        let (_, limits) = app
            .post("/api/limits", json!({"deposit_limit_cents": 10_000}))
            .await;
        assert_eq!(limits["deposit"]["limit_cents"], 10_000);
        assert_eq!(limits["deposit"]["pending"], Value::Null);
        let (_, limits) = app.get("/api/limits").await;
        assert_eq!(limits["deposit"]["limit_cents"], 10_000);
        assert_eq!(
            trail_actions(&app, "limits").await.len(),
            4,
            "every change is in the trail"
        );
    }
);
