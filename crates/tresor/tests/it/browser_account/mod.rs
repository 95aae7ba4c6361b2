//! Browser tests of the real-money account's page: the real `tresor serve`
//! (demo mode, with its sandbox payment provider) and a real headless
//! Chromium over WebDriver, one browser at a time. Opening an account with
//! an identity, a deposit paid (and one declined) on the sandbox's page, a
//! game, the operator's verification, a withdrawal, the statement and its
//! CSV, closing; a payment over the deposit cap, to refund; the form with
//! the keyboard alone on a 360 px phone; the time-played reminder; a
//! forgotten password reset through the link the server wrote to its
//! outbox, in French and in English; a suspended player's refusals, told
//! neutrally, in both languages; the IBAN and the address changed with the
//! current password, and the change undone from the link mailed to the old
//! address (issue 32). Screenshots go to `target/screenshots/account-*`.
//!
//! Time passes honestly for the reminder: in test mode (`?fast=1`) the page
//! reads elapsed time from one clock, `util.clock()`, which the test moves
//! forward with `window.tresorClock.advance(ms)`.

use crate::common::browser::{Browser, Turn, browser_paths, browser_turn};

use crate::common::{Harness, Server};
use serde_json::{Value, json};
use std::time::Duration;

mod changes;
mod limits;
mod opening;
mod reset;

const TAB: &str = "\u{E004}";

const ENTER: &str = "\u{E007}";

const ESCAPE: &str = "\u{E00C}";

const SPACE: &str = "\u{E00D}";

const BACKSPACE: &str = "\u{E003}";

const END: &str = "\u{E010}";

const IBAN: &str = "FR76 3000 6000 0112 3456 7890 189";

const PASSWORD: &str = "a long enough password";

/// The server and this test's turn (given back last, when all is stopped).
struct Site {
    base: String,
    _server: Server,
    _turn: Turn,
}

async fn setup(h: &Harness, width: u32, height: u32) -> Option<(Site, Browser)> {
    let turn = browser_turn().await;
    let (chromium, chromedriver) = browser_paths()?;
    let server = h.server(&[]).await;
    let site = Site {
        base: server.base.clone(),
        _server: server,
        _turn: turn,
    };
    let browser = Browser::start(&chromium, &chromedriver, width, height).await;
    Some((site, browser))
}

/// The account page's own vocabulary over the shared WebDriver client.
impl Browser {
    async fn text(&self, css: &str) -> String {
        let value = self
            .execute(&format!(
                "return document.querySelector('{css}').textContent"
            ))
            .await;
        value.as_str().unwrap_or_default().to_owned()
    }

    async fn wait_screen(&self, screen: &str) {
        self.wait_for(&format!(
            "document.body.dataset.ready === 'true' && document.body.dataset.screen === '{screen}'"
        ))
        .await;
    }

    /// Sets a field's value (replacing what is there), as a player would by typing.
    async fn fill(&self, css: &str, text: &str) {
        self.execute(&format!("document.querySelector('{css}').value = '';"))
            .await;
        self.type_into(css, text).await;
    }

    /// Types `text` with the keyboard into whatever has the focus.
    async fn type_keys(&self, text: &str) {
        let keys: Vec<String> = text.chars().map(String::from).collect();
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        self.press(&keys).await;
    }

    async fn focused(&self) -> Value {
        self.execute("return document.activeElement.dataset.testid ?? null")
            .await
    }

    /// Presses Tab until the element `testid` has the focus.
    async fn tab_to(&self, testid: &str) {
        for _ in 0..60 {
            if self.focused().await == json!(testid) {
                return;
            }
            self.press(&[TAB]).await;
        }
        panic!("{testid} is not reachable with Tab");
    }

    /// Ends the session after checking the console: no error but the
    /// browser's own line for each refusal the test provoked on purpose
    /// (`statuses`, such as a 409 for rules to accept).
    async fn close_with_only_refusals(self, statuses: &[u16]) {
        let errors = self.console_errors().await;
        let unexpected: Vec<&String> = errors
            .iter()
            .filter(|e| {
                !statuses
                    .iter()
                    .any(|s| e.contains(&format!("the server responded with a status of {s}")))
            })
            .collect();
        assert!(unexpected.is_empty(), "console errors: {unexpected:?}");
        self.close().await;
    }

    /// Whether the page scrolls sideways.
    async fn fits_360(&self) -> bool {
        self.execute("return document.documentElement.scrollWidth <= 360")
            .await
            == json!(true)
    }

