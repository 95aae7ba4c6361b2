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

mod accessibility;
mod choices;
mod history;
mod play;

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
