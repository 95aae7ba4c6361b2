//! The reminder window that blocks play until acknowledged, and deposits declined or over the cap.

use crate::account::browser::*;
use crate::common::Harness;
use crate::common::page::ESCAPE;
use serde_json::{Value, json};

// The page is the same on either database (its PostgreSQL smoke test is
// api::plays::browser::a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake).
on_sqlite!(
    the_reminder_window_comes_when_due_blocks_play_until_acknowledged_and_says_the_time_played,
    a_payment_declined_or_over_the_cap_shows_failed_or_is_refused_and_credits_nothing,
);

async fn the_reminder_window_comes_when_due_blocks_play_until_acknowledged_and_says_the_time_played(
    h: &Harness,
) {
    let (site, browser) = setup(h, 1280, 900).await;
    let base = &site.base;
    browser.open_quickly(base, "reminded", 10000).await;
    // Money to play with: a deposit paid on the sandbox's page.
    browser.ask_deposit("10").await;
    browser.click("#pay").await;
    assert_eq!(browser.deposit_outcome().await, "credited");

    browser
        .execute("document.querySelector('[data-testid=reminder-every]').value = '5'")
        .await;
    browser
        .click_until(
            "[data-testid=reminder-save]",
            "document.querySelector('[data-testid=reminder-notice]').textContent !== ''",
        )
        .await;
    assert_eq!(
        browser.get_json("/api/account").await["reminder_every_minutes"],
        json!(5)
    );
    browser.click("[data-testid=brand]").await;
    browser.wait_ready("game", "play").await;
    assert!(
        !browser
            .execute("return document.querySelector('#dlg-reminder').open")
            .await
            .as_bool()
            .unwrap()
    );

    // Five minutes of play pass on the page's clock.
    browser.reminded_after(5 * 60, 5 * 60).await;
    browser.settled().await;
    browser.screenshot("account-reminder").await;
    // Escape does not dismiss it (once the page has handled the key), and play waits.
    browser.press_handled(ESCAPE).await;
    assert_eq!(
        browser
            .execute("return document.querySelector('#dlg-reminder').open")
            .await,
        json!(true)
    );
    assert_eq!(
        browser
            .execute("return document.querySelector('[data-testid=play]').disabled")
            .await,
        json!(true)
    );
    let balance = browser.balance_cents().await;
    let before = browser.server_state().await;
    assert_eq!(before.1, Vec::<Value>::new(), "no play before the reminder");
    // From here every request the page sends is recorded.
    browser.requests_sent().await;
    // The click is handled within this call; a purchase it asked late
    // would still be among the requests counted once play has gone on.
    browser
        .execute("document.querySelector('[data-testid=play]').click()")
        .await;
    assert_eq!(
        browser
            .execute("return document.querySelector('#dlg-howto').open")
            .await,
        json!(false),
        "no purchase while the reminder waits"
    );
    assert_eq!(browser.balance_cents().await, balance);
    assert_eq!(
        browser.server_state().await,
        before,
        "nothing debited, no play bought, by the server's account"
    );

    let mut sent = browser.requests_sent().await;
    assert_eq!(
        purchases(&sent),
        0,
        "no purchase asked while the reminder waits: {sent:?}"
    );

    // Acknowledged: play goes on, and the window does not come back before the next 5 minutes.
    browser
        .click_until(
            "[data-testid=reminder-ok]",
            "!document.querySelector('#dlg-reminder').open && !document.querySelector('[data-testid=play]').disabled",
        )
        .await;
    // The page's reminder check runs now (it runs each second and on its
    // clock's moves): no window before the next 5 minutes.
    assert_eq!(
        browser
            .execute(
                "window.tresorClock.advance(0); return document.querySelector('#dlg-reminder').open"
            )
            .await,
        json!(false)
    );
    let play = browser.play_a_game_accepting_rules().await;
    assert_eq!(play["state"], json!("finished"));
    // The one purchase asked since the reminder came is this game's, and
    // the server holds no play before it.
    sent.extend(browser.requests_sent().await);
    assert_eq!(purchases(&sent), 1, "{sent:?}");
    assert_eq!(browser.server_state().await.1, vec![play["id"].clone()]);
    browser.reminded_after(5 * 60, 10 * 60).await;
    browser.click("[data-testid=reminder-ok]").await;
    browser.close_without_console_errors().await;
}

async fn a_payment_declined_or_over_the_cap_shows_failed_or_is_refused_and_credits_nothing(
    h: &Harness,
) {
    let (site, browser) = setup(h, 1280, 900).await;
    let base = &site.base;
    // A 20 € weekly cap on deposits, for the second payment below.
    browser.open_quickly(base, "declined", 2000).await;
    browser.ask_deposit("15").await;
    browser.click("#decline").await;
    assert_eq!(browser.deposit_outcome().await, "failed");
    let id = browser
        .execute("return document.querySelector('[data-testid=deposit-outcome]').dataset.id")
        .await;
    let deposit = browser
        .get_json(&format!("/api/account/deposits/{}", id.as_str().unwrap()))
        .await;
    assert_eq!(deposit["state"], json!("failed"));
    let text = browser.text("[data-testid=deposit-outcome]").await;
    assert!(text.contains("n'a pas abouti"), "{text}");
    browser.screenshot("account-deposit-failed").await;
    assert_eq!(browser.balance_cents().await, 0);
    assert_eq!(
        browser.server_state().await,
        (json!(0), vec![]),
        "nothing credited, by the server's account"
    );

    // Over what is left of the deposit cap: refused when asked (it used to be
    // paid, then only refunded), the reason under the amount, the player still
    // on the account screen, nothing paid or credited. (A payment confirmed
    // past the cap is still recorded to refund: tests/it/account.rs.)
    browser
        .click_until(
            "[data-testid=nav-account]",
            "!document.querySelector('#pay-form').hidden",
        )
        .await;
    browser.fill("[data-testid=pay-amount]", "25").await;
    browser.click("[data-testid=pay-submit]").await;
    let text = browser.wait_text("[data-testid=pay-error]").await;
    assert!(
        !text.is_empty() && browser.execute("return location.pathname").await == json!("/"),
        "{text}"
    );
    browser.screenshot("account-deposit-over-the-cap").await;
    assert_eq!(browser.balance_cents().await, 0);
    assert_eq!(browser.server_state().await, (json!(0), vec![]));
    let statement = browser.get_json("/api/account/statement").await;
    assert_eq!(statement["movements"], json!([]));
    assert_eq!(statement["balance_cents"], json!(0));
    // The browser logs the refusal it was answered (403), and nothing else.
    let errors = browser.console_errors().await;
    assert!(
        errors
            .iter()
            .all(|e| e.contains("/api/account/deposits") && e.contains("403")),
        "console errors: {errors:?}"
    );
    browser.close().await;
    crate::common::assert_ledger_balances(&h.connect().await).await;
}
