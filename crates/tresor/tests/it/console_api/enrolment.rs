//! Console enrolment and sessions: password, secret and code, the 401/403 of a missing
//! session or CSRF header, waits after failed logins, secrets re-sealed, codes counted apart.

use super::*;
use crate::common::metrics;

on_both!(enrolment_takes_a_password_a_secret_and_a_code, |app| {
    add_staff(&app, "alice", Role::Operator).await;
    let console = Console::on(&app);
    assert_refused(
        &console.login("alice", "not the password").await,
        StatusCode::UNAUTHORIZED,
        "invalid_credentials",
    );
    assert_refused(
        &console.login("nobody", PASSWORD).await,
        StatusCode::UNAUTHORIZED,
        "invalid_credentials",
    );
    // The code step needs the password step first.
    assert_refused(
        &console.code("123456").await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    let enrol = expect(StatusCode::OK, console.login("ALICE", PASSWORD).await);
    assert_eq!(enrol["step"], "enrol");
    let secret_text = enrol["secret"].as_str().unwrap();
    let secret = base32_decode(secret_text);
    assert_eq!(secret.len(), 20);
    assert_eq!(
        enrol["otpauth_uri"],
        format!(
            "otpauth://totp/Tresor:alice?secret={secret_text}&issuer=Tresor&algorithm=SHA1&digits=6&period=30"
        )
    );
    assert!(enrol["qr_svg"].as_str().unwrap().contains("<svg"));
    // A wrong code is refused and enrols nothing.
    let right = totp_code(&secret, now_s(&app));
    let wrong = format!("{:06}", (right.parse::<u32>().unwrap() + 1) % 1_000_000);
    assert_refused(
        &console.code(&wrong).await,
        StatusCode::UNAUTHORIZED,
        "invalid_code",
    );
    assert_refused(
        &console.get("/console/api/me").await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    let done = expect(StatusCode::OK, console.code(&right).await);
    assert_eq!(done["step"], "done");
    assert_eq!(done["operator"]["username"], "alice");
    assert_eq!(done["operator"]["role"], "operator");
    let me = console.read("/console/api/me").await;
    assert_eq!(
        me["permissions"],
        json!(["dashboard", "emissions", "players", "withdrawals", "site"])
    );
    // The secret is stored sealed, never in clear.
    let sealed: Vec<u8> =
        sqlx::query_scalar("SELECT totp_sealed FROM staff WHERE username = 'alice'")
            .fetch_one(&app.service.db.pool)
            .await
            .unwrap();
    assert!(!sealed.windows(secret.len()).any(|w| w == secret.as_slice()));

    let (status, _) = console.post("/console/api/logout", json!({})).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_refused(
        &console.get("/console/api/me").await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    // Enrolled now: the secret is never shown again, and a code is used once.
    let step = expect(StatusCode::OK, console.login("alice", PASSWORD).await);
    assert_eq!(step, json!({"step": "code"}));
    assert_refused(
        &console.code(&right).await,
        StatusCode::UNAUTHORIZED,
        "invalid_code",
    );
    app.clock.advance_ms(30_000);
    expect(
        StatusCode::OK,
        console.code(&totp_code(&secret, now_s(&app))).await,
    );
    let actions: Vec<(String, String)> = trail(&app)
        .await
        .into_iter()
        .filter(|(_, action)| action.starts_with("console_"))
        .collect();
    let staff = |action: &str| ("staff:alice".to_owned(), action.to_owned());
    assert_eq!(
        actions,
        vec![
            staff("console_login_failed"),
            ("anonymous".to_owned(), "console_login_failed".to_owned()),
            staff("console_code_failed"),
            staff("console_enrol"),
            staff("console_login"),
            staff("console_logout"),
            staff("console_code_failed"),
            staff("console_login"),
        ]
    );
    // A disabled account cannot log in, and its session ends.
    app.service
        .disable_staff(&StaffName::parse("alice").unwrap())
        .await
        .unwrap();
    assert_refused(
        &console.get("/console/api/me").await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    assert_refused(
        &console.login("alice", PASSWORD).await,
        StatusCode::UNAUTHORIZED,
        "invalid_credentials",
    );
});

on_both!(no_session_is_401_and_a_missing_csrf_header_is_403, |app| {
    let anonymous = Console::on(&app);
    for path in [
        "/console/api/me",
        "/console/api/dashboard",
        "/console/api/trail",
    ] {
        assert_refused(
            &anonymous.get(path).await,
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        );
    }
    let (console, _) = logged_in(&app, "alice", Role::Operator).await;
    let before = state_of(&app).await;
    let trail_before = trail(&app).await.len();
    for (method, path, body) in [
        (
            "POST",
            "/console/api/emissions",
            json!({"stake_cents": 100, "blocks": 1}),
        ),
        (
            "PUT",
            "/console/api/site/announcement",
            json!({"message": "hello"}),
        ),
        ("POST", "/console/api/logout", json!({})),
        (
            "POST",
            "/console/api/login",
            json!({"username": "alice", "password": PASSWORD}),
        ),
    ] {
        assert_refused(
            &console.send(method, path, Some(body), false).await,
            StatusCode::FORBIDDEN,
            "csrf",
        );
    }
    assert_eq!(state_of(&app).await, before);
    assert_eq!(trail(&app).await.len(), trail_before);
    // Still logged in: the refused logout did nothing.
    assert_eq!(console.get("/console/api/me").await.0, StatusCode::OK);
    assert_refused(
        &console.get("/console/api/nothing/here").await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    let answer = console.response("/console/api/me").await;
    assert_eq!(answer.headers()["cache-control"], "no-store");
    // axum's own refusals are JSON errors too.
    assert_refused(
        &console.get("/console/api/login").await,
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
    );
    let huge = json!({"message": "x".repeat(70_000)});
    assert_refused(
        &console.put("/console/api/site/announcement", huge).await,
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
    );
});

fn failed_logins_free(free: u32) -> tresor::service::Settings {
    tresor::service::Settings {
        rate_limits: tresor::protect::RateLimits {
            failed_logins_free_per_name_and_address: free,
            ..tresor::protect::RateLimits::unthrottled()
        },
        ..TestApp::settings()
    }
}

on_both!(
    failed_console_logins_wait_and_an_idle_session_ends,
    failed_logins_free(2),
    |app| {
        add_staff(&app, "alice", Role::Viewer).await;
        let console = Console::on(&app);
        for _ in 0..2 {
            assert_refused(
                &console.login("alice", "not the password").await,
                StatusCode::UNAUTHORIZED,
                "invalid_credentials",
            );
        }
        // Past the free failures the next attempt waits, right password or not.
        let body = expect(
            StatusCode::TOO_MANY_REQUESTS,
            console.login("alice", PASSWORD).await,
        );
        assert_eq!(body["error"]["code"], "rate_limited");
        app.clock.advance_ms(1_000);
        let body = expect(StatusCode::OK, console.login("alice", PASSWORD).await);
        let secret = base32_decode(body["secret"].as_str().unwrap());
        // Wrong codes are counted apart from passwords, per console account
        // (`codes_are_counted_per_account_apart_from_passwords`): two are free.
        assert_refused(
            &console.code("000000").await,
            StatusCode::UNAUTHORIZED,
            "invalid_code",
        );
        assert_refused(
            &console.code("000001").await,
            StatusCode::UNAUTHORIZED,
            "invalid_code",
        );
        expect(
            StatusCode::OK,
            console.code(&totp_code(&secret, now_s(&app))).await,
        );
        assert_eq!(
            console.get("/console/api/dashboard").await.0,
            StatusCode::OK
        );
        // Unused past the idle limit, the session ends.
        app.clock
            .advance_ms(app.service.settings.session_idle_s * 1000 + 1_000);
        let body = expect(
            StatusCode::UNAUTHORIZED,
            console.get("/console/api/dashboard").await,
        );
        assert_eq!(body["error"]["reason"], "session_idle");
    }
);

on_both!(
    rotating_the_secrets_key_reseals_the_totp_secrets,
    |db: &TestDb| {
        use tresor::service::Clock as _;
        let (service, clock) = db.service().await;
        let member = service
            .add_staff(&StaffName::parse("alice").unwrap(), Role::Auditor, PASSWORD)
            .await
            .unwrap();
        let secret = b"a secret of 20 bytes".to_vec();
        let code = totp_code(&secret, clock.now_ms() / 1000);
        service
            .open_staff_session(&member, &code, Some(secret.clone()))
            .await
            .unwrap();
        drop(service);
        let folder = tempfile::tempdir().unwrap();
        let key_file = folder.path().join("new.key");
        db.tresor_ok(&[
            "secrets",
            "rotate",
            "--new-key-file",
            key_file.to_str().unwrap(),
        ]);
        let new_key = tresor::seal::KeySource::File(key_file).load(false).unwrap();
        let rotated = crate::common::db::signed(
            tresor::store::Db::connect(&db.url)
                .await
                .unwrap()
                .with_secrets_key(new_key),
        )
        .await;
        let service = tresor::service::Service::new(rotated, clock.clone(), Default::default());
        clock.advance_ms(30_000);
        let code = totp_code(&secret, clock.now_ms() / 1000);
        let (_, again) = service
            .open_staff_session(&member, &code, None)
            .await
            .unwrap();
        assert_eq!(again.username, "alice");
        // The rotation is in the trail, which holds (the old key opens nothing now).
        let verdict = tresor::trail::verify(&service.db.pool, |_| {})
            .await
            .unwrap();
        assert!(
            matches!(verdict, tresor::trail::Verdict::Intact { .. }),
            "{verdict:?}"
        );
    }
);

on_both!(codes_are_counted_per_account_apart_from_passwords, |app| {
    let (enrolled, secret) = logged_in(&app, "alice", Role::Viewer).await;
    enrolled.post("/console/api/logout", json!({})).await;
    app.clock.advance_ms(30_000);
    let console = Console::on(&app);
    let body = expect(StatusCode::OK, console.login("alice", PASSWORD).await);
    assert_eq!(body["step"], "code");
    let right = || totp_code(&secret, now_s(&app));
    let wrong = |n: u32| {
        let right: u32 = totp_code(&secret, now_s(&app)).parse().unwrap();
        format!("{:06}", (right + 500_000 + n) % 1_000_000)
    };
    // Five wrong codes end the pending login.
    for n in 0..5 {
        let answer = console.code(&wrong(n)).await;
        assert_refused(&answer, StatusCode::UNAUTHORIZED, "invalid_code");
        if n == 4 {
            assert!(
                answer.1["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("again")
            );
        }
    }
    assert_refused(
        &console.code(&right()).await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    // The password again does not clear the code failures: the next code
    // of this account waits, right or not, whatever the address.
    expect(StatusCode::OK, console.login("alice", PASSWORD).await);
    let body = expect(StatusCode::TOO_MANY_REQUESTS, console.code(&right()).await);
    assert_eq!(body["error"]["code"], "rate_limited");
    let elsewhere = Console::on(&app);
    expect(StatusCode::OK, elsewhere.login("alice", PASSWORD).await);
    assert_eq!(
        elsewhere.code(&right()).await.0,
        StatusCode::TOO_MANY_REQUESTS
    );
    app.clock.advance_ms(1_000);
    expect(StatusCode::OK, console.code(&right()).await);
    // Every wrong code is counted for the alert.
    let failures = "tresor_console_code_failures_total";
    assert_eq!(metrics::read(&app.admin_address, failures).await, 5.0);
});
