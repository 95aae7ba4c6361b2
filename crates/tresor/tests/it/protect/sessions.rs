//! Sessions: idle and total expiry, a login ending the browser's old session, logouts that queue
//! nothing for unknown cookies.

use super::*;
use crate::common::opening::PASSWORD;

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
        let (_, headers, _) = raw(&app, "POST /api/register", Some(body), &[csrf]).await;
        let first = session_cookie(&headers);
        let login = json!({"username": "ana", "password": "a long password"});
        let (status, headers, _) = raw(
            &app,
            "POST /api/login",
            Some(login),
            &[csrf, ("cookie", &first)],
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        let second = session_cookie(&headers);
        assert_ne!(first, second, "a new session id at login");
        let (status, _, error) = raw(&app, "GET /api/me", None, &[("cookie", &first)]).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(error["error"]["reason"], "session_ended");
        assert_eq!(
            raw(&app, "GET /api/me", None, &[("cookie", &second)])
                .await
                .0,
            StatusCode::OK
        );
        // PUT /api/limits works like POST.
        let change = Some(json!({"deposit_limit_cents": 40_000}));
        let (status, _, limits) = raw(
            &app,
            "PUT /api/limits",
            change,
            &[csrf, ("cookie", &second)],
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{limits}");
        assert_eq!(limits["deposit"]["limit_cents"], 40_000);
        // Neither the password nor a session id is ever written to the trail.
        let trail = texts(
            &app.service.db.pool,
            "SELECT request || result || actor FROM trail",
        )
        .await;
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
        let live = login_cookie(&app, "ana").await;
        let ended = {
            let cookie = login_cookie(&app, "ana").await;
            let (status, _, _) = logout(&app, Some(&cookie)).await;
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
            let (status, _, body) = logout(&app, Some(cookie)).await;
            assert_eq!(status, StatusCode::NO_CONTENT, "{cookie}: {body}");
        }
        let (status, _, _) = logout(&app, None).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        assert_eq!(queued(&app), before, "no writer job for a dead cookie");
        let logouts = trail_actions(&app, "logout").await.len();
        let (status, _, _) = logout(&app, Some(&live)).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        assert_eq!(queued(&app), before + 1, "a live session: one job");
        assert_eq!(trail_actions(&app, "logout").await.len(), logouts + 1);
    }
);

on_both!(
    a_purchase_in_a_session_ended_elsewhere_is_refused_at_the_very_next_request,
    |app| {
        // A purchase takes its session from the server's cache (issue 46);
        // ending it from another browser does not tell the cache, and the
        // very next purchase is refused all the same, by the batch.
        app.player("ana", 10_000).await;
        expect(StatusCode::CREATED, app.buy(100).await);
        expect(StatusCode::CREATED, app.buy(100).await);
        let other = app.another_client();
        expect(StatusCode::OK, other.login("ana", PASSWORD).await);
        let ended = expect(
            StatusCode::OK,
            other
                .post("/api/account/sessions/end-others", json!({}))
                .await,
        );
        assert_eq!(ended["sessions_ended"], 1);
        let error = expect(StatusCode::UNAUTHORIZED, app.buy(100).await);
        assert_eq!(error["error"]["reason"], "session_ended", "{error}");
        let plays = scalar(&app.service.db.pool, "SELECT COUNT(*) FROM plays").await;
        assert_eq!(plays, 2, "nothing sold in an ended session");
        // And the same after the session's own logout, its cookie kept.
        expect(StatusCode::CREATED, other.buy(100).await);
        let cookie = login_cookie(&app, "ana").await;
        let buy = |cookie: String| {
            let app = app.clone();
            async move {
                raw(
                    &app,
                    "POST /api/plays",
                    Some(json!({"stake_cents": 100})),
                    &[
                        ("x-requested-with", "tresor"),
                        (
                            "idempotency-key",
                            &hex::encode(tresor::service::os_random_32())[..24],
                        ),
                        ("cookie", &cookie),
                    ],
                )
                .await
            }
        };
        assert_eq!(buy(cookie.clone()).await.0, StatusCode::CREATED);
        let (status, _, _) = logout(&app, Some(&cookie)).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        let (status, _, error) = buy(cookie).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(error["error"]["reason"], "session_ended", "{error}");
    }
);

/// `POST /api/logout` with `cookie` (or none): its status, headers and body.
async fn logout(app: &TestApp, cookie: Option<&str>) -> (StatusCode, HeaderMap, Value) {
    let mut headers = vec![("x-requested-with", "tresor")];
    headers.extend(cookie.map(|cookie| ("cookie", cookie)));
    raw(app, "POST /api/logout", None, &headers).await
}
