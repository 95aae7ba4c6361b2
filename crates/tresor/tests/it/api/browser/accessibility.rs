//! Every screen of the game passes axe-core in French and in English; a
//! whole game is played with the keyboard alone.

use super::*;
use crate::common::axe::assert_no_findings;
use crate::common::page::{CONTRAST, ENTER, ESCAPE, SPACE, TAB};

// The page is the same on either database (its PostgreSQL smoke test is
// api::plays::browser::a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake).
on_sqlite!(
    every_screen_of_the_game_passes_axe_core_in_french_and_in_english,
    a_whole_game_can_be_played_with_the_keyboard_alone_at_normal_speed,
);

/// axe-core (WCAG 2.1 A and AA) on every screen and window of the game, in
/// both languages: no serious or critical finding. Collects all the findings
/// before failing, so one run lists everything to fix.
async fn every_screen_of_the_game_passes_axe_core_in_french_and_in_english(h: &Harness) {
    let Some(axe) = axe_source() else {
        return;
    };
    let (server, browser) = setup(h, 1280, 900).await;
    let base = &server.base;
    let mut findings = Vec::new();
    let mut screens = 0;
    for lang in ["fr", "en"] {
        let mut check = async |name: &str| {
            let found = browser.axe_findings(&axe).await;
            screens += 1;
            findings.extend(found.into_iter().map(|f| format!("{lang} {name}: {f}")));
        };
        browser.goto(&format!("{base}/?fast=1#/")).await;
        browser.execute("document.body.dataset.ready = '';").await;
        browser
            .execute(&format!(
                "localStorage.clear(); localStorage.setItem('tresor.lang', '{lang}'); location.reload();"
            ))
            .await;
        browser
            .wait_for("document.body.dataset.ready === 'true'")
            .await;
        browser
            .wait_for(&format!("document.documentElement.lang === '{lang}'"))
            .await;
        check("home").await;
        // A focus ring on the navy header stands out from it (WCAG 1.4.11:
        // 3:1; the blue ring was 2.4:1).
        browser.press(&["\u{E004}", "\u{E004}"]).await;
        let ring = browser
            .execute(&[
                CONTRAST,
                "const link = document.activeElement;
                 if (!link.closest('header.top') || !link.matches(':focus-visible')) return 'focus: ' + link.outerHTML;
                 const ring = rgb(getComputedStyle(link).outlineColor);
                 const navy = (getComputedStyle(document.querySelector('header.top')).backgroundImage.match(/rgba?\\([^)]*\\)/g) ?? []).map(rgb);
                 return Math.min(...navy.map((n) => ratio(ring, n)));",
            ]
            .concat())
            .await;
        assert!(
            ring.as_f64().unwrap() >= 3.0,
            "the focus ring on the header: {ring}:1"
        );
        for screen in ["login", "register", "rules", "fairness"] {
            browser
                .click_until(
                    &format!("[data-testid=nav-{screen}]"),
                    &format!("document.body.dataset.screen === '{screen}'"),
                )
                .await;
            if screen == "rules" {
                browser
                    .wait_for("document.querySelector('[data-testid=rules-text] table')")
                    .await;
                // Headings go down one level at a time (h1, then h2: it jumped to h3).
                let levels = browser
                    .execute(
                        "return [...document.querySelectorAll('#screen-rules :is(h1, h2, h3, h4)')]
                           .map((h) => Number(h.tagName[1]))",
                    )
                    .await;
                let levels: Vec<i64> = serde_json::from_value(levels).unwrap();
                assert!(
                    levels.windows(2).all(|w| w[1] <= w[0] + 1),
                    "heading levels of the rules: {levels:?}"
                );
            }
            if screen == "fairness" {
                browser
                    .wait_for("document.querySelectorAll('[data-testid=block-row]').length > 0")
                    .await;
            }
            check(screen).await;
        }
        browser
            .register_in_page(base, "?fast=1#/", &format!("axe_{lang}"), 5000, None)
            .await;
        check("game, logged in").await;
        // Games until one wins (a bounded few), each screen of a game checked.
        let mut won = false;
        for game in 0..20 {
            if browser.balance_cents().await < 100 {
                browser.deposit_on_the_account_screen(2000).await;
                browser.back_to_the_game().await;
            }
            browser.press_play().await;
            if game == 0 {
                browser
                    .wait_for("document.querySelectorAll('#howto-prizes tr').length === 9")
                    .await;
                check("how-to-play window").await;
            }
            browser.close_the_howto().await;
            if game == 0 {
                check("game, playing").await;
            }
            let play = browser.throw_to_the_end().await;
            let prize = play["outcome"]["prize_cents"].as_i64().unwrap();
            if prize > 0 {
                browser.wait_open("#dlg-win").await;
                // The window's entrance animation ends before colours are read.
                browser.settled().await;
                check("congratulation window").await;
                // axe-core leaves text over a gradient unchecked: the prize,
                // the one number the player came for, is measured here
                // against the window's colours with its gold rays over them
                // (large text: 3:1 at least; it was 2.3:1).
                let contrast = browser
                    .execute(&[
                        CONTRAST,
                        "const style = getComputedStyle(document.querySelector('#dlg-win'));
                         const grounds = [rgb(style.backgroundColor),
                           ...(style.backgroundImage.match(/rgba?\\([^)]*\\)/g) ?? []).map(rgb)];
                         const ray = rgb(getComputedStyle(document.querySelector('#dlg-win .burst')).backgroundImage.match(/rgba?\\([^)]*\\)/)[0]);
                         const over = (top, under) => under.slice(0, 3).map((c, i) => top[i] * top[3] + c * (1 - top[3]));
                         const text = rgb(getComputedStyle(document.querySelector('.win-amount')).color);
                         return Math.min(...grounds.flatMap((g) => [ratio(text, g), ratio(text, over(ray, g))]));",
                    ]
                    .concat())
                    .await;
                assert!(
                    contrast.as_f64().unwrap() >= 3.0,
                    "the prize is readable on its window: {contrast}:1"
                );
                won = true;
            }
            browser.dismiss_win(prize).await;
            if game == 0 {
                check("game, finished").await;
            }
            if won {
                break;
            }
        }
        assert!(
            won,
            "no game won in 20: the congratulation window was not checked"
        );
        // Each screen checked once its answers are shown: the plays, the
        // sessions and caps, the movements.
        for (screen, loaded) in [
            (
                "history",
                "document.querySelector('[data-testid=history-row]')",
            ),
            (
                "account",
                "document.querySelector('[data-testid=session-device]')
                 && document.querySelector('[data-testid=cap-deposit]')?.dataset.limitCents",
            ),
        ] {
            browser
                .click_until(
                    &format!("[data-testid=nav-{screen}]"),
                    &format!(
                        "document.body.dataset.screen === '{screen}' && document.body.dataset.ready === 'true' && {loaded}"
                    ),
                )
                .await;
            browser.settled().await;
            check(screen).await;
        }
        browser
            .goto_until(
                &format!("{base}/?fast=1#/statement"),
                "document.body.dataset.screen === 'statement' && document.querySelector('#screen-statement').dataset.loaded !== undefined",
            )
            .await;
        browser.settled().await;
        check("statement").await;
        browser
            .click_until(
                "[data-testid=logout]",
                "document.body.dataset.user === 'out'",
            )
            .await;
    }
    assert_no_findings(&findings, &format!("{screens} screens"));
    browser.close().await;
}

