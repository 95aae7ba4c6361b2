//! Deposit confirmations: bad signatures and stale timestamps refused, ten at once credit once,
//! over the cap recorded to refund.

use super::*;

on_both!(
    a_webhook_with_a_bad_signature_or_a_stale_timestamp_is_refused_and_changes_nothing,
    |app| {
        player("ana").real_money().on(&app).await;
        let id = ask_deposit(&app, 5000).await;
        let body = confirmation(id, "tx-1", 5000);
        let before = snapshot(&app).await;
        assert_refused(
            &webhook(&app, &body, 0, false).await,
            StatusCode::UNAUTHORIZED,
            "invalid_signature",
        );
        assert_refused(
            &webhook(&app, &body, -301, true).await,
            StatusCode::UNAUTHORIZED,
            "stale_signature",
        );
        assert_refused(
            &webhook(&app, &body, 301, true).await,
            StatusCode::UNAUTHORIZED,
            "stale_signature",
        );
        // A body changed after signing does not match its signature.
        let text = body.to_string();
        let timestamp = app.service.now_ms() / 1000;
        let signature = sign_webhook(app.service.webhook_secret(), timestamp, text.as_bytes());
        let tampered = text.replace("5000", "9000");
        let timestamp = timestamp.to_string();
        let answer = app
            .post_raw(
                "/api/payments/webhook",
                &tampered,
                &[
                    ("tresor-timestamp", timestamp.as_str()),
                    ("tresor-signature", signature.as_str()),
                ],
            )
            .await;
        assert_refused(&answer, StatusCode::UNAUTHORIZED, "invalid_signature");
        let answer = app.post_raw("/api/payments/webhook", &text, &[]).await;
        assert_refused(&answer, StatusCode::UNAUTHORIZED, "invalid_signature");
        assert_eq!(snapshot(&app).await, before, "refusals change nothing");
        // Within the window, signed right: credited.
        let answer = expect(StatusCode::OK, webhook(&app, &body, -290, true).await);
        assert_eq!(answer["outcome"], "credited");
        assert_eq!(app.balance().await, 5000);
        let (_, deposit) = app.get(&format!("/api/account/deposits/{id}")).await;
        assert_eq!(deposit["state"], "credited");
        app.assert_ledger_balances().await;
    }
);

on_both!(
    the_same_confirmation_ten_times_concurrently_credits_once,
    |app| {
        player("ana").real_money().on(&app).await;
        let id = ask_deposit(&app, 2500).await;
        let body = confirmation(id, "tx-same", 2500);
        let answers =
            futures_util::future::join_all((0..10).map(|_| webhook(&app, &body, 0, true))).await;
        let mut fresh = 0;
        for (status, answer) in &answers {
            assert_eq!(*status, StatusCode::OK, "{answer}");
            assert_eq!(answer["outcome"], "credited");
            if answer["replayed"] == false {
                fresh += 1;
            }
        }
        assert_eq!(fresh, 1, "one confirmation applied, nine replays");
        // And once more, later: still a replay.
        let (_, again) = webhook(&app, &body, 0, true).await;
        assert_eq!(again["replayed"], true);
        assert_eq!(app.balance().await, 2500);
        let credits: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM transfers WHERE deposit_id = $1")
                .bind(id)
                .fetch_one(&app.service.db.pool)
                .await
                .unwrap();
        assert_eq!(credits, 1);
        let confirmed = trail_actions(&app)
            .await
            .iter()
            .filter(|a| *a == "deposit_confirmed")
            .count();
        assert_eq!(
            confirmed, 1,
            "the trail has the one confirmation that changed something"
        );
        // Another payment for a deposit already credited is owed back, not credited.
        let (_, second) = webhook(&app, &confirmation(id, "tx-other", 2500), 0, true).await;
        assert_eq!(second["outcome"], "to_refund");
        assert_eq!(second["reason"], "deposit_already_settled");
        assert_eq!(app.balance().await, 2500);
        app.assert_ledger_balances().await;
        audit_holds(&app);
    }
);

on_both!(
    a_confirmation_over_the_deposit_cap_is_recorded_to_refund_and_never_credited,
    |app| {
        let born = born_years_ago(&app, 40);
        player("ana")
            .birth_name("Martin")
            .born(&born)
            .limits(3000, 1_000_000)
            .on(&app)
            .await;
        // Asked within the cap (a deposit past what is left is refused when
        // asked), then past it by the time it is confirmed.
        let id = ask_deposit(&app, 2000).await;
        deposit(&app, 2000).await;
        let answer = expect(
            StatusCode::OK,
            webhook(&app, &confirmation(id, "tx-over", 2000), 0, true).await,
        );
        assert_eq!(answer["outcome"], "to_refund");
        assert_eq!(answer["reason"], "deposit_limit");
        assert_eq!(app.balance().await, 2000, "never credited");
        assert_eq!(
            balance_of(&app, tresor::model::TO_REFUND_ACCOUNT).await,
            2000
        );
        let (_, deposit) = app.get(&format!("/api/account/deposits/{id}")).await;
        assert_eq!(deposit["state"], "to_refund");
        // A wrong amount is not credited either.
        let id = ask_deposit(&app, 500).await;
        let (_, answer) = webhook(&app, &confirmation(id, "tx-wrong", 700), 0, true).await;
        assert_eq!(answer["reason"], "amount_mismatch");
        assert_eq!(app.balance().await, 2000);
        let money = money(&app).await;
        assert_eq!(money.to_refund_cents, 2700);
        assert_eq!(money.provider_deposits_cents, 2000);
        assert_eq!(money.ledger_sum_cents, 0);
        app.assert_ledger_balances().await;
    }
);
