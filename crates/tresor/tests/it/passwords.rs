//! Passwords, e-mail and sessions (issue 22), through the HTTP API on both
//! databases, reading the mail the server writes to its outbox: a password
//! changed (the current one asked, the other sessions ended), a reset by a
//! link that works once and expires (the clock moved by hand), an unknown
//! address answered exactly as a known one, an address confirmed, the
//! notifications of money and verification, a console account's password
//! (its other console sessions ended),
//! and the player's list of sessions (ending one, or all the others).

use crate::common::TestApp;
use crate::common::opening::{
    CONSOLE_PASSWORD, IBAN, PASSWORD, assert_refused, console_enrolled, console_login,
    console_post, console_status, count, deposit, link_in, mails_to, open_account, webhook,
};
use reqwest::StatusCode;
use serde_json::{Value, json};

const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
const CHROME: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36";

/// A browser of its own (cookie jar, User-Agent) on the players' site.
struct Browser {
    base: String,
    client: reqwest::Client,
}

impl Browser {
    fn new(app: &TestApp, user_agent: &str) -> Browser {
        Browser {
            base: app.address.clone(),
            client: reqwest::Client::builder()
                .cookie_store(true)
                .user_agent(user_agent)
                .build()
                .unwrap(),
        }
    }

    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.base))
            .header("x-requested-with", "tresor");
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.send(reqwest::Method::GET, path, None).await
    }

    async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send(reqwest::Method::POST, path, Some(body)).await
    }

    async fn login(&self, username: &str, password: &str) -> (StatusCode, Value) {
        self.post(
            "/api/login",
            json!({"username": username, "password": password}),
        )
        .await
    }
}

/// The token at the end of a link.
fn token_of(link: &str) -> String {
    link.rsplit('/').next().unwrap().to_owned()
}

