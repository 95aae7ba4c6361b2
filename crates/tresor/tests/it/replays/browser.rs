//! The history shows the last play and replays a finished one; the rules are one click away.

use crate::api::browser::*;
use crate::common::Harness;
use crate::common::fetch_json;
use serde_json::{Value, json};

// The page is the same on either database (its PostgreSQL smoke test is
// api::plays::browser::a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake).
on_sqlite!(
    the_history_shows_the_last_play_at_once_and_replays_a_finished_one,
    the_rules_are_one_click_away_in_french_and_in_english,
);

async fn the_history_shows_the_last_play_at_once_and_replays_a_finished_one(h: &Harness) {
    let (server, browser) = setup(h, 1280, 900).await;
    let base = &server.base;
    browser.register_with_50(base, "historian").await;
    let finished = browser.play_a_game(100, None).await;
    let prize = finished["outcome"]["prize_cents"].as_i64().unwrap();
    browser.dismiss_win(prize).await;

    // Bought but never played: it is in the history at once, with its outcome.
    browser.press_play().await;
    // The purchase runs behind the how-to window: wait for its answer.
    browser
        .wait_for(&format!(
            "(document.querySelector('#screen-game').dataset.playId ?? '{0}') !== '{0}'",
            finished["id"]
        ))
        .await;
    let id = browser.play_id().await;
    browser.click("[data-testid=howto-close]").await;
    browser.click("[data-testid=nav-history]").await;
    let first = browser
        .wait_for("document.querySelector('[data-testid=history-row]')?.dataset.playId")
        .await;
    assert_eq!(first, json!(id.to_string()));
    let row = browser
        .execute("const r = document.querySelector('[data-testid=history-row]'); return [r.dataset.state, r.dataset.prizeCents, r.textContent];")
        .await;
    let play = browser.fetch_play(id).await;
    assert_eq!(row[0], json!("in_progress"));
    assert_eq!(row[1], json!(play["outcome"]["prize_cents"].to_string()));
    let unit = &play["unit"];
    let reference = format!(
        "Émission {} · bloc {} · n° {}",
        unit["emission"], unit["block"], unit["index"]
    );
    assert!(row[2].as_str().unwrap().contains(&reference), "{row}");
    browser.screenshot("06-history").await;
    // At 1280 px, in French (the longer words), the header is one line:
    // brand, links and the logged-in chips side by side.
    let rows = browser
        .execute(
            "return new Set(['.brand', '.nav', '.top-side'].map((s) =>
               Math.round(document.querySelector(s).getBoundingClientRect().top / 40))).size",
        )
        .await;
    assert_eq!(rows, json!(1), "the header holds on one line at 1280 px");

    // The finished game replays on the map, with the same symbols.
    browser
        .click_until(
            "[data-testid=history-replay]",
            &format!(
                "document.querySelector('#screen-game').dataset.playId === '{}'",
                finished["id"]
            ),
        )
        .await;
    browser
        .wait_for("document.querySelector('#pips').dataset.used === '4' && document.querySelector('#game-status').dataset.kind")
        .await;
    assert_eq!(browser.found_symbols().await, revealed(&finished));

    // Back to the game: the unfinished one is resumed, on a phone-sized screen.
    browser.phone(360, 780).await;
    browser
        .click_until(
            "#replay-back",
            &format!("document.querySelector('#screen-game').dataset.playId === '{id}' && document.querySelector('#screen-game').dataset.mode === 'playing'"),
        )
        .await;
    browser.throw_and_wait(1).await;
    // The layout viewport follows the emulated phone at its next layout,
    // once a throw's last animation frames are over.
    browser.settled().await;
    let widths = browser
        .execute("return [window.innerWidth, document.documentElement.scrollWidth]")
        .await;
    // What sticks out, if anything does (named in the failure; the inside of
    // an SVG drawing is clipped by its box and left out).
    let wider = browser
        .execute(
            "return [...document.querySelectorAll('body *')]
               .filter((e) => !(e.ownerSVGElement) && e.getClientRects().length
                 && e.getBoundingClientRect().right > 360.5)
               .slice(0, 8)
               .map((e) => e.tagName + '#' + e.id + '.' + (e.getAttribute('class') || '').slice(0, 40)
                 + ' ' + Math.round(e.getBoundingClientRect().right))",
        )
        .await;
    assert_eq!(
        widths,
        json!([360, 360]),
        "the page fits a 360 px wide screen; wider: {wider}"
    );
    browser.screenshot("07-phone").await;
    // A compact header (the menu behind a button) and the island at the
    // screen's full width (it was 230 px of header and a 200 px island).
    let layout = browser
        .execute(
            "return [document.querySelector('header.top').getBoundingClientRect().height,
                     document.querySelector('#map').getBoundingClientRect().width,
                     getComputedStyle(document.querySelector('#nav')).display]",
        )
        .await;
    assert!(
        layout[0].as_f64().unwrap() <= 64.0 && layout[1].as_f64().unwrap() >= 320.0,
        "header height, island width: {layout}"
    );
    assert_eq!(layout[2], json!("none"), "the links wait behind the menu");
    let titles = browser
        .execute(
            "return [...document.querySelectorAll('.panel-title')].filter((t) => t.scrollWidth > t.clientWidth)
               .map((t) => t.textContent)",
        )
        .await;
    assert_eq!(titles, json!([]), "the panels' titles fit");
    browser
        .click_until(
            "[data-testid=menu]",
            "getComputedStyle(document.querySelector('#nav')).display !== 'none' && document.querySelector('[data-testid=menu]').getAttribute('aria-expanded') === 'true'",
        )
        .await;
    browser.press(&["\u{E00C}"]).await;
    browser
        .wait_for("getComputedStyle(document.querySelector('#nav')).display === 'none' && document.activeElement.id === 'menu-toggle'")
        .await;
    browser.close().await;
}

