//! Browser tests of the operator's console: the real `tresor serve` binary,
//! its operator listener, and a real headless Chromium over WebDriver, the
//! way an operator uses it. Operators are made with `tresor operator add`;
//! their second factor is enrolled from the page (the secret read from the
//! enrolment screen, the code computed as an authenticator app would), and
//! players buy through the players' API meanwhile.
//!
//! Screenshots go to `target/screenshots/console-*.png`; with
//! `TRESOR_UPDATE_SCREENSHOTS=1` they are also copied to `docs/screenshots/`
//! (the README's pictures).

use crate::common::axe::axe_source;

use crate::common::browser::{Browser, screenshots_dir};
use crate::common::page::Site;
use crate::common::staff::{CONSOLE_PASSWORD, add_operator, code_now};
use crate::common::{Harness, buy_at, cookie_client, post, unthrottled_flags};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, Instant};

mod accessibility;
mod dashboard;

/// The smallest files of each type the identity documents take.
pub(crate) const JPEG: &[u8] = crate::common::opening::JPEG;

pub(crate) const PDF: &[u8] = crate::common::opening::PDF;

pub(crate) const IBAN: &str = "FR76 3000 6000 0112 3456 7890 189";

/// Waits for this test's turn, then starts the server (unthrottled: the
/// tests' players buy fast) and a browser (`Site::start`).
pub(crate) async fn setup(h: &Harness, width: u32, height: u32) -> (Site, Browser) {
    Site::start(h, &unthrottled_flags(), width, height).await
}

/// A screenshot as `target/screenshots/{name}.png`, and in `docs/screenshots/`
/// when `TRESOR_UPDATE_SCREENSHOTS=1`.
pub(crate) async fn shot(browser: &Browser, name: &str) {
    // The last animation (a chart, a dialog) over first.
    browser.settled().await;
    browser.screenshot(name).await;
    if std::env::var("TRESOR_UPDATE_SCREENSHOTS").as_deref() == Ok("1") {
        let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/screenshots");
        std::fs::copy(
            screenshots_dir().join(format!("{name}.png")),
            docs.join(format!("{name}.png")),
        )
        .unwrap();
    }
}

/// The console's vocabulary, over the shared WebDriver client.
impl Browser {
    /// Logs `username` in at `admin`'s console (in English, the words these
    /// tests read), enrolling the second factor the first time; returns the
    /// secret enrolled. Lands on the dashboard.
    pub(crate) async fn log_in(
        &self,
        admin: &str,
        username: &str,
        enrol_shot: Option<&str>,
    ) -> String {
        let secret = self.up_to_enrolment(admin, username, "en").await;
        if let Some(name) = enrol_shot {
            shot(self, name).await;
        }
        self.enter_code(&secret).await;
        secret
    }