    /// Opens an account through the API from inside the page (for tests about
    /// something else), then reloads as that player.
    async fn open_quickly(&self, base: &str, username: &str, deposit_limit_cents: i64) {
        self.goto(&format!("{base}/?fast=1#/")).await;
        let body = json!({
            "username": username, "password": PASSWORD, "accept_rules": true,
            "identity": {"birth_name": "Durand", "first_names": "Ana", "birth_date": "1990-07-14",
                         "birth_place": "Lyon", "address": "1 rue de la Paix, 75002 Paris"},
            "iban": IBAN, "deposit_limit_cents": deposit_limit_cents,
        });
        let script = format!(
            "const done = arguments[arguments.length - 1];
             fetch('/api/account/open', {{method: 'POST', credentials: 'same-origin',
               headers: {{'Content-Type': 'application/json', 'X-Requested-With': 'tresor'}},
               body: JSON.stringify({body})}})
               .then((r) => {{ localStorage.setItem('tresor.session', '1'); localStorage.setItem('tresor.fast', '1'); done(r.status); }})
               .catch((e) => done(String(e)));"
        );
        assert_eq!(self.execute_async(&script).await, json!(201));
        self.execute("document.body.dataset.ready = ''; location.reload();")
            .await;
        self.wait_for(
            "document.body.dataset.ready === 'true' && document.body.dataset.user === 'in'",
        )
        .await;
    }

    /// Asks a deposit of `euros` on the account screen and lands on the sandbox's page.
    async fn ask_deposit(&self, euros: &str) {
        self.click("[data-testid=nav-account]").await;
        self.wait_for("!document.querySelector('#pay-form').hidden")
            .await;
        self.fill("[data-testid=pay-amount]", euros).await;
        self.click("[data-testid=pay-submit]").await;
        self.wait_for(
            "location.pathname === '/sandbox/pay' && document.querySelector('#pay') !== null",
        )
        .await;
    }

    /// Back from the sandbox: waits for the deposit's outcome on the account screen.
    async fn deposit_outcome(&self) -> String {
        self.wait_for(
            "document.body.dataset.ready === 'true' && document.body.dataset.screen === 'account'
             && ['credited', 'failed', 'to_refund'].includes(document.querySelector('[data-testid=deposit-outcome]').dataset.state)",
        )
        .await;
        self.execute("return document.querySelector('[data-testid=deposit-outcome]').dataset.state")
            .await
            .as_str()
            .unwrap()
            .to_owned()
    }

    async fn get_json(&self, path: &str) -> Value {
        self.execute_async(&format!(
            "const done = arguments[arguments.length - 1];
             fetch('{path}', {{credentials: 'same-origin'}}).then((r) => r.json()).then(done, (e) => done(String(e)));"
        ))
        .await
    }

    /// What the server says of the player's money and plays: the balance and
    /// the ids of its plays (not what the page shows).
    async fn account_state(&self) -> (Value, Vec<Value>) {
        let me = self.get_json("/api/me").await;
        let plays = self.get_json("/api/plays?limit=100").await;
        let ids = plays["plays"]
            .as_array()
            .unwrap_or_else(|| panic!("the plays: {plays}"))
            .iter()
            .map(|play| play["id"].clone())
            .collect();
        assert!(me["balance_cents"].is_i64(), "the balance: {me}");
        (me["balance_cents"].clone(), ids)
    }

    /// The time played this session by the server's clock, in seconds.
    async fn session_elapsed_s(&self) -> i64 {
        let account = self.get_json("/api/account").await;
        account["session_elapsed_s"]
            .as_i64()
            .unwrap_or_else(|| panic!("session_elapsed_s: {account}"))
    }

    /// Moves the page's clock on by `advanced_s` in all (this time
    /// included) and waits for the reminder window; checks that it says
    /// the minutes played: the server's time since the session opened plus
    /// the page's advance, read before and after (both ends allowed, as the
    /// window may come in between a minute's turn).
    async fn reminded_after(&self, step_s: i64, advanced_s: i64) {
        let before = self.session_elapsed_s().await;
        self.execute(&format!("window.tresorClock.advance({step_s} * 1000)"))
            .await;
        self.wait_for("document.querySelector('#dlg-reminder').open")
            .await;
        let text = self.text("[data-testid=reminder-text]").await;
        let played = self.text("[data-testid=played]").await;
        let after = self.session_elapsed_s().await;
        let minutes = (before + advanced_s) / 60..=(after + 1 + advanced_s) / 60;
        assert!(
            minutes.clone().any(|m| text.contains(&format!("{m} min"))),
            "the window says the time played ({minutes:?} min): {text}"
        );
        assert!(
            minutes
                .clone()
                .any(|m| played.contains(&format!("{m} min"))),
            "the header says the time played ({minutes:?} min): {played}"
        );
    }

