//! Browser tests: the real `tresor serve` binary, driven through a real
//! headless Chromium over WebDriver (chromedriver), the way a player uses it.
//!
//! The WebDriver client is shared (`common/browser.rs`); this file adds the
//! game's own vocabulary (play, throw, wait for a mode) and the tests.
//! Screenshots of the main states go to `target/screenshots/`.

use crate::common::axe::axe_source;

use crate::common::Harness;
use crate::common::browser::Browser;
use crate::common::page::{PASSWORD, Site};
use serde_json::{Value, json};

mod accessibility;

pub(crate) const STAKES: [i64; 3] = [50, 100, 200];

/// The game's own vocabulary, over the shared WebDriver client.
impl Browser {
    /// Deposits with the account screen's button (the demo's 20 €), which
    /// must bring the balance to `expected_cents`.
    pub(crate) async fn deposit_on_the_account_screen(&self, expected_cents: i64) {
        self.click("[data-testid=nav-account]").await;
        self.click("[data-testid=deposit]").await;
        self.wait_balance(expected_cents).await;
    }

    /// Goes back to the game screen, ready to play.
    pub(crate) async fn back_to_the_game(&self) {
        self.click("[data-testid=brand]").await;
        self.wait_ready("game", "play").await;
    }

    /// Registers through the form, accepting the rules, and lands on the game.
    pub(crate) async fn register_with_the_form(&self, base: &str, username: &str) {
        self.fill_the_registration_form(base, username).await;
        self.submit_the_registration_form().await;
    }

    /// Opens the registration form and types a username and a password.
    pub(crate) async fn fill_the_registration_form(&self, base: &str, username: &str) {
        self.goto(&format!("{base}/?fast=1#/register")).await;
        self.type_into("[data-testid=register-username]", username)
            .await;
        self.type_into("[data-testid=register-password]", PASSWORD)
            .await;
    }

    /// Ticks both declarations, submits, and lands on the game.
    pub(crate) async fn submit_the_registration_form(&self) {
        self.click("[data-testid=register-adult]").await;
        self.click("[data-testid=register-accept]").await;
        self.click_until(
            "[data-testid=register-submit]",
            "document.body.dataset.user === 'in' && document.body.dataset.screen === 'game'",
        )
        .await;
    }

    pub(crate) async fn found_symbols(&self) -> Vec<String> {
        let value = self
            .execute("return [...document.querySelectorAll('[data-testid=found-symbol]')].map((li) => li.dataset.symbol);")
            .await;
        serde_json::from_value(value).unwrap()
    }

    /// Plays one whole game at `stake_cents` with the mouse; returns the play
    /// as the API tells it. With `shots`, the how-to-play window and the
    /// middle of the game are photographed, named after its prefix.
    pub(crate) async fn play_a_game(&self, stake_cents: i64, shots: Option<&str>) -> Value {
        // The radio button itself is invisible: a player clicks its label.
        self.click(&format!("label:has(> [data-testid=stake-{stake_cents}])"))
            .await;
        self.press_play().await;
        if let Some(prefix) = shots {
            self.wait_for("document.querySelector('#screen-game').dataset.mode === 'buying' && document.querySelectorAll('#howto-prizes tr').length === 9").await;
            self.settled().await;
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
        self.fetch_play(self.play_id().await).await
    }

    /// Photographs the congratulation window of a won game as `name`, once
    /// it has come in.
    pub(crate) async fn photograph_the_win(&self, name: &str) {
        self.wait_open("#dlg-win").await;
        self.settled().await;
        self.screenshot(name).await;
    }
}

/// The symbols a scenario's throws reveal, in order.
pub(crate) fn revealed(play: &Value) -> Vec<String> {
    play["scenario"]["throws"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["opened"].as_array().unwrap().clone())
        .map(|o| o["content"].as_str().unwrap().to_owned())
        .filter(|c| c != "empty")
        .collect()
}

/// Waits for this test's turn, then starts the server and a browser
/// (`Site::start`).
pub(crate) async fn setup(h: &Harness, width: u32, height: u32) -> (Site, Browser) {
    Site::start(h, &[], width, height).await
}
