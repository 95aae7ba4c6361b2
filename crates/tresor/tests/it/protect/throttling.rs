//! Throws and purchases throttled per player, garbage cookies per address.

use super::*;

on_both!(
    a_flood_of_throws_is_throttled_per_player_and_garbage_cookies_per_address,
    throttled(RateLimits {
        actions_per_minute_per_player: 8,
        actions_per_minute_per_address: 30,
        trust_forwarded_for: true,
        ..RateLimits::unthrottled()
    }),
    |app| {
        app.player("ana", 1_000).await;
        let play = expect(StatusCode::CREATED, app.buy(100).await);
        let id = play["id"].as_i64().unwrap();
        // A second session of ana's, for requests with their headers.
        let cookie = login_cookie(&app, "ana").await;
        let mut statuses = Vec::new();
        for _ in 0..12 {
            let before = queued(&app);
            let throw = format!("POST /api/plays/{id}/throws");
            let headers = [("x-requested-with", "tresor"), ("cookie", &cookie)];
            let (status, headers, body) = raw(&app, &throw, None, &headers).await;
            if status == StatusCode::TOO_MANY_REQUESTS {
                assert_eq!(body["error"]["code"], "rate_limited");
                assert!(retry_after(&headers).is_some_and(|s| s >= 1));
                assert_eq!(queued(&app), before, "a throttled throw queues nothing");
            }
            statuses.push(status.as_u16());
        }
        // The deposit was the first action: 7 throws pass (4 played, 3 on a
        // finished play), then the player waits.
        assert_eq!(
            statuses,
            [200, 200, 200, 200, 409, 409, 409, 429, 429, 429, 429, 429],
        );
        let before = queued(&app);
        let mut codes = Vec::new();
        for _ in 0..40 {
            let (status, _, body) = raw(
                &app,
                "POST /api/plays/1/throws",
                None,
                &[
                    ("x-requested-with", "tresor"),
                    ("x-forwarded-for", "203.0.113.66"),
                    ("cookie", "tresor_session=garbage"),
                ],
            )
            .await;
            codes.push((
                status.as_u16(),
                body["error"]["code"].as_str().unwrap().to_owned(),
            ));
        }
        assert_eq!(codes[0], (401, "unauthorized".to_owned()));
        assert_eq!(codes[39], (429, "rate_limited".to_owned()));
        assert_eq!(codes.iter().filter(|(s, _)| *s == 401).count(), 30);
        assert_eq!(
            queued(&app),
            before,
            "nothing unauthenticated reaches the writer"
        );
        app.assert_ledger_balances().await;
    }
);

on_both!(
    purchases_from_one_player_are_throttled_with_retry_after,
    throttled(RateLimits {
        purchases_per_minute_per_player: 3,
        ..RateLimits::unthrottled()
    }),
    |app| {
        app.player("ana", 1_000).await;
        for _ in 0..3 {
            assert_eq!(app.buy(50).await.0, StatusCode::CREATED);
        }
        let balance = app.balance().await;
        let error = expect(StatusCode::TOO_MANY_REQUESTS, app.buy(50).await);
        assert_eq!(error["error"]["code"], "rate_limited");
        assert_eq!(
            app.balance().await,
            balance,
            "a throttled purchase debits nothing"
        );
        let bob = app.another_client();
        bob.player("bob", 1_000).await;
        assert_eq!(
            bob.buy(50).await.0,
            StatusCode::CREATED,
            "another player has a budget of his own"
        );
    }
);
