//! The player account for real money, through the HTTP API on both
//! databases: opening with an identity (minors and the ban list refused),
//! provisional accounts, rules versions, provider deposits and their signed
//! webhook, withdrawals and their races, the statement and its CSV, closing,
//! and the operator's commands. Every refusal is checked to change nothing.

use crate::common::{TestApp, TestDb};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tresor::service::{Settlement, sign_webhook};

const IBAN: &str = "FR76 3000 6000 0112 3456 7890 189";
const DAY_MS: i64 = 24 * 3600 * 1000;

/// A birth date `years` years before the app's clock (a day more, to be sure).
fn born_years_ago(app: &TestApp, years: i32) -> String {
    let now = time::OffsetDateTime::from_unix_timestamp(app.service.now_ms() / 1000).unwrap();
    let date = now
        .date()
        .replace_year(now.year() - years)
        .unwrap()
        .previous_day()
        .unwrap();
    format!("{date}")
}

fn opening(username: &str, birth_name: &str, birth_date: &str) -> Value {
    json!({
        "username": username,
        "password": "a long password",
        "accept_rules": true,
        "marketing_consent": false,
        "iban": IBAN,
        "deposit_limit_cents": 1_000_000,
        "stake_limit_cents": 1_000_000,
        "identity": {
            "birth_name": birth_name,
            "first_names": "Anne Marie",
            "birth_date": birth_date,
            "birth_place": "Nantes",
            "address": "1 rue de la Paix, 75002 Paris",
        },
    })
}

/// Opens an account for real money as the app's client; returns the answer.
async fn open(app: &TestApp, username: &str, birth_name: &str) -> (StatusCode, Value) {
    let born = born_years_ago(app, 30);
    app.post("/api/account/open", opening(username, birth_name, &born))
        .await
}

