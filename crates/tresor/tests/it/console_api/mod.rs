//! The operator's console API (`docs/CONSOLE.md`) over real HTTP to the
//! operator listener of an in-process server, on both databases: enrolment
//! and login with a TOTP code, sessions and CSRF, every role refused every
//! permission it lacks (changing nothing), every action in the trail under
//! the console account's name, the dashboard after purchases, the trail's
//! verification and export, a published block re-checked; and the
//! `tresor operator` commands.

use crate::common::{TestApp, TestDb, describe, tresor_command};

use reqwest::StatusCode;
use serde_json::{Value, json};
use std::io::Write;
use std::process::Stdio;
use tresor::staff::{Role, StaffName, totp_code};

mod dashboard;
mod enrolment;
mod money;
mod operators;
mod permissions;
mod trail;

const PASSWORD: &str = "a console password";

const IBAN: &str = "FR76 3000 6000 0112 3456 7890 189";

/// A browser on the console: its own cookie jar, on the operator listener.
struct Console {
    base: String,
    client: reqwest::Client,
}

async fn answer(response: reqwest::Response) -> (StatusCode, Value) {
    let status = response.status();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

impl Console {
    fn new(app: &TestApp) -> Console {
        Console {
            base: app.admin_address.clone(),
            client: reqwest::Client::builder()
                .cookie_store(true)
                .build()
                .unwrap(),
        }
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        answer(
            self.client
                .get(format!("{}{path}", self.base))
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        csrf: bool,
    ) -> (StatusCode, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        if csrf {
            request = request.header("x-requested-with", "tresor-console");
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        answer(request.send().await.unwrap()).await
    }

    async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send("POST", path, Some(body), true).await
    }

    async fn put(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send("PUT", path, Some(body), true).await
    }

    async fn login(&self, username: &str, password: &str) -> (StatusCode, Value) {
        self.post(
            "/console/api/login",
            json!({"username": username, "password": password}),
        )
        .await
    }

    async fn code(&self, code: &str) -> (StatusCode, Value) {
        self.post("/console/api/login/code", json!({"code": code}))
            .await
    }
}

/// RFC 4648 base32 without padding, decoded.
fn base32_decode(text: &str) -> Vec<u8> {
    const ALPHABET: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let (mut buffer, mut bits, mut out) = (0u32, 0u32, Vec::new());
    for c in text.chars() {
        buffer = (buffer << 5) | ALPHABET.find(c).expect("a base32 digit") as u32;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
        }
    }
    out
}

fn now_s(app: &TestApp) -> i64 {
    app.service.now_ms() / 1000
}

async fn add_staff(app: &TestApp, name: &str, role: Role) {
    app.service
        .add_staff(&StaffName::parse(name).unwrap(), role, PASSWORD)
        .await
        .unwrap();
}

/// A console account of `role` named `name`, enrolled and logged in; its
/// TOTP secret.
async fn logged_in(app: &TestApp, name: &str, role: Role) -> (Console, Vec<u8>) {
    add_staff(app, name, role).await;
    let console = Console::new(app);
    let (status, body) = console.login(name, PASSWORD).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["step"], "enrol", "{body}");
    let secret = base32_decode(body["secret"].as_str().unwrap());
    let (status, body) = console.code(&totp_code(&secret, now_s(app))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    (console, secret)
}

fn assert_error(answer: &(StatusCode, Value), status: StatusCode, code: &str) {
    assert_eq!(answer.0, status, "{}", answer.1);
    assert_eq!(answer.1["error"]["code"], code, "{}", answer.1);
    assert!(
        answer.1["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{}",
        answer.1
    );
}

/// The trail's (actor, action) pairs, in order.
async fn trail(app: &TestApp) -> Vec<(String, String)> {
    sqlx::query_as("SELECT actor, action FROM trail ORDER BY seq")
        .fetch_all(&app.service.db.pool)
        .await
        .unwrap()
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
    let now = time::OffsetDateTime::from_unix_timestamp(now_s(app)).unwrap();
    let born = format!("{}", now.date().replace_year(now.year() - 30).unwrap());
    let (status, body) = app
        .post(
            "/api/account/open",
            json!({
                "username": username, "password": "a long password", "accept_rules": true,
                "marketing_consent": false, "iban": IBAN,
                "deposit_limit_cents": 1_000_000, "stake_limit_cents": 1_000_000,
                "identity": {
                    "birth_name": format!("Name of {username}"), "first_names": "Anne Marie",
                    "birth_date": born, "birth_place": "Nantes",
                    "address": "1 rue de la Paix, 75002 Paris",
                },
            }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let id = app.service.player_by_username(username).await.unwrap().id;
    let (status, body) = console
        .post(
            &format!("/console/api/players/{id}/credit"),
            json!({"amount_cents": cents}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
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

/// Dora's withdrawal of `cents`, asked by the app's client.
async fn withdraw(app: &TestApp, cents: i64) -> i64 {
    let (status, w) = app
        .post("/api/account/withdrawals", json!({"amount_cents": cents}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{w}");
    w["id"].as_i64().unwrap()
}
