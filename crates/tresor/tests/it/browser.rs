//! Browser tests: the real `tresor serve` binary, driven through a real
//! headless Chromium over WebDriver (chromedriver), the way a player uses it.
//!
//! The WebDriver client is shared (`common/browser.rs`); this file adds the
//! game's own vocabulary (play, throw, wait for a mode) and the tests.
//! Screenshots of the main states go to `target/screenshots/`.

use crate::common::axe::axe_source;
use crate::common::browser::{Browser, Turn, browser_paths, browser_turn};
use crate::common::{Harness, Server};
use serde_json::{Value, json};
use std::time::Duration;

// The page is the same on either database: its tests run on SQLite, and
// this one, a whole account's path through the page, on PostgreSQL too (the
// smoke test of the page on PostgreSQL; the database's own behaviour is
// tested without a browser).
on_both!(a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake);

on_sqlite!(
    a_reload_in_the_middle_of_a_game_resumes_it_where_it_stopped,
    a_whole_game_can_be_played_with_the_keyboard_alone_at_normal_speed,
    the_history_shows_the_last_play_at_once_and_replays_a_finished_one,
    the_rules_are_one_click_away_in_french_and_in_english,
    a_stake_cap_chosen_at_registration_refuses_the_purchase_that_would_pass_it,
    after_a_game_the_button_still_reads_jouer_and_the_status_follows_the_language,
    every_screen_of_the_game_passes_axe_core_in_french_and_in_english,
);

const STAKES: [i64; 3] = [50, 100, 200];

/// The real server on a free port with a fresh data directory, and this
/// test's turn (given back last, when all is stopped).
struct Site {
    base: String,
    _server: Server,
    _turn: Turn,
}

impl Site {
    async fn start(h: &Harness, turn: Turn) -> Site {
        let server = h.server(&[]).await;
        Site {
            base: server.base.clone(),
            _server: server,
            _turn: turn,
        }
    }
}

/// The game's own vocabulary, over the shared WebDriver client.
impl Browser {
    /// Waits until the game screen is in `mode` (buying, playing, finished…).
    async fn wait_mode(&self, mode: &str) {
        self.wait_for(&format!(
            "document.querySelector('#screen-game').dataset.mode === '{mode}'"
        ))
        .await;
    }

    /// Deposits with the account screen's button (the demo's 20 €), which
    /// must bring the balance to `expected_cents`.
    async fn deposit_on_the_account_screen(&self, expected_cents: i64) {
        self.click("[data-testid=nav-account]").await;
        self.click("[data-testid=deposit]").await;
        self.wait_balance(expected_cents).await;
    }

    /// Goes back to the game screen, ready to play.
    async fn back_to_the_game(&self) {
        self.click("[data-testid=brand]").await;
        self.wait_for("document.body.dataset.screen === 'game' && !document.querySelector('[data-testid=play]').disabled")
            .await;
    }

    /// Clicks "Jouer" and waits for the how-to-play window that opens over
    /// the purchase.
    async fn press_play(&self) {
        self.click("[data-testid=play]").await;
        self.wait_for("document.querySelector('#dlg-howto').open")
            .await;
    }

    /// Closes the how-to-play window and waits for the game to be playable.
    async fn close_the_howto(&self) {
        self.click("[data-testid=howto-close]").await;
        self.wait_mode("playing").await;
    }

    /// What the server says of the player's money and plays, through the
    /// API with the page's session: the balance and the ids of its plays.
    async fn server_state(&self) -> (Value, Vec<Value>) {
        let answer = self
            .execute_async(
                "const done = arguments[arguments.length - 1];
                 Promise.all(['/api/me', '/api/plays?limit=100'].map((path) =>
                   fetch(path, {credentials: 'same-origin'}).then((r) => r.json())))
                 .then(done, (e) => done(String(e)));",
            )
            .await;
        let (me, plays) = (&answer[0], &answer[1]);
        assert!(me["balance_cents"].is_i64(), "the balance: {answer}");
        let ids = plays["plays"]
            .as_array()
            .unwrap_or_else(|| panic!("the plays: {answer}"))
            .iter()
            .map(|play| play["id"].clone())
            .collect();
        (me["balance_cents"].clone(), ids)
    }

