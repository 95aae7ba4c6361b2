//! The player account for real money, through the HTTP API on both
//! databases: opening with an identity (minors and the ban list refused),
//! provisional accounts, rules versions, provider deposits and their signed
//! webhook, withdrawals and their races, the statement and its CSV, closing,
//! and the operator's commands. Every refusal is checked to change nothing.

use crate::common::expect;
use crate::common::opening::{
    DAY_MS, IBAN, ask_deposit, assert_refused, born_years_ago, confirmation, deposit,
    webhook_signed,
};
use crate::common::players::{player, session_cookie};
use crate::common::{TestApp, TestDb, assert_exit, header};

use reqwest::StatusCode;
use serde_json::{Value, json};
use tresor::report::MoneyFigures;
use tresor::service::{Settlement, WithdrawalView, sign_webhook};

pub(crate) mod browser;
mod deposits;
mod opening;
mod sandbox;
mod statement;
mod withdrawals;

/// Opens an account for real money as the app's client; returns the answer.
async fn open(app: &TestApp, username: &str, birth_name: &str) -> (StatusCode, Value) {
    player(username).birth_name(birth_name).register(app).await
}

/// Sends the provider's webhook with `body`, signed at the app's time
/// shifted by `shift_s`, with the right secret or not.
async fn webhook(
    app: &TestApp,
    body: &Value,
    shift_s: i64,
    good_secret: bool,
) -> (StatusCode, Value) {
    let secret: &[u8] = if good_secret {
        app.service.webhook_secret()
    } else {
        b"not the secret"
    };
    webhook_signed(app, body, shift_s, secret).await
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

/// The operator settles the withdrawal `asked` (as the API answered it).
async fn settle(
    app: &TestApp,
    asked: &Value,
    settlement: Settlement,
    reason: Option<&str>,
) -> WithdrawalView {
    let id = asked["id"].as_i64().expect("a withdrawal's id");
    app.service
        .decide_withdrawal(id, settlement, reason.map(str::to_owned))
        .await
        .expect("the withdrawal settled")
}

/// The money figures of the whole report.
async fn money(app: &TestApp) -> MoneyFigures {
    let report = tresor::report::build(&app.service.db.pool, None).await;
    report.expect("the report").money
}
