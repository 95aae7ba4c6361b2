//! The scratch card played with the keyboard alone, and fitted to a phone with reduced motion.

use crate::common::Harness;
use crate::common::page::ENTER;
use crate::games_sold::browser::*;
use serde_json::json;

// The page is the same on either database (its PostgreSQL smoke test is
// api::plays::browser::a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake).
on_sqlite!(
    the_scratch_card_is_played_with_the_keyboard_alone,
    the_scratch_card_fits_a_phone_and_honours_reduced_motion,
);

async fn the_scratch_card_is_played_with_the_keyboard_alone(h: &Harness) {
    let (site, browser) = setup(h, 1280, 900).await;
    // At normal speed: no `?fast=1`.
    browser
        .register_in_page(&site.base, "#/games", "clavier", 5000, None)
        .await;
    browser
        .wait_for("document.querySelectorAll('[data-testid=game-card]').length >= 2")
        .await;

    // Tab to the scratch card's name in the lobby, Enter picks it.
    browser.tab_to(&format!("game-link-{SCRATCH}")).await;
    browser.press(&[ENTER]).await;
    browser.wait_ready("scratch", "scratch-play").await;

    let mut won = false;
    let mut lost = false;
    let mut cards = 0;
    while !(won && lost) {
        assert!(cards < 40, "no win and loss in 40 cards");
        // Tab to « Jouer » (from wherever the focus is), Enter buys.
        browser.tab_to("scratch-play").await;
        let before = browser.balance_cents().await;
        browser.press(&[ENTER]).await;
        let id = browser
            .wait_for("document.querySelector('#screen-scratch').dataset.mode === 'scratching' && document.querySelector('#screen-scratch').dataset.playId")
            .await;
        let play = browser
            .get_json(&format!("/api/plays/{}", id.as_str().unwrap()))
            .await;
        // The focus is on the first cell: Enter and Space scratch, Tab moves on.
        let finished = scratch_the_card(&browser, &play, Scratch::Keyboard).await;
        let prize = finished["outcome"]["prize_cents"].as_i64().unwrap();
        dismiss_the_win(&browser, prize, true).await;
        // « Jouer » has the focus again for the next card.
        browser
            .wait_for(
                "document.activeElement === document.querySelector('[data-testid=scratch-play]')",
            )
            .await;
        browser.wait_balance(before - 100 + prize).await;
        let live = browser
            .execute("return document.querySelector('#live').lastElementChild.textContent")
            .await;
        let said = if prize > 0 {
            "Partie gagnée"
        } else {
            "Partie perdue"
        };
        assert!(live.as_str().unwrap().starts_with(said), "{live}");
        won |= prize > 0;
        lost |= prize == 0;
        cards += 1;
    }
    // Each cell says where it is and, uncovered, what it shows.
    let labels = browser
        .execute(
            "return [...document.querySelectorAll('[data-testid=scratch-cell]')].map((c) => c.getAttribute('aria-label'))",
        )
        .await;
    let first = labels[0].as_str().unwrap();
    assert!(
        first.starts_with("Case 1 (ligne 1, colonne 1) : ") && first.contains('€'),
        "{labels}"
    );
    browser.close_without_console_errors().await;
}

async fn the_scratch_card_fits_a_phone_and_honours_reduced_motion(h: &Harness) {
    let (site, browser) = setup(h, 1280, 900).await;
    browser.phone(360, 740).await;
    browser
        .post(
            "/goog/cdp/execute",
            json!({"cmd": "Emulation.setEmulatedMedia", "params": {
                "features": [{"name": "prefers-reduced-motion", "value": "reduce"}],
            }}),
        )
        .await;
    browser
        .register_in_page(
            &site.base,
            &format!("#/play/{SCRATCH}"),
            "telephone",
            5000,
            None,
        )
        .await;
    browser.wait_ready("scratch", "scratch-play").await;
    assert_eq!(
        browser
            .execute("return matchMedia('(prefers-reduced-motion: reduce)').matches")
            .await,
        json!(true)
    );
    let play = buy_a_card(&browser, 100).await;
    // The page fits the screen; the card takes its width, each cell a good
    // finger's size.
    browser.settled().await;
    let widths = browser
        .execute("return [window.innerWidth, document.documentElement.scrollWidth]")
        .await;
    assert_eq!(widths, json!([360, 360]), "the page fits 360 px");
    let sizes = browser
        .execute(
            "const grid = document.querySelector('[data-testid=scratch-grid]').getBoundingClientRect();
             const cell = document.querySelector('[data-testid=scratch-cell]').getBoundingClientRect();
             return [grid.width, cell.width, cell.height];",
        )
        .await;
    assert!(
        sizes[0].as_f64().unwrap() >= 300.0 && sizes[1].as_f64().unwrap() >= 80.0,
        "grid and cell widths: {sizes}"
    );
    // No foil fades: it is gone the moment a cell uncovers.
    assert_eq!(
        browser
            .execute("return getComputedStyle(document.querySelector('.foil')).transitionDuration")
            .await,
        json!("0s")
    );
    // A finger drags over the first cell: the amounts come, the cell uncovers.
    drag_across(&browser, 0, "touch").await;
    browser
        .wait_for("document.querySelector(\"[data-testid=scratch-cell][data-index='0']\").dataset.state === 'uncovered'")
        .await;
    assert_eq!(
        browser
            .execute("return document.querySelector(\"[data-testid=scratch-cell][data-index='0'] .foil\").hidden")
            .await,
        json!(true),
        "the foil went at once"
    );
    browser.screenshot("games-phone-scratching").await;
    let finished = scratch_the_card(&browser, &play, Scratch::Pointer("touch")).await;
    browser.settled().await;
    browser.screenshot("games-phone-finished").await;
    browser
        .assert_accessible_if_axe("the scratch card on a phone")
        .await;
    dismiss_the_win(
        &browser,
        finished["outcome"]["prize_cents"].as_i64().unwrap(),
        false,
    )
    .await;
    browser.close_without_console_errors().await;
}