    /// Registers through the form, accepting the rules, and lands on the game.
    async fn register_with_the_form(&self, base: &str, username: &str) {
        self.fill_the_registration_form(base, username).await;
        self.submit_the_registration_form().await;
    }

    /// Opens the registration form and types a username and a password.
    async fn fill_the_registration_form(&self, base: &str, username: &str) {
        self.goto(&format!("{base}/?fast=1#/register")).await;
        self.type_into("[data-testid=register-username]", username)
            .await;
        self.type_into("[data-testid=register-password]", "a long enough password")
            .await;
    }

    /// Ticks both declarations, submits, and lands on the game.
    async fn submit_the_registration_form(&self) {
        self.click("[data-testid=register-adult]").await;
        self.click("[data-testid=register-accept]").await;
        self.click("[data-testid=register-submit]").await;
        self.wait_for(
            "document.body.dataset.user === 'in' && document.body.dataset.screen === 'game'",
        )
        .await;
    }

    /// Registers and deposits through the API from inside the page (for
    /// tests about something else), then reloads as that player.
    async fn register_quickly(&self, base: &str, username: &str, query: &str) {
        self.goto(&format!("{base}/{query}#/")).await;
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
        assert_eq!(self.execute_async(&script).await, json!(200));
        // Same URL, so reload by hand; the old page's "ready" mark goes first.
        self.execute("document.body.dataset.ready = ''; location.reload();")
            .await;
        self.wait_for("document.body.dataset.ready === 'true'")
            .await;
        self.wait_for("document.body.dataset.user === 'in'").await;
    }

    async fn play_id(&self) -> i64 {
        self.wait_for("document.querySelector('#screen-game').dataset.playId")
            .await
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    }

    async fn fetch_play(&self, id: i64) -> Value {
        self.execute_async(&format!(
            "const done = arguments[arguments.length - 1];
             fetch('/api/plays/{id}', {{credentials: 'same-origin'}}).then((r) => r.json()).then(done, (e) => done(String(e)));"
        ))
        .await
    }

    async fn found_symbols(&self) -> Vec<String> {
        let value = self
            .execute("return [...document.querySelectorAll('[data-testid=found-symbol]')].map((li) => li.dataset.symbol);")
            .await;
        serde_json::from_value(value).unwrap()
    }

    /// Presses "Lancer" and waits for the throw to be played out.
    async fn throw_and_wait(&self, number: usize) {
        self.click("[data-testid=throw]").await;
        self.wait_throw(number).await;
    }

    async fn wait_throw(&self, number: usize) {
        self.wait_for(&format!(
            "document.querySelector('#pips').dataset.used === '{number}' &&
             !document.querySelector('[data-testid=throw]').disabled ||
             document.querySelector('#screen-game').dataset.mode === 'finished'"
        ))
        .await;
    }

    /// Plays one whole game at `stake_cents` with the mouse; returns the play as the API tells it.
    async fn play_a_game(&self, stake_cents: i64, shots: Option<&str>) -> Value {
        // The radio button itself is invisible: a player clicks its label.
        self.click(&format!("label:has(> [data-testid=stake-{stake_cents}])"))
            .await;
        self.press_play().await;
        if let Some(prefix) = shots {
            self.wait_for("document.querySelector('#screen-game').dataset.mode === 'buying' && document.querySelectorAll('#howto-prizes tr').length === 9").await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            self.screenshot(&format!("{prefix}-how-to-play")).await;
        }
        self.close_the_howto().await;
        for number in 1..=4 {
            self.throw_and_wait(number).await;
            if number == 2
                && let Some(prefix) = shots
            {
                self.screenshot(&format!("{prefix}-mid-game")).await;
            }
        }
        self.wait_mode("finished").await;
        let id = self.play_id().await;
        self.fetch_play(id).await
    }

