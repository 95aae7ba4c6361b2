//! Self-exclusion ends every session and refuses play; it cannot be shortened, and the operator
//! can exclude from the command line.

use super::*;

// -- Exclusion --------------------------------------------------------------

on_both!(
    self_exclusion_ends_every_session_and_refuses_play_deposits_and_login,
    |app| {
        app.player("ana", 1_000).await;
        let other_browser = app.another_client();
        assert_eq!(
            other_browser.login("ana", "a long password").await.0,
            StatusCode::OK
        );
        expect(
            StatusCode::UNPROCESSABLE_ENTITY,
            app.post("/api/exclusion", json!({"period": "2w"})).await,
        );

        let excluded = expect(
            StatusCode::OK,
            app.post("/api/exclusion", json!({"period": "7d"})).await,
        );
        let until = rfc3339(app.clock.now_ms() + 7 * DAY_MS);
        assert_eq!(excluded["excluded_until"], until);
        // This browser's cookie was cleared; the other one's session ended.
        for client in [&app, &other_browser] {
            assert_eq!(
                client.me().await.0,
                StatusCode::UNAUTHORIZED,
                "every session ended"
            );
            assert_eq!(client.buy(50).await.0, StatusCode::UNAUTHORIZED);
        }
        assert_eq!(
            other_browser.me().await.1["error"]["reason"],
            "session_ended"
        );
        let error = expect(
            StatusCode::FORBIDDEN,
            app.login("ana", "a long password").await,
        );
        assert_eq!(error["error"]["code"], "excluded");
        assert_eq!(error["error"]["excluded_until"], until);
        assert!(
            error["error"]["message"].as_str().unwrap().contains(&until),
            "{error}"
        );
        // A wrong password still says only that the credentials are wrong.
        assert_eq!(
            app.login("ana", "not the password").await.1["error"]["code"],
            "invalid_credentials"
        );

        let ana = app.service.player_by_username("ana").await.unwrap();
        assert!(matches!(
            app.service.deposit(&ana, 100).await,
            Err(Error::Excluded { .. })
        ));
        assert!(matches!(
            app.service.credit(&ana, 100).await,
            Err(Error::Excluded { .. })
        ));
        let purchase = Purchase {
            game: tresor_game::ile_au_tresor(),
            stake_cents: 50,
            idempotency_key: IdempotencyKey::parse("k").unwrap(),
        };
        assert!(matches!(
            app.service.buy(&ana, purchase).await,
            Err(Error::Excluded { .. })
        ));
        let records = trail_actions(&app, "exclude").await;
        assert_eq!(records.len(), 1);
        assert!(
            records[0].0.contains(r#""period":"7d""#)
                && records[0].1.contains(r#""sessions_ended":2"#),
            "{records:?}"
        );

        app.clock.advance_ms(7 * DAY_MS + 1);
        assert_eq!(
            app.login("ana", "a long password").await.0,
            StatusCode::OK,
            "the exclusion is over"
        );
        assert_eq!(app.buy(50).await.0, StatusCode::CREATED);
    }
);

on_both!(
    an_exclusion_cannot_be_shortened_and_the_operator_can_exclude_from_the_command_line,
    |app| {
        app.player("ana", 0).await;
        let tresor = |args: &[&str]| {
            let mut all = vec!["player", "exclude", "--username", "ana"];
            all.extend_from_slice(args);
            app.db.tresor(&all)
        };
        let output = tresor(&["--days", "30"]);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{stdout} {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(stdout.contains("ana is excluded until"), "{stdout}");
        let (status, error) = app.me().await;
        assert_eq!(
            (status, &error["error"]["reason"]),
            (StatusCode::UNAUTHORIZED, &json!("session_ended"))
        );

        let output = tresor(&["--days", "7"]);
        assert_eq!(output.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&output.stderr).contains("cannot be shortened"));
        let output = tresor(&["--days", "0"]);
        assert_eq!(
            output.status.code(),
            Some(2),
            "a bad number of days is a usage error"
        );
        let ana = app.service.player_by_username("ana").await.unwrap();
        let shorter = app
            .service
            .exclude(&ana, Actor::player(ana.id, "ana"), ExclusionLength::Days(7))
            .await;
        assert!(
            matches!(shorter, Err(Error::ExclusionShorter { .. })),
            "{shorter:?}"
        );
        let output = tresor(&["--period", "1y"]);
        assert!(output.status.success(), "a longer exclusion extends it");
        let records = trail_actions(&app, "exclude").await;
        assert_eq!(
            records.len(),
            2,
            "each exclusion is in the trail: {records:?}"
        );
        let actors = texts(
            &app.service.db.pool,
            "SELECT actor FROM trail WHERE action = 'exclude'",
        )
        .await;
        assert_eq!(actors, ["operator", "operator"]);
        app.clock.advance_ms(40 * DAY_MS);
        assert_eq!(
            app.login("ana", "a long password").await.0,
            StatusCode::FORBIDDEN,
            "still excluded after 40 days"
        );
    }
);
