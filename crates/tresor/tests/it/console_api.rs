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

on_both!(enrolment_takes_a_password_a_secret_and_a_code, |app| {
    add_staff(&app, "alice", Role::Operator).await;
    let console = Console::new(&app);
    assert_error(
        &console.login("alice", "not the password").await,
        StatusCode::UNAUTHORIZED,
        "invalid_credentials",
    );
    assert_error(
        &console.login("nobody", PASSWORD).await,
        StatusCode::UNAUTHORIZED,
        "invalid_credentials",
    );
    // The code step needs the password step first.
    assert_error(
        &console.code("123456").await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    let (status, enrol) = console.login("ALICE", PASSWORD).await;
    assert_eq!(status, StatusCode::OK, "{enrol}");
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
    assert_error(
        &console.code(&wrong).await,
        StatusCode::UNAUTHORIZED,
        "invalid_code",
    );
    assert_error(
        &console.get("/console/api/me").await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    let (status, done) = console.code(&right).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["step"], "done");
    assert_eq!(done["operator"]["username"], "alice");
    assert_eq!(done["operator"]["role"], "operator");
    let (status, me) = console.get("/console/api/me").await;
    assert_eq!(status, StatusCode::OK, "{me}");
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
    assert_error(
        &console.get("/console/api/me").await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    // Enrolled now: the secret is never shown again, and a code is used once.
    let (status, step) = console.login("alice", PASSWORD).await;
    assert_eq!(status, StatusCode::OK, "{step}");
    assert_eq!(step, json!({"step": "code"}));
    assert_error(
        &console.code(&right).await,
        StatusCode::UNAUTHORIZED,
        "invalid_code",
    );
    app.clock.advance_ms(30_000);
    let (status, done) = console.code(&totp_code(&secret, now_s(&app))).await;
    assert_eq!(status, StatusCode::OK, "{done}");
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
    assert_error(
        &console.get("/console/api/me").await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    assert_error(
        &console.login("alice", PASSWORD).await,
        StatusCode::UNAUTHORIZED,
        "invalid_credentials",
    );
});

on_both!(no_session_is_401_and_a_missing_csrf_header_is_403, |app| {
    let anonymous = Console::new(&app);
    for path in [
        "/console/api/me",
        "/console/api/dashboard",
        "/console/api/trail",
    ] {
        assert_error(
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
        assert_error(
            &console.send(method, path, Some(body), false).await,
            StatusCode::FORBIDDEN,
            "csrf",
        );
    }
    assert_eq!(state_of(&app).await, before);
    assert_eq!(trail(&app).await.len(), trail_before);
    // Still logged in: the refused logout did nothing.
    assert_eq!(console.get("/console/api/me").await.0, StatusCode::OK);
    assert_error(
        &console.get("/console/api/nothing/here").await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    let answer = console
        .client
        .get(format!("{}/console/api/me", console.base))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.headers()["cache-control"], "no-store");
    // axum's own refusals are JSON errors too.
    assert_error(
        &console.get("/console/api/login").await,
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
    );
    let huge = json!({"message": "x".repeat(70_000)});
    assert_error(
        &console.put("/console/api/site/announcement", huge).await,
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
    );
});

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

on_both!(
    each_console_action_is_in_the_trail_under_the_staff_name,
    |app| {
        let (alice, _) = logged_in(&app, "alice", Role::Operator).await;
        let (bob, _) = logged_in(&app, "bob", Role::Operator).await;
        let (carol, _) = logged_in(&app, "carol", Role::Auditor).await;

        // Emissions and blocks.
        let (status, emission) = alice
            .post(
                "/console/api/emissions",
                json!({"stake_cents": 200, "blocks": 2, "name": "Spring"}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{emission}");
        assert_eq!(emission["name"], "Spring");
        let blocks = emission["blocks"].as_array().unwrap();
        assert_eq!(blocks.len(), 2);
        let block = blocks[0]["id"].as_i64().unwrap();
        assert_eq!(blocks[0]["secret"], Value::Null);
        let (status, suspended) = alice
            .post(&format!("/console/api/blocks/{block}/suspend"), json!({}))
            .await;
        assert_eq!(status, StatusCode::OK, "{suspended}");
        assert_eq!(suspended["state"], "suspended");
        let (status, resumed) = alice
            .post(&format!("/console/api/blocks/{block}/resume"), json!({}))
            .await;
        assert_eq!(status, StatusCode::OK, "{resumed}");
        assert_eq!(resumed["state"], "open");
        // A refusal of the service is a JSON error that changes nothing.
        let before = state_of(&app).await;
        assert_error(
            &alice
                .post(&format!("/console/api/blocks/{block}/resume"), json!({}))
                .await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation",
        );
        assert_eq!(state_of(&app).await, before);

        // Players: credit, verify, exclude; withdrawals approved and rejected.
        let dora = real_money_player(&app, &alice, "dora", 5_000).await;
        let (status, found) = alice.get("/console/api/players?q=DOR").await;
        assert_eq!(status, StatusCode::OK, "{found}");
        assert_eq!(found["players"][0]["username"], "dora");
        assert_eq!(found["players"][0]["balance_cents"], 5_000);
        let (status, queue) = alice.get("/console/api/accounts?status=provisional").await;
        assert_eq!(status, StatusCode::OK, "{queue}");
        assert!(
            queue["accounts"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a["username"] == "dora")
        );
        let (status, account) = alice
            .post(
                &format!("/console/api/players/{dora}/verify"),
                json!({"iban": IBAN}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{account}");
        assert_eq!(account["status"], "verified");
        let mut ids = Vec::new();
        for cents in [1_000, 700] {
            let (status, w) = app
                .post("/api/account/withdrawals", json!({"amount_cents": cents}))
                .await;
            assert_eq!(status, StatusCode::CREATED, "{w}");
            ids.push(w["id"].as_i64().unwrap());
        }
        let (status, pending) = alice.get("/console/api/withdrawals?state=pending").await;
        assert_eq!(status, StatusCode::OK, "{pending}");
        assert_eq!(pending["withdrawals"].as_array().unwrap().len(), 2);
        // Alice credited and verified Dora: another operator approves.
        assert_error(
            &alice
                .post(
                    &format!("/console/api/withdrawals/{}/approve", ids[0]),
                    json!({}),
                )
                .await,
            StatusCode::FORBIDDEN,
            "four_eyes",
        );
        let (status, paid) = bob
            .post(
                &format!("/console/api/withdrawals/{}/approve", ids[0]),
                json!({}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{paid}");
        assert_eq!(paid["state"], "paid");
        let (status, rejected) = alice
            .post(
                &format!("/console/api/withdrawals/{}/reject", ids[1]),
                json!({"reason": "the IBAN is not in the player's name"}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{rejected}");
        assert_eq!(rejected["state"], "rejected");
        let (status, detail) = alice.get(&format!("/console/api/players/{dora}")).await;
        assert_eq!(status, StatusCode::OK, "{detail}");
        assert_eq!(detail["account"]["balance_cents"], 5_000 - 1_000);
        let (status, statement) = alice
            .get(&format!("/console/api/players/{dora}/statement?limit=2"))
            .await;
        assert_eq!(status, StatusCode::OK, "{statement}");
        assert_eq!(statement["movements"].as_array().unwrap().len(), 2);
        let (status, excluded) = alice
            .post(
                &format!("/console/api/players/{dora}/exclude"),
                json!({"period": "7d"}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{excluded}");
        assert!(excluded["excluded_until"].is_string());

        // The site.
        let (status, site) = alice
            .put(
                "/console/api/site/sales",
                json!({"opens_at": "2030-03-01T09:00:00+01:00"}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{site}");
        assert_eq!(site["sales_open_at"], "2030-03-01T08:00:00.000Z");
        let (status, site) = alice
            .put(
                "/console/api/site/announcement",
                json!({"message": "Maintenance at noon"}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{site}");
        assert_eq!(site["announcement"], "Maintenance at noon");
        let (_, status_page) = app.get("/api/status").await;
        assert_eq!(status_page["message"], "Maintenance at noon");
        let (status, site) = alice
            .put("/console/api/site/sales", json!({"opens_at": null}))
            .await;
        assert_eq!(status, StatusCode::OK, "{site}");
        assert_eq!(site["sales_open_at"], Value::Null);

        // Closing publishes the secrets; the auditor re-checks a block.
        let emission_id = emission["id"].as_i64().unwrap();
        let (status, closed) = alice
            .post(
                &format!("/console/api/emissions/{emission_id}/close"),
                json!({}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{closed}");
        assert_eq!(closed["state"], "closed");
        assert!(closed["blocks"][0]["secret"].is_string());
        let (status, recheck) = carol
            .post(&format!("/console/api/blocks/{block}/recheck"), json!({}))
            .await;
        assert_eq!(status, StatusCode::OK, "{recheck}");
        assert_eq!(recheck["ok"], true, "{recheck}");
        assert_eq!(recheck["commitment_ok"], true);
        assert_eq!(recheck["table_ok"], true);
        assert_eq!(recheck["units"], 450_000);
        // A block still on sale has no published secret to re-check.
        let open_block = app
            .service
            .blocks()
            .await
            .unwrap()
            .into_iter()
            .find(|b| b.state == "open")
            .unwrap()
            .id;
        assert_error(
            &carol
                .post(
                    &format!("/console/api/blocks/{open_block}/recheck"),
                    json!({}),
                )
                .await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation",
        );

        // The auditor verifies the trail: itself a record, read back.
        let (status, trail_before) = carol.get("/console/api/trail").await;
        assert_eq!(status, StatusCode::OK, "{trail_before}");
        assert_eq!(trail_before["last_verification"], Value::Null);
        let (status, verified) = carol.post("/console/api/trail/verify", json!({})).await;
        assert_eq!(status, StatusCode::OK, "{verified}");
        assert_eq!(verified["ok"], true, "{verified}");
        let (status, trail_now) = carol.get("/console/api/trail").await;
        assert_eq!(status, StatusCode::OK, "{trail_now}");
        assert_eq!(trail_now["last_verification"]["by"], "carol");
        assert_eq!(trail_now["last_verification"]["ok"], true);
        assert_eq!(
            trail_now["last_verification"]["records"],
            verified["records"]
        );
        assert_eq!(
            trail_now["head"]["seq"],
            verified["records"].as_i64().unwrap() + 1
        );

        let records = trail(&app).await;
        for (actor, action) in [
            ("staff:alice", "emission_create"),
            ("staff:alice", "block_suspend"),
            ("staff:alice", "block_resume"),
            ("staff:alice", "credit"),
            ("staff:alice", "account_verified"),
            ("staff:bob", "withdrawal_paid"),
            ("staff:alice", "withdrawal_rejected"),
            ("staff:alice", "exclude"),
            ("staff:alice", "sales_open_at"),
            ("staff:alice", "announce"),
            ("staff:alice", "emission_close"),
            ("staff:carol", "trail_verify"),
        ] {
            assert!(
                records.iter().any(|(a, b)| a == actor && b == action),
                "no {action} by {actor} in {records:?}"
            );
        }
        // From the console's first action on, none is the command line's.
        let first = records
            .iter()
            .position(|(a, b)| a == "staff:alice" && b == "emission_create")
            .unwrap();
        assert!(
            !records[first..].iter().any(|(a, _)| a == "operator"),
            "{records:?}"
        );

        // The export is the whole trail, one JSON line per record.
        let response = carol
            .client
            .get(format!("{}/console/api/trail/export", carol.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert!(
            response.headers()["content-disposition"]
                .to_str()
                .unwrap()
                .starts_with("attachment")
        );
        let text = response.text().await.unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), trail(&app).await.len());
        assert_eq!(lines[0]["seq"], 1);
        assert!(lines.last().unwrap()["at"].is_string());

        let output = app.db.tresor_ok(&["audit", "verify"]);
        assert!(output.status.success(), "{}", describe(&output));
    }
);

on_both!(
    a_ban_list_of_megabytes_is_imported_from_the_console_and_bans_at_once,
    |app| {
        let (alice, _) = logged_in(&app, "alice", Role::Operator).await;
        let player = real_money_player(&app, &alice, "zoe", 1_000).await;
        let account = app.service.player_by_username("zoe").await.unwrap();
        let born = app
            .service
            .account(&account)
            .await
            .unwrap()
            .identity
            .unwrap()
            .birth_date;
        // 60,000 names (about 2 MiB, past the 64 KiB of any other request),
        // one of them the player's.
        let mut csv = String::from("birth_name,first_names,birth_date\n");
        for n in 0..60_000 {
            csv.push_str(&format!("Someone {n},Jean Paul,1970-01-01\n"));
        }
        csv.push_str(&format!("NAME OF ZOE,anne-marie,{born}\n"));
        assert!(csv.len() > 1 << 20);
        let (status, body) = alice
            .post("/console/api/banlist", json!({"csv": csv}))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["entries"], 60_001);
        assert_eq!(body["banned"], json!(["zoe"]));
        let view = app.service.account(&account).await.unwrap();
        assert!(view.banned, "the player is banned at once");
        assert!(
            trail(&app)
                .await
                .iter()
                .any(|(actor, action)| actor == "staff:alice" && action == "ban_list_imported"),
            "the import is in the trail under the operator's name"
        );

        // A malformed list is refused whole and changes nothing.
        let before = state_of(&app).await;
        let answer = alice
            .post(
                "/console/api/banlist",
                json!({"csv": "birth_name,first_names,birth_date\nX,Y,1970-13-45\n"}),
            )
            .await;
        assert_error(&answer, StatusCode::UNPROCESSABLE_ENTITY, "validation");
        assert_eq!(state_of(&app).await, before);
        assert!(app.service.account(&account).await.unwrap().banned);
        let _ = player;
    }
);

on_both!(the_dashboard_counts_purchases_and_sales, |app| {
    // Purchases and the polls below stay within one minute.
    let into_minute = app.service.now_ms() % 60_000;
    if into_minute > 50_000 {
        app.clock.advance_ms(60_000 - into_minute + 1_000);
    }
    let (viewer, _) = logged_in(&app, "vera", Role::Viewer).await;
    let (status, board) = viewer.get("/console/api/dashboard").await;
    assert_eq!(status, StatusCode::OK, "{board}");
    let minutes = board["purchases_per_minute"].as_array().unwrap();
    assert_eq!(minutes.len(), 60);
    assert!(minutes.iter().all(|m| m["count"] == 0));
    assert_eq!(board["totals"]["stakes_cents"], 0);
    let left_before: i64 = board["liability"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["stake_cents"] == 100)
        .map(|l| l["left"].as_i64().unwrap())
        .sum();
    assert_eq!(board["liability"].as_array().unwrap().len(), 3 * 9);
    assert!(board["writer"]["queue"].is_number());

    app.player("bob", 1_000).await;
    for _ in 0..3 {
        let (status, play) = app.buy(100).await;
        assert_eq!(status, StatusCode::CREATED, "{play}");
        app.finish(play["id"].as_i64().unwrap()).await;
    }
    let (status, play) = app.buy(50).await;
    assert_eq!(status, StatusCode::CREATED, "{play}");
    // A dashboard younger than a second is answered again as it was.
    let (_, cached) = viewer.get("/console/api/dashboard").await;
    assert_eq!(cached["at"], board["at"]);
    app.clock.advance_ms(1_500);
    let (status, board) = viewer.get("/console/api/dashboard").await;
    assert_eq!(status, StatusCode::OK, "{board}");
    let minutes = board["purchases_per_minute"].as_array().unwrap();
    assert_eq!(minutes.len(), 60);
    assert_eq!(
        minutes
            .iter()
            .map(|m| m["count"].as_i64().unwrap())
            .sum::<i64>(),
        4
    );
    assert_eq!(minutes.last().unwrap()["count"], 4, "{minutes:?}");
    let stake_100 = board["per_stake"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stake_cents"] == 100)
        .unwrap()
        .clone();
    assert_eq!(stake_100["sold"], 3);
    assert_eq!(stake_100["stakes_cents"], 300);
    assert_eq!(stake_100["expected_prizes_cents"], 210);
    assert_eq!(board["totals"]["stakes_cents"], 350);
    // The prizes won are the plays' own.
    let won: i64 =
        sqlx::query_scalar("SELECT CAST(COALESCE(SUM(prize_cents), 0) AS BIGINT) FROM plays")
            .fetch_one(&app.service.db.pool)
            .await
            .unwrap();
    assert_eq!(board["totals"]["prizes_cents"], won);
    let sold_blocks: i64 = board["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["sold"].as_i64().unwrap())
        .sum();
    assert_eq!(sold_blocks, 4);
    let left_after: i64 = board["liability"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["stake_cents"] == 100)
        .map(|l| l["left"].as_i64().unwrap())
        .sum();
    let winning_units: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM plays WHERE stake_cents = 100 AND level > 0")
            .fetch_one(&app.service.db.pool)
            .await
            .unwrap();
    assert_eq!(left_before - left_after, winning_units);
    assert!(board["writer"]["batches"].as_u64().unwrap() > 0);
    // Two minutes later the purchases moved one minute back per minute.
    app.clock.advance_ms(120_000);
    let (_, board) = viewer.get("/console/api/dashboard").await;
    let minutes = board["purchases_per_minute"].as_array().unwrap();
    assert_eq!(
        minutes
            .iter()
            .map(|m| m["count"].as_i64().unwrap())
            .sum::<i64>(),
        4
    );
    assert_eq!(minutes.last().unwrap()["count"], 0);
    // The report is the operator's, as `tresor report --format json`.
    let (status, report) = viewer.get("/console/api/report").await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(report["money"]["ledger_sum_cents"], 0);
});

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

/// `tresor operator add` with the password on stdin.
fn add_with_stdin(db: &TestDb, args: &[&str], password: &str) -> std::process::Output {
    let mut command = tresor_command();
    command
        .args(["operator", "add"])
        .args(args)
        .arg("--password-stdin")
        .args(db.db_args())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    db.env(&mut command);
    let mut child = command.spawn().unwrap();
    // A command refused by its flags exits before reading: no matter.
    let _ = writeln!(child.stdin.take().unwrap(), "{password}");
    child.wait_with_output().unwrap()
}

fn list(db: &TestDb) -> Vec<Value> {
    let output = db.tresor_ok(&["operator", "list", "--json"]);
    serde_json::from_slice::<Value>(&output.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

on_both!(
    the_operator_commands_add_list_change_and_disable_accounts,
    |db: &TestDb| {
        let output = add_with_stdin(db, &["--username", "Alice", "--role", "viewer"], PASSWORD);
        assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
        let accounts = list(db);
        assert_eq!(accounts.len(), 1);
        assert_eq!(accounts[0]["username"], "alice");
        assert_eq!(accounts[0]["role"], "viewer");
        assert_eq!(accounts[0]["enrolled"], false);
        assert_eq!(accounts[0]["disabled"], false);
        // Refused: the same name, a short password, a bad name or role.
        for (args, password) in [
            (vec!["--username", "alice", "--role", "auditor"], PASSWORD),
            (vec!["--username", "bob", "--role", "viewer"], "short"),
            (vec!["--username", "b o b", "--role", "viewer"], PASSWORD),
            (vec!["--username", "bob", "--role", "admin"], PASSWORD),
        ] {
            let output = add_with_stdin(db, &args, password);
            assert_eq!(
                output.status.code(),
                Some(2),
                "{args:?}: {}",
                describe(&output)
            );
        }
        assert_eq!(list(db).len(), 1);
        db.tresor_ok(&[
            "operator",
            "role",
            "--username",
            "alice",
            "--role",
            "auditor",
        ]);
        assert_eq!(list(db)[0]["role"], "auditor");
        let output = db.tresor(&[
            "operator",
            "role",
            "--username",
            "nobody",
            "--role",
            "auditor",
        ]);
        assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
        let table = db.tresor_ok(&["operator", "list"]);
        assert!(String::from_utf8_lossy(&table.stdout).contains("alice"));
        // Enrolled first, so that the reset has a secret to take away.
        {
            use tresor::service::Clock as _;
            let (service, clock) = db.service().await;
            let checked = service
                .check_staff_password("alice", PASSWORD)
                .await
                .unwrap();
            assert!(!checked.enrolled);
            let secret = b"a secret of 20 bytes".to_vec();
            let code = totp_code(&secret, clock.now_ms() / 1000);
            service
                .open_staff_session(&checked.member, &code, Some(secret))
                .await
                .unwrap();
        }
        assert_eq!(list(db)[0]["enrolled"], true);
        db.tresor_ok(&["operator", "reset-totp", "--username", "alice"]);
        assert_eq!(
            list(db)[0]["enrolled"],
            false,
            "the reset takes the secret away: the next login enrols again"
        );
        db.tresor_ok(&["operator", "disable", "--username", "alice"]);
        assert_eq!(list(db)[0]["disabled"], true);
        // The disabled account's password no longer opens the console.
        let (service, _clock) = db.service().await;
        assert!(
            service
                .check_staff_password("alice", PASSWORD)
                .await
                .is_err()
        );
        // Each change is in the trail as the command line's.
        let actions: Vec<(String, String)> = sqlx::query_as(
            "SELECT actor, action FROM trail WHERE action LIKE 'staff_%' ORDER BY seq",
        )
        .fetch_all(&service.db.pool)
        .await
        .unwrap();
        let operator = |action: &str| ("operator".to_owned(), action.to_owned());
        assert_eq!(
            actions,
            vec![
                operator("staff_add"),
                operator("staff_role"),
                operator("staff_reset_totp"),
                operator("staff_disable"),
            ]
        );
        db.tresor_ok(&["audit", "verify"]);
    }
);

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
        let console = Console::new(&app);
        for _ in 0..2 {
            assert_error(
                &console.login("alice", "not the password").await,
                StatusCode::UNAUTHORIZED,
                "invalid_credentials",
            );
        }
        // Past the free failures the next attempt waits, right password or not.
        let (status, body) = console.login("alice", PASSWORD).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
        assert_eq!(body["error"]["code"], "rate_limited");
        app.clock.advance_ms(1_000);
        let (status, body) = console.login("alice", PASSWORD).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let secret = base32_decode(body["secret"].as_str().unwrap());
        // Wrong codes are counted apart from passwords, per console account
        // (`codes_are_counted_per_account_apart_from_passwords`): two are free.
        assert_error(
            &console.code("000000").await,
            StatusCode::UNAUTHORIZED,
            "invalid_code",
        );
        assert_error(
            &console.code("000001").await,
            StatusCode::UNAUTHORIZED,
            "invalid_code",
        );
        let (status, body) = console.code(&totp_code(&secret, now_s(&app))).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            console.get("/console/api/dashboard").await.0,
            StatusCode::OK
        );
        // Unused past the idle limit, the session ends.
        app.clock
            .advance_ms(app.service.settings.session_idle_s * 1000 + 1_000);
        let (status, body) = console.get("/console/api/dashboard").await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
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

// ---- Findings of issue 19: the IBAN reviewed, four eyes, TOTP, the queue ----

const OTHER_IBAN: &str = "DE89 3704 0044 0532 0130 00";

on_both!(the_iban_verified_is_the_iban_reviewed, |app| {
    let (alice, _) = logged_in(&app, "alice", Role::Operator).await;
    let dora = real_money_player(&app, &alice, "dora", 1_000).await;
    // The operator reads the queue: Dora's IBAN, given at opening.
    let (_, queue) = alice.get("/console/api/accounts?status=provisional").await;
    let row = queue["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["player_id"] == dora)
        .unwrap()
        .clone();
    assert_eq!(row["iban"], IBAN.replace(' ', ""));
    assert_eq!(row["iban_changes"], 0);
    // Then the player changes it.
    app.clock.advance_ms(60_000);
    let (status, body) = app
        .put_json(
            "/api/account/iban",
            json!({"iban": OTHER_IBAN, "current_password": "a long password"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // The change shows in the queue and on the player's page.
    let (_, queue) = alice.get("/console/api/accounts?status=provisional").await;
    let row = queue["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["player_id"] == dora)
        .unwrap()
        .clone();
    assert_eq!(row["iban"], OTHER_IBAN.replace(' ', ""));
    assert_eq!(row["iban_changes"], 1);
    assert!(row["iban_set_at"].is_string());
    let (_, detail) = alice.get(&format!("/console/api/players/{dora}")).await;
    assert_eq!(detail["review"]["iban"], OTHER_IBAN.replace(' ', ""));
    assert_eq!(detail["review"]["iban_changes"], 1);
    // Verifying what was reviewed before the change is refused, and changes nothing.
    let before = state_of(&app).await;
    let trail_before = trail(&app).await.len();
    let answer = alice
        .post(
            &format!("/console/api/players/{dora}/verify"),
            json!({"iban": IBAN}),
        )
        .await;
    assert_error(&answer, StatusCode::CONFLICT, "iban_changed");
    assert_eq!(answer.1["error"]["iban"], "DE89 •••• 3000");
    assert_eq!(state_of(&app).await, before);
    assert_eq!(trail(&app).await.len(), trail_before);
    // No IBAN named: refused too.
    assert_error(
        &alice
            .post(&format!("/console/api/players/{dora}/verify"), json!({}))
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation",
    );
    // The command line names it as well.
    let output = app
        .db
        .tresor(&["account", "verify", "--username", "dora", "--iban", IBAN]);
    assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("IBAN changed"));
    assert_eq!(state_of(&app).await, before);
    // The IBAN now on file, reviewed, is verified once its proof, back to
    // review since the change, is checked again.
    let (_, documents) = alice
        .get(&format!("/console/api/players/{dora}/documents"))
        .await;
    let proof = documents["documents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["kind"] == "iban_proof")
        .unwrap()
        .clone();
    assert_eq!(proof["status"], "pending", "{documents}");
    let (status, body) = alice
        .post(
            &format!("/console/api/documents/{}/verify", proof["id"]),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, account) = alice
        .post(
            &format!("/console/api/players/{dora}/verify"),
            json!({"iban": OTHER_IBAN}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{account}");
    assert_eq!(account["status"], "verified");
    assert_eq!(account["iban"], "DE89 •••• 3000");
});

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

on_both!(
    the_approver_of_a_withdrawal_neither_credited_nor_verified_the_account,
    four_eyes(false, 1_000_000, 5_000_000),
    |app| {
        let (alice, _) = logged_in(&app, "alice", Role::Operator).await;
        let (bob, _) = logged_in(&app, "bob", Role::Operator).await;
        let (carol, _) = logged_in(&app, "carol", Role::Operator).await;
        let dora = real_money_player(&app, &alice, "dora", 5_000).await;
        let (status, _) = bob
            .post(
                &format!("/console/api/players/{dora}/verify"),
                json!({"iban": IBAN}),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        let id = withdraw(&app, 4_000).await;
        let approve = format!("/console/api/withdrawals/{id}/approve");
        let before = state_of(&app).await;
        for (who, what) in [(&alice, "credited"), (&bob, "verified")] {
            let answer = who.post(&approve, json!({})).await;
            assert_error(&answer, StatusCode::FORBIDDEN, "four_eyes");
            let message = answer.1["error"]["message"].as_str().unwrap();
            assert!(
                message.contains(what) && message.contains("--single-operator"),
                "{message}"
            );
        }
        assert_eq!(state_of(&app).await, before, "a refusal changes nothing");
        // The command line is one more operator, who had no hand in it.
        let (status, paid) = carol.post(&approve, json!({})).await;
        assert_eq!(status, StatusCode::OK, "{paid}");
        assert_eq!(paid["state"], "paid");
        // The approval's record names all of them.
        let (request, result): (String, String) =
            sqlx::query_as("SELECT request, result FROM trail WHERE action = 'withdrawal_paid'")
                .fetch_one(&app.service.db.pool)
                .await
                .unwrap();
        let (request, result): (Value, Value) = (
            serde_json::from_str(&request).unwrap(),
            serde_json::from_str(&result).unwrap(),
        );
        assert_eq!(request["username"], "dora");
        assert_eq!(result["approved_by"], "staff:carol");
        assert_eq!(result["verified_by"], "staff:bob");
        assert_eq!(result["credited_by"], json!(["staff:alice"]));
        let credit: String =
            sqlx::query_scalar("SELECT request FROM trail WHERE action = 'credit'")
                .fetch_one(&app.service.db.pool)
                .await
                .unwrap();
        let credit: Value = serde_json::from_str(&credit).unwrap();
        assert_eq!(credit["by"], "staff:alice");
        assert_eq!(credit["username"], "dora");
        // The command line credits, then cannot approve what it credited.
        app.db
            .tresor_ok(&["player", "credit", "--username", "dora", "--cents", "500"]);
        let id = withdraw(&app, 500).await;
        let id = id.to_string();
        let refused = app.db.tresor(&["withdrawal", "approve", "--id", &id]);
        assert_eq!(refused.status.code(), Some(1), "{}", describe(&refused));
        assert!(String::from_utf8_lossy(&refused.stderr).contains("operator credited"));
        let (status, _) = carol
            .post(&format!("/console/api/withdrawals/{id}/approve"), json!({}))
            .await;
        assert_eq!(status, StatusCode::OK);
        app.assert_ledger_balances().await;
    }
);

on_both!(
    a_single_operator_installation_says_so,
    four_eyes(true, 1_000_000, 5_000_000),
    |app| {
        let (alice, _) = logged_in(&app, "alice", Role::Operator).await;
        let dora = real_money_player(&app, &alice, "dora", 5_000).await;
        let (status, _) = alice
            .post(
                &format!("/console/api/players/{dora}/verify"),
                json!({"iban": IBAN}),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        let id = withdraw(&app, 1_000).await;
        let (status, paid) = alice
            .post(&format!("/console/api/withdrawals/{id}/approve"), json!({}))
            .await;
        assert_eq!(status, StatusCode::OK, "{paid}");
        let result: String =
            sqlx::query_scalar("SELECT result FROM trail WHERE action = 'withdrawal_paid'")
                .fetch_one(&app.service.db.pool)
                .await
                .unwrap();
        let result: Value = serde_json::from_str(&result).unwrap();
        assert_eq!(result["single_operator"], true);
        assert_eq!(result["credited_by"], json!(["staff:alice"]));
    }
);

on_both!(
    each_operator_credits_within_limits_per_credit_and_per_day,
    four_eyes(false, 1_000, 1_500),
    |app| {
        let (alice, _) = logged_in(&app, "alice", Role::Operator).await;
        let (bob, _) = logged_in(&app, "bob", Role::Operator).await;
        let dora = real_money_player(&app, &alice, "dora", 1_000).await;
        let credit = format!("/console/api/players/{dora}/credit");
        let before = state_of(&app).await;
        let answer = alice.post(&credit, json!({"amount_cents": 1_001})).await;
        assert_error(&answer, StatusCode::FORBIDDEN, "credit_limit_reached");
        assert_eq!(answer.1["error"]["setting"], "credit_max_cents");
        assert!(
            answer.1["error"]["message"]
                .as_str()
                .unwrap()
                .contains("--credit-max-cents")
        );
        // 1,000 credited already today: 600 more would pass 1,500.
        let answer = alice.post(&credit, json!({"amount_cents": 600})).await;
        assert_error(&answer, StatusCode::FORBIDDEN, "credit_limit_reached");
        assert_eq!(answer.1["error"]["setting"], "credit_max_per_day_cents");
        assert_eq!(state_of(&app).await, before, "refusals change nothing");
        // Another operator has limits of their own; a day later, so has Alice.
        let (status, _) = bob.post(&credit, json!({"amount_cents": 600})).await;
        assert_eq!(status, StatusCode::OK);
        let (status, _) = alice.post(&credit, json!({"amount_cents": 500})).await;
        assert_eq!(status, StatusCode::OK);
        app.clock.advance_ms(24 * 3600 * 1000);
        let player = app.service.player_by_id(dora).await.unwrap();
        app.service
            .credit_as(tresor::trail::Actor::staff("alice"), &player, 1_000)
            .await
            .expect("a day later, Alice's credits start afresh");
        // The command line's limits are its flags (or their variables).
        let output = app.db.tresor(&[
            "player",
            "credit",
            "--username",
            "dora",
            "--cents",
            "700",
            "--credit-max-cents",
            "500",
        ]);
        assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
        assert!(String::from_utf8_lossy(&output.stderr).contains("--credit-max-cents"));
    }
);

on_both!(codes_are_counted_per_account_apart_from_passwords, |app| {
    let (enrolled, secret) = logged_in(&app, "alice", Role::Viewer).await;
    enrolled.post("/console/api/logout", json!({})).await;
    app.clock.advance_ms(30_000);
    let console = Console::new(&app);
    let (status, body) = console.login("alice", PASSWORD).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["step"], "code");
    let right = || totp_code(&secret, now_s(&app));
    let wrong = |n: u32| {
        let right: u32 = totp_code(&secret, now_s(&app)).parse().unwrap();
        format!("{:06}", (right + 500_000 + n) % 1_000_000)
    };
    // Five wrong codes end the pending login.
    for n in 0..5 {
        let answer = console.code(&wrong(n)).await;
        assert_error(&answer, StatusCode::UNAUTHORIZED, "invalid_code");
        if n == 4 {
            assert!(
                answer.1["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("again")
            );
        }
    }
    assert_error(
        &console.code(&right()).await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    // The password again does not clear the code failures: the next code
    // of this account waits, right or not, whatever the address.
    let (status, body) = console.login("alice", PASSWORD).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = console.code(&right()).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert_eq!(body["error"]["code"], "rate_limited");
    let elsewhere = Console::new(&app);
    let (status, _) = elsewhere.login("alice", PASSWORD).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        elsewhere.code(&right()).await.0,
        StatusCode::TOO_MANY_REQUESTS
    );
    app.clock.advance_ms(1_000);
    let (status, body) = console.code(&right()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Every wrong code is counted for the alert.
    let metrics = reqwest::get(format!("{}/metrics", app.admin_address))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics
            .lines()
            .any(|l| l == "tresor_console_code_failures_total 5"),
        "{metrics}"
    );
});

on_both!(
    the_withdrawal_queue_reaches_every_pending_one_oldest_first,
    |app| {
        let (alice, _) = logged_in(&app, "alice", Role::Operator).await;
        let dora = real_money_player(&app, &alice, "dora", 1_000).await;
        // 1,005 pending withdrawals (as rows: the queue reads only them).
        sqlx::query(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1005)          INSERT INTO withdrawals (player_id, amount_cents, iban, state, closing, requested_at_ms)          SELECT $1, 100, 'FR7630006000011234567890189', 'pending', 0, i FROM n",
    )
    .bind(dora)
    .execute(&app.service.db.pool)
    .await
    .unwrap();
        let all: Vec<i64> = sqlx::query_scalar("SELECT id FROM withdrawals ORDER BY id")
            .fetch_all(&app.service.db.pool)
            .await
            .unwrap();
        let (status, first) = alice.get("/console/api/withdrawals?state=pending").await;
        assert_eq!(status, StatusCode::OK, "{first}");
        assert_eq!(first["withdrawals"].as_array().unwrap().len(), 100);
        assert_eq!(
            first["withdrawals"][0]["id"], all[0],
            "the oldest comes first"
        );
        let mut seen = Vec::new();
        let mut cursor: Option<i64> = None;
        loop {
            let path = match cursor {
                None => "/console/api/withdrawals?state=pending&limit=500".to_owned(),
                Some(c) => format!("/console/api/withdrawals?state=pending&limit=500&cursor={c}"),
            };
            let (status, page) = alice.get(&path).await;
            assert_eq!(status, StatusCode::OK, "{page}");
            seen.extend(
                page["withdrawals"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|w| w["id"].as_i64().unwrap()),
            );
            match page["next_cursor"].as_i64() {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, all, "every pending withdrawal, once, oldest first");
        assert_error(
            &alice
                .get("/console/api/withdrawals?state=pending&limit=501")
                .await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation",
        );
        // The command line lists them all.
        let output = app.db.tresor_ok(&["withdrawal", "list", "--json"]);
        let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(listed.as_array().unwrap().len(), 1005);
        assert_eq!(listed[0]["id"], all[0]);
    }
);

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

/// Rows of the trail PostgreSQL has read, by index or by scan, as its
/// statistics tell once the backends that read them have flushed theirs
/// (within a second of their going idle): polled until they stop moving.
async fn trail_rows_read_settled(pool: &sqlx::AnyPool) -> i64 {
    let read = || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT CAST(COALESCE(seq_tup_read, 0) + COALESCE(idx_tup_fetch, 0) AS BIGINT) \
             FROM pg_stat_user_tables WHERE relname = 'trail'",
        )
        .fetch_one(pool)
        .await
        .unwrap()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut last = read().await;
    let mut still_since = std::time::Instant::now();
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        let now = read().await;
        if now != last {
            (last, still_since) = (now, std::time::Instant::now());
        } else if still_since.elapsed() >= std::time::Duration::from_secs(3) {
            return now;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the trail's statistics never settled"
        );
    }
}

on_postgres!(
    the_trail_export_reads_as_the_client_takes_it_and_stops_when_it_leaves,
    |app| {
        // A trail of 200,000 records (~60 MB of JSON lines): far more than
        // the sockets between the server and a client can hold. The rows
        // are made in SQL (their hashes are not a chain: the export does
        // not verify, it copies).
        const ADDED: i64 = 200_000;
        let pool = &app.service.db.pool;
        let (aude, _) = logged_in(&app, "aude", Role::Auditor).await;
        sqlx::query(
            "INSERT INTO trail (seq, at_ms, actor, action, request, result, prev_hash, hash) \
             SELECT s, 0, 'test', 'filler', '{}', '{\"pad\":\"' || repeat('x', 200) || '\"}', '', '' \
             FROM generate_series((SELECT MAX(seq) FROM trail) + 1, \
                                  (SELECT MAX(seq) FROM trail) + $1) AS s",
        )
        .bind(ADDED)
        .execute(pool)
        .await
        .unwrap();
        // Appends after them (the console's own records) follow on.
        sqlx::query("UPDATE trail_head SET seq = (SELECT MAX(seq) FROM trail)")
            .execute(pool)
            .await
            .unwrap();
        let before = trail_rows_read_settled(pool).await;

        // The client takes the first bytes, then reads no more.
        let mut response = aude
            .client
            .get(format!("{}/console/api/trail/export", aude.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let first = response.chunk().await.unwrap().expect("a first chunk");
        assert!(first.starts_with(b"{"), "a JSON line first");
        let stalled = trail_rows_read_settled(pool).await - before;
        assert!(
            stalled > 0 && stalled < ADDED / 2,
            "{stalled} records read for a client that took one chunk of {ADDED}: \
             the export must read as the client takes it"
        );

        // The client leaves: nothing more is read.
        drop(response);
        let left = trail_rows_read_settled(pool).await - before;
        assert!(
            left < ADDED / 2,
            "{left} records read after the client left, of {ADDED}"
        );
    }
);

// ---- Issue 22: the trail screen browses and searches the records ----

/// The (seq, actor, action) of a page of `/console/api/trail/records`.
fn page_of(body: &Value) -> Vec<(i64, String, String)> {
    body["records"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .map(|r| {
            (
                r["seq"].as_i64().unwrap(),
                r["actor"].as_str().unwrap().to_owned(),
                r["action"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

on_both!(the_trail_is_browsed_by_actor_action_and_time, |app| {
    let (aude, _) = logged_in(&app, "aude", Role::Auditor).await;
    let (alice, _) = logged_in(&app, "alice", Role::Operator).await;
    let mut credited_at = Vec::new();
    // Three players credited by Alice, five minutes apart.
    for name in ["pia", "pol", "pam"] {
        app.player(name, 0).await;
        let id = app.service.player_by_username(name).await.unwrap().id;
        let (status, body) = alice
            .post(
                &format!("/console/api/players/{id}/credit"),
                json!({"amount_cents": 100}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        credited_at.push(app.service.now_ms());
        app.clock.advance_ms(5 * 60 * 1000);
    }
    let everything = trail(&app).await;
    let before = state_of(&app).await;

    // Newest first, every record when nothing is asked.
    let (status, all) = aude.get("/console/api/trail/records?limit=200").await;
    assert_eq!(status, StatusCode::OK, "{all}");
    let all = page_of(&all);
    assert_eq!(all.len(), everything.len());
    assert!(all.windows(2).all(|w| w[0].0 > w[1].0), "newest first");

    // By action, then a page at a time with `before`.
    let (_, credits) = aude.get("/console/api/trail/records?action=credit").await;
    let credits = page_of(&credits);
    assert_eq!(credits.len(), 3);
    assert!(
        credits
            .iter()
            .all(|(_, a, b)| a == "staff:alice" && b == "credit")
    );
    let (_, first) = aude
        .get("/console/api/trail/records?action=credit&limit=2")
        .await;
    assert_eq!(page_of(&first), credits[..2].to_vec());
    let next = first["next_before"].as_i64().expect("a next page");
    let (_, second) = aude
        .get(&format!(
            "/console/api/trail/records?action=credit&limit=2&before={next}"
        ))
        .await;
    assert_eq!(page_of(&second), credits[2..].to_vec());
    assert_eq!(second["next_before"], Value::Null);
    // The request and the result are JSON, as recorded.
    assert_eq!(first["records"][0]["request"]["amount_cents"], 100);

    // By actor: exactly, or every console account with `staff`.
    let (_, by_alice) = aude
        .get("/console/api/trail/records?actor=staff:alice&limit=200")
        .await;
    let by_alice = page_of(&by_alice);
    assert!(by_alice.iter().all(|(_, a, _)| a == "staff:alice"));
    assert_eq!(
        by_alice.len(),
        everything
            .iter()
            .filter(|(a, _)| a == "staff:alice")
            .count()
    );
    let (_, by_staff) = aude
        .get("/console/api/trail/records?actor=staff&limit=200")
        .await;
    let by_staff = page_of(&by_staff);
    assert!(by_staff.iter().any(|(_, a, _)| a == "staff:aude"));
    assert!(by_staff.iter().all(|(_, a, _)| a.starts_with("staff:")));
    // `staff:ali` is not `staff:alice`.
    let (_, none) = aude.get("/console/api/trail/records?actor=staff:ali").await;
    assert!(page_of(&none).is_empty());

    // By time: RFC 3339 bounds around the second credit only (from
    // included, to excluded).
    let at = |ms: i64| tresor::service::rfc3339(ms);
    let (status, window) = aude
        .get(&format!(
            "/console/api/trail/records?action=credit&from={}&to={}",
            at(credited_at[1]),
            at(credited_at[1] + 1)
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{window}");
    assert_eq!(page_of(&window), credits[1..2].to_vec());
    // Days (UTC, both included): the days of the credits hold all three;
    // the day after, none.
    let day = |ms: i64| {
        let t = time::OffsetDateTime::from_unix_timestamp(ms / 1000).unwrap();
        format!("{}", t.date())
    };
    let second_day = day(credited_at[0]);
    let (_, days) = aude
        .get(&format!(
            "/console/api/trail/records?action=credit&from={}&to={}",
            day(credited_at[0]),
            day(credited_at[2])
        ))
        .await;
    assert_eq!(page_of(&days), credits);
    let (_, later) = aude
        .get(&format!(
            "/console/api/trail/records?from={}",
            day(app.service.now_ms() + 24 * 3600 * 1000)
        ))
        .await;
    assert!(page_of(&later).is_empty());
    assert_eq!(later["next_before"], Value::Null);

    // Bad input: a clear refusal.
    for query in [
        "from=yesterday",
        "limit=0",
        "limit=201",
        "before=x",
        "colour=red",
    ] {
        let answer = aude
            .get(&format!("/console/api/trail/records?{query}"))
            .await;
        assert_error(&answer, StatusCode::UNPROCESSABLE_ENTITY, "validation");
    }
    let answer = aude
        .get(&format!(
            "/console/api/trail/records?from={second_day}&to=2020-01-01"
        ))
        .await;
    assert_error(&answer, StatusCode::UNPROCESSABLE_ENTITY, "validation");
    // Read-only: nothing changed, no record added by reading.
    assert_eq!(state_of(&app).await, before);
    assert_eq!(trail(&app).await, everything);
});