    /// Closes the congratulation window if one came (a winning game).
    async fn dismiss_win(&self, prize_cents: i64, shot: Option<&str>) {
        if prize_cents > 0 {
            self.wait_for("document.querySelector('#dlg-win').open")
                .await;
            if let Some(name) = shot {
                tokio::time::sleep(Duration::from_millis(300)).await;
                self.screenshot(name).await;
            }
            self.click("[data-testid=win-close]").await;
        }
        self.wait_for("!document.querySelector('#dlg-win').open")
            .await;
    }
}

/// The symbols a scenario's throws reveal, in order.
fn revealed(play: &Value) -> Vec<String> {
    play["scenario"]["throws"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["opened"].as_array().unwrap().clone())
        .map(|o| o["content"].as_str().unwrap().to_owned())
        .filter(|c| c != "empty")
        .collect()
}

/// Waits for this test's turn, then starts the server and a browser; or
/// says why the test is skipped.
async fn setup(h: &Harness, width: u32, height: u32) -> Option<(Site, Browser)> {
    let turn = browser_turn().await;
    let (chromium, chromedriver) = browser_paths()?;
    let server = Site::start(h, turn).await;
    let browser = Browser::start(&chromium, &chromedriver, width, height).await;
    Some((server, browser))
}

async fn a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake(h: &Harness) {
    let Some((server, browser)) = setup(h, 1280, 900).await else {
        return;
    };
    let base = &server.base;
    browser.goto(&format!("{base}/?fast=1")).await;
    browser.screenshot("01-home").await;
    browser.register_with_the_form(base, "marie_curie").await;
    assert_eq!(browser.balance_cents().await, 0);

    browser.deposit_on_the_account_screen(2000).await;
    // The 7-day caps chosen on the form (100 € each) show on the account
    // screen, the deposit counted against its cap.
    browser
        .wait_for(
            "document.querySelector('[data-testid=cap-deposit]')?.dataset.leftCents === '8000'
             && document.querySelector('[data-testid=cap-deposit]').dataset.limitCents === '10000'
             && document.querySelector('[data-testid=cap-stake]').dataset.limitCents === '10000'",
        )
        .await;
    browser.screenshot("account-caps").await;
    browser.back_to_the_game().await;

    let mut won = false;
    let mut games = 0;
    // One game at each stake, then more (a bounded few) until one wins, for
    // the screenshot of a winning end.
    while games < 3 || (!won && games < 14) {
        let stake = STAKES[games % 3];
        let before = browser.balance_cents().await;
        if before < stake {
            browser.deposit_on_the_account_screen(before + 2000).await;
            browser.back_to_the_game().await;
            continue;
        }
        let shots = (games == 0).then_some("02");
        let play = browser.play_a_game(stake, shots).await;
        let prize = play["outcome"]["prize_cents"].as_i64().unwrap();
        assert_eq!(play["stake_cents"], json!(stake));
        assert_eq!(play["state"], json!("finished"));
        let end_shot = if prize > 0 && !won {
            Some("04-winning-end")
        } else {
            None
        };
        browser.dismiss_win(prize, end_shot).await;
        if prize == 0 && games == 0 {
            browser.screenshot("05-losing-end").await;
        }
        assert_eq!(
            browser.found_symbols().await,
            revealed(&play),
            "the page shows the scenario's symbols"
        );
        let expected = before - stake + prize;
        browser.wait_balance(expected).await;
        assert_eq!(browser.balance_cents().await, expected);
        won |= prize > 0;
        games += 1;
    }
    if !won {
        eprintln!("no game won in {games}: no screenshot of a winning end this time");
    }
    browser.close_without_console_errors().await;
}