async fn open_ok(app: &TestApp, username: &str) {
    let (status, body) = open(app, username, &format!("Name of {username}")).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

/// An operator of the console (not the command line, which approves the
/// withdrawals here: four eyes) verifies the account, identity and IBAN
/// checked.
async fn verify(app: &TestApp, username: &str) {
    crate::common::opening::documents_verified(&app.service, username).await;
    let player = app.service.player_by_username(username).await.unwrap();
    let reviewed = tresor::account::Iban::parse(IBAN).unwrap();
    app.service
        .verify_account_as(tresor::trail::Actor::staff("vera"), &player, &reviewed)
        .await
        .unwrap();
}

/// Sends the provider's webhook with `body`, signed at the app's time
/// shifted by `shift_s`, with the right secret or not.
async fn webhook(
    app: &TestApp,
    body: &Value,
    shift_s: i64,
    good_secret: bool,
) -> (StatusCode, Value) {
    let text = body.to_string();
    let timestamp = app.service.now_ms() / 1000 + shift_s;
    let secret: Vec<u8> = if good_secret {
        app.service.webhook_secret().to_vec()
    } else {
        b"not the secret".to_vec()
    };
    let signature = sign_webhook(&secret, timestamp, text.as_bytes());
    let timestamp = timestamp.to_string();
    app.post_raw(
        "/api/payments/webhook",
        &text,
        &[
            ("tresor-timestamp", timestamp.as_str()),
            ("tresor-signature", signature.as_str()),
        ],
    )
    .await
}

/// Asks a deposit of `cents`; returns its id.
async fn ask_deposit(app: &TestApp, cents: i64) -> i64 {
    let (status, body) = app
        .post("/api/account/deposits", json!({"amount_cents": cents}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["state"], "pending");
    assert!(
        body["pay_url"]
            .as_str()
            .unwrap()
            .contains(&body["id"].to_string())
    );
    body["id"].as_i64().unwrap()
}

fn confirmation(deposit_id: i64, transaction_id: &str, cents: i64) -> Value {
    json!({"deposit_id": deposit_id, "transaction_id": transaction_id, "amount_cents": cents, "status": "succeeded"})
}

/// Deposits `cents` through the provider, confirmed by its webhook.
async fn deposit(app: &TestApp, cents: i64) {
    let id = ask_deposit(app, cents).await;
    let (status, body) = webhook(app, &confirmation(id, &format!("tx-{id}"), cents), 0, true).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["outcome"], "credited", "{body}");
}

/// What a refusal must leave as it was: the trail's length and every balance.
async fn snapshot(app: &TestApp) -> (i64, Vec<(i64, i64)>) {
    let pool = &app.service.db.pool;
    let trail: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM trail")
        .fetch_one(pool)
        .await
        .unwrap();
    let balances: Vec<(i64, i64)> =
        sqlx::query_as("SELECT id, balance_cents FROM accounts ORDER BY id")
            .fetch_all(pool)
            .await
            .unwrap();
    (trail, balances)
}

fn assert_refused(answer: &(StatusCode, Value), status: StatusCode, code: &str) {
    assert_eq!(answer.0, status, "{}", answer.1);
    assert_eq!(answer.1["error"]["code"], code, "{}", answer.1);
    assert!(
        answer.1["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty())
    );
}

async fn balance_of(app: &TestApp, account_id: i64) -> i64 {
    sqlx::query_scalar("SELECT balance_cents FROM accounts WHERE id = $1")
        .bind(account_id)
        .fetch_one(&app.service.db.pool)
        .await
        .unwrap()
}

async fn trail_actions(app: &TestApp) -> Vec<String> {
    sqlx::query_scalar("SELECT action FROM trail ORDER BY seq")
        .fetch_all(&app.service.db.pool)
        .await
        .unwrap()
}

/// `tresor audit verify` on the app's database.
fn audit_holds(app: &TestApp) {
    let output = app.db.tresor_ok(&["audit", "verify"]);
    assert!(output.status.success());
}

on_both!(
    a_webhook_with_a_bad_signature_or_a_stale_timestamp_is_refused_and_changes_nothing,
    |app| {
        open_ok(&app, "ana").await;
        let id = ask_deposit(&app, 5000).await;
        let body = confirmation(id, "tx-1", 5000);
        let before = snapshot(&app).await;
        assert_refused(
            &webhook(&app, &body, 0, false).await,
            StatusCode::UNAUTHORIZED,
            "invalid_signature",
        );
        assert_refused(
            &webhook(&app, &body, -301, true).await,
            StatusCode::UNAUTHORIZED,
            "stale_signature",
        );
        assert_refused(
            &webhook(&app, &body, 301, true).await,
            StatusCode::UNAUTHORIZED,
            "stale_signature",
        );
        // A body changed after signing does not match its signature.
        let text = body.to_string();
        let timestamp = app.service.now_ms() / 1000;
        let signature = sign_webhook(app.service.webhook_secret(), timestamp, text.as_bytes());
        let tampered = text.replace("5000", "9000");
        let timestamp = timestamp.to_string();
        let answer = app
            .post_raw(
                "/api/payments/webhook",
                &tampered,
                &[
                    ("tresor-timestamp", timestamp.as_str()),
                    ("tresor-signature", signature.as_str()),
                ],
            )
            .await;
        assert_refused(&answer, StatusCode::UNAUTHORIZED, "invalid_signature");
        let answer = app.post_raw("/api/payments/webhook", &text, &[]).await;
        assert_refused(&answer, StatusCode::UNAUTHORIZED, "invalid_signature");
        assert_eq!(snapshot(&app).await, before, "refusals change nothing");
        // Within the window, signed right: credited.
        let (status, answer) = webhook(&app, &body, -290, true).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert_eq!(answer["outcome"], "credited");
        assert_eq!(app.balance().await, 5000);
        let (_, deposit) = app.get(&format!("/api/account/deposits/{id}")).await;
        assert_eq!(deposit["state"], "credited");
        app.assert_ledger_balances().await;
    }
);

on_both!(
    the_same_confirmation_ten_times_concurrently_credits_once,
    |app| {
        open_ok(&app, "ana").await;
        let id = ask_deposit(&app, 2500).await;
        let body = confirmation(id, "tx-same", 2500);
        let answers =
            futures_util::future::join_all((0..10).map(|_| webhook(&app, &body, 0, true))).await;
        let mut fresh = 0;
        for (status, answer) in &answers {
            assert_eq!(*status, StatusCode::OK, "{answer}");
            assert_eq!(answer["outcome"], "credited");
            if answer["replayed"] == false {
                fresh += 1;
            }
        }
        assert_eq!(fresh, 1, "one confirmation applied, nine replays");
        // And once more, later: still a replay.
        let (_, again) = webhook(&app, &body, 0, true).await;
        assert_eq!(again["replayed"], true);
        assert_eq!(app.balance().await, 2500);
        let credits: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM transfers WHERE deposit_id = $1")
                .bind(id)
                .fetch_one(&app.service.db.pool)
                .await
                .unwrap();
        assert_eq!(credits, 1);
        let confirmed = trail_actions(&app)
            .await
            .iter()
            .filter(|a| *a == "deposit_confirmed")
            .count();
        assert_eq!(
            confirmed, 1,
            "the trail has the one confirmation that changed something"
        );
        // Another payment for a deposit already credited is owed back, not credited.
        let (_, second) = webhook(&app, &confirmation(id, "tx-other", 2500), 0, true).await;
        assert_eq!(second["outcome"], "to_refund");
        assert_eq!(second["reason"], "deposit_already_settled");
        assert_eq!(app.balance().await, 2500);
        app.assert_ledger_balances().await;
        audit_holds(&app);
    }
);

on_both!(
    a_confirmation_over_the_deposit_cap_is_recorded_to_refund_and_never_credited,
    |app| {
        let born = born_years_ago(&app, 40);
        let mut body = opening("ana", "Martin", &born);
        body["deposit_limit_cents"] = json!(3000);
        let (status, answer) = app.post("/api/account/open", body).await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
        // Asked within the cap (a deposit past what is left is refused when
        // asked), then past it by the time it is confirmed.
        let id = ask_deposit(&app, 2000).await;
        deposit(&app, 2000).await;
        let (status, answer) = webhook(&app, &confirmation(id, "tx-over", 2000), 0, true).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert_eq!(answer["outcome"], "to_refund");
        assert_eq!(answer["reason"], "deposit_limit");
        assert_eq!(app.balance().await, 2000, "never credited");
        assert_eq!(
            balance_of(&app, tresor::model::TO_REFUND_ACCOUNT).await,
            2000
        );
        let (_, deposit) = app.get(&format!("/api/account/deposits/{id}")).await;
        assert_eq!(deposit["state"], "to_refund");
        // A wrong amount is not credited either.
        let id = ask_deposit(&app, 500).await;
        let (_, answer) = webhook(&app, &confirmation(id, "tx-wrong", 700), 0, true).await;
        assert_eq!(answer["reason"], "amount_mismatch");
        assert_eq!(app.balance().await, 2000);
        let report = tresor::report::build(&app.service.db.pool, None)
            .await
            .unwrap();
        assert_eq!(report.money.to_refund_cents, 2700);
        assert_eq!(report.money.provider_deposits_cents, 2000);
        assert_eq!(report.money.ledger_sum_cents, 0);
        app.assert_ledger_balances().await;
    }
);

on_both!(
    a_withdrawal_never_exceeds_the_balance_even_with_concurrent_purchases,
    |app| {
        open_ok(&app, "ana").await;
        verify(&app, "ana").await;
        deposit(&app, 1000).await;
        let buys = futures_util::future::join_all((0..6).map(|_| app.buy(100)));
        let withdrawals = futures_util::future::join_all(
            (0..3).map(|_| app.post("/api/account/withdrawals", json!({"amount_cents": 600}))),
        );
        let (buys, withdrawals) = tokio::join!(buys, withdrawals);
        let bought = buys
            .iter()
            .filter(|(s, _)| *s == StatusCode::CREATED)
            .count() as i64;
        let withdrawn = withdrawals
            .iter()
            .filter(|(s, _)| *s == StatusCode::CREATED)
            .count() as i64;
        // A refused withdrawal saw a balance too short for it, purchases of the
        // same batch counted.
        for (status, body) in withdrawals
            .iter()
            .filter(|(s, _)| *s != StatusCode::CREATED)
        {
            assert_eq!(*status, StatusCode::PAYMENT_REQUIRED, "{body}");
            assert_eq!(body["error"]["code"], "insufficient_funds");
        }
        for (status, body) in buys.iter().filter(|(s, _)| *s != StatusCode::CREATED) {
            assert_eq!(*status, StatusCode::PAYMENT_REQUIRED, "{body}");
        }
        assert!(bought >= 1 || withdrawn >= 1);
        let player = app.service.player_by_username("ana").await.unwrap();
        let balance = balance_of(&app, player.account_id).await;
        assert!(balance >= 0);
        assert_eq!(
            balance_of(&app, tresor::model::PENDING_WITHDRAWALS_ACCOUNT).await,
            withdrawn * 600
        );
        // Prizes of settled plays aside, 10 € cover every stake and withdrawal.
        let prizes: i64 = sqlx::query_scalar(
        "SELECT CAST(COALESCE(SUM(amount_cents), 0) AS BIGINT) FROM transfers WHERE kind = 'prize'",
    )
    .fetch_one(&app.service.db.pool)
    .await
    .unwrap();
        assert_eq!(balance, 1000 + prizes - bought * 100 - withdrawn * 600);
        app.assert_ledger_balances().await;
    }
);

on_both!(a_cancel_racing_an_approval_settles_one_way, |app| {
    open_ok(&app, "ana").await;
    verify(&app, "ana").await;
    deposit(&app, 3000).await;
    for round in 0..3 {
        let (status, withdrawal) = app
            .post("/api/account/withdrawals", json!({"amount_cents": 500}))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{withdrawal}");
        let id = withdrawal["id"].as_i64().unwrap();
        let path = format!("/api/account/withdrawals/{id}/cancel");
        let cancel = app.post(&path, json!({}));
        let approve = app.service.decide_withdrawal(id, Settlement::Paid, None);
        let ((status, cancelled), approved) = tokio::join!(cancel, approve);
        match (status, approved) {
            (StatusCode::OK, Err(tresor::error::Error::WithdrawalNotPending { state })) => {
                assert_eq!(state, "cancelled");
                assert_eq!(cancelled["state"], "cancelled");
            }
            (StatusCode::CONFLICT, Ok(paid)) => {
                assert_eq!(paid.state, "paid");
                assert_eq!(cancelled["error"]["code"], "withdrawal_not_pending");
                assert_eq!(cancelled["error"]["state"], "paid");
            }
            (status, approved) => panic!("round {round}: {status} {cancelled} and {approved:?}"),
        }
        let settlements: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM transfers WHERE withdrawal_id = $1 AND kind <> 'withdrawal'",
        )
        .bind(id)
        .fetch_one(&app.service.db.pool)
        .await
        .unwrap();
        assert_eq!(settlements, 1, "settled once");
    }
    assert_eq!(
        balance_of(&app, tresor::model::PENDING_WITHDRAWALS_ACCOUNT).await,
        0
    );
    // A rejection gives the money back.
    let (_, withdrawal) = app
        .post("/api/account/withdrawals", json!({"amount_cents": 700}))
        .await;
    let before = app.balance().await;
    let rejected = app
        .service
        .decide_withdrawal(
            withdrawal["id"].as_i64().unwrap(),
            Settlement::Rejected,
            Some("wrong bank".to_owned()),
        )
        .await
        .unwrap();
    assert_eq!(rejected.state, "rejected");
    assert_eq!(app.balance().await, before + 700);
    app.assert_ledger_balances().await;
    audit_holds(&app);
});

on_both!(
    the_ban_list_refuses_an_opening_and_excludes_existing_accounts_at_import,
    |app| {
        open_ok(&app, "ana").await;
        deposit(&app, 1000).await;
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
            &app.post("/api/account/deposits", json!({"amount_cents": 1000}))
                .await,
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
    let answer = app
        .post("/api/account/open", opening("kid", "Petit", &born))
        .await;
    assert_refused(&answer, StatusCode::FORBIDDEN, "minor");
    assert_eq!(snapshot(&app).await, before);
    assert!(app.service.player_by_username("kid").await.is_err());
    // Bad identities are refused before anything runs.
    let mut body = opening("kid", "Petit", "1990-02-30");
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
        open_ok(&app, "ana").await;
        let (_, account) = app.get("/api/account").await;
        assert_eq!(account["status"], "provisional");
        assert_eq!(account["can_withdraw"], false);
        assert_eq!(account["can_stake"], true);
        deposit(&app, 2000).await;
        let before = snapshot(&app).await;
        assert_refused(
            &app.post("/api/account/withdrawals", json!({"amount_cents": 500}))
                .await,
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
        let (status, withdrawal) = app
            .post("/api/account/withdrawals", json!({"amount_cents": 500}))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{withdrawal}");
        assert_eq!(withdrawal["iban"], "FR76 •••• 0189");
        let listed = app.db.tresor_ok(&["withdrawal", "list"]);
        assert!(String::from_utf8_lossy(&listed.stdout).contains("ana"));
        let id = withdrawal["id"].to_string();
        // Four eyes: the command line (one operator) verified the account,
        // so it approves only where the installation says it has one operator.
        let refused = app.db.tresor(&["withdrawal", "approve", "--id", &id]);
        assert_eq!(
            refused.status.code(),
            Some(1),
            "{}",
            crate::common::describe(&refused)
        );
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
        let (status, account) = app.post("/api/account/rules", json!({"version": 2})).await;
        assert_eq!(status, StatusCode::OK, "{account}");
        assert_eq!(account["rules_version_accepted"], 2);
        assert_eq!(app.buy(100).await.0, StatusCode::CREATED);
        app.assert_ledger_balances().await;
    }
);

on_both!(
    every_movement_is_in_the_statement_and_the_trail_with_running_balances,
    |app| {
        open_ok(&app, "ana").await;
        verify(&app, "ana").await;
        deposit(&app, 3000).await;
        let player = app.service.player_by_username("ana").await.unwrap();
        // Credited at the console, approved at the command line: four eyes.
        app.service
            .credit_as(tresor::trail::Actor::staff("cleo"), &player, 400)
            .await
            .unwrap();
        let (_, play) = app.buy(200).await;
        app.finish(play["id"].as_i64().unwrap()).await;
        let ask = |cents: i64| app.post("/api/account/withdrawals", json!({"amount_cents": cents}));
        let (_, w1) = ask(300).await;
        app.post(
            &format!("/api/account/withdrawals/{}/cancel", w1["id"]),
            json!({}),
        )
        .await;
        let (_, w2) = ask(400).await;
        app.service
            .decide_withdrawal(w2["id"].as_i64().unwrap(), Settlement::Paid, None)
            .await
            .unwrap();
        let (_, w3) = ask(500).await;
        app.service
            .decide_withdrawal(
                w3["id"].as_i64().unwrap(),
                Settlement::Rejected,
                Some("no".to_owned()),
            )
            .await
            .unwrap();
        let (status, page) = app.get("/api/account/statement?limit=100").await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let movements = page["movements"].as_array().unwrap();
        let names: Vec<&str> = movements
            .iter()
            .rev()
            .map(|m| m["movement"].as_str().unwrap())
            .collect();
        let expected_start = ["deposit", "operator_credit", "stake"];
        assert_eq!(&names[..3], expected_start);
        for wanted in [
            "withdrawal_requested",
            "withdrawal_cancelled",
            "withdrawal_paid",
            "withdrawal_rejected",
        ] {
            assert!(names.contains(&wanted), "{wanted} in {names:?}");
        }
        // Running balances: each is the one before plus the movement.
        let mut running = 0;
        for m in movements.iter().rev() {
            running += m["delta_cents"].as_i64().unwrap();
            assert_eq!(m["balance_cents"].as_i64().unwrap(), running, "{m}");
        }
        assert_eq!(running, app.balance().await);
        assert_eq!(page["balance_cents"].as_i64().unwrap(), running);
        // Paged: two at a time, the same movements.
        let mut paged = Vec::new();
        let mut cursor = String::new();
        loop {
            let (_, page) = app
                .get(&format!("/api/account/statement?limit=2&cursor={cursor}"))
                .await;
            paged.extend(page["movements"].as_array().unwrap().iter().cloned());
            match page["next_cursor"].as_str() {
                Some(next) => cursor = next.to_owned(),
                None => break,
            }
        }
        // Each page's balances are exact too (they are computed from the
        // balance now, page by page, not summed over the whole history).
        assert_eq!(paged, *movements);
        // The CSV: a header, then the same movements, oldest first.
        let response = reqwest::Client::new()
            .get(format!("{}/api/account/statement.csv", app.address))
            .header("cookie", session_cookie(&app).await)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/csv")
        );
        assert!(
            response.headers()["content-disposition"]
                .to_str()
                .unwrap()
                .contains("attachment")
        );
        let csv = response.text().await.unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert!(lines[0].starts_with("id,at,movement,amount_cents,delta_cents,balance_cents"));
        assert_eq!(lines.len(), movements.len() + 1);
        assert!(
            lines[1].contains(",deposit,3000,3000,3000,"),
            "{}",
            lines[1]
        );
        assert!(lines.last().unwrap().contains(&format!(",{running},")));
        // Every step is in the trail.
        let actions = trail_actions(&app).await;
        for wanted in [
            "account_opened",
            "account_verified",
            "deposit_asked",
            "deposit_confirmed",
            "credit",
            "withdrawal_requested",
            "withdrawal_cancelled",
            "withdrawal_paid",
            "withdrawal_rejected",
        ] {
            assert!(actions.iter().any(|a| a == wanted), "{wanted} in the trail");
        }
        app.assert_ledger_balances().await;
        audit_holds(&app);
    }
);

/// The session cookie of the app's client, read back by logging in anew.
async fn session_cookie(app: &TestApp) -> String {
    let response = reqwest::Client::new()
        .post(format!("{}/api/login", app.address))
        .header("x-requested-with", "tresor")
        .json(&json!({"username": "ana", "password": "a long password"}))
        .send()
        .await
        .unwrap();
    let cookie = response.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .to_owned();
    cookie.split(';').next().unwrap().to_owned()
}

on_both!(
    closing_pays_a_verified_balance_out_and_keeps_an_unverified_one_in_reserve,
    |app| {
        open_ok(&app, "ana").await;
        verify(&app, "ana").await;
        deposit(&app, 1200).await;
        assert_refused(
            &app.post("/api/account/close", json!({})).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation",
        );
        let (status, closed) = app
            .post("/api/account/close", json!({"confirm": true}))
            .await;
        assert_eq!(status, StatusCode::OK, "{closed}");
        assert_eq!(closed["balance_cents"], 1200);
        assert!(closed["withdrawal_id"].is_i64());
        assert_eq!(closed["reserved_cents"], 0);
        assert_eq!(
            app.me().await.0,
            StatusCode::UNAUTHORIZED,
            "the sessions ended"
        );
        app.login("ana", "a long password").await;
        assert_refused(&app.buy(100).await, StatusCode::FORBIDDEN, "account_closed");
        assert_refused(
            &app.post("/api/account/deposits", json!({"amount_cents": 1000}))
                .await,
            StatusCode::FORBIDDEN,
            "account_closed",
        );
        let ana = app.service.player_by_username("ana").await.unwrap();
        assert_eq!(balance_of(&app, ana.account_id).await, 0);

        let bea = app.another_client();
        open_ok(&bea, "bea").await;
        deposit(&bea, 800).await;
        let (_, closed) = bea
            .post("/api/account/close", json!({"confirm": true}))
            .await;
        assert_eq!(closed["reserved_cents"], 800);
        assert_eq!(closed["withdrawal_id"], Value::Null);
        let reserves = app.db.tresor_ok(&["reserves", "--json"]);
        let reserves: Value = serde_json::from_slice(&reserves.stdout).unwrap();
        assert_eq!(reserves[0]["username"], "bea");
        assert_eq!(reserves[0]["amount_cents"], 800);
        let report = tresor::report::build(&app.service.db.pool, None)
            .await
            .unwrap();
        assert_eq!(report.money.reserves_cents, 800);
        assert_eq!(report.money.withdrawals_pending_cents, 1200);
        assert_eq!(report.money.ledger_sum_cents, 0);
        let table = app.db.tresor_ok(&["report"]);
        assert!(String::from_utf8_lossy(&table.stdout).contains("kept in reserve"));
        app.assert_ledger_balances().await;
        audit_holds(&app);
    }
);

/// A client without cookies or redirects, carrying `cookie` if given.
fn sandbox_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// The sandbox's page for `deposit` with `cookie`: its status and text.
async fn sandbox_page(app: &TestApp, cookie: Option<&str>, deposit: i64) -> (StatusCode, String) {
    let mut request =
        sandbox_client().get(format!("{}/sandbox/pay?deposit={deposit}", app.address));
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    let response = request.send().await.unwrap();
    (response.status(), response.text().await.unwrap())
}

/// The proof the sandbox's page carries in its form.
fn proof_of(page: &str) -> String {
    let at = page
        .find("name=\"proof\" value=\"")
        .expect("the form's proof")
        + 20;
    page[at..at + 64].to_owned()
}

/// Posts the sandbox's form (`proof` empty: none) with `cookie` and extra headers.
async fn sandbox_post(
    app: &TestApp,
    cookie: Option<&str>,
    deposit: i64,
    outcome: &str,
    proof: &str,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut form = vec![
        ("deposit", deposit.to_string()),
        ("outcome", outcome.to_owned()),
    ];
    if !proof.is_empty() {
        form.push(("proof", proof.to_owned()));
    }
    let mut request = sandbox_client()
        .post(format!("{}/sandbox/pay", app.address))
        .form(&form);
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap()
}

async fn deposit_state(app: &TestApp, id: i64) -> String {
    app.service.deposit_of(None, id).await.unwrap().state
}

on_both!(
    the_sandbox_pays_and_declines_only_the_players_own_deposit_with_its_session_and_proof,
    |app| {
        open_ok(&app, "ana").await;
        let ana = session_cookie(&app).await;
        let mine = ask_deposit(&app, 1500).await;
        let declined = ask_deposit(&app, 700).await;
        let bea = app.another_client();
        open_ok(&bea, "bea").await;
        let hers = ask_deposit(&bea, 2500).await;
        let before = snapshot(&app).await;
        // No session: neither the page (nor its amount) nor the form.
        let (status, page) = sandbox_page(&app, None, hers).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{page}");
        assert!(!page.contains("25,00") && !page.contains("25.00"), "{page}");
        for outcome in ["succeeded", "failed"] {
            let answer = sandbox_post(&app, None, hers, outcome, "00", &[]).await;
            assert_eq!(answer.status(), StatusCode::UNAUTHORIZED);
        }
        // Another player's deposit: not found, to read, pay or decline.
        let (status, page) = sandbox_page(&app, Some(&ana), hers).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{page}");
        let (_, own_page) = sandbox_page(&app, Some(&ana), mine).await;
        for outcome in ["succeeded", "failed"] {
            let answer =
                sandbox_post(&app, Some(&ana), hers, outcome, &proof_of(&own_page), &[]).await;
            assert_eq!(answer.status(), StatusCode::NOT_FOUND);
        }
        // The player's own, without the form's proof, or from another site.
        let answer = sandbox_post(&app, Some(&ana), mine, "succeeded", "", &[]).await;
        assert_eq!(answer.status(), StatusCode::FORBIDDEN);
        let answer = sandbox_post(&app, Some(&ana), mine, "succeeded", &"0".repeat(64), &[]).await;
        assert_eq!(answer.status(), StatusCode::FORBIDDEN);
        let answer = sandbox_post(
            &app,
            Some(&ana),
            mine,
            "succeeded",
            &proof_of(&own_page),
            &[("sec-fetch-site", "cross-site")],
        )
        .await;
        assert_eq!(answer.status(), StatusCode::FORBIDDEN);
        assert_eq!(snapshot(&app).await, before, "nothing changed");
        assert_eq!(deposit_state(&app, hers).await, "pending");
        // With all three: paid, and the other declined.
        assert!(own_page.contains("<form method=\"post\" action=\"/sandbox/pay\">"));
        let answer = sandbox_post(
            &app,
            Some(&ana),
            mine,
            "succeeded",
            &proof_of(&own_page),
            &[],
        )
        .await;
        assert_eq!(answer.status(), StatusCode::SEE_OTHER);
        let (_, decline_page) = sandbox_page(&app, Some(&ana), declined).await;
        let answer = sandbox_post(
            &app,
            Some(&ana),
            declined,
            "failed",
            &proof_of(&decline_page),
            &[],
        )
        .await;
        assert_eq!(answer.status(), StatusCode::SEE_OTHER);
        assert_eq!(deposit_state(&app, mine).await, "credited");
        assert_eq!(deposit_state(&app, declined).await, "failed");
        assert_eq!(deposit_state(&app, hers).await, "pending");
        assert_eq!(app.balance().await, 1500);
        assert_eq!(bea.balance().await, 0);
        app.assert_ledger_balances().await;
        audit_holds(&app);
    }
);

on_both!(
    a_forged_host_header_sends_the_sandbox_confirmation_nowhere,
    |app| {
        open_ok(&app, "ana").await;
        let ana = session_cookie(&app).await;
        let id = ask_deposit(&app, 1500).await;
        let (_, page) = sandbox_page(&app, Some(&ana), id).await;
        // A listener of the attacker's choosing, named by the Host header.
        let trap = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let forged = format!("{}/any?", trap.local_addr().unwrap());
        let proof = proof_of(&page);
        let headers = [("host", forged.as_str())];
        let post = sandbox_post(&app, Some(&ana), id, "succeeded", &proof, &headers);
        tokio::select! {
            answer = post => {
                assert_eq!(answer.status(), StatusCode::SEE_OTHER);
            }
            accepted = trap.accept() => {
                panic!("the sandbox sent its signed confirmation to {forged}: {accepted:?}");
            }
        }
        // The answer came after the confirmation: had anything been sent, it
        // would be waiting on the trap.
        let waiting = tokio::time::timeout(std::time::Duration::ZERO, trap.accept()).await;
        assert!(waiting.is_err(), "nothing reached the trap");
        assert_eq!(deposit_state(&app, id).await, "credited");
        assert_eq!(app.balance().await, 1500);
    }
);

on_both!(
    a_confirmation_for_a_deposit_of_another_provider_is_refused_and_credits_nothing,
    |app| {
        open_ok(&app, "ana").await;
        let id = ask_deposit(&app, 1500).await;
        // The deposit was asked through another provider (before a change).
        sqlx::query("UPDATE deposits SET provider = 'acme' WHERE id = $1")
            .bind(id)
            .execute(&app.service.db.pool)
            .await
            .unwrap();
        let before = snapshot(&app).await;
        let answer = webhook(&app, &confirmation(id, "tx-acme", 1500), 0, true).await;
        assert_refused(&answer, StatusCode::UNPROCESSABLE_ENTITY, "validation");
        assert_eq!(snapshot(&app).await, before, "nothing recorded or credited");
        assert_eq!(deposit_state(&app, id).await, "pending");
        assert_eq!(app.balance().await, 0);
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
