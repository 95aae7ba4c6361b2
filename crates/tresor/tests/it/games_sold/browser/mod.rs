//! Browser tests of the catalogue on the players' site: the lobby, the
//! scratch card « Trésor Express » (`games/tresor-express.toml`) played with
//! the pointer, the keyboard and « Tout gratter » to a win and to a loss,
//! then the island, and the history naming each play's game; in French and
//! in English, axe-core clean, on a 360 px phone with reduced motion.
//!
//! Which unit a purchase gets is the block's shuffle: the tests buy (through
//! the page) until a winning and a losing card have both come, reading each
//! card's outcome from the API as it is bought (a third of the cards win).

use crate::common::staff::add_operator;

use crate::common::Harness;
use crate::common::browser::Browser;
use crate::common::page::{ENTER, ESCAPE, SPACE, Site, TAB};
use crate::common::wait::until;
use serde_json::{Value, json};
use std::time::Duration;

mod lobby;
mod odds;

pub(crate) const SCRATCH: &str = "tresor-express";

pub(crate) const ISLAND: &str = "ile-au-tresor";

/// The real server selling the repository's catalogue (`games/`: the island
/// and the scratch card, each with its demo emission), and a browser.
/// Holds this test's turn.
pub(crate) async fn setup(h: &Harness, width: u32, height: u32) -> (Site, Browser) {
    let games = concat!(env!("CARGO_MANIFEST_DIR"), "/../../games");
    let started = Site::start(h, &["--games".to_owned(), games.to_owned()], width, height).await;
    the_scratch_card_is_on_sale(&started.0.base).await;
    started
}