async fn a_reload_in_the_middle_of_a_game_resumes_it_where_it_stopped(h: &Harness) {
    let Some((server, browser)) = setup(h, 1280, 900).await else {
        return;
    };
    let base = &server.base;
    browser.register_quickly(base, "resumer", "?fast=1").await;
    browser.press_play().await;
    browser.close_the_howto().await;
    browser.throw_and_wait(1).await;
    browser.throw_and_wait(2).await;
    let id = browser.play_id().await;
    let shown = browser.found_symbols().await;

    browser.goto(&format!("{base}/?fast=1#/")).await;
    browser.wait_mode("playing").await;
    assert_eq!(browser.play_id().await, id);
    assert_eq!(browser.found_symbols().await, shown);
    assert_eq!(
        browser
            .execute("return document.querySelector('#pips').dataset.used")
            .await,
        json!("2")
    );
    let opened = browser
        .execute(
            "return document.querySelectorAll('[data-testid^=chest-][data-state=open]').length",
        )
        .await;
    let play = browser.fetch_play(id).await;
    let expected_open: usize = play["scenario"]["throws"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["opened"].as_array().unwrap().len())
        .sum();
    assert_eq!(opened, json!(expected_open));

    browser.throw_and_wait(3).await;
    browser.throw_and_wait(4).await;
    browser.wait_mode("finished").await;
    let play = browser.fetch_play(id).await;
    assert_eq!(play["state"], json!("finished"));
    assert_eq!(browser.found_symbols().await, revealed(&play));
    browser.close().await;
}

async fn a_whole_game_can_be_played_with_the_keyboard_alone_at_normal_speed(h: &Harness) {
    let Some((server, browser)) = setup(h, 1280, 900).await else {
        return;
    };
    const TAB: &str = "\u{E004}";
    const ENTER: &str = "\u{E007}";
    const ESCAPE: &str = "\u{E00C}";
    const SPACE: &str = "\u{E00D}";
    const LEFT: &str = "\u{E012}";
    browser
        .register_quickly(&server.base, "keyboard_only", "")
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
    while browser
        .execute("return document.activeElement.dataset.testid")
        .await
        != json!("play")
    {
        browser.press(&[TAB]).await;
        presses += 1;
        assert!(presses < 40, "\"Jouer\" is not reachable with Tab");
    }
    let before = browser.balance_cents().await;
    browser.press(&[ENTER]).await;
    browser
        .wait_for("document.querySelector('#dlg-howto').open")
        .await;
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
        browser
            .wait_for("document.querySelector('#dlg-win').open")
            .await;
        browser.press(&[ESCAPE]).await;
    }
    browser
        .wait_for("document.activeElement === document.querySelector('[data-testid=play]')")
        .await;
    assert_eq!(browser.found_symbols().await, revealed(&play));
    let expected = before - 50 + prize;
    browser.wait_balance(expected).await;
    let live = browser
        .execute("return document.querySelector('#live').textContent")
        .await;
    assert!(
        live.as_str().unwrap().contains("Lancer 4"),
        "each throw is announced to screen readers: {live}"
    );
    browser.close().await;
}

async fn the_history_shows_the_last_play_at_once_and_replays_a_finished_one(h: &Harness) {
    let Some((server, browser)) = setup(h, 1280, 900).await else {
        return;
    };
    let base = &server.base;
    browser.register_quickly(base, "historian", "?fast=1").await;
    let finished = browser.play_a_game(100, None).await;
    let prize = finished["outcome"]["prize_cents"].as_i64().unwrap();
    browser.dismiss_win(prize, None).await;

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
    browser.click("[data-testid=history-replay]").await;
    browser
        .wait_for(&format!(
            "document.querySelector('#screen-game').dataset.playId === '{}'",
            finished["id"]
        ))
        .await;
    browser
        .wait_for("document.querySelector('#pips').dataset.used === '4' && document.querySelector('#game-status').dataset.kind")
        .await;
    assert_eq!(browser.found_symbols().await, revealed(&finished));

    // Back to the game: the unfinished one is resumed, on a phone-sized screen.
    browser.phone(360, 780).await;
    browser.click("#replay-back").await;
    browser
        .wait_for(&format!("document.querySelector('#screen-game').dataset.playId === '{id}' && document.querySelector('#screen-game').dataset.mode === 'playing'"))
        .await;
    browser.throw_and_wait(1).await;
    // The layout viewport follows the emulated phone at its next layout:
    // given up to 3 s (a throw's last animation frames included) to settle.
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
    browser.click("[data-testid=menu]").await;
    browser
        .wait_for("getComputedStyle(document.querySelector('#nav')).display !== 'none' && document.querySelector('[data-testid=menu]').getAttribute('aria-expanded') === 'true'")
        .await;
    browser.press(&["\u{E00C}"]).await;
    browser
        .wait_for("getComputedStyle(document.querySelector('#nav')).display === 'none' && document.activeElement.id === 'menu-toggle'")
        .await;
    browser.close().await;
}