async fn the_rules_are_one_click_away_in_french_and_in_english(h: &Harness) {
    let (server, browser) = setup(h, 1280, 900).await;
    let base = &server.base;
    browser.goto(&format!("{base}/")).await;
    browser.click("[data-testid=nav-rules]").await;
    let text = browser
        .wait_text_when(
            "document.querySelector('[data-testid=rules-text] table')",
            "[data-testid=rules-text]",
        )
        .await;
    assert!(text.contains("Description du jeu"));
    browser.click("[data-testid=lang]").await;
    let text = browser.wait_text_when("document.querySelector('[data-testid=rules-text]').dataset.lang === 'en' && document.querySelector('[data-testid=rules-text] table')", "[data-testid=rules-text]").await;
    assert!(text.contains("Description of the game"));
    // The choice of language is remembered.
    browser.goto(&format!("{base}/")).await;
    assert_eq!(
        browser
            .execute("return document.documentElement.lang")
            .await,
        json!("en")
    );
    assert_eq!(browser.text("[data-testid=play]").await, "Play");
    let footer = browser.text("footer").await;
    assert!(footer.contains("09-74-75-13-13"));

    // The fairness page lists every block with its commitment.
    browser
        .click_until(
            "[data-testid=nav-fairness]",
            "document.querySelectorAll('[data-testid=block-row]').length > 0",
        )
        .await;
    let shown = browser
        .execute(
            "return Array.from(document.querySelectorAll('[data-testid=block-row]'), (row) =>
               [Number(row.dataset.blockId), row.querySelector('[data-testid=block-commitment]').textContent])",
        )
        .await;
    let blocks = fetch_json(&format!("{base}/api/blocks")).await;
    let expected: Vec<Value> = blocks["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| json!([b["id"], b["commitment"]]))
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(shown, json!(expected));
    let text = browser.text("#screen-fairness").await;
    assert!(text.contains("tresor block verify"));
    browser.screenshot("fairness").await;

    browser.close_without_console_errors().await;
}