/// Waits until the catalogue says « Trésor Express » is on sale.
pub(crate) async fn the_scratch_card_is_on_sale(base: &str) {
    until(
        "the scratch card on sale",
        Duration::from_secs(20),
        move || async move {
            let games: Value = reqwest::get(format!("{base}/api/games"))
                .await
                .ok()?
                .json()
                .await
                .ok()?;
            games
                .as_array()
                .into_iter()
                .flatten()
                .any(|game| {
                    game["id"] == json!(SCRATCH)
                        && game["stakes"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .any(|s| s["on_sale"] == json!(true))
                })
                .then_some(())
        },
    )
    .await;
}

/// How a card is scratched.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Scratch {
    /// A drag over each cell's foil, with a mouse or a finger.
    Pointer(&'static str),
    /// Enter or Space on each cell, Tab between them.
    Keyboard,
    /// « Tout gratter ».
    RevealAll,
}

/// Drags the pointer across the middle of the `index`-th cell, edge to edge.
pub(crate) async fn drag_across(browser: &Browser, index: usize, pointer: &str) {
    // In view first (a phone shows part of the card), then where it is.
    let rect = browser
        .execute(&format!(
            "const cell = document.querySelector(\"[data-testid=scratch-cell][data-index='{index}']\");
             cell.scrollIntoView({{block: 'center'}});
             const r = cell.getBoundingClientRect();
             return [r.left, r.top, r.width, r.height];"
        ))
        .await;
    let [left, top, width, height] = [0, 1, 2, 3].map(|i| rect[i].as_f64().unwrap());
    let y = (top + height / 2.0).round() as i64;
    let (from, to) = (
        (left + 6.0).ceil() as i64,
        (left + width - 6.0).floor() as i64,
    );
    let middle = (from + to) / 2;
    browser
        .post(
            "/actions",
            json!({"actions": [{"type": "pointer", "id": pointer, "parameters": {"pointerType": pointer},
                "actions": [
                    {"type": "pointerMove", "duration": 0, "origin": "viewport", "x": from, "y": y},
                    {"type": "pointerDown", "button": 0},
                    {"type": "pointerMove", "duration": 120, "origin": "viewport", "x": middle, "y": y + 4},
                    {"type": "pointerMove", "duration": 120, "origin": "viewport", "x": to, "y": y},
                    {"type": "pointerUp", "button": 0},
                ]}]}),
        )
        .await;
}

/// Buys a card at `stake_cents` with « Jouer »; returns the play as the API
/// tells it (its outcome already fixed, its cells not yet revealed).
pub(crate) async fn buy_a_card(browser: &Browser, stake_cents: i64) -> Value {
    let before = browser
        .execute("return document.querySelector('#screen-scratch').dataset.playId ?? ''")
        .await;
    browser
        .click(&format!(
            "label:has(> [data-testid=scratch-stake-{stake_cents}])"
        ))
        .await;
    browser.click("[data-testid=scratch-play]").await;
    let id = browser
        .wait_for(&format!(
            "document.querySelector('#screen-scratch').dataset.mode === 'scratching'
             && document.querySelector('#screen-scratch').dataset.playId !== {before}
             && document.querySelector('#screen-scratch').dataset.playId",
        ))
        .await;
    let play = browser
        .get_json(&format!("/api/plays/{}", id.as_str().unwrap()))
        .await;
    assert_eq!(play["game"]["id"], json!(SCRATCH), "{play}");
    assert_eq!(play["scenario"]["kind"], json!("scratch"), "{play}");
    assert_eq!(play["scenario"]["cells"], Value::Null, "not revealed yet");
    assert_eq!(play["throws_left"], json!(1));
    play
}

/// Scratches the whole card `how`, waits for the result, and checks the page
/// shows what the server revealed: each cell's amount, the winning cells, the
/// exact prize in the congratulation window or the loss said so. Returns the
/// finished play.
pub(crate) async fn scratch_the_card(browser: &Browser, play: &Value, how: Scratch) -> Value {
    let id = play["id"].as_i64().unwrap();
    let cells = browser
        .execute("return document.querySelectorAll('[data-testid=scratch-cell]').length")
        .await
        .as_u64()
        .unwrap() as usize;
    assert_eq!(cells, 9, "a 3 × 3 card");
    match how {
        Scratch::Pointer(pointer) => {
            for index in 0..cells {
                drag_across(browser, index, pointer).await;
                browser
                    .wait_for(&format!(
                        "document.querySelector(\"[data-testid=scratch-cell][data-index='{index}']\").dataset.state === 'uncovered'"
                    ))
                    .await;
            }
        }
        Scratch::Keyboard => {
            browser
                .wait_for("document.activeElement?.dataset.testid === 'scratch-cell'")
                .await;
            for index in 0..cells {
                assert_eq!(
                    browser
                        .execute("return document.activeElement.dataset.index")
                        .await,
                    json!(index.to_string()),
                    "Tab goes from cell to cell"
                );
                browser
                    .press(&[if index % 2 == 0 { ENTER } else { SPACE }])
                    .await;
                browser
                    .wait_for(&format!(
                        "document.querySelector(\"[data-testid=scratch-cell][data-index='{index}']\").dataset.state === 'uncovered'"
                    ))
                    .await;
                if index + 1 < cells {
                    browser.press(&[TAB]).await;
                }
            }
        }
        Scratch::RevealAll => browser.click("[data-testid=scratch-all]").await,
    }
    browser
        .wait_for("document.querySelector('#screen-scratch').dataset.mode === 'finished'")
        .await;
    let finished = browser.fetch_play(id).await;
    assert_eq!(finished["state"], json!("finished"), "{finished}");
    let prize = finished["outcome"]["prize_cents"].as_i64().unwrap();
    assert_eq!(prize, play["outcome"]["prize_cents"].as_i64().unwrap());
    // The page shows the amounts the server revealed, cell for cell.
    let shown = browser
        .execute(
            "return [...document.querySelectorAll('[data-testid=scratch-cell]')].map((c) => Number(c.dataset.cents))",
        )
        .await;
    assert_eq!(shown, finished["scenario"]["cells"], "{finished}");
    let winners = browser
        .execute(
            "return [...document.querySelectorAll('[data-testid=scratch-cell].winner')].map((c) => Number(c.dataset.cents))",
        )
        .await;
    if prize > 0 {
        assert_eq!(winners, json!([prize, prize, prize]), "three cells win");
        browser.wait_open("#dlg-win").await;
        let amount = browser.text("[data-testid=win-amount]").await;
        let digits: String = amount.chars().filter(char::is_ascii_digit).collect();
        assert!(
            amount.contains('€') && digits == (prize / 100).to_string(),
            "the window shows exactly {prize} cents: {amount}"
        );
        assert_eq!(
            browser
                .execute(
                    "return document.querySelector('[data-testid=scratch-status]').dataset.kind"
                )
                .await,
            json!("won")
        );
    } else {
        assert_eq!(winners, json!([]));
        let status = browser
            .execute("return [document.querySelector('[data-testid=scratch-status]').dataset.kind, document.querySelector('#dlg-win').open]")
            .await;
        assert_eq!(status, json!(["lost", false]), "a loss, no window");
    }
    finished
}

/// Closes the congratulation window of a win (with the button, or Escape).
pub(crate) async fn dismiss_the_win(browser: &Browser, prize: i64, with_escape: bool) {
    if prize > 0 {
        if with_escape {
            browser.press(&[ESCAPE]).await;
        } else {
            browser.click("[data-testid=win-close]").await;
        }
    }
    browser.wait_closed("#dlg-win").await;
}

/// Buys and scratches cards until one has won and one has lost, each path
/// of `paths` taken in turn; returns the finished plays.
pub(crate) async fn until_a_win_and_a_loss(
    browser: &Browser,
    paths: &[Scratch],
    shots: &str,
) -> Vec<Value> {
    let mut plays = Vec::new();
    let (mut won, mut lost) = (false, false);
    while !(won && lost) {
        assert!(plays.len() < 40, "no win and loss in 40 cards: {plays:?}");
        let before = browser.balance_cents().await;
        let play = buy_a_card(browser, 100).await;
        browser.wait_balance(before - 100).await;
        if plays.is_empty() {
            browser.screenshot(&format!("{shots}-covered")).await;
        }
        let how = paths[plays.len() % paths.len()];
        let finished = scratch_the_card(browser, &play, how).await;
        let prize = finished["outcome"]["prize_cents"].as_i64().unwrap();
        if prize > 0 && !won {
            browser.settled().await;
            browser.screenshot(&format!("{shots}-win")).await;
        }
        if prize == 0 && !lost {
            browser.screenshot(&format!("{shots}-loss")).await;
        }
        dismiss_the_win(browser, prize, false).await;
        browser.wait_balance(before - 100 + prize).await;
        won |= prize > 0;
        lost |= prize == 0;
        plays.push(finished);
    }
    plays
}

/// The lobby's cards: `[id, kind, name, [stake cents…], [payout text…]]`
/// (any space as a plain one: ICU's French puts a no-break space before %).
pub(crate) async fn lobby_cards(browser: &Browser) -> Value {
    browser
        .wait_for("document.querySelectorAll('[data-testid=game-card]').length >= 2")
        .await;
    browser
        .execute(
            "return [...document.querySelectorAll('[data-testid=game-card]')].map((card) => [
               card.dataset.game, card.dataset.kind, card.querySelector('.game-name').textContent,
               [...card.querySelectorAll('tbody tr')].map((r) => Number(r.dataset.stakeCents)),
               [...card.querySelectorAll('tbody tr td.num')].map((td) => td.textContent.replace(/\\s/g, ' '))])",
        )
        .await
}

/// The history's rows: `[play id, game id, game name shown]`.
pub(crate) async fn history_rows(browser: &Browser, count: usize) -> Value {
    browser
        .wait_for(&format!(
            "document.querySelectorAll('[data-testid=history-row]').length === {count}"
        ))
        .await;
    browser
        .execute(
            "return [...document.querySelectorAll('[data-testid=history-row]')].map((r) => [
               Number(r.dataset.playId), r.dataset.game, r.querySelector('[data-testid=history-game]').textContent])",
        )
        .await
}
