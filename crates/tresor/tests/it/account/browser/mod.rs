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

use crate::common::Harness;
use crate::common::browser::Browser;
use crate::common::page::{ENTER, PASSWORD, SPACE, Site, TAB};
use crate::common::wait::until;
use serde_json::{Value, json};
use std::time::Duration;

mod opening;

pub(crate) const BACKSPACE: &str = "\u{E003}";

pub(crate) const END: &str = "\u{E010}";

pub(crate) const IBAN: &str = "FR76 3000 6000 0112 3456 7890 189";

/// The real server and a browser (`Site::start`).
pub(crate) async fn setup(h: &Harness, width: u32, height: u32) -> (Site, Browser) {
    Site::start(h, &[], width, height).await
}

/// The real server writing its mail to a folder of this test's (the
/// outbox), a browser, and that folder.
pub(crate) async fn setup_with_outbox(h: &Harness) -> (Site, Browser, tempfile::TempDir) {
    let outbox = tempfile::tempdir().unwrap();
    let flags = [
        "--mail-outbox".to_owned(),
        outbox.path().display().to_string(),
    ];
    let (site, browser) = Site::start(h, &flags, 1280, 900).await;
    (site, browser, outbox)
}

/// The account page's own vocabulary over the shared WebDriver client.
impl Browser {
    /// Types `text` with the keyboard into whatever has the focus.
    pub(crate) async fn type_keys(&self, text: &str) {
        let keys: Vec<String> = text.chars().map(String::from).collect();
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        self.press(&keys).await;
    }

    /// Ends the session after checking the console: no error but the
    /// browser's own line for each refusal the test provoked on purpose
    /// (`statuses`, such as a 409 for rules to accept).
    pub(crate) async fn close_with_only_refusals(self, statuses: &[u16]) {
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
    pub(crate) async fn fits_360(&self) -> bool {
        self.execute("return document.documentElement.scrollWidth <= 360")
            .await
            == json!(true)
    }

    /// Opens an account through the API from inside the page (for tests about
    /// something else), then reloads as that player.
    pub(crate) async fn open_quickly(&self, base: &str, username: &str, deposit_limit_cents: i64) {
        self.goto(&format!("{base}/?fast=1#/")).await;
        let body = json!({
            "username": username, "password": PASSWORD, "accept_rules": true,
            "identity": {"birth_name": "Durand", "first_names": "Ana", "birth_date": "1990-07-14",
                         "birth_place": "Lyon", "address": "1 rue de la Paix, 75002 Paris"},
            "iban": IBAN, "deposit_limit_cents": deposit_limit_cents,
        });
        self.open_account_in_page(&body, None).await;
        self.reload_after("").await;
        self.wait_for("document.body.dataset.user === 'in'").await;
    }

    /// Asks a deposit of `euros` on the account screen and lands on the sandbox's page.
    pub(crate) async fn ask_deposit(&self, euros: &str) {
        self.click_until(
            "[data-testid=nav-account]",
            "!document.querySelector('#pay-form').hidden",
        )
        .await;
        self.fill("[data-testid=pay-amount]", euros).await;
        self.click_until(
            "[data-testid=pay-submit]",
            "location.pathname === '/sandbox/pay' && document.querySelector('#pay') !== null",
        )
        .await;
    }

    /// Back from the sandbox: waits for the deposit's outcome on the account screen.
    pub(crate) async fn deposit_outcome(&self) -> String {
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

    /// The time played this session by the server's clock, in seconds.
    pub(crate) async fn session_elapsed_s(&self) -> i64 {
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
    pub(crate) async fn reminded_after(&self, step_s: i64, advanced_s: i64) {
        let before = self.session_elapsed_s().await;
        self.execute(&format!("window.tresorClock.advance({step_s} * 1000)"))
            .await;
        self.wait_open("#dlg-reminder").await;
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
    pub(crate) async fn play_a_game_accepting_rules(&self) -> Value {
        self.click("[data-testid=brand]").await;
        self.wait_ready("game", "play").await;
        let before = self
            .execute("return document.querySelector('#screen-game').dataset.playId ?? ''")
            .await;
        let before = before.as_str().unwrap();
        let bought =
            format!("(document.querySelector('#screen-game').dataset.playId ?? '') !== '{before}'");
        self.click_until(
            "[data-testid=play]",
            &format!("document.querySelector('#dlg-accept').open || {bought}"),
        )
        .await;
        if self
            .execute("return document.querySelector('#dlg-accept').open")
            .await
            == json!(true)
        {
            // New rules in force: they are shown, accepted, and the purchase goes on.
            self.wait_for("document.querySelector('#dlg-accept-rules h3') !== null")
                .await;
            self.settled().await;
            self.screenshot("account-rules-to-accept").await;
            self.click_until("[data-testid=accept-ok]", &bought).await;
        }
        self.wait_open("#dlg-howto").await;
        self.close_the_howto().await;
        self.finish_the_game().await
    }
}

/// How many purchases (`POST /api/plays`, not a throw) are among `requests`.
pub(crate) fn purchases(requests: &[String]) -> usize {
    requests
        .iter()
        .filter(|r| r.starts_with("POST ") && r.ends_with("/api/plays"))
        .count()
}

/// The statement rows shown: (movement, delta, balance after), newest first.
pub(crate) async fn statement_rows(browser: &Browser) -> Vec<(String, i64, i64)> {
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
pub(crate) async fn outbox_link(outbox: &std::path::Path, to: &str, marker: &str) -> String {
    until(
        format!("a {marker} message to {to} in the outbox"),
        Duration::from_secs(10),
        move || async move {
            std::fs::read_dir(outbox).unwrap().find_map(|entry| {
                let raw = std::fs::read_to_string(entry.unwrap().path()).unwrap_or_default();
                // Quoted-printable or base64, as lettre chose: decoded.
                let text = crate::common::opening::decoded(&raw);
                let addressed = text
                    .lines()
                    .any(|l| l.starts_with("To: ") && l.contains(to));
                let line = text.lines().find(|l| l.contains(marker))?;
                addressed.then(|| line.trim().to_owned())
            })
        },
    )
    .await
}

/// A screenshot's name: French, the page's default, as it always was;
/// another language's with its code.
pub(crate) fn shot_name(name: &str, lang: &str) -> String {
    if lang == "fr" {
        name.to_owned()
    } else {
        format!("{name}-{lang}")
    }
}
