//! Browser tests of the catalogue on the players' site: the lobby, the
//! scratch card « Trésor Express » (`games/tresor-express.toml`) played with
//! the pointer, the keyboard and « Tout gratter » to a win and to a loss,
//! then the island, and the history naming each play's game; in French and
//! in English, axe-core clean, on a 360 px phone with reduced motion.
//!
//! Which unit a purchase gets is the block's shuffle: the tests buy (through
//! the page) until a winning and a losing card have both come, reading each
//! card's outcome from the API as it is bought (a third of the cards win).

use crate::browser_console::add_operator;
use crate::common::axe::axe_source;
use crate::common::browser::{Browser, Turn, browser_paths, browser_turn};
use crate::common::{Harness, Server, cookie_client, post, register_and_deposit};
use serde_json::{Value, json};
use std::time::Duration;

// The page is the same on either database (its PostgreSQL smoke test is
// browser::a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake).
on_sqlite!(a_player_picks_the_scratch_card_in_the_lobby_wins_loses_then_plays_the_island);

on_sqlite!(
    the_scratch_card_is_played_with_the_keyboard_alone,
    the_scratch_card_fits_a_phone_and_honours_reduced_motion,
    the_console_shows_emissions_sales_and_payout_by_game,
);

const SCRATCH: &str = "tresor-express";
const ISLAND: &str = "ile-au-tresor";
const TAB: &str = "\u{E004}";
const ENTER: &str = "\u{E007}";
const ESCAPE: &str = "\u{E00C}";
const SPACE: &str = "\u{E00D}";

/// The real server selling the repository's catalogue (`games/`: the island
/// and the scratch card, each with its demo emission), and a browser; or
/// `None` (skipped) without Chromium. Holds this test's turn.
struct Site {
    base: String,
    /// The operator's listener (the console).
    admin: String,
    _server: Server,
    _turn: Turn,
}

async fn setup(h: &Harness, width: u32, height: u32) -> Option<(Site, Browser)> {
    let turn = browser_turn().await;
    let (chromium, chromedriver) = browser_paths()?;
    let games = concat!(env!("CARGO_MANIFEST_DIR"), "/../../games");
    let server = h.server(&["--games".to_owned(), games.to_owned()]).await;
    the_scratch_card_is_on_sale(&server.base).await;
    let browser = Browser::start(&chromium, &chromedriver, width, height).await;
    let site = Site {
        base: server.base.clone(),
        admin: server.admin_base.clone(),
        _server: server,
        _turn: turn,
    };
    Some((site, browser))
}