async fn the_rules_are_one_click_away_in_french_and_in_english(h: &Harness) {
    let Some((server, browser)) = setup(h, 1280, 900).await else {
        return;
    };
    let base = &server.base;
    browser.goto(&format!("{base}/")).await;
    browser.click("[data-testid=nav-rules]").await;
    let text = browser
        .wait_for("document.querySelector('[data-testid=rules-text] table') && document.querySelector('[data-testid=rules-text]').textContent")
        .await;
    assert!(text.as_str().unwrap().contains("Description du jeu"));
    browser.click("[data-testid=lang]").await;
    let text = browser
        .wait_for("document.querySelector('[data-testid=rules-text]').dataset.lang === 'en' && document.querySelector('[data-testid=rules-text] table') && document.querySelector('[data-testid=rules-text]').textContent")
        .await;
    assert!(text.as_str().unwrap().contains("Description of the game"));
    // The choice of language is remembered.
    browser.goto(&format!("{base}/")).await;
    assert_eq!(
        browser
            .execute("return document.documentElement.lang")
            .await,
        json!("en")
    );
    assert_eq!(
        browser
            .execute("return document.querySelector('[data-testid=play]').textContent")
            .await,
        json!("Play")
    );
    let footer = browser
        .execute("return document.querySelector('footer').textContent")
        .await;
    assert!(footer.as_str().unwrap().contains("09-74-75-13-13"));

    // The fairness page lists every block with its commitment.
    browser.click("[data-testid=nav-fairness]").await;
    browser
        .wait_for("document.querySelectorAll('[data-testid=block-row]').length > 0")
        .await;
    let shown = browser
        .execute(
            "return Array.from(document.querySelectorAll('[data-testid=block-row]'), (row) =>
               [Number(row.dataset.blockId), row.querySelector('[data-testid=block-commitment]').textContent])",
        )
        .await;
    let blocks: Value = reqwest::get(format!("{base}/api/blocks"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let expected: Vec<Value> = blocks["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| json!([b["id"], b["commitment"]]))
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(shown, json!(expected));
    let text = browser
        .execute("return document.querySelector('#screen-fairness').textContent")
        .await;
    assert!(text.as_str().unwrap().contains("tresor block verify"));
    browser.screenshot("fairness").await;

    browser.close_without_console_errors().await;
}

async fn a_stake_cap_chosen_at_registration_refuses_the_purchase_that_would_pass_it(h: &Harness) {
    let Some((server, browser)) = setup(h, 1280, 900).await else {
        return;
    };
    let base = &server.base;
    browser
        .fill_the_registration_form(base, "prudent_player")
        .await;
    // A 1 € weekly cap on stakes, chosen on the registration form.
    browser
        .execute("const input = document.querySelector('[data-testid=register-stake-limit]'); input.value = '1';")
        .await;
    browser.submit_the_registration_form().await;
    browser.click("[data-testid=nav-account]").await;
    browser
        .wait_for("document.querySelector('[data-testid=cap-stake]')?.dataset.limitCents === '100'")
        .await;
    browser.click("[data-testid=deposit]").await;
    browser.wait_balance(2000).await;
    browser.back_to_the_game().await;

    // The first 1 € game fits the cap.
    let play = browser.play_a_game(100, None).await;
    browser
        .dismiss_win(play["outcome"]["prize_cents"].as_i64().unwrap(), None)
        .await;
    let balance = browser.balance_cents().await;
    let before = browser.server_state().await;

    // The second would pass it: refused, with the server's message, nothing debited.
    browser.click("label:has(> [data-testid=stake-100])").await;
    browser.click("[data-testid=play]").await;
    browser
        .wait_for("document.querySelector('[data-testid=game-status]').dataset.code === 'stake_limit_reached'")
        .await;
    let message = browser
        .execute("return document.querySelector('[data-testid=game-status]').textContent")
        .await;
    let message = message.as_str().unwrap();
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
    let Some((server, browser)) = setup(h, 1280, 900).await else {
        return;
    };
    let base = &server.base;
    browser
        .register_quickly(base, "lena_meyer", "?fast=1")
        .await;
    let play_button = "return document.querySelector('[data-testid=play]').textContent";
    let status = "return document.querySelector('#game-status').textContent";
    // The how-to-play window is opaque and its text passes WCAG AA (4.5:1)
    // against both ends of its background: the island does not show through.
    browser.press_play().await;
    let contrast = browser
        .execute(
            "const d = document.querySelector('#dlg-howto');
             const rgb = (s) => s.match(/[\\d.]+/g).map(Number);
             const lum = ([r, g, b]) => [r, g, b].map((c) => c / 255)
               .map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4))
               .reduce((sum, c, i) => sum + c * [0.2126, 0.7152, 0.0722][i], 0);
             const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
             const style = getComputedStyle(d);
             const stops = (style.backgroundImage.match(/rgba?\\([^)]*\\)/g) ?? []).map(rgb);
             const base = rgb(style.backgroundColor);
             const texts = [...d.querySelectorAll('li, td, h2')].map((n) => rgb(getComputedStyle(n).color));
             return { opaque: base.length === 3 || base[3] === 1, stops: stops.length,
                      worst: Math.min(...texts.flatMap((t) => [base, ...stops].map((b) => ratio(t, b)))) };",
        )
        .await;
    assert_eq!(contrast["opaque"], json!(true), "{contrast}");
    assert_eq!(contrast["stops"], json!(2), "{contrast}");
    assert!(
        contrast["worst"].as_f64().unwrap() >= 4.5,
        "the how-to-play text is readable: {contrast}"
    );
    browser.close_the_howto().await;
    for number in 1..=4 {
        browser.throw_and_wait(number).await;
    }
    browser.wait_mode("finished").await;
    let play = browser.fetch_play(browser.play_id().await).await;
    browser
        .dismiss_win(play["outcome"]["prize_cents"].as_i64().unwrap(), None)
        .await;
    // Article 4.1 names the button « Jouer », after a game as before one.
    assert_eq!(browser.execute(play_button).await, json!("Jouer"));
    let french = browser.execute(status).await;
    assert!(
        french.as_str().unwrap().starts_with("Partie terminée"),
        "{french}"
    );
    browser.click("[data-testid=lang]").await;
    browser
        .wait_for("document.documentElement.lang === 'en'")
        .await;
    assert_eq!(browser.execute(play_button).await, json!("Play"));
    let english = browser.execute(status).await;
    assert!(
        english.as_str().unwrap().starts_with("Game over"),
        "{english}"
    );
    browser.close_without_console_errors().await;
}