async fn a_whole_game_can_be_played_with_the_keyboard_alone_at_normal_speed(h: &Harness) {
    let (server, browser) = setup(h, 1280, 900).await;
    const LEFT: &str = "\u{E012}";
    browser
        .register_in_page(&server.base, "#/", "keyboard_only", 5000, None)
        .await;

    // Tab to the stake choice, pick 0,50 € with an arrow key, then Tab to "Jouer".
    let mut presses = 0;
    while browser.execute("return document.activeElement.name").await != json!("stake") {
        browser.press(&[TAB]).await;
        presses += 1;
        assert!(presses < 30, "the stake choice is not reachable with Tab");
    }
    browser.press(&[LEFT]).await;
    assert_eq!(
        browser
            .execute("return document.querySelector('[data-testid=stake-50]').checked")
            .await,
        json!(true)
    );
    browser.tab_to("play").await;
    let before = browser.balance_cents().await;
    browser.press(&[ENTER]).await;
    browser.wait_open("#dlg-howto").await;
    browser
        .wait_for("document.querySelector('#screen-game').dataset.playId")
        .await;
    // The window has the focus, and Escape closes it.
    assert_eq!(
        browser
            .execute("return document.querySelector('#dlg-howto').contains(document.activeElement)")
            .await,
        json!(true)
    );
    browser.press(&[ESCAPE]).await;
    browser
        .wait_for("document.activeElement === document.querySelector('[data-testid=throw]')")
        .await;
    for number in 1..=4 {
        browser
            .wait_for("document.activeElement === document.querySelector('[data-testid=throw]') || document.querySelector('#screen-game').dataset.mode === 'finished'")
            .await;
        browser
            .press(&[if number % 2 == 0 { SPACE } else { ENTER }])
            .await;
        browser.wait_throw(number).await;
    }
    browser.wait_mode("finished").await;
    let play = browser.fetch_play(browser.play_id().await).await;
    let prize = play["outcome"]["prize_cents"].as_i64().unwrap();
    if prize > 0 {
        browser.wait_open("#dlg-win").await;
        browser.press(&[ESCAPE]).await;
    }
    browser
        .wait_for("document.activeElement === document.querySelector('[data-testid=play]')")
        .await;
    assert_eq!(browser.found_symbols().await, revealed(&play));
    let expected = before - 50 + prize;
    browser.wait_balance(expected).await;
    let live = browser.text("#live").await;
    assert!(
        live.contains("Lancer 4"),
        "each throw is announced to screen readers: {live}"
    );
    browser.close().await;
}
