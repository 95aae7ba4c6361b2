//! Opening refusals: the ban list, a minor, a provisional account's limits, new rules to accept,
//! an identity required outside demo mode.

use super::*;

on_both!(
    the_ban_list_refuses_an_opening_and_excludes_existing_accounts_at_import,
    |app| {
        player("ana").real_money().deposit(1000).on(&app).await;
        let born = born_years_ago(&app, 30);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("ban.csv");
        std::fs::write(
        &file,
        format!("birth_name,first_names,birth_date\n\"NAME OF ANA\",\"anne-marie\",{born}\nDupont,Anne Marie,{born}\n"),
    )
    .unwrap();
        // The operator imports it with the command line.
        let output = app
            .db
            .tresor_ok(&["banlist", "import", "--file", file.to_str().unwrap()]);
        let printed = String::from_utf8_lossy(&output.stdout);
        assert!(
            printed.contains("version 1") && printed.contains("1 account(s) excluded (ana)"),
            "{printed}"
        );
        // Her session has ended; logged in again, she can neither play nor deposit.
        assert_eq!(app.me().await.0, StatusCode::UNAUTHORIZED);
        app.login("ana", "a long password").await;
        let before = snapshot(&app).await;
        assert_refused(&app.buy(100).await, StatusCode::FORBIDDEN, "banned");
        assert_refused(
            &app.ask_deposit(1000).await,
            StatusCode::FORBIDDEN,
            "banned",
        );
        assert_eq!(snapshot(&app).await, before);
        // Someone on the list cannot open an account: nothing is written.
        let other = app.another_client();
        let before = snapshot(&app).await;
        assert_refused(
            &open(&other, "bea", "Dupont").await,
            StatusCode::FORBIDDEN,
            "banned",
        );
        assert_eq!(snapshot(&app).await, before);
        assert!(app.service.player_by_username("bea").await.is_err());
        let account = app.get("/api/account").await.1;
        assert_eq!(account["banned"], true);
        assert_eq!(trail_actions(&app).await.last().unwrap(), "login");
        app.assert_ledger_balances().await;
        audit_holds(&app);
    }
);