/// axe-core (WCAG 2.1 A and AA) on every screen and window of the game, in
/// both languages: no serious or critical finding. Collects all the findings
/// before failing, so one run lists everything to fix.
async fn every_screen_of_the_game_passes_axe_core_in_french_and_in_english(h: &Harness) {
    let Some(axe) = axe_source() else {
        return;
    };
    let Some((server, browser)) = setup(h, 1280, 900).await else {
        return;
    };
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
            .execute(
                "const rgb = (s) => s.match(/[\\d.]+/g).map(Number);
                 const lum = ([r, g, b]) => [r, g, b].map((c) => c / 255)
                   .map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4))
                   .reduce((sum, c, i) => sum + c * [0.2126, 0.7152, 0.0722][i], 0);
                 const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
                 const link = document.activeElement;
                 if (!link.closest('header.top') || !link.matches(':focus-visible')) return 'focus: ' + link.outerHTML;
                 const ring = rgb(getComputedStyle(link).outlineColor);
                 const navy = (getComputedStyle(document.querySelector('header.top')).backgroundImage.match(/rgba?\\([^)]*\\)/g) ?? []).map(rgb);
                 return Math.min(...navy.map((n) => ratio(ring, n)));",
            )
            .await;
        assert!(
            ring.as_f64().unwrap() >= 3.0,
            "the focus ring on the header: {ring}:1"
        );
        for screen in ["login", "register", "rules", "fairness"] {
            browser.click(&format!("[data-testid=nav-{screen}]")).await;
            browser
                .wait_for(&format!("document.body.dataset.screen === '{screen}'"))
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
            .register_quickly(base, &format!("axe_{lang}"), "?fast=1")
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
            for number in 1..=4 {
                browser.throw_and_wait(number).await;
            }
            browser.wait_mode("finished").await;
            let play = browser.fetch_play(browser.play_id().await).await;
            let prize = play["outcome"]["prize_cents"].as_i64().unwrap();
            if prize > 0 {
                browser
                    .wait_for("document.querySelector('#dlg-win').open")
                    .await;
                // The window's entrance animation ends before colours are read.
                tokio::time::sleep(Duration::from_millis(1500)).await;
                check("congratulation window").await;
                // axe-core leaves text over a gradient unchecked: the prize,
                // the one number the player came for, is measured here
                // against the window's colours with its gold rays over them
                // (large text: 3:1 at least; it was 2.3:1).
                let contrast = browser
                    .execute(
                        "const rgb = (s) => s.match(/[\\d.]+/g).map(Number);
                         const lum = ([r, g, b]) => [r, g, b].map((c) => c / 255)
                           .map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4))
                           .reduce((sum, c, i) => sum + c * [0.2126, 0.7152, 0.0722][i], 0);
                         const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
                         const style = getComputedStyle(document.querySelector('#dlg-win'));
                         const grounds = [rgb(style.backgroundColor),
                           ...(style.backgroundImage.match(/rgba?\\([^)]*\\)/g) ?? []).map(rgb)];
                         const ray = rgb(getComputedStyle(document.querySelector('#dlg-win .burst')).backgroundImage.match(/rgba?\\([^)]*\\)/)[0]);
                         const over = (top, under) => under.slice(0, 3).map((c, i) => top[i] * top[3] + c * (1 - top[3]));
                         const text = rgb(getComputedStyle(document.querySelector('.win-amount')).color);
                         return Math.min(...grounds.flatMap((g) => [ratio(text, g), ratio(text, over(ray, g))]));",
                    )
                    .await;
                assert!(
                    contrast.as_f64().unwrap() >= 3.0,
                    "the prize is readable on its window: {contrast}:1"
                );
                won = true;
            }
            browser.dismiss_win(prize, None).await;
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
        for screen in ["history", "account"] {
            browser.click(&format!("[data-testid=nav-{screen}]")).await;
            browser
                .wait_for(&format!(
                    "document.body.dataset.screen === '{screen}' && document.body.dataset.ready === 'true'"
                ))
                .await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            check(screen).await;
        }
        browser.goto(&format!("{base}/?fast=1#/statement")).await;
        browser
            .wait_for("document.body.dataset.screen === 'statement'")
            .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        check("statement").await;
        browser.click("[data-testid=logout]").await;
        browser
            .wait_for("document.body.dataset.user === 'out'")
            .await;
    }
    assert!(
        findings.is_empty(),
        "{} serious or critical accessibility findings on {screens} screens:\n  {}",
        findings.len(),
        findings.join("\n  ")
    );
    browser.close().await;
}
