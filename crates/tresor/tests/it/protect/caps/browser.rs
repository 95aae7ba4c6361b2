//! A stake cap chosen at registration refuses the purchase over it; the button and the status
//! follow the language after a game.

use crate::api::browser::*;
use crate::common::Harness;
use crate::common::page::CONTRAST;
use serde_json::json;

// The page is the same on either database (its PostgreSQL smoke test is
// api::plays::browser::a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake).
on_sqlite!(
    a_stake_cap_chosen_at_registration_refuses_the_purchase_that_would_pass_it,
    after_a_game_the_button_still_reads_jouer_and_the_status_follows_the_language,
);

async fn a_stake_cap_chosen_at_registration_refuses_the_purchase_that_would_pass_it(h: &Harness) {
    let (server, browser) = setup(h, 1280, 900).await;
    let base = &server.base;
    browser
        .fill_the_registration_form(base, "prudent_player")
        .await;
    // A 1 € weekly cap on stakes, chosen on the registration form.
    browser
        .execute("const input = document.querySelector('[data-testid=register-stake-limit]'); input.value = '1';")
        .await;
    browser.submit_the_registration_form().await;
    browser
        .click_until(
            "[data-testid=nav-account]",
            "document.querySelector('[data-testid=cap-stake]')?.dataset.limitCents === '100'",
        )
        .await;
    browser.click("[data-testid=deposit]").await;
    browser.wait_balance(2000).await;
    browser.back_to_the_game().await;

    // The first 1 € game fits the cap.
    let play = browser.play_a_game(100, None).await;
    browser
        .dismiss_win(play["outcome"]["prize_cents"].as_i64().unwrap())
        .await;
    let balance = browser.balance_cents().await;
    let before = browser.server_state().await;

    // The second would pass it: refused, with the server's message, nothing debited.
    browser.click("label:has(> [data-testid=stake-100])").await;
    browser
        .click_until(
            "[data-testid=play]",
            "document.querySelector('[data-testid=game-status]').dataset.code === 'stake_limit_reached'",
        )
        .await;
    let message = browser.text("[data-testid=game-status]").await;
    assert!(
        message.contains("1.00 €"),
        "the message names the cap: {message}"
    );
    browser.screenshot("capped-purchase-refused").await;
    assert_eq!(
        browser.balance_cents().await,
        balance,
        "nothing was debited"
    );
    assert_eq!(
        browser.server_state().await,
        before,
        "nothing debited, no play bought, by the server's account"
    );
    browser.close().await;
}

async fn after_a_game_the_button_still_reads_jouer_and_the_status_follows_the_language(
    h: &Harness,
) {
    let (server, browser) = setup(h, 1280, 900).await;
    let base = &server.base;
    browser.register_with_50(base, "lena_meyer").await;
    let play_button = "return document.querySelector('[data-testid=play]').textContent";
    let status = "return document.querySelector('#game-status').textContent";
    // The how-to-play window is opaque and its text passes WCAG AA (4.5:1)
    // against both ends of its background: the island does not show through.
    browser.press_play().await;
    let contrast = browser
        .execute(&[
            CONTRAST,
            "const d = document.querySelector('#dlg-howto');
             const style = getComputedStyle(d);
             const stops = (style.backgroundImage.match(/rgba?\\([^)]*\\)/g) ?? []).map(rgb);
             const base = rgb(style.backgroundColor);
             const texts = [...d.querySelectorAll('li, td, h2')].map((n) => rgb(getComputedStyle(n).color));
             return { opaque: base.length === 3 || base[3] === 1, stops: stops.length,
                      worst: Math.min(...texts.flatMap((t) => [base, ...stops].map((b) => ratio(t, b)))) };",
        ]
        .concat())
        .await;
    assert_eq!(contrast["opaque"], json!(true), "{contrast}");
    assert_eq!(contrast["stops"], json!(2), "{contrast}");
    assert!(
        contrast["worst"].as_f64().unwrap() >= 4.5,
        "the how-to-play text is readable: {contrast}"
    );
    browser.close_the_howto().await;
    let play = browser.throw_to_the_end().await;
    browser
        .dismiss_win(play["outcome"]["prize_cents"].as_i64().unwrap())
        .await;
    // Article 4.1 names the button « Jouer », after a game as before one.
    assert_eq!(browser.execute(play_button).await, json!("Jouer"));
    let french = browser.execute(status).await;
    assert!(
        french.as_str().unwrap().starts_with("Partie terminée"),
        "{french}"
    );
    browser.switch_language("en").await;
    assert_eq!(browser.execute(play_button).await, json!("Play"));
    let english = browser.execute(status).await;
    assert!(
        english.as_str().unwrap().starts_with("Game over"),
        "{english}"
    );
    browser.close_without_console_errors().await;
}
