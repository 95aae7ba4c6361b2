//! Protecting players and accounts (issue 6), on SQLite and PostgreSQL: the
//! 7-day caps on deposits and stakes, self-exclusion, session expiry,
//! throttles, cross-site refusals and the security headers.

use crate::common::{TestApp, scalar};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use tresor::error::Error;
use tresor::protect::{ExclusionLength, RateLimits};
use tresor::service::{Clock, IdempotencyKey, Purchase, Settings, rfc3339};
use tresor::trail::Actor;

const MINUTE_MS: i64 = 60 * 1000;
const HOUR_MS: i64 = 60 * MINUTE_MS;
const DAY_MS: i64 = 24 * HOUR_MS;

/// Settings with no throttle but the ones a test sets.
fn throttled(rate_limits: RateLimits) -> Settings {
    Settings {
        rate_limits,
        ..Settings::default()
    }
}

async fn register_with_limits(
    app: &TestApp,
    username: &str,
    deposit_cents: i64,
    stake_cents: i64,
) -> Value {
    let (status, me) = app
        .post(
            "/api/register",
            json!({
                "username": username, "password": "a long password", "adult": true, "accept_rules": true,
                "deposit_limit_cents": deposit_cents, "stake_limit_cents": stake_cents,
            }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{me}");
    me
}

/// A request outside the cookie jar, with its answer's headers.
async fn raw(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> (StatusCode, HeaderMap, Value) {
    let client = reqwest::Client::new();
    let mut request = client.request(method, format!("{}{path}", app.address));
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    let text = response.text().await.unwrap();
    (
        status,
        headers,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn session_cookie(headers: &HeaderMap) -> String {
    let cookie = headers
        .get("set-cookie")
        .expect("a session cookie")
        .to_str()
        .unwrap();
    cookie.split(';').next().unwrap().to_owned()
}

async fn trail_actions(app: &TestApp, action: &str) -> Vec<(String, String)> {
    sqlx::query_as("SELECT request, result FROM trail WHERE action = $1 ORDER BY seq")
        .bind(action)
        .fetch_all(&app.service.db.pool)
        .await
        .unwrap()
}

// -- Caps -------------------------------------------------------------------

on_both!(
    a_stake_cap_refuses_the_purchase_that_would_pass_it_and_accepts_the_one_that_fits,
    |app| {
        let me = register_with_limits(&app, "ana", 50_000, 250).await;
        assert_eq!(me["limits"]["stake"]["limit_cents"], 250);
        assert_eq!(me["limits"]["deposit"]["limit_cents"], 50_000);
        assert_eq!(me["excluded_until"], Value::Null);
        assert_eq!(app.deposit(1_000).await.0, StatusCode::OK);
        for _ in 0..2 {
            assert_eq!(app.buy(100).await.0, StatusCode::CREATED);
        }
        let balance = app.balance().await;
        let (status, error) = app.buy(100).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{error}");
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
        let (status, play) = app.buy(50).await;
        assert_eq!(status, StatusCode::CREATED, "{play}");
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
        register_with_limits(&app, "ana", 1_000, 50_000).await;
        assert_eq!(app.deposit(600).await.0, StatusCode::OK);
        let (status, error) = app.deposit(500).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{error}");
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
            let (status, error) = app
            .post(
                "/api/register",
                json!({"username": "bob", "password": "a long password", "adult": true, "accept_rules": true,
                       "deposit_limit_cents": deposit, "stake_limit_cents": stake}),
            )
            .await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
            assert!(
                error["error"]["message"]
                    .as_str()
                    .unwrap()
                    .starts_with(field),
                "{error}"
            );
        }
        let (_, me) = app.register("ana").await;
        assert_eq!(me["limits"]["deposit"]["limit_cents"], 50_000);
        assert_eq!(me["limits"]["stake"]["limit_cents"], 50_000);
        assert_eq!(me["limits"]["window_days"], 7);
        let (status, error) = app.post("/api/limits", json!({})).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    }
);

on_both!(
    a_raised_cap_applies_only_after_48_hours_and_a_lowered_one_at_once,
    |app| {
        register_with_limits(&app, "ana", 50_000, 500).await;
        app.deposit(5_000).await;
        let (status, limits) = app
            .post("/api/limits", json!({"stake_limit_cents": 200}))
            .await;
        assert_eq!(status, StatusCode::OK, "{limits}");
        assert_eq!(
            limits["stake"]["limit_cents"], 200,
            "a lowered cap applies at once"
        );
        assert_eq!(limits["stake"]["pending"], Value::Null);
        assert_eq!(app.buy(200).await.0, StatusCode::CREATED);
        assert_eq!(app.buy(50).await.0, StatusCode::FORBIDDEN);

        let raised_at = app.clock.now_ms();
        let (status, limits) = app
            .post("/api/limits", json!({"stake_limit_cents": 1_000}))
            .await;
        assert_eq!(status, StatusCode::OK, "{limits}");
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
        let (status, error) = app.post("/api/exclusion", json!({"period": "2w"})).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");

        let (status, excluded) = app.post("/api/exclusion", json!({"period": "7d"})).await;
        assert_eq!(status, StatusCode::OK, "{excluded}");
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
        let (status, error) = app.login("ana", "a long password").await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{error}");
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
        let actors: Vec<String> =
            sqlx::query_scalar("SELECT actor FROM trail WHERE action = 'exclude'")
                .fetch_all(&app.service.db.pool)
                .await
                .unwrap();
        assert_eq!(actors, ["operator", "operator"]);
        app.clock.advance_ms(40 * DAY_MS);
        assert_eq!(
            app.login("ana", "a long password").await.0,
            StatusCode::FORBIDDEN,
            "still excluded after 40 days"
        );
    }
);

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

// -- Throttles --------------------------------------------------------------

/// A login of `username` from `address` (trusted `X-Forwarded-For`), outside
/// the cookie jar, with its answer's headers.
async fn login_from(
    app: &TestApp,
    address: &str,
    username: &str,
    password: &str,
) -> (StatusCode, HeaderMap, Value) {
    raw(
        app,
        reqwest::Method::POST,
        "/api/login",
        Some(json!({"username": username, "password": password})),
        &[("x-requested-with", "tresor"), ("x-forwarded-for", address)],
    )
    .await
}

fn retry_after(headers: &HeaderMap) -> Option<u64> {
    headers
        .get("retry-after")
        .map(|v| v.to_str().unwrap().parse().unwrap())
}

/// The failed-login throttles alone, with addresses from `X-Forwarded-For`.
fn failed_logins(free_per_name_and_address: u32, free_per_address: u32) -> Settings {
    throttled(RateLimits {
        failed_logins_free_per_name_and_address: free_per_name_and_address,
        failed_logins_free_per_address: free_per_address,
        trust_forwarded_for: true,
        ..RateLimits::unthrottled()
    })
}

on_both!(
    failed_logins_from_one_address_wait_longer_each_time_but_the_owner_elsewhere_gets_in,
    failed_logins(5, 50),
    |app| {
        app.register("ana").await;
        let attacker = "203.0.113.9";
        for _ in 0..5 {
            let (status, _, _) = login_from(&app, attacker, "ana", "wrong password").await;
            assert_eq!(status, StatusCode::UNAUTHORIZED);
        }
        let (status, headers, error) = login_from(&app, attacker, "ana", "a long password").await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{error}");
        assert_eq!(error["error"]["code"], "rate_limited");
        assert_eq!(retry_after(&headers), Some(1), "the first wait is a second");
        app.clock.advance_ms(1000);
        let (status, _, _) = login_from(&app, attacker, "ana", "wrong password").await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        let (_, headers, _) = login_from(&app, attacker, "ana", "wrong password").await;
        assert_eq!(retry_after(&headers), Some(2), "then it doubles");
        assert_eq!(
            trail_actions(&app, "login_failed").await.len(),
            6,
            "throttled attempts are not counted"
        );
        let (status, _, me) = login_from(&app, "198.51.100.1", "ana", "a long password").await;
        assert_eq!(status, StatusCode::OK, "the owner elsewhere: {me}");
        // After the wait, the right password from the attacker's address
        // clears that pair.
        app.clock.advance_ms(2000);
        let (status, _, _) = login_from(&app, attacker, "ana", "a long password").await;
        assert_eq!(status, StatusCode::OK);
        let (status, _, _) = login_from(&app, attacker, "ana", "wrong password").await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "a fresh start");
    }
);

on_both!(
    four_attacking_addresses_cannot_lock_the_owner_out,
    failed_logins(5, 50),
    |app| {
        app.register("ana").await;
        let attackers = ["203.0.113.1", "203.0.113.2", "203.0.113.3", "203.0.113.4"];
        let (mut refused, mut throttled) = (0, 0);
        // Each attacker tries as fast as allowed for what is, to the
        // throttles, well over an hour of attempts.
        for _ in 0..12 {
            for attacker in attackers {
                let (status, headers, body) = login_from(&app, attacker, "ana", "guess").await;
                match status {
                    StatusCode::UNAUTHORIZED => refused += 1,
                    StatusCode::TOO_MANY_REQUESTS => {
                        assert!(retry_after(&headers).is_some(), "{body}");
                        throttled += 1;
                    }
                    other => panic!("{other}: {body}"),
                }
            }
            app.clock.advance_ms(60_000);
        }
        assert!(
            throttled > 0 && refused < 4 * 12,
            "{refused} refused, {throttled} throttled"
        );
        let (status, _, me) = login_from(&app, "198.51.100.1", "ana", "a long password").await;
        assert_eq!(
            status,
            StatusCode::OK,
            "the owner is never locked out: {me}"
        );
        assert_eq!(me["username"], "ana");
    }
);

on_both!(
    unknown_and_known_usernames_get_the_same_answers_and_waits,
    failed_logins(3, 50),
    |app| {
        app.register("ana").await;
        // The same sequence for a name that exists and one that does not,
        // each from its own address.
        let mut answers = Vec::new();
        for (address, username) in [("203.0.113.1", "ana"), ("203.0.113.2", "nobody")] {
            let mut seen = Vec::new();
            for step in 0..6 {
                if step == 5 {
                    app.clock.advance_ms(1000);
                }
                let (status, headers, body) =
                    login_from(&app, address, username, "wrong password").await;
                seen.push((
                    status,
                    body,
                    retry_after(&headers),
                    headers.get("set-cookie").is_some(),
                ));
            }
            answers.push(seen);
        }
        assert_eq!(answers[0], answers[1], "known and unknown alike");
        assert_eq!(answers[0][3].0, StatusCode::TOO_MANY_REQUESTS);
        app.clock.advance_ms(3_600_000);
        // The same hash work on both paths: each failed login, known name
        // or not, takes at least about as long as one argon2 check of ana's
        // stored hash, timed here between the logins. A path that skipped
        // the check would take a few milliseconds against tens. The fastest
        // of each is compared: load only slows, so it cannot fail this.
        let stored: String = sqlx::query_scalar("SELECT password_hash FROM players")
            .fetch_one(&app.service.db.pool)
            .await
            .unwrap();
        let one_check = || {
            use argon2::password_hash::{PasswordHash, PasswordVerifier};
            let started = std::time::Instant::now();
            let parsed = PasswordHash::new(&stored).expect("an argon2 hash");
            assert!(
                argon2::Argon2::default()
                    .verify_password(b"wrong password", &parsed)
                    .is_err()
            );
            started.elapsed().as_secs_f64()
        };
        let mut fastest = [f64::MAX; 3];
        for round in 0..5 {
            fastest[2] = fastest[2].min(tokio::task::block_in_place(one_check));
            for (i, username) in ["ana", "nobody"].into_iter().enumerate() {
                let address = format!("198.51.{i}.{round}");
                let started = std::time::Instant::now();
                let (status, _, _) = login_from(&app, &address, username, "wrong password").await;
                assert_eq!(status, StatusCode::UNAUTHORIZED);
                fastest[i] = fastest[i].min(started.elapsed().as_secs_f64());
            }
        }
        let [known, unknown, check] = fastest;
        eprintln!(
            "fastest failed login: known {known:.4} s, unknown {unknown:.4} s; one argon2 check {check:.4} s"
        );
        for (name, login) in [("known", known), ("unknown", unknown)] {
            assert!(
                login > check * 0.5,
                "a failed login for a {name} name ({login} s) does an argon2 check ({check} s)"
            );
        }
    }
);

/// Requests queued to the writer so far.
fn queued(app: &TestApp) -> u64 {
    app.service.writer.stats.queued.get()
}

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
        let (status, play) = app.buy(100).await;
        assert_eq!(status, StatusCode::CREATED, "{play}");
        let id = play["id"].as_i64().unwrap();
        // A second session of ana's, for requests with their headers.
        let (_, headers, _) = raw(
            &app,
            reqwest::Method::POST,
            "/api/login",
            Some(json!({"username": "ana", "password": "a long password"})),
            &[("x-requested-with", "tresor")],
        )
        .await;
        let cookie = session_cookie(&headers);
        let mut statuses = Vec::new();
        for _ in 0..12 {
            let before = queued(&app);
            let (status, headers, body) = raw(
                &app,
                reqwest::Method::POST,
                &format!("/api/plays/{id}/throws"),
                None,
                &[("x-requested-with", "tresor"), ("cookie", &cookie)],
            )
            .await;
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
                reqwest::Method::POST,
                "/api/plays/1/throws",
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
    logins_and_registrations_from_one_address_are_throttled,
    throttled(RateLimits {
        logins_per_minute_per_address: 3,
        registrations_per_hour_per_address: 2,
        ..RateLimits::unthrottled()
    }),
    |app| {
        // Two registrations an hour from one address, each answered; the
        // third refused and creating nothing.
        let (status, me) = app.register("ana").await;
        assert_eq!(status, StatusCode::CREATED, "the first registration: {me}");
        let (status, me) = app.another_client().register("bob").await;
        assert_eq!(status, StatusCode::CREATED, "the second registration: {me}");
        let (status, error) = app.another_client().register("cleo").await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{error}");
        assert_eq!(error["error"]["code"], "rate_limited");
        let players: i64 = scalar(&app.service.db.pool, "SELECT COUNT(*) FROM players").await;
        assert_eq!(players, 2, "ana and bob, not cleo");
        for _ in 0..3 {
            assert_eq!(
                app.login("nobody", "a long password").await.0,
                StatusCode::UNAUTHORIZED
            );
        }
        let login = json!({"username": "ana", "password": "a long password"});
        let (status, headers, _) = raw(
            &app,
            reqwest::Method::POST,
            "/api/login",
            Some(login),
            &[("x-requested-with", "tresor")],
        )
        .await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
        let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
        assert!(
            (1..=20).contains(&retry),
            "a login is refilled every 20 seconds: {retry}"
        );
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
        let (status, error) = app.buy(50).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{error}");
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

// -- The web side -----------------------------------------------------------

on_both!(
    a_cross_site_post_is_refused_with_or_without_the_csrf_proof,
    |app| {
        let body = || {
            Some(
                json!({"username": "ana", "password": "a long password", "adult": true, "accept_rules": true}),
            )
        };
        let post = reqwest::Method::POST;
        let (status, _, error) = raw(&app, post.clone(), "/api/register", body(), &[]).await;
        assert_eq!(
            (status, &error["error"]["code"]),
            (StatusCode::FORBIDDEN, &json!("csrf"))
        );
        let host = app.address.trim_start_matches("http://").to_owned();
        for header in [
            ("sec-fetch-site", "cross-site"),
            ("sec-fetch-site", "same-site"),
            ("origin", "https://evil.example"),
            ("origin", "null"),
        ] {
            let (status, _, error) = raw(
                &app,
                post.clone(),
                "/api/register",
                body(),
                &[("x-requested-with", "tresor"), header],
            )
            .await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{header:?}: {error}");
            assert_eq!(error["error"]["code"], "csrf");
        }
        let players: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM players")
            .fetch_one(&app.service.db.pool)
            .await
            .unwrap();
        assert_eq!(players, 0, "nothing was created");
        let origin = format!("http://{host}");
        let same_origin = [
            ("x-requested-with", "tresor"),
            ("sec-fetch-site", "same-origin"),
            ("origin", origin.as_str()),
        ];
        let (status, _, me) = raw(&app, post, "/api/register", body(), &same_origin).await;
        assert_eq!(status, StatusCode::CREATED, "{me}");
    }
);

on_both!(
    the_security_headers_are_on_the_page_and_on_api_responses,
    |app| {
        for path in ["/", "/api/status", "/api/me"] {
            let (_, headers, _) = raw(&app, reqwest::Method::GET, path, None, &[]).await;
            let csp = headers["content-security-policy"].to_str().unwrap();
            assert!(
                csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
                "no inline script: {csp}"
            );
            assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
            assert_eq!(headers["x-content-type-options"], "nosniff", "{path}");
            assert_eq!(headers["x-frame-options"], "DENY", "{path}");
            assert_eq!(headers["referrer-policy"], "same-origin", "{path}");
            assert!(
                headers.get("strict-transport-security").is_none(),
                "no HSTS over plain http"
            );
            if path.starts_with("/api") {
                assert_eq!(headers["cache-control"], "no-store", "{path}");
            }
        }
        // Over https (secure cookies), browsers are told to stay on https.
        let metrics = std::sync::Arc::new(tresor::metrics::Metrics::new(&app.service.writer.stats));
        let state = tresor::http::AppState {
            service: app.service.clone(),
            metrics,
            secure_cookies: true,
        };
        let router = tresor::http::app(state);
        let request = axum::http::Request::get("/api/status")
            .body(axum::body::Body::empty())
            .unwrap();
        let response = tower::ServiceExt::oneshot(router, request).await.unwrap();
        assert_eq!(
            response.headers()["strict-transport-security"],
            "max-age=31536000; includeSubDomains"
        );
        // The body-size limit answers in JSON too.
        let big = "x".repeat(70 * 1024);
        let (status, _, error) = raw(
            &app,
            reqwest::Method::POST,
            "/api/login",
            Some(json!({"username": big, "password": "p"})),
            &[("x-requested-with", "tresor")],
        )
        .await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(error["error"]["code"], "payload_too_large");
    }
);