on_both!(
    a_password_change_asks_the_current_one_and_ends_other_sessions,
    |app| {
        open_account(&app, "paula").await;
        let other = Browser::new(&app, CHROME);
        assert_eq!(other.login("paula", PASSWORD).await.0, StatusCode::OK);
        let trail = count(&app, "SELECT COUNT(*) FROM trail").await;
        for (current, new, field) in [
            (
                "not my password",
                "a brand new password",
                "current_password",
            ),
            (PASSWORD, "short", "new_password"),
        ] {
            let refused = app
                .post(
                    "/api/account/password",
                    json!({"current_password": current, "new_password": new}),
                )
                .await;
            assert_refused(&refused, StatusCode::UNPROCESSABLE_ENTITY, "validation");
            let message = refused.1["error"]["message"].as_str().unwrap();
            assert!(message.starts_with(field), "{message}");
        }
        assert_eq!(count(&app, "SELECT COUNT(*) FROM trail").await, trail);
        assert_eq!(other.get("/api/account").await.0, StatusCode::OK);
        let (status, body) = app
            .post(
                "/api/account/password",
                json!({"current_password": PASSWORD, "new_password": "a brand new password"}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["sessions_ended"], 1);
        // This browser stays; the other is logged out.
        assert_eq!(app.get("/api/account").await.0, StatusCode::OK);
        assert_eq!(other.get("/api/account").await.0, StatusCode::UNAUTHORIZED);
        assert_refused(
            &other.login("paula", PASSWORD).await,
            StatusCode::UNAUTHORIZED,
            "invalid_credentials",
        );
        assert_eq!(
            other.login("paula", "a brand new password").await.0,
            StatusCode::OK
        );
        let mails = mails_to(&app, "paula@example.org", 2).await;
        assert!(
            mails
                .iter()
                .any(|m| m.contains("Your account's password has just changed")),
            "{mails:?}"
        );
    }
);

/// Confirms the address `app`'s player opened with (a reset goes only to a
/// confirmed address).
async fn confirm_address(app: &TestApp, email: &str) {
    let mails = mails_to(app, email, 1).await;
    let token = token_of(&link_in(&mails[0], "/#/confirm-email/"));
    let (status, body) = app
        .post("/api/email/confirm", json!({"token": token}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

on_both!(a_reset_link_works_once_and_expires, |app| {
    open_account(&app, "rita").await;
    confirm_address(&app, "rita@example.org").await;
    let (status, body) = app
        .post(
            "/api/password/reset",
            json!({"email": "  RITA@Example.org "}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let mails = mails_to(&app, "rita@example.org", 2).await;
    let reset = mails
        .iter()
        .find(|m| m.contains("/#/reset/"))
        .unwrap_or_else(|| panic!("no reset message in {mails:?}"));
    let link = link_in(reset, "/#/reset/");
    assert!(link.starts_with(&app.address), "{link}");
    let token = token_of(&link);
    // Only the token's hash is stored.
    assert_eq!(
        count(
            &app,
            &format!("SELECT COUNT(*) FROM mail_tokens WHERE token_hash = '{token}'")
        )
        .await,
        0
    );
    // A short password is refused and spends nothing.
    let refused = app
        .post(
            "/api/password/reset/confirm",
            json!({"token": token, "new_password": "short"}),
        )
        .await;
    assert_refused(&refused, StatusCode::UNPROCESSABLE_ENTITY, "validation");
    let (status, body) = app
        .post(
            "/api/password/reset/confirm",
            json!({"token": token, "new_password": "the reset password"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Every session ended, this browser's too.
    assert_eq!(app.get("/api/account").await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(
        app.login("rita", "the reset password").await.0,
        StatusCode::OK
    );
    // Used once: again is refused, and the password stays.
    let again = app
        .post(
            "/api/password/reset/confirm",
            json!({"token": token, "new_password": "another password here"}),
        )
        .await;
    assert_refused(&again, StatusCode::BAD_REQUEST, "invalid_token");
    assert_refused(
        &app.login("rita", "another password here").await,
        StatusCode::UNAUTHORIZED,
        "invalid_credentials",
    );
    // A link an hour and a minute old is refused.
    app.post("/api/password/reset", json!({"email": "rita@example.org"}))
        .await;
    let mails = mails_to(&app, "rita@example.org", 4).await;
    let late = mails
        .iter()
        .rev()
        .find(|m| m.contains("/#/reset/"))
        .unwrap();
    let late_token = token_of(&link_in(late, "/#/reset/"));
    assert_ne!(late_token, token);
    app.clock.advance_ms(61 * 60 * 1000);
    let expired = app
        .post(
            "/api/password/reset/confirm",
            json!({"token": late_token, "new_password": "another password here"}),
        )
        .await;
    assert_refused(&expired, StatusCode::BAD_REQUEST, "invalid_token");
    assert_eq!(
        app.login("rita", "the reset password").await.0,
        StatusCode::OK
    );
    let garbage = app
        .post(
            "/api/password/reset/confirm",
            json!({"token": "not a token", "new_password": "another password here"}),
        )
        .await;
    assert_refused(&garbage, StatusCode::BAD_REQUEST, "invalid_token");
});

on_both!(
    a_reset_for_an_unknown_address_is_answered_as_for_a_known_one,
    |app| {
        open_account(&app, "kim").await;
        confirm_address(&app, "kim@example.org").await;
        let asked = |email: &'static str| {
            let app = &app;
            async move {
                let response = reqwest::Client::new()
                    .post(format!("{}/api/password/reset", app.address))
                    .header("x-requested-with", "tresor")
                    .json(&json!({"email": email}))
                    .send()
                    .await
                    .unwrap();
                let status = response.status();
                let mut headers: Vec<(String, String)> = response
                    .headers()
                    .iter()
                    .filter(|(name, _)| *name != "date")
                    .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
                    .collect();
                headers.sort();
                (status, headers, response.bytes().await.unwrap())
            }
        };
        let known = asked("kim@example.org").await;
        let unknown = asked("nobody@example.org").await;
        assert_eq!(known.0, StatusCode::ACCEPTED);
        assert_eq!(known, unknown, "the same status, headers and bytes");
        assert_eq!(mails_to(&app, "kim@example.org", 2).await.len(), 2);
        assert!(mails_to(&app, "nobody@example.org", 1).await.is_empty());
        assert_eq!(
            count(
                &app,
                "SELECT COUNT(*) FROM mail_tokens WHERE purpose = 'password_reset'"
            )
            .await,
            1
        );
        // Both askings are in the trail alike, by the address's hash only.
        let asked_records: Vec<String> = sqlx::query_scalar(
            "SELECT request FROM trail WHERE action = 'password_reset_asked' ORDER BY seq",
        )
        .fetch_all(&app.service.db.pool)
        .await
        .unwrap();
        assert_eq!(asked_records.len(), 2);
        assert!(
            asked_records.iter().all(|a| !a.contains("example.org")),
            "{asked_records:?}"
        );
    }
);

on_both!(an_address_is_confirmed_by_its_link, |app| {
    open_account(&app, "cleo").await;
    assert_eq!(
        app.get("/api/account").await.1["email_confirmed_at"],
        Value::Null
    );
    let mails = mails_to(&app, "cleo@example.org", 1).await;
    let token = token_of(&link_in(&mails[0], "/#/confirm-email/"));
    let (status, body) = app
        .post("/api/email/confirm", json!({"token": token}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(app.get("/api/account").await.1["email_confirmed_at"].is_string());
    assert_refused(
        &app.post("/api/email/confirm", json!({"token": token}))
            .await,
        StatusCode::BAD_REQUEST,
        "invalid_token",
    );
    // A new address waits for its own confirmation.
    let refused = app
        .put_json(
            "/api/account/email",
            json!({"email": "not an address", "current_password": PASSWORD}),
        )
        .await;
    assert_refused(&refused, StatusCode::UNPROCESSABLE_ENTITY, "validation");
    let (status, account) = app
        .put_json(
            "/api/account/email",
            json!({"email": "cleo@example.net", "current_password": PASSWORD}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{account}");
    assert_eq!(account["identity"]["email"], "cleo@example.net");
    assert_eq!(
        app.get("/api/account").await.1["email_confirmed_at"],
        Value::Null
    );
    let mails = mails_to(&app, "cleo@example.net", 1).await;
    let token = token_of(&link_in(&mails[0], "/#/confirm-email/"));
    assert_eq!(
        app.post("/api/email/confirm", json!({"token": token}))
            .await
            .0,
        StatusCode::OK
    );
    assert!(app.get("/api/account").await.1["email_confirmed_at"].is_string());
});

on_both!(
    players_are_told_of_deposits_withdrawals_and_verification,
    |app| {
        open_account(&app, "nora").await;
        deposit(&app, 5000).await;
        // A deposit confirmed for another amount: to refund.
        let (_, asked) = app
            .post("/api/account/deposits", json!({"amount_cents": 1000}))
            .await;
        let (_, confirmed) = webhook(
            &app,
            &json!({"deposit_id": asked["id"], "transaction_id": "tx-odd", "amount_cents": 999,
                "status": "succeeded"}),
        )
        .await;
        assert_eq!(confirmed["outcome"], "to_refund", "{confirmed}");
        crate::common::opening::documents_verified(&app.service, "nora").await;
        let nora = app.service.player_by_username("nora").await.unwrap();
        let reviewed = tresor::account::Iban::parse(IBAN).unwrap();
        app.service
            .verify_account_as(tresor::trail::Actor::staff("vera"), &nora, &reviewed)
            .await
            .unwrap();
        let mut ids = Vec::new();
        for _ in 0..2 {
            let (status, w) = app
                .post("/api/account/withdrawals", json!({"amount_cents": 1000}))
                .await;
            assert_eq!(status, StatusCode::CREATED, "{w}");
            ids.push(w["id"].as_i64().unwrap());
        }
        let paul = tresor::trail::Actor::staff("paul");
        app.service
            .decide_withdrawal_as(
                paul.clone(),
                ids[0],
                tresor::service::Settlement::Paid,
                None,
            )
            .await
            .unwrap();
        app.service
            .decide_withdrawal_as(
                paul,
                ids[1],
                tresor::service::Settlement::Rejected,
                Some("the IBAN is closed".to_owned()),
            )
            .await
            .unwrap();
        // The confirmation, then five notices.
        let mails = mails_to(&app, "nora@example.org", 6).await.join("\n");
        for told in [
            "Your deposit of 50.00",
            "Your deposit of 9.99 € could not be credited (amount_mismatch)",
            "Your identity and IBAN are verified",
            "Your withdrawal of 10.00 € is paid",
            "Your withdrawal of 10.00 € was rejected (the IBAN is closed)",
        ] {
            assert!(mails.contains(told), "{told} not in {mails}");
        }
    }
);

on_both!(
    the_player_lists_sessions_and_ends_one_or_all_others,
    |app| {
        open_account(&app, "seb").await;
        let firefox = Browser::new(&app, FIREFOX);
        let chrome = Browser::new(&app, CHROME);
        let third = Browser::new(&app, CHROME);
        for browser in [&firefox, &chrome, &third] {
            assert_eq!(browser.login("seb", PASSWORD).await.0, StatusCode::OK);
        }
        let (status, body) = firefox.get("/api/account/sessions").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let sessions = body["sessions"].as_array().unwrap().clone();
        assert_eq!(sessions.len(), 4, "{body}");
        let mine: Vec<&Value> = sessions.iter().filter(|s| s["current"] == true).collect();
        assert_eq!(mine.len(), 1);
        assert_eq!(mine[0]["device"], "Firefox on Linux");
        assert_eq!(mine[0]["address"], "127.0.0.1");
        assert!(mine[0]["last_used_at"].is_string());
        assert_eq!(
            sessions
                .iter()
                .filter(|s| s["device"] == "Chrome on Windows")
                .count(),
            2
        );
        // The session of this request is not ended here (a logout is).
        let own = mine[0]["id"].as_str().unwrap();
        let refused = firefox
            .post(&format!("/api/account/sessions/{own}/end"), json!({}))
            .await;
        assert_refused(&refused, StatusCode::UNPROCESSABLE_ENTITY, "validation");
        let unknown = firefox
            .post("/api/account/sessions/0123456789abcdef/end", json!({}))
            .await;
        assert_refused(&unknown, StatusCode::NOT_FOUND, "not_found");
        // Another player's session is not found either.
        let chrome_id = {
            let (_, seen) = chrome.get("/api/account/sessions").await;
            seen["sessions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["current"] == true)
                .unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        open_account(&app.another_client(), "other").await;
        let stranger = Browser::new(&app, CHROME);
        stranger.login("other", PASSWORD).await;
        assert_refused(
            &stranger
                .post(&format!("/api/account/sessions/{chrome_id}/end"), json!({}))
                .await,
            StatusCode::NOT_FOUND,
            "not_found",
        );
        assert_eq!(chrome.get("/api/account").await.0, StatusCode::OK);
        // One ended.
        let (status, body) = firefox
            .post(&format!("/api/account/sessions/{chrome_id}/end"), json!({}))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["sessions_ended"], 1);
        assert_eq!(chrome.get("/api/account").await.0, StatusCode::UNAUTHORIZED);
        assert_eq!(
            firefox.get("/api/account/sessions").await.1["sessions"]
                .as_array()
                .unwrap()
                .len(),
            3
        );
        // All the others.
        let (status, body) = firefox
            .post("/api/account/sessions/end-others", json!({}))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["sessions_ended"], 2);
        assert_eq!(third.get("/api/account").await.0, StatusCode::UNAUTHORIZED);
        assert_eq!(app.get("/api/account").await.0, StatusCode::UNAUTHORIZED);
        let (_, left) = firefox.get("/api/account/sessions").await;
        assert_eq!(left["sessions"].as_array().unwrap().len(), 1, "{left}");
    }
);

on_both!(
    a_console_account_changes_its_password_and_its_other_sessions_end,
    |app| {
        let (first, secret) = console_enrolled(&app, "olga").await;
        // A TOTP code is accepted once: the second login takes the next one.
        app.clock.advance_ms(31_000);
        let second = console_login(&app, "olga", CONSOLE_PASSWORD, &secret)
            .await
            .unwrap();
        let trail = count(&app, "SELECT COUNT(*) FROM trail").await;
        for (current, new, field) in [
            (
                "not the password",
                "a new console password",
                "current_password",
            ),
            (CONSOLE_PASSWORD, "too short", "new_password"),
        ] {
            let refused = console_post(
                &first,
                &app,
                "/console/api/password",
                json!({"current_password": current, "new_password": new}),
            )
            .await;
            assert_refused(&refused, StatusCode::UNPROCESSABLE_ENTITY, "validation");
            let message = refused.1["error"]["message"].as_str().unwrap();
            assert!(message.starts_with(field), "{message}");
        }
        assert_eq!(count(&app, "SELECT COUNT(*) FROM trail").await, trail);
        let (status, body) = console_post(
            &first,
            &app,
            "/console/api/password",
            json!({"current_password": CONSOLE_PASSWORD, "new_password": "a new console password"}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["sessions_ended"], 1);
        assert_eq!(
            console_status(&first, &app, "/console/api/me").await,
            StatusCode::OK
        );
        assert_eq!(
            console_status(&second, &app, "/console/api/me").await,
            StatusCode::UNAUTHORIZED
        );
        app.clock.advance_ms(31_000);
        let old = console_login(&app, "olga", CONSOLE_PASSWORD, &secret).await;
        assert_eq!(old.err().map(|e| e.0), Some(StatusCode::UNAUTHORIZED));
        assert!(
            console_login(&app, "olga", "a new console password", &secret)
                .await
                .is_ok()
        );
        assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM trail WHERE action = 'staff_password_changed' AND actor = 'staff:olga'"
        )
        .await,
        1
    );
    }
);