/// Waits until the catalogue says « Trésor Express » is on sale.
async fn the_scratch_card_is_on_sale(base: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let games: Value = reqwest::get(format!("{base}/api/games"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let on_sale = games.as_array().into_iter().flatten().any(|game| {
            game["id"] == json!(SCRATCH)
                && game["stakes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|s| s["on_sale"] == json!(true))
        });
        if on_sale {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the scratch card never went on sale: {games}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Registers a demo player through the API from inside the page, with 50 €,
/// then reloads as that player at `path` (`?fast=1#/games`, say).
async fn register(browser: &Browser, base: &str, username: &str, path: &str) {
    browser.goto(&format!("{base}/{path}")).await;
    let script = format!(
        "const done = arguments[arguments.length - 1];
         const post = (path, body) => fetch(path, {{method: 'POST', credentials: 'same-origin',
           headers: {{'Content-Type': 'application/json', 'X-Requested-With': 'tresor'}},
           body: JSON.stringify(body)}});
         post('/api/register', {{username: '{username}', password: 'a long enough password', adult: true, accept_rules: true}})
           .then(() => post('/api/demo/deposit', {{amount_cents: 5000}}))
           .then((r) => {{ localStorage.setItem('tresor.session', '1'); done(r.status); }})
           .catch((e) => done(String(e)));"
    );
    assert_eq!(browser.execute_async(&script).await, json!(200));
    browser
        .execute("document.body.dataset.ready = ''; location.reload();")
        .await;
    browser
        .wait_for("document.body.dataset.ready === 'true' && document.body.dataset.user === 'in'")
        .await;
}

/// `GET path` with the page's session.
async fn fetch(browser: &Browser, path: &str) -> Value {
    browser
        .execute_async(&format!(
            "const done = arguments[arguments.length - 1];
             fetch('{path}', {{credentials: 'same-origin'}}).then((r) => r.json()).then(done, (e) => done(String(e)));"
        ))
        .await
}

/// How a card is scratched.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Scratch {
    /// A drag over each cell's foil, with a mouse or a finger.
    Pointer(&'static str),
    /// Enter or Space on each cell, Tab between them.
    Keyboard,
    /// « Tout gratter ».
    RevealAll,
}

/// Drags the pointer across the middle of the `index`-th cell, edge to edge.
async fn drag_across(browser: &Browser, index: usize, pointer: &str) {
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
async fn buy_a_card(browser: &Browser, stake_cents: i64) -> Value {
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
    let play = fetch(browser, &format!("/api/plays/{}", id.as_str().unwrap())).await;
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
async fn scratch_the_card(browser: &Browser, play: &Value, how: Scratch) -> Value {
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
    let finished = fetch(browser, &format!("/api/plays/{id}")).await;
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
        browser
            .wait_for("document.querySelector('#dlg-win').open")
            .await;
        let amount = browser
            .execute("return document.querySelector('[data-testid=win-amount]').textContent")
            .await;
        let amount = amount.as_str().unwrap();
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
async fn dismiss_the_win(browser: &Browser, prize: i64, with_escape: bool) {
    if prize > 0 {
        if with_escape {
            browser.press(&[ESCAPE]).await;
        } else {
            browser.click("[data-testid=win-close]").await;
        }
    }
    browser
        .wait_for("!document.querySelector('#dlg-win').open")
        .await;
}

/// Buys and scratches cards until one has won and one has lost, each path
/// of `paths` taken in turn; returns the finished plays.
async fn until_a_win_and_a_loss(browser: &Browser, paths: &[Scratch], shots: &str) -> Vec<Value> {
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
            tokio::time::sleep(Duration::from_millis(200)).await;
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
async fn lobby_cards(browser: &Browser) -> Value {
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

/// Plays one island game with the mouse, from the island's screen.
async fn play_the_island(browser: &Browser) -> Value {
    browser
        .wait_for("document.body.dataset.screen === 'game' && !document.querySelector('[data-testid=play]').disabled")
        .await;
    browser.click("[data-testid=play]").await;
    browser
        .wait_for("document.querySelector('#dlg-howto').open")
        .await;
    browser.click("[data-testid=howto-close]").await;
    browser
        .wait_for("document.querySelector('#screen-game').dataset.mode === 'playing'")
        .await;
    for number in 1..=4 {
        browser.click("[data-testid=throw]").await;
        browser
            .wait_for(&format!(
                "document.querySelector('#pips').dataset.used === '{number}' && !document.querySelector('[data-testid=throw]').disabled
                 || document.querySelector('#screen-game').dataset.mode === 'finished'"
            ))
            .await;
    }
    browser
        .wait_for("document.querySelector('#screen-game').dataset.mode === 'finished'")
        .await;
    let id = browser
        .execute("return document.querySelector('#screen-game').dataset.playId")
        .await;
    let play = fetch(browser, &format!("/api/plays/{}", id.as_str().unwrap())).await;
    dismiss_the_win(
        browser,
        play["outcome"]["prize_cents"].as_i64().unwrap(),
        false,
    )
    .await;
    play
}

/// The history's rows: `[play id, game id, game name shown]`.
async fn history_rows(browser: &Browser, count: usize) -> Value {
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

async fn a_player_picks_the_scratch_card_in_the_lobby_wins_loses_then_plays_the_island(
    h: &Harness,
) {
    let Some((site, browser)) = setup(h, 1280, 900).await else {
        return;
    };
    let axe = axe_source();
    let base = &site.base;
    register(&browser, base, "gratteuse", "?fast=1#/").await;

    // The lobby, in French: the island first, then the scratch card, each
    // with its stakes and payout rates; picked by a click on the card.
    browser.click("[data-testid=nav-games]").await;
    let cards = lobby_cards(&browser).await;
    assert_eq!(
        cards,
        json!([
            [
                ISLAND,
                "island",
                "L'Ile au Trésor",
                [50, 100, 200],
                ["70,00 %", "70,00 %", "70,00 %"]
            ],
            [
                SCRATCH,
                "scratch",
                "Trésor Express",
                [100, 200],
                ["65,00 %", "65,00 %"]
            ],
        ]),
    );
    browser.screenshot("games-lobby-fr").await;
    if let Some(source) = &axe {
        browser.assert_accessible(source, "the lobby (fr)").await;
    }
    browser
        .click(&format!("[data-testid=game-card][data-game={SCRATCH}]"))
        .await;
    browser
        .wait_for("document.body.dataset.screen === 'scratch' && !document.querySelector('[data-testid=scratch-play]').disabled")
        .await;
    assert_eq!(
        browser.execute("return location.hash").await,
        json!(format!("#/play/{SCRATCH}")),
        "the game chosen is in the address"
    );
    assert_eq!(
        browser
            .execute("return document.querySelector('[data-testid=scratch-title]').textContent")
            .await,
        json!("Trésor Express")
    );
    if let Some(source) = &axe {
        browser
            .assert_accessible(source, "the scratch card (fr)")
            .await;
    }

    // Cards until a win and a loss: by mouse drags, then « Tout gratter ».
    let plays = until_a_win_and_a_loss(
        &browser,
        &[Scratch::Pointer("mouse"), Scratch::RevealAll],
        "games-scratch-fr",
    )
    .await;
    let live = browser
        .execute("return document.querySelector('#live').textContent")
        .await;
    assert!(
        live.as_str().unwrap().contains("Partie gagnée")
            && live.as_str().unwrap().contains("Partie perdue"),
        "results are spoken: {live}"
    );
    if let Some(source) = &axe {
        browser
            .assert_accessible(source, "a finished scratch card (fr)")
            .await;
    }

    // Back to the lobby, then the island, as it always was.
    browser.click("[data-testid=scratch-lobby]").await;
    lobby_cards(&browser).await;
    browser
        .click(&format!("[data-testid=game-link-{ISLAND}]"))
        .await;
    let island = play_the_island(&browser).await;
    assert_eq!(island["game"]["id"], json!(ISLAND), "{island}");

    // The history names each play's game.
    browser.click("[data-testid=nav-history]").await;
    // (The history's first page: 20 plays.)
    let page = (plays.len() + 1).min(20);
    let rows = history_rows(&browser, page).await;
    let mut expected: Vec<Value> = plays
        .iter()
        .chain([&island])
        .map(|p| json!([p["id"], p["game"]["id"], p["game"]["name"]["fr"]]))
        .collect();
    expected.reverse();
    expected.truncate(page);
    assert_eq!(rows, json!(expected));
    assert_eq!(rows[0][2], json!("L'Ile au Trésor"));
    assert_eq!(rows[1][2], json!("Trésor Express"));
    browser.screenshot("games-history-fr").await;
    if let Some(source) = &axe {
        browser.assert_accessible(source, "the history (fr)").await;
    }

    // So does the statement, beside each stake and win.
    // A stake row for each play: the island's newest, then every card's
    // (as many as the statement's first page of 20 rows holds).
    browser.execute("location.hash = '#/statement';").await;
    let shown = browser
        .wait_for(
            "(() => { const rows = [...document.querySelectorAll('[data-testid=statement-row]')];
               return rows.length > 0 && [rows.length, rows.filter((r) => r.dataset.movement === 'stake')
                 .map((r) => r.cells[1].textContent)]; })()",
        )
        .await;
    let (rows, lines): (usize, Vec<String>) = serde_json::from_value(shown).unwrap();
    let stakes = if rows < 20 { plays.len() + 1 } else { 2 };
    assert!(
        lines.len() >= 2 && (rows == 20 || lines.len() == stakes),
        "{rows} rows, {stakes} stakes expected: {lines:?}"
    );
    assert!(
        lines[0].ends_with("· L'Ile au Trésor")
            && lines[1..].iter().all(|l| l.ends_with("· Trésor Express")),
        "{lines:?}"
    );

    // A card's receipt, checked on the fairness page, names its game.
    let card = &plays[0];
    let receipt = fetch(&browser, &format!("/api/plays/{}/receipt", card["id"])).await;
    browser.click("[data-testid=nav-fairness]").await;
    browser
        .wait_for("document.body.dataset.screen === 'fairness'")
        .await;
    // Every block names its game, and a published one's command re-checks
    // it with its game's definition (the island's needs none).
    let named = browser
        .wait_for(
            "document.querySelectorAll('[data-testid=block-row]').length > 0 && \
             Array.from(document.querySelectorAll('[data-testid=block-row]'), (row) => \
               row.querySelector('[data-testid=block-game]').textContent)",
        )
        .await;
    let named: Vec<String> = serde_json::from_value(named).unwrap();
    assert!(
        named.iter().any(|n| n == "Trésor Express")
            && named.iter().any(|n| n == "L'Ile au Trésor")
            && named
                .iter()
                .all(|n| n == "Trésor Express" || n == "L'Ile au Trésor"),
        "{named:?}"
    );
    let commands = browser
        .execute(
            "const main = document.querySelector('script[type=module]').src; \
             return import(main.replace(/main\\.js$/, 'fairness.js')).then((m) => [ \
               m.verifyCommand({ secret: 's', commitment: 'c', stake_cents: 100, game: 'tresor-express' }), \
               m.verifyCommand({ secret: 's', commitment: 'c', stake_cents: 50, game: 'ile-au-tresor' })]);",
        )
        .await;
    assert_eq!(
        commands,
        serde_json::json!([
            "tresor block verify --secret s --commitment c --stake 100 --game games/tresor-express.toml",
            "tresor block verify --secret s --commitment c --stake 50"
        ])
    );
    browser
        .execute(&format!(
            "document.querySelector('[data-testid=receipt-text]').value = {};",
            serde_json::to_string(&receipt.to_string()).unwrap()
        ))
        .await;
    browser.click("[data-testid=receipt-check]").await;
    let said = browser
        .wait_for("document.querySelector('[data-testid=receipt-result]').dataset.result === 'ok' && document.querySelector('[data-testid=receipt-result]').textContent.replace(/\\s/g, ' ')")
        .await;
    let said = said.as_str().unwrap();
    assert!(
        said.contains(&format!(
            "partie n° {} : Trésor Express, mise de 1 €",
            card["id"]
        )),
        "{said}"
    );
    browser.click("[data-testid=nav-history]").await;

    // In English: the history, the lobby and a card shown again.
    browser.click("[data-testid=lang]").await;
    browser
        .wait_for("document.documentElement.lang === 'en'")
        .await;
    let rows = history_rows(&browser, page).await;
    assert_eq!(rows[0][2], json!("Treasure Island"));
    assert_eq!(rows[1][2], json!("Treasure Express"));
    if let Some(source) = &axe {
        browser.assert_accessible(source, "the history (en)").await;
    }
    // The last card, replayed from its row: every cell uncovered at once.
    let last = &plays[plays.len() - 1];
    browser
        .click(&format!(
            "[data-testid=history-row][data-play-id='{}'] [data-testid=history-replay]",
            last["id"]
        ))
        .await;
    browser
        .wait_for("document.body.dataset.screen === 'scratch' && document.querySelector('#screen-scratch').dataset.mode === 'replay'")
        .await;
    let shown = browser
        .execute(
            "return [...document.querySelectorAll('[data-testid=scratch-cell]')].map((c) => [c.dataset.state, Number(c.dataset.cents)])",
        )
        .await;
    let expected: Vec<Value> = last["scenario"]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| json!(["uncovered", c]))
        .collect();
    assert_eq!(shown, json!(expected));
    if let Some(source) = &axe {
        browser
            .assert_accessible(source, "a card shown again (en)")
            .await;
    }
    browser.click("[data-testid=nav-games]").await;
    let cards = lobby_cards(&browser).await;
    assert_eq!(cards[0][2], json!("Treasure Island"));
    assert_eq!(cards[1][2], json!("Treasure Express"));
    assert_eq!(cards[1][4], json!(["65.00%", "65.00%"]));
    browser.screenshot("games-lobby-en").await;
    if let Some(source) = &axe {
        browser.assert_accessible(source, "the lobby (en)").await;
    }
    // A card in English, to a win and a loss again, with « Reveal all ».
    browser
        .click(&format!("[data-testid=game-link-{SCRATCH}]"))
        .await;
    browser
        .wait_for("document.body.dataset.screen === 'scratch' && !document.querySelector('[data-testid=scratch-play]').disabled")
        .await;
    assert_eq!(
        browser
            .execute("return [document.querySelector('[data-testid=scratch-all]').textContent, document.querySelector('[data-testid=scratch-title]').textContent]")
            .await,
        json!(["Reveal all", "Treasure Express"])
    );
    until_a_win_and_a_loss(&browser, &[Scratch::RevealAll], "games-scratch-en").await;
    if let Some(source) = &axe {
        browser
            .assert_accessible(source, "a finished scratch card (en)")
            .await;
    }
    browser.close_without_console_errors().await;
}

async fn the_scratch_card_is_played_with_the_keyboard_alone(h: &Harness) {
    let Some((site, browser)) = setup(h, 1280, 900).await else {
        return;
    };
    // At normal speed: no `?fast=1`.
    register(&browser, &site.base, "clavier", "#/games").await;
    browser
        .wait_for("document.querySelectorAll('[data-testid=game-card]').length >= 2")
        .await;

    // Tab to the scratch card's name in the lobby, Enter picks it.
    let mut presses = 0;
    while browser
        .execute("return document.activeElement.dataset.testid")
        .await
        != json!(format!("game-link-{SCRATCH}"))
    {
        browser.press(&[TAB]).await;
        presses += 1;
        assert!(presses < 40, "the lobby's cards are not reachable with Tab");
    }
    browser.press(&[ENTER]).await;
    browser
        .wait_for("document.body.dataset.screen === 'scratch' && !document.querySelector('[data-testid=scratch-play]').disabled")
        .await;

    let mut won = false;
    let mut lost = false;
    let mut cards = 0;
    while !(won && lost) {
        assert!(cards < 40, "no win and loss in 40 cards");
        // Tab to « Jouer » (from wherever the focus is), Enter buys.
        let mut presses = 0;
        while browser
            .execute("return document.activeElement.dataset.testid")
            .await
            != json!("scratch-play")
        {
            browser.press(&[TAB]).await;
            presses += 1;
            assert!(presses < 40, "« Jouer » is not reachable with Tab");
        }
        let before = browser.balance_cents().await;
        browser.press(&[ENTER]).await;
        let id = browser
            .wait_for("document.querySelector('#screen-scratch').dataset.mode === 'scratching' && document.querySelector('#screen-scratch').dataset.playId")
            .await;
        let play = fetch(&browser, &format!("/api/plays/{}", id.as_str().unwrap())).await;
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
    let Some((site, browser)) = setup(h, 1280, 900).await else {
        return;
    };
    browser.phone(360, 740).await;
    browser
        .post(
            "/goog/cdp/execute",
            json!({"cmd": "Emulation.setEmulatedMedia", "params": {
                "features": [{"name": "prefers-reduced-motion", "value": "reduce"}],
            }}),
        )
        .await;
    register(
        &browser,
        &site.base,
        "telephone",
        &format!("#/play/{SCRATCH}"),
    )
    .await;
    browser
        .wait_for("document.body.dataset.screen === 'scratch' && !document.querySelector('[data-testid=scratch-play]').disabled")
        .await;
    assert_eq!(
        browser
            .execute("return matchMedia('(prefers-reduced-motion: reduce)').matches")
            .await,
        json!(true)
    );
    let play = buy_a_card(&browser, 100).await;
    // The page fits the screen; the card takes its width, each cell a good
    // finger's size.
    let mut widths = json!(null);
    for _ in 0..30 {
        widths = browser
            .execute("return [window.innerWidth, document.documentElement.scrollWidth]")
            .await;
        if widths == json!([360, 360]) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
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
    tokio::time::sleep(Duration::from_millis(200)).await;
    browser.screenshot("games-phone-finished").await;
    if let Some(source) = axe_source() {
        browser
            .assert_accessible(&source, "the scratch card on a phone")
            .await;
    }
    dismiss_the_win(
        &browser,
        finished["outcome"]["prize_cents"].as_i64().unwrap(),
        false,
    )
    .await;
    browser.close_without_console_errors().await;
}

/// A player buys `cards` scratch cards at 1 € through the API and scratches
/// each; returns the prizes they won, in cents.
async fn scratch_cards_through_the_api(base: &str, cards: usize) -> i64 {
    let client = cookie_client();
    register_and_deposit(&client, base, "api_scratcher", 10_000).await;
    let mut prizes = 0;
    for n in 0..cards {
        let (status, play) = post(
            &client,
            &format!("{base}/api/plays"),
            &json!({"stake_cents": 100, "game": SCRATCH}),
            Some(&format!("scratch-card-{n}")),
        )
        .await
        .unwrap();
        assert_eq!(status, 201, "{play}");
        let (status, play) = post(
            &client,
            &format!("{base}/api/plays/{}/throws", play["id"]),
            &json!({}),
            None,
        )
        .await
        .unwrap();
        assert_eq!(status, 200, "{play}");
        assert_eq!(play["state"], json!("finished"), "{play}");
        prizes += play["outcome"]["prize_cents"].as_i64().unwrap();
    }
    prizes
}

async fn the_console_shows_emissions_sales_and_payout_by_game(h: &Harness) {
    let Some((site, browser)) = setup(h, 1280, 900).await else {
        return;
    };
    let prizes = scratch_cards_through_the_api(&site.base, 6).await;
    add_operator(h, "gina", "operator");
    browser.log_in(&site.admin, "gina", None).await;

    // The dashboard: each game's sales and payout beside its table's rate.
    let per_game = browser
        .wait_for(
            "(() => { const rows = [...document.querySelectorAll('[data-testid=per-game-row]')];
               return rows.length === 2 && rows.map((r) => [r.dataset.game, Number(r.dataset.stakesCents), Number(r.dataset.prizesCents)]); })()",
        )
        .await;
    assert_eq!(
        per_game,
        json!([[ISLAND, 0, 0], [SCRATCH, 600, prizes]]),
        "the island first, then the scratch card's six 1 € cards"
    );
    let stakes = browser
        .execute(
            "return [...document.querySelectorAll(`[data-testid=per-game-stake][data-game=${'tresor-express'}]`)]
               .map((r) => [Number(r.dataset.stakeCents), Number(r.dataset.sold), r.dataset.tablePercent])",
        )
        .await;
    assert_eq!(stakes, json!([[100, 6, "65.00"], [200, 0, "65.00"]]));
    let heading = browser
        .execute("return document.querySelector(`[data-testid=per-game-row][data-game=tresor-express] h3`).textContent")
        .await;
    assert!(
        heading
            .as_str()
            .unwrap()
            .starts_with("Treasure Express: €6.00 taken"),
        "{heading}"
    );
    // Each game has its own bars per stake: stakes taken, prizes won and
    // what its table expects.
    let chart = browser
        .execute(
            "const chart = document.querySelector(`[data-testid=per-game-chart][data-game=tresor-express]`);
             return [chart.querySelector('svg title').textContent,
                     ...[...chart.querySelectorAll('svg rect.bar title')].map((t) => t.textContent)]",
        )
        .await;
    let chart: Vec<String> = serde_json::from_value(chart).unwrap();
    let unsold = browser
        .execute("return document.querySelectorAll(`[data-testid=per-game-chart][data-game=ile-au-tresor]`).length")
        .await;
    assert_eq!(unsold, json!(0), "no bars for a game that has sold nothing");
    assert_eq!(
        chart.len(),
        7,
        "a title and three bars for each of two stakes: {chart:?}"
    );
    assert_eq!(
        chart[0],
        "Treasure Express: stakes taken, prizes won and expected by its table, per stake"
    );
    assert_eq!(chart[1], "€1.00, Stakes taken: €6.00");
    assert_eq!(chart[4], "€2.00, Stakes taken: €0.00");
    assert!(
        chart[5].starts_with("€2.00, Prizes won: €0.00"),
        "{chart:?}"
    );
    browser
        .execute("document.querySelector('[data-testid=per-game]').scrollIntoView()")
        .await;
    browser.screenshot("console-dashboard-by-game").await;
    if let Some(source) = axe_source() {
        browser
            .assert_accessible(&source, "the dashboard by game")
            .await;
    }

    // Emissions and blocks name their game; the form picks a game, then
    // one of its stakes.
    browser.open("emissions").await;
    let games = browser
        .wait_for(
            "document.querySelectorAll('#emission-game option').length === 2 &&
             [...document.querySelectorAll('#emission-game option')].map((o) => [o.value, o.textContent])",
        )
        .await;
    assert_eq!(
        games,
        json!([[ISLAND, "Treasure Island"], [SCRATCH, "Treasure Express"]])
    );
    browser
        .execute(&format!(
            "const select = document.querySelector('#emission-game'); select.value = '{SCRATCH}';
             select.dispatchEvent(new Event('change', {{bubbles: true}}));"
        ))
        .await;
    let stakes = browser
        .execute("return [...document.querySelectorAll('#emission-stake option')].map((o) => Number(o.value))")
        .await;
    assert_eq!(stakes, json!([100, 200]));
    browser
        .execute("document.querySelector('#emission-stake').value = '200';")
        .await;
    browser.click("[data-testid=emission-create]").await;
    let text = browser
        .wait_for("document.querySelector('#confirm').open && document.querySelector('#confirm-text').textContent")
        .await;
    assert!(
        text.as_str()
            .unwrap()
            .starts_with("1 block of Treasure Express at €2.00"),
        "{text}"
    );
    browser.confirm().await;
    let (status, answer) = browser.call("GET", "/console/api/emissions").await;
    assert_eq!(status, 200, "{answer}");
    let newest = answer["emissions"]
        .as_array()
        .unwrap()
        .iter()
        .max_by_key(|e| e["id"].as_i64())
        .unwrap()
        .clone();
    assert_eq!(newest["game"]["id"], json!(SCRATCH), "{newest}");
    let blocks = newest["blocks"].as_array().unwrap();
    assert_eq!(blocks.len(), 1, "{newest}");
    assert_eq!(blocks[0]["stake_cents"], json!(200));
    let row = browser
        .wait_for(&format!(
            "document.querySelector('[data-testid=emission-row][data-emission-id=\"{}\"]')?.dataset.game",
            newest["id"]
        ))
        .await;
    assert_eq!(row, json!(SCRATCH));
    let shown = browser
        .execute(&format!(
            "return [document.querySelector('[data-testid=emission-row][data-emission-id=\"{}\"] [data-testid=emission-game]').textContent,
                     document.querySelector('[data-testid=block-row][data-block-id=\"{}\"]').dataset.game]",
            newest["id"], blocks[0]["id"]
        ))
        .await;
    assert_eq!(shown, json!(["Treasure Express", SCRATCH]));
    crate::browser_console::shot(&browser, "console-emissions-by-game").await;
    if let Some(source) = axe_source() {
        browser
            .assert_accessible(&source, "emissions by game")
            .await;
    }

    // In French: the names and the words.
    browser
        .goto(&format!("{}/console?lang=fr#/dashboard", site.admin))
        .await;
    let heading = browser
        .wait_for("document.querySelector(`[data-testid=per-game-row][data-game=tresor-express] h3`)?.textContent.replace(/\\s/g, ' ')")
        .await;
    assert!(
        heading
            .as_str()
            .unwrap()
            .starts_with("Trésor Express : 6,00 € reçus"),
        "{heading}"
    );
    let title = browser
        .execute("return document.querySelector('#per-game-title').textContent")
        .await;
    assert_eq!(title, json!("Ventes et taux de retour par jeu"));
    browser.only_expected_errors(&[]).await;
    browser.close().await;
}
