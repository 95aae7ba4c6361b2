//! Accounts for real money opened through the API, and the provider's
//! webhook, for the test binaries of issue 22 (tests/it/account_fixes.rs,
//! tests/it/suspension.rs, tests/it/passwords.rs).

use super::TestApp;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tresor::account::documents::DocumentKind;
use tresor::service::{Review, Service, sign_webhook};
use tresor::staff::{Role, StaffName, totp_code};

pub const IBAN: &str = "FR76 3000 6000 0112 3456 7890 189";
pub const PASSWORD: &str = "a long password";
pub const DAY_MS: i64 = 24 * 3600 * 1000;

/// A birth date `years` years before the app's clock (a day more, to be sure).
pub fn born_years_ago(app: &TestApp, years: i32) -> String {
    let now = time::OffsetDateTime::from_unix_timestamp(app.service.now_ms() / 1000).unwrap();
    let date = now
        .date()
        .replace_year(now.year() - years)
        .unwrap()
        .previous_day()
        .unwrap();
    format!("{date}")
}

/// The body of an opening for `username`, a person of their own, with an
/// e-mail address and a 7-day deposit cap of `deposit_limit_cents`.
pub fn opening(app: &TestApp, username: &str, deposit_limit_cents: i64) -> Value {
    json!({
        "username": username,
        "password": PASSWORD,
        "accept_rules": true,
        "marketing_consent": false,
        "iban": IBAN,
        "deposit_limit_cents": deposit_limit_cents,
        "stake_limit_cents": 1_000_000,
        "identity": {
            "birth_name": format!("Name of {username}"),
            "first_names": "Anne Marie",
            "birth_date": born_years_ago(app, 30),
            "birth_place": "Nantes",
            "address": "1 rue de la Paix, 75002 Paris",
            "email": format!("{username}@example.org"),
        },
    })
}

/// The smallest files of each type the documents take (by their first bytes).
pub const JPEG: &[u8] =
    b"\xFF\xD8\xFF\xE0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xFF\xD9";
pub const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01";
pub const PDF: &[u8] =
    b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n";

/// `username` sends an identity document and a proof of IBAN, and a
/// console account (`staff:docs`) verifies both, as the console does: what
/// the account's verification asks first (tests that verify accounts).
pub async fn documents_verified(service: &Service, username: &str) {
    let player = service.player_by_username(username).await.unwrap();
    for (kind, bytes) in [
        (DocumentKind::Identity, JPEG),
        (DocumentKind::IbanProof, PDF),
    ] {
        let document = service
            .upload_document(&player, kind, "scan", bytes.to_vec())
            .await
            .unwrap();
        service
            .review_document_as(
                tresor::trail::Actor::staff("docs"),
                document.id,
                Review::Verify,
            )
            .await
            .unwrap();
    }
}