    /// Plays one whole game at 1 € from the game screen (the how-to window
    /// first, then four throws); returns the play as the API tells it.
    async fn play_a_game_accepting_rules(&self) -> Value {
        self.click("[data-testid=brand]").await;
        self.wait_for("document.body.dataset.screen === 'game' && !document.querySelector('[data-testid=play]').disabled")
            .await;
        let before = self
            .execute("return document.querySelector('#screen-game').dataset.playId ?? ''")
            .await;
        let before = before.as_str().unwrap();
        let bought =
            format!("(document.querySelector('#screen-game').dataset.playId ?? '') !== '{before}'");
        self.click("[data-testid=play]").await;
        self.wait_for(&format!(
            "document.querySelector('#dlg-accept').open || {bought}"
        ))
        .await;
        if self
            .execute("return document.querySelector('#dlg-accept').open")
            .await
            == json!(true)
        {
            // New rules in force: they are shown, accepted, and the purchase goes on.
            self.wait_for("document.querySelector('#dlg-accept-rules h3') !== null")
                .await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            self.screenshot("account-rules-to-accept").await;
            self.click("[data-testid=accept-ok]").await;
            self.wait_for(&bought).await;
        }
        self.wait_for("document.querySelector('#dlg-howto').open")
            .await;
        self.click("[data-testid=howto-close]").await;
        self.wait_for("document.querySelector('#screen-game').dataset.mode === 'playing'")
            .await;
        for number in 1..=4 {
            self.click("[data-testid=throw]").await;
            self.wait_for(&format!(
                "document.querySelector('#pips').dataset.used === '{number}' &&
                 !document.querySelector('[data-testid=throw]').disabled ||
                 document.querySelector('#screen-game').dataset.mode === 'finished'"
            ))
            .await;
        }
        self.wait_for("document.querySelector('#screen-game').dataset.mode === 'finished'")
            .await;
        let id = self
            .execute("return document.querySelector('#screen-game').dataset.playId")
            .await;
        let play = self
            .get_json(&format!("/api/plays/{}", id.as_str().unwrap()))
            .await;
        if play["outcome"]["prize_cents"].as_i64().unwrap() > 0 {
            self.wait_for("document.querySelector('#dlg-win').open")
                .await;
            self.click("[data-testid=win-close]").await;
        }
        self.wait_for("!document.querySelector('#dlg-win').open")
            .await;
        play
    }
}

/// How many purchases (`POST /api/plays`, not a throw) are among `requests`.
fn purchases(requests: &[String]) -> usize {
    requests
        .iter()
        .filter(|r| r.starts_with("POST ") && r.ends_with("/api/plays"))
        .count()
}

/// The statement rows shown: (movement, delta, balance after), newest first.
async fn statement_rows(browser: &Browser) -> Vec<(String, i64, i64)> {
    let rows = browser
        .execute(
            "return [...document.querySelectorAll('[data-testid=statement-row]')].map((r) =>
               [r.dataset.movement, Number(r.dataset.deltaCents), Number(r.dataset.balanceCents)])",
        )
        .await;
    serde_json::from_value(rows).unwrap()
}

/// The link (to the end of its line) in the first message of `outbox`
/// addressed to `to` that contains `marker`; waits up to 10 s for it.
async fn outbox_link(outbox: &std::path::Path, to: &str, marker: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        for entry in std::fs::read_dir(outbox).unwrap() {
            let raw = std::fs::read_to_string(entry.unwrap().path()).unwrap_or_default();
            // Quoted-printable or base64, as lettre chose: decoded.
            let text = crate::common::opening::decoded(&raw);
            let addressed = text
                .lines()
                .any(|l| l.starts_with("To: ") && l.contains(to));
            if let Some(line) = text.lines().find(|l| l.contains(marker))
                && addressed
            {
                return line.trim().to_owned();
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no {marker} message to {to} in the outbox"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A screenshot's name: French, the page's default, as it always was;
/// another language's with its code.
fn shot_name(name: &str, lang: &str) -> String {
    if lang == "fr" {
        name.to_owned()
    } else {
        format!("{name}-{lang}")
    }
}
