//! Sessions: idle and total expiry, a login ending the browser's old session, logouts that queue
//! nothing for unknown cookies.

use super::*;

// -- Sessions ---------------------------------------------------------------

on_both!(
    a_session_expires_after_30_idle_minutes_and_after_12_hours_in_all,
    |app| {
        app.register("ana").await;
        app.clock.advance_ms(31 * MINUTE_MS);
        let (status, error) = app.me().await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(error["error"]["code"], "unauthorized");
        assert_eq!(error["error"]["reason"], "session_idle");
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("30 minutes"),
            "{error}"
        );

        app.login("ana", "a long password").await;
        // Busy all the time: the session still ends 12 hours after login.
        for _ in 0..(12 * 60 / 20) {
            app.clock.advance_ms(20 * MINUTE_MS);
            assert_eq!(app.me().await.0, StatusCode::OK);
        }
        app.clock.advance_ms(MINUTE_MS);
        let (status, error) = app.me().await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(error["error"]["reason"], "session_max_age");
    }
);

on_both!(
    a_login_opens_a_new_session_and_ends_the_one_the_browser_had,
    |app| {
        let body = json!({"username": "ana", "password": "a long password", "adult": true, "accept_rules": true});
        let csrf = ("x-requested-with", "tresor");
        let (_, headers, _) = raw(
            &app,
            reqwest::Method::POST,
            "/api/register",
            Some(body),
            &[csrf],
        )
        .await;
        let first = session_cookie(&headers);
        let login = json!({"username": "ana", "password": "a long password"});
        let (status, headers, _) = raw(
            &app,
            reqwest::Method::POST,
            "/api/login",
            Some(login),
            &[csrf, ("cookie", &first)],
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        let second = session_cookie(&headers);
        assert_ne!(first, second, "a new session id at login");
        let (status, _, error) = raw(
            &app,
            reqwest::Method::GET,
            "/api/me",
            None,
            &[("cookie", &first)],
        )
        .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(error["error"]["reason"], "session_ended");
        assert_eq!(
            raw(
                &app,
                reqwest::Method::GET,
                "/api/me",
                None,
                &[("cookie", &second)]
            )
            .await
            .0,
            StatusCode::OK
        );
        // PUT /api/limits works like POST.
        let change = Some(json!({"deposit_limit_cents": 40_000}));
        let (status, _, limits) = raw(
            &app,
            reqwest::Method::PUT,
            "/api/limits",
            change,
            &[csrf, ("cookie", &second)],
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{limits}");
        assert_eq!(limits["deposit"]["limit_cents"], 40_000);
        // Neither the password nor a session id is ever written to the trail.
        let trail: Vec<String> = sqlx::query_scalar("SELECT request || result || actor FROM trail")
            .fetch_all(&app.service.db.pool)
            .await
            .unwrap();
        for secret in [
            "a long password",
            first.split('=').nth(1).unwrap(),
            second.split('=').nth(1).unwrap(),
        ] {
            assert!(
                trail.iter().all(|r| !r.contains(secret)),
                "{secret} leaked into the trail"
            );
        }
    }
);

on_both!(
    a_logout_with_an_unknown_ended_or_garbage_cookie_queues_nothing,
    |app| {
        app.register("ana").await;
        let (_, headers, _) = raw(
            &app,
            reqwest::Method::POST,
            "/api/login",
            Some(json!({"username": "ana", "password": "a long password"})),
            &[("x-requested-with", "tresor")],
        )
        .await;
        let live = session_cookie(&headers);
        let ended = {
            let (_, headers, _) = raw(
                &app,
                reqwest::Method::POST,
                "/api/login",
                Some(json!({"username": "ana", "password": "a long password"})),
                &[("x-requested-with", "tresor")],
            )
            .await;
            let cookie = session_cookie(&headers);
            let (status, _, _) = raw(
                &app,
                reqwest::Method::POST,
                "/api/logout",
                None,
                &[("x-requested-with", "tresor"), ("cookie", &cookie)],
            )
            .await;
            assert_eq!(status, StatusCode::NO_CONTENT);
            cookie
        };
        let before = queued(&app);
        for cookie in [
            "tresor_session=garbage",
            "tresor_session=",
            "tresor_session=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            ended.as_str(),
            "other=1",
            "tresor_session=%00%ff; tresor_session=x",
        ] {
            let (status, _, body) = raw(
                &app,
                reqwest::Method::POST,
                "/api/logout",
                None,
                &[("x-requested-with", "tresor"), ("cookie", cookie)],
            )
            .await;
            assert_eq!(status, StatusCode::NO_CONTENT, "{cookie}: {body}");
        }
        let (status, _, _) = raw(
            &app,
            reqwest::Method::POST,
            "/api/logout",
            None,
            &[("x-requested-with", "tresor")],
        )
        .await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        assert_eq!(queued(&app), before, "no writer job for a dead cookie");
        let logouts = trail_actions(&app, "logout").await.len();
        let (status, _, _) = raw(
            &app,
            reqwest::Method::POST,
            "/api/logout",
            None,
            &[("x-requested-with", "tresor"), ("cookie", &live)],
        )
        .await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        assert_eq!(queued(&app), before + 1, "a live session: one job");
        assert_eq!(trail_actions(&app, "logout").await.len(), logouts + 1);
    }
);
