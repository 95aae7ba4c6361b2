//! Passwords, e-mail and sessions (issue 22), through the HTTP API on both
//! databases, reading the mail the server writes to its outbox: a password
//! changed (the current one asked, the other sessions ended), a reset by a
//! link that works once and expires (the clock moved by hand), an unknown
//! address answered exactly as a known one, an address confirmed, the
//! notifications of money and verification, a console account's password
//! (its other console sessions ended),
//! and the player's list of sessions (ending one, or all the others).

mod browser;

use crate::common::expect;
use crate::common::opening::{
    PASSWORD, assert_invalid, assert_refused, confirm_address, count, link_in, mails_to,
    open_account, token_of, webhook, withdraw,
};
use crate::common::players::player;
use crate::common::staff::{CONSOLE_PASSWORD, Console, logged_in};
use crate::common::texts;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tresor::staff::Role;

const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
const CHROME: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36";

/// The two password changes refused whoever asks them, as (current password
/// given, new password, the field refused): a wrong current password, then
/// a new one too short, for an account whose password is `current`.
fn refused_changes(
    current: &'static str,
    new: &'static str,
) -> [(&'static str, &'static str, &'static str); 2] {
    [
        ("not the password", new, "current_password"),
        (current, "short", "new_password"),
    ]
}

on_both!(
    a_password_change_asks_the_current_one_and_ends_other_sessions,
    |app| {
        open_account(&app, "paula").await;
        let other = app.another_browser(CHROME);
        assert_eq!(other.login("paula", PASSWORD).await.0, StatusCode::OK);
        let trail = count(&app, "SELECT COUNT(*) FROM trail").await;
        for (current, new, field) in refused_changes(PASSWORD, "a brand new password") {
            let refused = app.change_password(current, new).await;
            assert_invalid(&refused, field);
        }
        assert_eq!(count(&app, "SELECT COUNT(*) FROM trail").await, trail);
        assert_eq!(other.get("/api/account").await.0, StatusCode::OK);
        let body = expect(
            StatusCode::OK,
            app.change_password(PASSWORD, "a brand new password").await,
        );
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

on_both!(a_reset_link_works_once_and_expires, |app| {
    open_account(&app, "rita").await;
    confirm_address(&app, "rita@example.org").await;
    expect(
        StatusCode::ACCEPTED,
        app.ask_reset("  RITA@Example.org ").await,
    );
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
    let refused = app.reset_password(&token, "short").await;
    assert_refused(&refused, StatusCode::UNPROCESSABLE_ENTITY, "validation");
    expect(
        StatusCode::OK,
        app.reset_password(&token, "the reset password").await,
    );
    // Every session ended, this browser's too.
    assert_eq!(app.get("/api/account").await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(
        app.login("rita", "the reset password").await.0,
        StatusCode::OK
    );
    // Used once: again is refused, and the password stays.
    let again = app.reset_password(&token, "another password here").await;
    assert_refused(&again, StatusCode::BAD_REQUEST, "invalid_token");
    assert_refused(
        &app.login("rita", "another password here").await,
        StatusCode::UNAUTHORIZED,
        "invalid_credentials",
    );
    // A link an hour and a minute old is refused.
    app.ask_reset("rita@example.org").await;
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
        .reset_password(&late_token, "another password here")
        .await;
    assert_refused(&expired, StatusCode::BAD_REQUEST, "invalid_token");
    assert_eq!(
        app.login("rita", "the reset password").await.0,
        StatusCode::OK
    );
    let garbage = app
        .reset_password("not a token", "another password here")
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
        let asked_records = texts(
            &app.service.db.pool,
            "SELECT request FROM trail WHERE action = 'password_reset_asked' ORDER BY seq",
        )
        .await;
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
    let token = confirm_address(&app, "cleo@example.org").await;
    assert!(app.get("/api/account").await.1["email_confirmed_at"].is_string());
    assert_refused(
        &app.post("/api/email/confirm", json!({"token": token}))
            .await,
        StatusCode::BAD_REQUEST,
        "invalid_token",
    );
    // A new address waits for its own confirmation.
    let refused = app.change_email("not an address", PASSWORD).await;
    assert_refused(&refused, StatusCode::UNPROCESSABLE_ENTITY, "validation");
    let account = expect(
        StatusCode::OK,
        app.change_email("cleo@example.net", PASSWORD).await,
    );
    assert_eq!(account["identity"]["email"], "cleo@example.net");
    assert_eq!(
        app.get("/api/account").await.1["email_confirmed_at"],
        Value::Null
    );
    confirm_address(&app, "cleo@example.net").await;
    assert!(app.get("/api/account").await.1["email_confirmed_at"].is_string());
});

on_both!(
    players_are_told_of_deposits_withdrawals_and_verification,
    |app| {
        player("nora").real_money().deposit(5000).on(&app).await;
        // A deposit confirmed for another amount: to refund.
        let (_, asked) = app.ask_deposit(1000).await;
        let (_, confirmed) = webhook(
            &app,
            &json!({"deposit_id": asked["id"], "transaction_id": "tx-odd", "amount_cents": 999,
                "status": "succeeded"}),
        )
        .await;
        assert_eq!(confirmed["outcome"], "to_refund", "{confirmed}");
        crate::common::players::verify_account(&app, "nora").await;
        let mut ids = Vec::new();
        for _ in 0..2 {
            ids.push(withdraw(&app, 1000).await);
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
        let firefox = app.another_browser(FIREFOX);
        let chrome = app.another_browser(CHROME);
        let third = app.another_browser(CHROME);
        for browser in [&firefox, &chrome, &third] {
            assert_eq!(browser.login("seb", PASSWORD).await.0, StatusCode::OK);
        }
        let body = expect(StatusCode::OK, firefox.get("/api/account/sessions").await);
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
        let stranger = app.another_browser(CHROME);
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
        let body = expect(
            StatusCode::OK,
            firefox
                .post(&format!("/api/account/sessions/{chrome_id}/end"), json!({}))
                .await,
        );
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
        let body = expect(
            StatusCode::OK,
            firefox
                .post("/api/account/sessions/end-others", json!({}))
                .await,
        );
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
        let (first, secret) = logged_in(&app, "olga", Role::Operator).await;
        // A TOTP code is accepted once: the second login takes the next one.
        app.clock.advance_ms(31_000);
        let second = Console::logs_in(&app, "olga", CONSOLE_PASSWORD, &secret)
            .await
            .unwrap();
        let trail = count(&app, "SELECT COUNT(*) FROM trail").await;
        for (current, new, field) in refused_changes(CONSOLE_PASSWORD, "a new console password") {
            let refused = first
                .post(
                    "/console/api/password",
                    json!({"current_password": current, "new_password": new}),
                )
                .await;
            assert_invalid(&refused, field);
        }
        assert_eq!(count(&app, "SELECT COUNT(*) FROM trail").await, trail);
        let body = first.ok("/console/api/password", json!({"current_password": CONSOLE_PASSWORD, "new_password": "a new console password"})).await;
        assert_eq!(body["sessions_ended"], 1);
        assert_eq!(first.get("/console/api/me").await.0, StatusCode::OK);
        assert_eq!(
            second.get("/console/api/me").await.0,
            StatusCode::UNAUTHORIZED
        );
        app.clock.advance_ms(31_000);
        let old = Console::logs_in(&app, "olga", CONSOLE_PASSWORD, &secret).await;
        assert_eq!(old.err().map(|e| e.0), Some(StatusCode::UNAUTHORIZED));
        assert!(
            Console::logs_in(&app, "olga", "a new console password", &secret)
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
