//! The player account for real money, through the HTTP API on both
//! databases: opening with an identity (minors and the ban list refused),
//! provisional accounts, rules versions, provider deposits and their signed
//! webhook, withdrawals and their races, the statement and its CSV, closing,
//! and the operator's commands. Every refusal is checked to change nothing.

use crate::common::{TestApp, TestDb};

use reqwest::StatusCode;
use serde_json::{Value, json};
use tresor::service::{Settlement, sign_webhook};

mod deposits;
mod opening;
mod sandbox;
mod statement;
mod withdrawals;

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
