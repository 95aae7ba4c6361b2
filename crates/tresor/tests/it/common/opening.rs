//! Accounts for real money opened through the API, and the provider's
//! webhook, for the test binaries of issue 22 (tests/it/account_fixes.rs,
//! tests/it/suspension.rs, tests/it/passwords.rs).

use super::TestApp;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tresor::account::documents::DocumentKind;
use tresor::service::{Review, Service, sign_webhook};

pub const IBAN: &str = "FR76 3000 6000 0112 3456 7890 189";
/// Another IBAN, to change to.
pub const OTHER_IBAN: &str = "DE89 3704 0044 0532 0130 00";
pub const PASSWORD: &str = "a long password";
pub const DAY_MS: i64 = 24 * 3600 * 1000;

/// A birth date `years` years before the app's clock (a day more, to be sure).
pub fn born_years_ago(app: &TestApp, years: i32) -> String {
    super::players::born_years_ago(app.service.now_ms(), years)
}

/// The smallest files of each type the documents take (by their first bytes).
pub const JPEG: &[u8] =
    b"\xFF\xD8\xFF\xE0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xFF\xD9";
pub const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01";
pub const PDF: &[u8] =
    b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n";

/// `player` sends a proof of its IBAN named `name`, straight through the
/// service (what the page's upload does); the document.
pub async fn send_iban_proof(
    service: &Service,
    player: &tresor::service::Player,
    name: &str,
) -> tresor::service::DocumentView {
    service
        .upload_document(player, DocumentKind::IbanProof, name, PDF.to_vec())
        .await
        .expect("a proof of the IBAN is taken")
}

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

/// Opens an account for real money as the app's client (logged in after):
/// the short form of [`super::players::player`]`(username).real_money()`.
pub async fn open_account(app: &TestApp, username: &str) -> super::players::Player {
    super::players::player(username).real_money().on(app).await
}

/// The app's player sets its IBAN to `iban`, with its password, which
/// must be taken: the account as it answers.
pub async fn set_iban(app: &TestApp, iban: &str) -> Value {
    let body = json!({"iban": iban, "current_password": PASSWORD});
    let (status, account) = app.put_json("/api/account/iban", body).await;
    assert_eq!(status, StatusCode::OK, "{account}");
    account
}

/// Asks a withdrawal of `cents` as the app's player, which must be taken:
/// its id.
pub async fn withdraw(app: &TestApp, cents: i64) -> i64 {
    let (status, asked) = app.ask_withdrawal(cents).await;
    assert_eq!(status, StatusCode::CREATED, "{asked}");
    asked["id"].as_i64().unwrap()
}

/// Sends the provider's webhook with `body`, signed now with the right secret.
pub async fn webhook(app: &TestApp, body: &Value) -> (StatusCode, Value) {
    webhook_signed(app, body, 0, app.service.webhook_secret()).await
}

/// Sends the provider's webhook with `body`, signed with `secret` at the
/// app's time shifted by `shift_s`.
pub async fn webhook_signed(
    app: &TestApp,
    body: &Value,
    shift_s: i64,
    secret: &[u8],
) -> (StatusCode, Value) {
    let text = body.to_string();
    let timestamp = app.service.now_ms() / 1000 + shift_s;
    let signature = sign_webhook(secret, timestamp, text.as_bytes());
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

/// Asks a deposit of `cents` as the app's player: pending, with the
/// provider's page to pay it on; its id.
pub async fn ask_deposit(app: &TestApp, cents: i64) -> i64 {
    let (status, body) = app.ask_deposit(cents).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["state"], "pending", "{body}");
    let id = body["id"].as_i64().unwrap();
    let pay_url = body["pay_url"].as_str().unwrap();
    assert!(pay_url.contains(&id.to_string()), "{body}");
    id
}

/// The provider's confirmation that deposit `deposit_id` of `cents` succeeded.
pub fn confirmation(deposit_id: i64, transaction_id: &str, cents: i64) -> Value {
    json!({"deposit_id": deposit_id, "transaction_id": transaction_id,
           "amount_cents": cents, "status": "succeeded"})
}

/// Deposits `cents` through the provider, confirmed by its webhook; its id.
pub async fn deposit(app: &TestApp, cents: i64) -> i64 {
    let id = ask_deposit(app, cents).await;
    let (status, body) = webhook(app, &confirmation(id, &format!("tx-{id}"), cents)).await;
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

/// The answer is the refusal 422 `validation` naming `field` first.
#[track_caller]
pub fn assert_invalid(answer: &(StatusCode, Value), field: &str) {
    assert_refused(answer, StatusCode::UNPROCESSABLE_ENTITY, "validation");
    let message = answer.1["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(field),
        "{message} does not begin with {field}"
    );
}

/// The document of `kind` in a list of documents (`{"documents": […]}`).
pub fn document_of(documents: &Value, kind: &str) -> Value {
    super::items(&documents["documents"], "documents")
        .iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {documents}"))
        .clone()
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
        // The poll's pace: the mail task tells no one when a file is written.
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

/// The token at the end of a link.
pub fn token_of(link: &str) -> String {
    link.rsplit('/').next().unwrap().to_owned()
}

/// The token of the latest link with `marker` (`/#/reset/`) in the mail
/// `to` received (`at_least` messages awaited), if any.
pub async fn latest_token(
    app: &TestApp,
    to: &str,
    at_least: usize,
    marker: &str,
) -> Option<String> {
    mails_to(app, to, at_least)
        .await
        .iter()
        .rev()
        .find(|m| m.contains(marker))
        .map(|m| token_of(&link_in(m, marker)))
}

/// The token of the first confirmation link mailed to `email`.
pub async fn confirmation_token(app: &TestApp, email: &str) -> String {
    let mails = mails_to(app, email, 1).await;
    token_of(&link_in(&mails[0], "/#/confirm-email/"))
}

/// Confirms `email` by the first link mailed to it (the honest owner's
/// first step: a reset goes only to a confirmed address); the token.
pub async fn confirm_address(app: &TestApp, email: &str) -> String {
    let token = confirmation_token(app, email).await;
    let (status, body) = app
        .post("/api/email/confirm", json!({"token": token}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    token
}
