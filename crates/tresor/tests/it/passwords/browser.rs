//! A forgotten password reset through the link in the outbox, in each language.

use crate::account::browser::*;
use crate::common::Harness;
use crate::common::browser::Browser;
use crate::common::page::PASSWORD;
use serde_json::json;

// The page is the same on either database (its PostgreSQL smoke test is
// api::plays::browser::a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake).
on_sqlite!(a_forgotten_password_is_reset_through_the_link_in_the_outbox,);

/// What the reset's screens say, in each language.
struct ResetWords {
    sent: &'static str,
    saved: &'static str,
    refused: &'static str,
}

const RESET_WORDS: [(&str, ResetWords); 2] = [
    (
        "fr",
        ResetWords {
            sent: "lien",
            saved: "enregistré",
            refused: "plus valable",
        },
    ),
    (
        "en",
        ResetWords {
            sent: "link",
            saved: "saved",
            refused: "no longer valid",
        },
    ),
];

async fn a_forgotten_password_is_reset_through_the_link_in_the_outbox(h: &Harness) {
    let (site, browser, outbox) = setup_with_outbox(h).await;
    for (lang, words) in &RESET_WORDS {
        reset_in(&browser, &site.base, outbox.path(), lang, words).await;
    }
    browser.close().await;
}

/// A player of `lang`'s page forgets the password and resets it through
/// the link the server wrote to its outbox; the link is used once.
async fn reset_in(
    browser: &Browser,
    base: &str,
    outbox: &std::path::Path,
    lang: &str,
    words: &ResetWords,
) {
    let username = format!("lea_{lang}");
    let email = format!("lea_{lang}@example.org");
    // The account, opened through the API.
    let client = reqwest::Client::builder()
        .cookie_store(true)
        .build()
        .unwrap();
    let opened = client
        .post(format!("{base}/api/account/open"))
        .header("x-requested-with", "tresor")
        .json(&json!({
            "username": username, "password": PASSWORD, "accept_rules": true,
            "identity": {"birth_name": format!("Martin {lang}"), "first_names": "Léa", "birth_date": "1990-07-14",
                         "birth_place": "Brest", "address": "2 quai de la Douane, 29200 Brest",
                         "email": email},
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status(), reqwest::StatusCode::CREATED);
    // The address confirmed by its link (a reset goes only to a confirmed one).
    let confirm = outbox_link(outbox, &email, "/#/confirm-email/").await;
    let token = confirm.rsplit('/').next().unwrap();
    let confirmed = client
        .post(format!("{base}/api/email/confirm"))
        .header("x-requested-with", "tresor")
        .json(&json!({"token": token}))
        .send()
        .await
        .unwrap();
    assert_eq!(confirmed.status(), reqwest::StatusCode::OK);
    // The page in `lang` (the switch remembered), logged out.
    browser.goto(&format!("{base}/?fast=1#/login")).await;
    browser.log_out_in_page().await;
    browser
        .reload_after(&format!(
            "localStorage.setItem('tresor.lang', '{lang}'); localStorage.removeItem('tresor.session');"
        ))
        .await;
    browser.wait_screen("login").await;
    browser
        .wait_for(&format!("document.documentElement.lang === '{lang}'"))
        .await;
    browser.click("[data-testid=forgot-link]").await;
    browser.wait_screen("forgot").await;
    let told = send_form(browser, "forgot", "email", &email).await;
    assert!(told.contains(words.sent), "{told}");
    browser
        .screenshot(&shot_name("account-password-forgotten", lang))
        .await;

    // The link the server wrote to its outbox opens the reset screen.
    let link = outbox_link(outbox, &email, "/#/reset/").await;
    assert!(link.starts_with(base), "{link}");
    browser.goto(&link).await;
    browser.wait_screen("reset").await;
    let done = send_form(browser, "reset", "password", "my brand new password").await;
    assert!(done.contains(words.saved), "{done}");
    browser
        .screenshot(&shot_name("account-password-reset", lang))
        .await;

    // The old password no longer opens the account; the new one does.
    let old = client
        .post(format!("{base}/api/login"))
        .header("x-requested-with", "tresor")
        .json(&json!({"username": username, "password": PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(old.status(), reqwest::StatusCode::UNAUTHORIZED);
    browser.goto(&format!("{base}/#/login")).await;
    browser.wait_screen("login").await;
    browser
        .log_in_with_the_form(&username, "my brand new password")
        .await;
    let me = browser.get_json("/api/me").await;
    assert_eq!(me["username"], json!(username), "{me}");

    // The same link again: refused, and said so in the page's language.
    browser.goto(&link).await;
    browser.wait_screen("reset").await;
    browser
        .type_into("[data-testid=reset-password]", "yet another password")
        .await;
    browser.click("[data-testid=reset-submit]").await;
    let refused = browser
        .wait_for("document.querySelector('[data-testid=reset-error]').dataset.code")
        .await;
    assert_eq!(refused, json!("invalid_token"));
    assert!(
        browser
            .text("[data-testid=reset-error]")
            .await
            .contains(words.refused)
    );
}

/// Types `text` into the field `FORM-FIELD` of the page's form `FORM`,
/// sends it, and waits for its notice (`FORM-notice`): what it says.
async fn send_form(browser: &Browser, form: &str, field: &str, text: &str) -> String {
    browser
        .type_into(&format!("[data-testid={form}-{field}]"), text)
        .await;
    browser.click(&format!("[data-testid={form}-submit]")).await;
    browser
        .wait_text(&format!("[data-testid={form}-notice]"))
        .await
}