on_both!(a_minor_is_refused_and_nothing_is_written, |app| {
    let before = snapshot(&app).await;
    let born = born_years_ago(&app, 17);
    let answer = player("kid").born(&born).register(&app).await;
    assert_refused(&answer, StatusCode::FORBIDDEN, "minor");
    assert_eq!(snapshot(&app).await, before);
    assert!(app.service.player_by_username("kid").await.is_err());
    // Bad identities are refused before anything runs.
    let mut body = player("kid").born("1990-02-30").body(&app);
    assert_refused(
        &app.post("/api/account/open", body.clone()).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation",
    );
    body["identity"]["birth_date"] = json!("1990-02-03");
    body["iban"] = json!("FR76 3000 6000 0112 3456 7890 188");
    assert_refused(
        &app.post("/api/account/open", body.clone()).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation",
    );
    body["iban"] = json!(IBAN);
    body["surprise"] = json!(1);
    assert_eq!(
        app.post("/api/account/open", body).await.0,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    assert_eq!(snapshot(&app).await, before);
});

on_both!(
    a_provisional_account_cannot_withdraw_and_cannot_stake_after_its_period,
    |app| {
        player("ana").real_money().on(&app).await;
        let (_, account) = app.get("/api/account").await;
        assert_eq!(account["status"], "provisional");
        assert_eq!(account["can_withdraw"], false);
        assert_eq!(account["can_stake"], true);
        deposit(&app, 2000).await;
        let before = snapshot(&app).await;
        assert_refused(
            &app.ask_withdrawal(500).await,
            StatusCode::FORBIDDEN,
            "not_verified",
        );
        assert_eq!(snapshot(&app).await, before);
        let (status, _) = app.buy(100).await;
        assert_eq!(status, StatusCode::CREATED);
        // 30 days later, still unverified: no more stakes.
        app.clock.advance_ms(30 * DAY_MS + 1000);
        app.login("ana", "a long password").await;
        let before = snapshot(&app).await;
        assert_refused(
            &app.buy(100).await,
            StatusCode::FORBIDDEN,
            "verification_required",
        );
        assert_eq!(snapshot(&app).await.1, before.1, "no money moved");
        assert_eq!(app.get("/api/account").await.1["can_stake"], false);
        // The operator verifies (with the command line, once the documents
        // are): staking and withdrawing open.
        crate::common::opening::documents_verified(&app.service, "ana").await;
        app.db
            .tresor_ok(&["account", "verify", "--username", "ana", "--iban", IBAN]);
        let listed = app
            .db
            .tresor_ok(&["account", "list", "--status", "verified", "--json"]);
        assert!(String::from_utf8_lossy(&listed.stdout).contains("\"ana\""));
        assert_eq!(app.buy(100).await.0, StatusCode::CREATED);
        let (status, withdrawal) = app.ask_withdrawal(500).await;
        assert_eq!(status, StatusCode::CREATED, "{withdrawal}");
        assert_eq!(withdrawal["iban"], "FR76 •••• 0189");
        let listed = app.db.tresor_ok(&["withdrawal", "list"]);
        assert!(String::from_utf8_lossy(&listed.stdout).contains("ana"));
        let id = withdrawal["id"].to_string();
        // Four eyes: the command line (one operator) verified the account,
        // so it approves only where the installation says it has one operator.
        let refused = app.db.tresor(&["withdrawal", "approve", "--id", &id]);
        assert_exit(&refused, 1);
        assert!(
            String::from_utf8_lossy(&refused.stderr).contains("--single-operator"),
            "{}",
            crate::common::describe(&refused)
        );
        app.db
            .tresor_ok(&["withdrawal", "approve", "--id", &id, "--single-operator"]);
        let again = app
            .db
            .tresor(&["withdrawal", "reject", "--id", &id, "--reason", "late"]);
        assert_eq!(
            again.status.code(),
            Some(1),
            "a settled withdrawal is settled once"
        );
        app.assert_ledger_balances().await;
    }
);

on_both!(
    a_new_rules_version_must_be_accepted_before_the_next_purchase,
    |app| {
        app.player("ana", 1000).await;
        assert_eq!(app.buy(100).await.0, StatusCode::CREATED);
        app.db.tresor_ok(&["rules", "publish"]);
        let before = snapshot(&app).await;
        let answer = app.buy(100).await;
        assert_refused(&answer, StatusCode::CONFLICT, "rules_not_accepted");
        assert_eq!(answer.1["error"]["rules_version"], 2);
        assert_eq!(snapshot(&app).await.1, before.1);
        let answer = app.post("/api/account/rules", json!({"version": 1})).await;
        assert_refused(&answer, StatusCode::UNPROCESSABLE_ENTITY, "validation");
        let account = expect(
            StatusCode::OK,
            app.post("/api/account/rules", json!({"version": 2})).await,
        );
        assert_eq!(account["rules_version_accepted"], 2);
        assert_eq!(app.buy(100).await.0, StatusCode::CREATED);
        app.assert_ledger_balances().await;
    }
);

async fn registration_without_an_identity_is_refused_outside_demo_mode(db: &TestDb) {
    let (service, _clock) = db.service().await;
    let api = crate::common::Api::new(&service);
    let answer = api
        .call(
            "POST",
            "/api/register",
            Some(json!({"username": "ana", "password": "a long password", "adult": true, "accept_rules": true})),
            None,
            None,
        )
        .await;
    assert_eq!(answer.status.as_u16(), 422, "{}", answer.text);
    assert_eq!(answer.body["error"]["code"], "identity_required");
}

on_both!(registration_without_an_identity_is_refused_outside_demo_mode);
