//! Each role is refused each permission it lacks, the players' port knows no console,
//! and every console answer carries the security headers.

mod browser;

use super::*;

/// Every endpoint of `docs/CONSOLE.md` but login, logout and `me`: its
/// method, its path under `/console/api/`, the permission it needs and the
/// JSON body it is sent, if any.
const ENDPOINTS: &[&str] = &[
    "GET dashboard dashboard",
    "GET report dashboard",
    "GET emissions dashboard",
    "GET blocks dashboard",
    "GET site dashboard",
    r#"POST emissions emissions {"stake_cents": 100, "blocks": 1}"#,
    "POST emissions/{emission}/close emissions {}",
    "POST blocks/{block}/suspend emissions {}",
    "POST blocks/{block}/resume emissions {}",
    "POST blocks/{block}/recheck trail {}",
    "GET players?q=bob players",
    "GET players/{player} players",
    "GET players/{player}/statement players",
    r#"POST players/{player}/credit players {"amount_cents": 500}"#,
    r#"POST players/{player}/exclude players {"period": "7d"}"#,
    r#"POST players/{player}/verify players {"iban": "FR76 3000 6000 0112 3456 7890 189"}"#,
    "GET accounts?status=provisional players",
    "GET withdrawals?state=pending withdrawals",
    "POST withdrawals/1/approve withdrawals {}",
    r#"POST withdrawals/1/reject withdrawals {"reason": "no"}"#,
    r#"PUT site/sales site {"opens_at": null}"#,
    r#"PUT site/announcement site {"message": "hello"}"#,
    r#"POST banlist site {"csv": "birth_name,first_names,birth_date\n"}"#,
    "GET trail trail",
    "POST trail/verify trail {}",
    "GET trail/export trail",
    "GET trail/records?action=credit trail",
    "GET players/{player}/documents players",
    "GET documents/1 players",
    "POST documents/1/verify players {}",
    r#"POST documents/1/refuse players {"reason": "blurred"}"#,
];

/// [`ENDPOINTS`] with the ids of `player`, `block` and `emission`: method,
/// path, body, and the permission it needs.
fn endpoints(
    player: i64,
    block: i64,
    emission: i64,
) -> Vec<(&'static str, String, Option<Value>, &'static str)> {
    let ids = |path: &str| {
        path.replace("{player}", &player.to_string())
            .replace("{block}", &block.to_string())
            .replace("{emission}", &emission.to_string())
    };
    let table = ENDPOINTS.iter().map(|row| {
        let mut words = row.splitn(4, ' ');
        let (method, path) = (words.next().unwrap(), words.next().unwrap());
        let permission = words.next().unwrap();
        let body = words.next().map(|body| serde_json::from_str(body).unwrap());
        let path = ids(&format!("/console/api/{path}"));
        (method, path, body, permission)
    });
    table.collect()
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
                assert_refused(&answer, StatusCode::FORBIDDEN, "forbidden");
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