/// Opens an account for real money as the app's client (logged in after).
pub async fn open_account(app: &TestApp, username: &str) {
    let (status, body) = app
        .post("/api/account/open", opening(app, username, 1_000_000))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

/// Sends the provider's webhook with `body`, signed now with the right secret.
pub async fn webhook(app: &TestApp, body: &Value) -> (StatusCode, Value) {
    let text = body.to_string();
    let timestamp = app.service.now_ms() / 1000;
    let signature = sign_webhook(app.service.webhook_secret(), timestamp, text.as_bytes());
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

/// Deposits `cents` through the provider, confirmed by its webhook.
pub async fn deposit(app: &TestApp, cents: i64) -> i64 {
    let (status, body) = app
        .post("/api/account/deposits", json!({"amount_cents": cents}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let id = body["id"].as_i64().unwrap();
    let confirmation = json!({"deposit_id": id, "transaction_id": format!("tx-{id}"),
                              "amount_cents": cents, "status": "succeeded"});
    let (status, body) = webhook(app, &confirmation).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["outcome"], "credited", "{body}");
    id
}

/// One number the database answers (`COUNT(*)`, a balance).
pub async fn count(app: &TestApp, sql: &str) -> i64 {
    sqlx::query_scalar(sql)
        .fetch_one(&app.service.db.pool)
        .await
        .unwrap_or_else(|error| panic!("{sql}: {error}"))
}

/// The answer is the refusal `code` with `status` and a message.
pub fn assert_refused(answer: &(StatusCode, Value), status: StatusCode, code: &str) {
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

/// The messages in the app's outbox addressed to `to` (the whole `.eml`
/// files, oldest first), once there are at least `at_least` (mail leaves
/// from a task of its own: waits up to 10 s).
pub async fn mails_to(app: &TestApp, to: &str, at_least: usize) -> Vec<String> {
    let dir = app
        .outbox
        .as_ref()
        .expect("the app's outbox")
        .path()
        .to_owned();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let mut found: Vec<(std::time::SystemTime, String)> = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("eml") {
                continue;
            }
            let text = decoded(&std::fs::read_to_string(&path).unwrap_or_default());
            let addressed = text
                .lines()
                .take_while(|line| !line.is_empty())
                .any(|line| line.starts_with("To: ") && line.contains(to));
            if addressed {
                found.push((path.metadata().unwrap().modified().unwrap(), text));
            }
        }
        if found.len() >= at_least || std::time::Instant::now() > deadline {
            found.sort();
            return found.into_iter().map(|(_, text)| text).collect();
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A message with its body decoded (quoted-printable or base64, as lettre
/// chose for it): the headers as they are, a blank line, the text.
pub fn decoded(message: &str) -> String {
    let Some((headers, body)) = message.split_once("\r\n\r\n") else {
        return message.to_owned();
    };
    let encoding = headers
        .lines()
        .find_map(|line| line.strip_prefix("Content-Transfer-Encoding: "))
        .unwrap_or("7bit")
        .trim()
        .to_owned();
    let text = match encoding.as_str() {
        "base64" => {
            let joined: String = body.split_whitespace().collect();
            String::from_utf8(super::browser::base64_decode(&joined)).unwrap()
        }
        "quoted-printable" => {
            let joined = body.replace("=\r\n", "");
            let bytes = joined.as_bytes();
            let mut out = Vec::new();
            let mut i = 0;
            while i < bytes.len() {
                if bytes[i] == b'=' && i + 2 < bytes.len() {
                    let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
                    out.push(u8::from_str_radix(hex, 16).unwrap());
                    i += 3;
                } else {
                    out.push(bytes[i]);
                    i += 1;
                }
            }
            String::from_utf8(out).unwrap()
        }
        _ => body.to_owned(),
    };
    format!("{headers}\r\n\r\n{text}")
}

/// The link in a message that contains `marker` (`/#/reset/`), to the end
/// of its line.
pub fn link_in(message: &str, marker: &str) -> String {
    let line = message
        .lines()
        .find(|line| line.contains(marker))
        .unwrap_or_else(|| panic!("no {marker} link in {message}"));
    line.trim().to_owned()
}

/// The console accounts' password in these tests.
pub const CONSOLE_PASSWORD: &str = "a console password";

/// RFC 4648 base32 without padding, decoded.
pub fn base32_decode(text: &str) -> Vec<u8> {
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

/// A console operator named `name`, enrolled and logged in: a client with
/// its cookie, on the operator listener.
pub async fn console(app: &TestApp, name: &str) -> reqwest::Client {
    console_enrolled(app, name).await.0
}

/// [`console`], and the account's TOTP secret (to log in again).
pub async fn console_enrolled(app: &TestApp, name: &str) -> (reqwest::Client, Vec<u8>) {
    console_as(app, name, Role::Operator).await
}

/// A console account named `name` with `role`, enrolled and logged in: a
/// client with its cookie, and the account's TOTP secret.
pub async fn console_as(app: &TestApp, name: &str, role: Role) -> (reqwest::Client, Vec<u8>) {
    app.service
        .add_staff(&StaffName::parse(name).unwrap(), role, CONSOLE_PASSWORD)
        .await
        .unwrap();
    let client = reqwest::Client::builder()
        .cookie_store(true)
        .build()
        .unwrap();
    let (status, body) = console_post(
        &client,
        app,
        "/console/api/login",
        json!({"username": name, "password": CONSOLE_PASSWORD}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let secret = base32_decode(body["secret"].as_str().unwrap());
    let code = totp_code(&secret, app.service.now_ms() / 1000);
    let (status, body) = console_post(
        &client,
        app,
        "/console/api/login/code",
        json!({"code": code}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    (client, secret)
}

/// An enrolled console account logs in (password, then code) on a client
/// of its own; the answer of the step that failed, or the client.
pub async fn console_login(
    app: &TestApp,
    name: &str,
    password: &str,
    secret: &[u8],
) -> Result<reqwest::Client, (StatusCode, Value)> {
    let client = reqwest::Client::builder()
        .cookie_store(true)
        .build()
        .unwrap();
    let answer = console_post(
        &client,
        app,
        "/console/api/login",
        json!({"username": name, "password": password}),
    )
    .await;
    if answer.0 != StatusCode::OK {
        return Err(answer);
    }
    let code = totp_code(secret, app.service.now_ms() / 1000);
    let answer = console_post(
        &client,
        app,
        "/console/api/login/code",
        json!({"code": code}),
    )
    .await;
    if answer.0 != StatusCode::OK {
        return Err(answer);
    }
    Ok(client)
}

/// GETs `path` on the operator listener; the status.
pub async fn console_status(client: &reqwest::Client, app: &TestApp, path: &str) -> StatusCode {
    client
        .get(format!("{}{path}", app.admin_address))
        .send()
        .await
        .unwrap()
        .status()
}

pub async fn console_post(
    client: &reqwest::Client,
    app: &TestApp,
    path: &str,
    body: Value,
) -> (StatusCode, Value) {
    let response = client
        .post(format!("{}{path}", app.admin_address))
        .header("x-requested-with", "tresor-console")
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.json().await.unwrap())
}

pub async fn console_get(client: &reqwest::Client, app: &TestApp, path: &str) -> Value {
    let response = client
        .get(format!("{}{path}", app.admin_address))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.unwrap()
}
