//! Each role is refused each permission it lacks, the players' port knows no console,
//! and every console answer carries the security headers.

use super::*;

/// Every endpoint of `docs/CONSOLE.md` but login, logout and `me`: method,
/// path, body, and the permission it needs.
fn endpoints(
    player: i64,
    block: i64,
    emission: i64,
) -> Vec<(&'static str, String, Option<Value>, &'static str)> {
    let p = |s: &str| s.to_owned();
    vec![
        ("GET", p("/console/api/dashboard"), None, "dashboard"),
        ("GET", p("/console/api/report"), None, "dashboard"),
        ("GET", p("/console/api/emissions"), None, "dashboard"),
        ("GET", p("/console/api/blocks"), None, "dashboard"),
        ("GET", p("/console/api/site"), None, "dashboard"),
        (
            "POST",
            p("/console/api/emissions"),
            Some(json!({"stake_cents": 100, "blocks": 1})),
            "emissions",
        ),
        (
            "POST",
            format!("/console/api/emissions/{emission}/close"),
            Some(json!({})),
            "emissions",
        ),
        (
            "POST",
            format!("/console/api/blocks/{block}/suspend"),
            Some(json!({})),
            "emissions",
        ),
        (
            "POST",
            format!("/console/api/blocks/{block}/resume"),
            Some(json!({})),
            "emissions",
        ),
        (
            "POST",
            format!("/console/api/blocks/{block}/recheck"),
            Some(json!({})),
            "trail",
        ),
        ("GET", p("/console/api/players?q=bob"), None, "players"),
        (
            "GET",
            format!("/console/api/players/{player}"),
            None,
            "players",
        ),
        (
            "GET",
            format!("/console/api/players/{player}/statement"),
            None,
            "players",
        ),
        (
            "POST",
            format!("/console/api/players/{player}/credit"),
            Some(json!({"amount_cents": 500})),
            "players",
        ),
        (
            "POST",
            format!("/console/api/players/{player}/exclude"),
            Some(json!({"period": "7d"})),
            "players",
        ),
        (
            "POST",
            format!("/console/api/players/{player}/verify"),
            Some(json!({"iban": IBAN})),
            "players",
        ),
        (
            "GET",
            p("/console/api/accounts?status=provisional"),
            None,
            "players",
        ),
        (
            "GET",
            p("/console/api/withdrawals?state=pending"),
            None,
            "withdrawals",
        ),
        (
            "POST",
            p("/console/api/withdrawals/1/approve"),
            Some(json!({})),
            "withdrawals",
        ),
        (
            "POST",
            p("/console/api/withdrawals/1/reject"),
            Some(json!({"reason": "no"})),
            "withdrawals",
        ),
        (
            "PUT",
            p("/console/api/site/sales"),
            Some(json!({"opens_at": null})),
            "site",
        ),
        (
            "PUT",
            p("/console/api/site/announcement"),
            Some(json!({"message": "hello"})),
            "site",
        ),
        (
            "POST",
            p("/console/api/banlist"),
            Some(json!({"csv": "birth_name,first_names,birth_date\n"})),
            "site",
        ),
        ("GET", p("/console/api/trail"), None, "trail"),
        (
            "POST",
            p("/console/api/trail/verify"),
            Some(json!({})),
            "trail",
        ),
        ("GET", p("/console/api/trail/export"), None, "trail"),
        (
            "GET",
            p("/console/api/trail/records?action=credit"),
            None,
            "trail",
        ),
        (
            "GET",
            format!("/console/api/players/{player}/documents"),
            None,
            "players",
        ),
        ("GET", p("/console/api/documents/1"), None, "players"),
        (
            "POST",
            p("/console/api/documents/1/verify"),
            Some(json!({})),
            "players",
        ),
        (
            "POST",
            p("/console/api/documents/1/refuse"),
            Some(json!({"reason": "blurred"})),
            "players",
        ),
    ]
}

on_both!(
    each_role_is_refused_each_permission_it_lacks_and_nothing_changes,
    |app| {
        app.player("bob", 1_000).await;
        let player = app.service.player_by_username("bob").await.unwrap().id;
        let block = app.service.blocks().await.unwrap()[0].id;
        let emission = app.service.emissions().await.unwrap()[0].id;
        let table = endpoints(player, block, emission);
        let mut refused = 0;
        for (role, name) in [
            (Role::Viewer, "vera"),
            (Role::Operator, "otto"),
            (Role::Auditor, "aude"),
        ] {
            let (console, _) = logged_in(&app, name, role).await;
            for (method, path, body, permission) in &table {
                if role.permissions().iter().any(|p| p.as_str() == *permission) {
                    continue;
                }
                // A minute apart: one refusal per account and minute is
                // recorded (tests/it/intake.rs counts the others).
                app.clock.advance_ms(61_000);
                let before = state_of(&app).await;
                let trail_before = trail(&app).await;
                let answer = console.send(method, path, body.clone(), true).await;
                assert_error(&answer, StatusCode::FORBIDDEN, "forbidden");
                assert_eq!(
                    answer.1["error"]["permission"], *permission,
                    "{method} {path}"
                );
                assert_eq!(state_of(&app).await, before, "{name}: {method} {path}");
                // The refusal itself is the one new record of the trail.
                let after = trail(&app).await;
                assert_eq!(after.len(), trail_before.len() + 1, "{method} {path}");
                assert_eq!(
                    after.last().unwrap(),
                    &(format!("staff:{name}"), "console_forbidden".to_owned())
                );
                refused += 1;
            }
        }
        // The viewer lacks 26 endpoints, the operator the trail's 5, the auditor 21.
        assert_eq!(refused, 26 + 5 + 21);
        let output = app.db.tresor_ok(&["audit", "verify"]);
        assert!(output.status.success(), "{}", describe(&output));
    }
);

on_both!(the_players_port_answers_404_for_the_console, |app| {
    for path in [
        "/console",
        "/console/",
        "/console/api/me",
        "/console/api/dashboard",
    ] {
        let (status, _) = app.get(path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
    }
    let (status, _) = app
        .post_raw(
            "/console/api/login",
            &json!({"username": "a", "password": "b"}).to_string(),
            &[("x-requested-with", "tresor-console")],
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
});

on_both!(
    every_console_answer_carries_the_sites_security_headers,
    |app| {
        let (console, _) = logged_in(&app, "aude", Role::Auditor).await;
        let anonymous = reqwest::Client::new();
        for (client, path) in [
            (&console.client, "/console/api/trail"),
            (&console.client, "/console/api/trail/export"),
            (&console.client, "/console/api/no/such/endpoint"),
            (&anonymous, "/console/api/trail"),
            (&anonymous, "/console"),
            (&anonymous, "/healthz"),
            (&anonymous, "/metrics"),
        ] {
            let response = client
                .get(format!("{}{path}", app.admin_address))
                .send()
                .await
                .unwrap();
            let headers = response.headers();
            let header = |name: &str| {
                headers
                    .get(name)
                    .map(|v| v.to_str().unwrap().to_owned())
                    .unwrap_or_default()
            };
            assert_eq!(header("x-content-type-options"), "nosniff", "{path}");
            assert_eq!(header("x-frame-options"), "DENY", "{path}");
            assert!(
                header("content-security-policy").contains("frame-ancestors 'none'"),
                "{path}: {:?}",
                header("content-security-policy")
            );
            assert_eq!(header("referrer-policy"), "same-origin", "{path}");
        }
    }
);
