//! Failed logins wait longer per address, attackers cannot lock the owner out, known and
//! unknown usernames answer alike, logins and registrations are throttled.

use super::*;

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
        "POST /api/login",
        Some(json!({"username": username, "password": password})),
        &[("x-requested-with", "tresor"), ("x-forwarded-for", address)],
    )
    .await
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
        // stored hash takes of CPU, timed here between the logins. A path
        // that skipped the check would take a few milliseconds against
        // tens. The check is timed in this thread's CPU time (its wall time
        // grows with the machine's load, and the fastest of five wall times
        // was once slower than the logins beside it, at load 9), the logins
        // by the wall, which only grows with load: neither can fail this.
        let stored: String = sqlx::query_scalar("SELECT password_hash FROM players")
            .fetch_one(&app.service.db.pool)
            .await
            .unwrap();
        let one_check = || {
            use argon2::password_hash::{PasswordHash, PasswordVerifier};
            let started = thread_cpu_s();
            let parsed = PasswordHash::new(&stored).expect("an argon2 hash");
            assert!(
                argon2::Argon2::default()
                    .verify_password(b"wrong password", &parsed)
                    .is_err()
            );
            thread_cpu_s() - started
        };
        const ROUNDS: u8 = 5;
        let (mut fastest, mut check) = ([f64::MAX; 2], 0.0);
        for round in 0..ROUNDS {
            check += tokio::task::block_in_place(one_check) / f64::from(ROUNDS);
            for (i, username) in ["ana", "nobody"].into_iter().enumerate() {
                let address = format!("198.51.{i}.{round}");
                let started = std::time::Instant::now();
                let (status, _, _) = login_from(&app, &address, username, "wrong password").await;
                assert_eq!(status, StatusCode::UNAUTHORIZED);
                fastest[i] = fastest[i].min(started.elapsed().as_secs_f64());
            }
        }
        let [known, unknown] = fastest;
        eprintln!(
            "fastest failed login: known {known:.4} s, unknown {unknown:.4} s; one argon2 check {check:.4} s of CPU"
        );
        assert!(check > 0.005, "an argon2 check takes CPU time ({check} s)");
        for (name, login) in [("known", known), ("unknown", unknown)] {
            assert!(
                login > check * 0.5,
                "a failed login for a {name} name ({login} s) does an argon2 check ({check} s)"
            );
        }
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
        let error = expect(
            StatusCode::TOO_MANY_REQUESTS,
            app.another_client().register("cleo").await,
        );
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
            "POST /api/login",
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

/// The CPU time this thread has used, user and system, in seconds: fields
/// 14 and 15 of `/proc/thread-self/stat`, in Linux's clock ticks (100 a
/// second to every reader, whatever the kernel's own tick).
fn thread_cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").expect("this thread's stat");
    let after_name = &stat[stat.rfind(')').expect("the command's name") + 2..];
    let fields: Vec<&str> = after_name.split(' ').collect();
    let ticks = |at: usize| fields[at].parse::<u64>().expect("a count of ticks");
    // fields[0] is field 3 (the state): utime and stime follow at 14 and 15.
    (ticks(11) + ticks(12)) as f64 / 100.0
}
