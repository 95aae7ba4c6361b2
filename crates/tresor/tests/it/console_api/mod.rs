//! The operator's console API (`docs/CONSOLE.md`) over real HTTP to the
//! operator listener of an in-process server, on both databases: enrolment
//! and login with a TOTP code, sessions and CSRF, every role refused every
//! permission it lacks (changing nothing), every action in the trail under
//! the console account's name, the dashboard after purchases, the trail's
//! verification and export, a published block re-checked; and the
//! `tresor operator` commands.

use crate::common::expect;
use crate::common::opening::{assert_refused, withdraw};
use crate::common::staff::{CONSOLE_PASSWORD, Console, add_staff, base32_decode, logged_in, now_s};
use crate::common::{TestApp, TestDb, assert_exit, describe, execute, header};

use reqwest::StatusCode;
use serde_json::{Value, json};
use tresor::staff::{Role, StaffName, totp_code};

pub(crate) mod browser;
mod dashboard;
mod enrolment;
mod money;
mod operators;
mod permissions;
mod trail;

const PASSWORD: &str = CONSOLE_PASSWORD;

const IBAN: &str = crate::common::opening::IBAN;

/// The trail's (actor, action) pairs, in order.
async fn trail(app: &TestApp) -> Vec<(String, String)> {
    sqlx::query_as("SELECT actor, action FROM trail ORDER BY seq")
        .fetch_all(&app.service.db.pool)
        .await
        .unwrap()
}

/// The `column` (`request`, `result`) of the trail's first record of
/// `action`, as JSON.
async fn record(app: &TestApp, column: &str, action: &str) -> Value {
    let sql = format!("SELECT {column} FROM trail WHERE action = '{action}' ORDER BY seq");
    let text: String = sqlx::query_scalar(&sql)
        .fetch_one(&app.service.db.pool)
        .await
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Everything a console action could change but the trail, as text.
async fn state_of(app: &TestApp) -> String {
    let pool = &app.service.db.pool;
    let mut out = String::new();
    for query in [
        "SELECT CAST(id AS TEXT) || ':' || state FROM emissions ORDER BY id",
        "SELECT CAST(id AS TEXT) || ':' || state || ':' || CAST(units_sold AS TEXT) FROM blocks ORDER BY id",
        // A writer's stakes and prizes accounts are made, empty, when it
        // first opens its log (like the log's row): a command line's first
        // command, refused or not, opens its writer.
        "SELECT CAST(id AS TEXT) || ':' || CAST(balance_cents AS TEXT) FROM accounts \
         WHERE writer IS NULL OR balance_cents <> 0 ORDER BY id",
        "SELECT key || ':' || value FROM settings ORDER BY key",
        "SELECT CAST(id AS TEXT) || ':' || state FROM withdrawals ORDER BY id",
        "SELECT CAST(player_id AS TEXT) || ':' || COALESCE(CAST(excluded_until_ms AS TEXT), '-') FROM protections ORDER BY player_id",
        "SELECT CAST(player_id AS TEXT) || ':' || status FROM player_accounts ORDER BY player_id",
        "SELECT CAST(COUNT(*) AS TEXT) FROM transfers",
        "SELECT username || ':' || role || ':' || COALESCE(CAST(disabled_at_ms AS TEXT), '-') FROM staff ORDER BY username",
    ] {
        let rows: Vec<String> = sqlx::query_scalar(query).fetch_all(pool).await.unwrap();
        out.push_str(&format!("{query}\n  {}\n", rows.join(" ")));
    }
    out
}

/// A player with an account for real money (identity, IBAN), logged in as
/// the app's own client, with `cents` credited by the console account.
async fn real_money_player(app: &TestApp, console: &Console, username: &str, cents: i64) -> i64 {
    let id = crate::common::players::player(username)
        .real_money()
        .on(app)
        .await
        .id;
    let body = expect(StatusCode::OK, console.credit(id, cents).await);
    assert_eq!(body["balance_cents"], cents);
    // Its documents sent and verified, so that the account can be.
    crate::common::opening::documents_verified(&app.service, username).await;
    id
}

fn list(db: &TestDb) -> Vec<Value> {
    let output = db.tresor_ok(&["operator", "list", "--json"]);
    serde_json::from_slice::<Value>(&output.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn four_eyes(single_operator: bool, max: i64, per_day: i64) -> tresor::service::Settings {
    tresor::service::Settings {
        four_eyes: tresor::service::FourEyes {
            single_operator,
            credit_max_cents: max,
            credit_max_per_day_cents: per_day,
        },
        ..TestApp::settings()
    }
}
