//! A suspended player told neutrally, and an IBAN or address changed with the password and
//! undone from the old address.

use crate::account::browser::*;
use crate::common::Harness;
use crate::common::page::PASSWORD;
use serde_json::json;

// The page is the same on either database (its PostgreSQL smoke test is
// api::plays::browser::a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake).
on_sqlite!(
    a_suspended_player_is_told_neutrally_in_both_languages,
    an_honest_player_changes_iban_and_address_with_the_password_and_the_old_address_undoes_it,
);

/// The operator's reason for the suspension: the staff's only.
const SUSPENSION_REASON: &str = "chargeback under review, case 4411";

async fn a_suspended_player_is_told_neutrally_in_both_languages(h: &Harness) {
    let (site, browser) = setup(h, 1280, 900).await;
    let db = h.connect().await;
    for (lang, suspended) in [("fr", "suspendu"), ("en", "suspended")] {
        let username = format!("sam_{lang}");
        // A player with 10 € of demo money, on the game screen in `lang`.
        browser
            .register_in_page(&site.base, "?fast=1#/", &username, 1000, Some(lang))
            .await;
        browser.wait_balance(1000).await;
        browser.wait_ready("game", "play").await;

        // The operator suspends the account: its sessions end.
        h.tresor_ok(&[
            "accounts",
            "suspend",
            &username,
            "--reason",
            SUSPENSION_REASON,
        ]);
        // A stake now: refused (the session is gone), and the page sends
        // the player to log in, with nothing of the reason.
        browser.click("[data-testid=play]").await;
        browser.wait_screen("login").await;
        let page = browser.execute("return document.body.innerText").await;
        assert!(!page.as_str().unwrap().contains("chargeback"), "{page}");
        let plays: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM plays p JOIN players u ON u.id = p.player_id WHERE u.username = $1",
        )
        .bind(&username)
        .fetch_one(&db.pool)
        .await
        .unwrap();
        assert_eq!(plays, 0, "no unit was sold to a suspended account");

        // Logging in again: in, to read (issue 35: a suspended account
        // reads its balance and statement), told neutrally that it is
        // suspended, in `lang`; staking is off.
        browser.log_in_with_the_form(&username, PASSWORD).await;
        browser.wait_balance(1000).await;
        browser.execute("location.hash = '#/account';").await;
        browser.wait_screen("account").await;
        let said = browser
            .wait_for(&format!(
                "(() => {{ const t = document.querySelector('#account-status-text').textContent;
                   return t.includes('{suspended}') && t; }})()"
            ))
            .await;
        let said = said.as_str().unwrap();
        assert!(
            !said.contains("chargeback"),
            "the reason is the staff's: {said}"
        );
        assert_eq!(
            browser
                .wait_for("document.querySelector('[data-testid=can-stake]')?.dataset.ok")
                .await,
            json!("false")
        );
        browser
            .screenshot(&shot_name("account-suspended-login", lang))
            .await;
        // Its session is a real one: logging out ends it.
        browser
            .click_until(
                "[data-testid=logout]",
                "document.body.dataset.user === 'out'",
            )
            .await;
    }
    // The browser logged the refusals this test asked for: the stake with
    // its ended session (401).
    browser.close_with_only_refusals(&[401, 403]).await;
    crate::common::assert_ledger_balances(&db).await;
}

/// Issue 32: the IBAN and address forms ask the current password (a wrong
/// one is told and changes nothing); the address change is undone from the
/// link the old address received, which logs the page out.
async fn an_honest_player_changes_iban_and_address_with_the_password_and_the_old_address_undoes_it(
    h: &Harness,
) {
    let (site, browser, outbox) = setup_with_outbox(h).await;
    let base = site.base.clone();
    browser.goto(&format!("{base}/?fast=1#/")).await;
    let body = json!({
        "username": "iris", "password": PASSWORD, "accept_rules": true,
        "identity": {"birth_name": "Durand", "first_names": "Iris", "birth_date": "1990-07-14",
                     "birth_place": "Lyon", "address": "1 rue de la Paix, 75002 Paris",
                     "email": "iris@example.org"},
        "iban": IBAN, "deposit_limit_cents": 100_000,
    });
    browser.open_account_in_page(&body, Some("en")).await;
    // The address confirmed: only a confirmed one gets the undo link.
    let confirm = outbox_link(outbox.path(), "iris@example.org", "/#/confirm-email/").await;
    browser
        .goto_until(
            &confirm,
            "document.querySelector('[data-testid=confirm-text]').dataset.kind === 'notice'",
        )
        .await;
    browser.goto(&format!("{base}/?fast=1#/account")).await;
    browser.reload_after("").await;
    browser.wait_screen("account").await;
    browser
        .wait_for("!document.querySelector('#iban-box').hidden && !document.querySelector('#email-box').hidden")
        .await;

    // A wrong password: told, nothing changed.
    browser
        .fill("[data-testid=iban-input]", "DE89 3704 0044 0532 0130 00")
        .await;
    browser
        .fill("[data-testid=iban-password]", "not my password")
        .await;
    browser.click("[data-testid=iban-save]").await;
    let told = browser.wait_text("[data-testid=iban-error]").await;
    assert!(told.contains("not your current password"), "{told}");
    assert!(
        browser
            .text("[data-testid=iban-current]")
            .await
            .contains("FR76")
    );
    // The right one: saved.
    browser.fill("[data-testid=iban-password]", PASSWORD).await;
    browser
        .click_until(
            "[data-testid=iban-save]",
            "document.querySelector('[data-testid=iban-current]').textContent.includes('DE89')",
        )
        .await;

    // The address, with the password.
    browser
        .fill("[data-testid=email-input]", "iris@example.net")
        .await;
    browser.fill("[data-testid=email-password]", PASSWORD).await;
    browser
        .click_until(
            "[data-testid=email-submit]",
            "document.querySelector('[data-testid=email-current]').textContent.includes('iris@example.net')",
        )
        .await;
    browser.screenshot("account-address-changed").await;

    // The link mailed to the old address undoes it: the page says so and
    // is logged out (every session ended).
    let link = outbox_link(outbox.path(), "iris@example.org", "/#/undo-email/").await;
    assert!(link.starts_with(&base), "{link}");
    browser.goto(&link).await;
    let done = browser
        .wait_text_when(
            "document.querySelector('[data-testid=confirm-text]').dataset.kind === 'notice'",
            "[data-testid=confirm-text]",
        )
        .await;
    assert!(done.contains("former e-mail address is back"), "{done}");
    browser.screenshot("account-address-change-undone").await;
    let me = browser
        .in_page("get('/api/account').then((r) => done(r.status));")
        .await;
    assert_eq!(me, json!(401));
    browser.close_with_only_refusals(&[401, 422]).await;
}