    /// Opens the console's login in `lang`, gives `username`'s password and
    /// waits for the enrolment screen; returns the secret it shows.
    pub(crate) async fn up_to_enrolment(&self, admin: &str, username: &str, lang: &str) -> String {
        self.goto(&format!("{admin}/console?lang={lang}")).await;
        self.wait_screen("login").await;
        self.type_into("[data-testid=login-username]", username)
            .await;
        self.type_into("[data-testid=login-password]", CONSOLE_PASSWORD)
            .await;
        self.click_until(
            "[data-testid=login-submit]",
            "document.body.dataset.loginStep === 'enrol'",
        )
        .await;
        let secret = self
            .execute("return document.querySelector('[data-testid=enrol-secret]').textContent")
            .await
            .as_str()
            .unwrap()
            .to_owned();
        assert!(secret.len() >= 16, "a base32 secret: {secret}");
        // The server's QR code shows, as an image the CSP allows.
        let qr = self
            .wait_for(
                "(() => { const img = document.querySelector('[data-testid=enrol-qr]');
                   return img.complete && img.naturalWidth > 0 && img.src.slice(0, 26); })()",
            )
            .await;
        assert_eq!(qr, json!("data:image/svg+xml;base64,"));
        secret
    }

    /// Types the code an authenticator shows for `secret`, submitted with
    /// Enter (the form works from the keyboard); lands past the login.
    pub(crate) async fn enter_code(&self, secret: &str) {
        let code = code_now(secret);
        self.type_into("[data-testid=login-code]", &format!("{code}\u{E007}"))
            .await;
        self.wait_for("document.body.dataset.role && document.body.dataset.screen !== 'login'")
            .await;
    }

    /// Opens a screen with the navigation and waits until it has loaded.
    pub(crate) async fn open(&self, screen: &str) {
        self.click_until(
            &format!("[data-testid=nav-{screen}]"),
            &format!("document.body.dataset.loaded === '{screen}'"),
        )
        .await;
    }

    /// Logs out with the bar's button and waits for the login screen.
    pub(crate) async fn log_out_of_the_console(&self) {
        self.click("[data-testid=logout]").await;
        self.wait_screen("login").await;
    }

    /// Clicks `css`, a dangerous action, and waits for its confirmation
    /// dialog.
    pub(crate) async fn ask(&self, css: &str) {
        self.click(css).await;
        self.wait_open("#confirm").await;
    }

    /// Cancels the confirmation dialog and waits until it has closed.
    pub(crate) async fn cancel(&self) {
        self.click("#confirm-cancel").await;
        self.wait_closed("#confirm").await;
    }

    /// Confirms the dialog that a dangerous action opened.
    pub(crate) async fn confirm(&self) {
        self.wait_open("#confirm").await;
        self.click("[data-testid=confirm-ok]").await;
        self.wait_closed("#confirm").await;
    }

    /// Clicks `button` and confirms in the dialog it opens, which refuses:
    /// waits until its error line shows and `also` holds.
    pub(crate) async fn click_refused(&self, button: &str, also: &str) {
        self.ask(button).await;
        self.click_until(
            "[data-testid=confirm-ok]",
            &format!("!document.querySelector('#confirm-error').hidden && {also}"),
        )
        .await;
    }

    /// Clicks `button`, confirms in the dialog it opens, and waits until
    /// `then` holds: an action of the console's lists, done.
    pub(crate) async fn click_confirmed(&self, button: &str, then: &str) {
        self.click(button).await;
        self.confirm().await;
        self.wait_for(then).await;
    }

    /// Which screens the navigation offers.
    pub(crate) async fn nav(&self) -> Vec<String> {
        let value = self
            .execute(
                "return [...document.querySelectorAll('#nav a')].filter((a) => !a.hidden).map((a) => a.dataset.route);",
            )
            .await;
        serde_json::from_value(value).unwrap()
    }

    /// `method path` from inside the page, with its session and the CSRF
    /// header: the status and the JSON answer.
    pub(crate) async fn call(&self, method: &str, path: &str) -> (u16, Value) {
        let answer = self
            .in_page(&format!(
                "const init = {{method: '{method}', credentials: 'same-origin', headers: {{}}}};
                 if ('{method}' !== 'GET') {{
                   init.headers = {{'Content-Type': 'application/json', 'X-Requested-With': 'tresor-console'}};
                   init.body = '{{}}';
                 }}
                 fetch('{path}', init).then(async (r) => done([r.status, await r.json().catch(() => null)]),
                                            (e) => done([0, String(e)]));"
            ))
            .await;
        (answer[0].as_u64().unwrap() as u16, answer[1].clone())
    }

    /// Drains the browser console, allowing only the refusals this test
    /// asked for (the browser logs every 4xx answer).
    pub(crate) async fn only_expected_errors(&self, allowed: &[&str]) {
        for error in self.console_errors().await {
            assert!(
                allowed.iter().any(|a| error.contains(a)),
                "unexpected console error: {error}"
            );
        }
    }
}

/// A player of the demo site who buys €1 units through the players' API,
/// `gap` apart, until `stop`; counts what was bought.
pub(crate) fn buyer(
    base: String,
    username: String,
    gap: Duration,
    stop: Arc<AtomicBool>,
    bought: Arc<AtomicI64>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let client = cookie_client();
        crate::common::register_and_deposit(&client, &base, &username, 100_000).await;
        let mut n = 0;
        while !stop.load(Ordering::SeqCst) {
            n += 1;
            let key = format!("{username}-{n}");
            let (status, body) = buy_at(&client, &base, 100, &key)
                .await
                .expect("the server answers the purchase");
            assert_eq!(status, 201, "{body}");
            bought.fetch_add(1, Ordering::SeqCst);
            // Paces the load (a purchase every `gap`): nothing is waited for.
            tokio::time::sleep(gap).await;
        }
    })
}

pub(crate) fn data_i64(value: &Value) -> i64 {
    value.as_str().and_then(|s| s.parse().ok()).unwrap_or(-1)
}

/// The players' page in `lang` as a new player `username` with an account
/// for real money (opened through the API from inside the page), on the
/// account screen.
pub(crate) async fn player_on_account_screen(
    browser: &Browser,
    base: &str,
    username: &str,
    lang: &str,
) {
    browser.goto(&format!("{base}/?fast=1#/")).await;
    let body = json!({
        "username": username, "password": "a long password", "accept_rules": true,
        "identity": {"birth_name": format!("Nom {lang}"), "first_names": "Camille", "birth_date": "1990-07-14",
                     "birth_place": "Lyon", "address": "3 rue des Lilas, 69003 Lyon"},
        "iban": IBAN,
    });
    browser.log_out_in_page().await;
    browser.open_account_in_page(&body, Some(lang)).await;
    // Loaded again, as that player, in `lang`.
    browser.reload_after("location.hash = '#/account';").await;
    browser
        .wait_for(&format!(
            "document.body.dataset.screen === 'account'
             && document.documentElement.lang === '{lang}' && !document.querySelector('#docs-box').hidden"
        ))
        .await;
}

/// The number a figure shows, its digits only ("€1,234.50" is 123450).
pub(crate) fn digits(text: &str) -> i64 {
    let digits: String = text.chars().filter(char::is_ascii_digit).collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("a number: {text:?}"))
}
