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

use crate::common::browser::{Browser, Turn, browser_paths, browser_turn, screenshots_dir};
use crate::common::{
    Harness, Server, cookie_client, describe, get_json, post, tresor_command, unthrottled_flags,
};
use serde_json::{Value, json};
use std::io::Write;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, Instant};

mod accessibility;
mod dashboard;
mod documents;
mod roles;
mod settling;

const PASSWORD: &str = "a console password";

/// The smallest files of each type the identity documents take.
const JPEG: &[u8] = crate::common::opening::JPEG;

const PDF: &[u8] = crate::common::opening::PDF;

const IBAN: &str = "FR76 3000 6000 0112 3456 7890 189";

/// The real server, with the operator listener this test drives, and this
/// test's turn (given back last, when all is stopped).
pub(crate) struct Site {
    /// The players' site.
    pub(crate) base: String,
    /// The operator listener.
    pub(crate) admin: String,
    _server: Server,
    _turn: Turn,
}

/// Waits for this test's turn, then starts the server and a browser; or
/// says why the test is skipped.
pub(crate) async fn setup(h: &Harness, width: u32, height: u32) -> Option<(Site, Browser)> {
    let turn = browser_turn().await;
    let (chromium, chromedriver) = browser_paths()?;
    let server = h.server(&unthrottled_flags()).await;
    let site = Site {
        base: server.base.clone(),
        admin: server.admin_base.clone(),
        _server: server,
        _turn: turn,
    };
    let browser = Browser::start(&chromium, &chromedriver, width, height).await;
    Some((site, browser))
}

/// `tresor operator add` with the password on standard input.
pub(crate) fn add_operator(h: &Harness, username: &str, role: &str) {
    let mut command = tresor_command();
    command
        .args([
            "operator",
            "add",
            "--username",
            username,
            "--role",
            role,
            "--password-stdin",
        ])
        .args(h.db_args())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    h.env(&mut command);
    let mut child = command.spawn().expect("run tresor operator add");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{PASSWORD}\n").as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", describe(&output));
}

/// The code an authenticator app shows now for `secret` (base32, as the
/// enrolment screen shows it).
fn code_now(secret: &str) -> String {
    const ALPHABET: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let (mut buffer, mut bits, mut key) = (0u32, 0u32, Vec::new());
    for c in secret.trim().chars().filter(|c| *c != ' ') {
        buffer = (buffer << 5) | ALPHABET.find(c).expect("a base32 digit") as u32;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            key.push((buffer >> bits) as u8);
        }
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    tresor::staff::totp_code(&key, now)
}

/// A screenshot as `target/screenshots/{name}.png`, and in `docs/screenshots/`
/// when `TRESOR_UPDATE_SCREENSHOTS=1`.
pub(crate) async fn shot(browser: &Browser, name: &str) {
    // Let the last paint (a chart, a dialog) settle.
    tokio::time::sleep(Duration::from_millis(250)).await;
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
        self.wait_for("document.body.dataset.screen === 'login'")
            .await;
        self.type_into("[data-testid=login-username]", username)
            .await;
        self.type_into("[data-testid=login-password]", PASSWORD)
            .await;
        self.click("[data-testid=login-submit]").await;
        self.wait_for("document.body.dataset.loginStep === 'enrol'")
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
        self.click(&format!("[data-testid=nav-{screen}]")).await;
        self.wait_for(&format!("document.body.dataset.loaded === '{screen}'"))
            .await;
    }

    /// Confirms the dialog that a dangerous action opened.
    pub(crate) async fn confirm(&self) {
        self.wait_for("document.querySelector('#confirm').open")
            .await;
        self.click("[data-testid=confirm-ok]").await;
        self.wait_for("!document.querySelector('#confirm').open")
            .await;
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
            .execute_async(&format!(
                "const done = arguments[arguments.length - 1];
                 const init = {{method: '{method}', credentials: 'same-origin', headers: {{}}}};
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
fn buyer(
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
            let (status, body) = post(
                &client,
                &format!("{base}/api/plays"),
                &json!({"stake_cents": 100}),
                Some(&key),
            )
            .await
            .expect("the server answers the purchase");
            assert_eq!(status, 201, "{body}");
            bought.fetch_add(1, Ordering::SeqCst);
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
async fn player_on_account_screen(browser: &Browser, base: &str, username: &str, lang: &str) {
    browser.goto(&format!("{base}/?fast=1#/")).await;
    browser
        .wait_for("document.body.dataset.ready === 'true'")
        .await;
    let body = json!({
        "username": username, "password": "a long password", "accept_rules": true,
        "identity": {"birth_name": format!("Nom {lang}"), "first_names": "Camille", "birth_date": "1990-07-14",
                     "birth_place": "Lyon", "address": "3 rue des Lilas, 69003 Lyon"},
        "iban": IBAN,
    });
    let script = format!(
        "const done = arguments[arguments.length - 1];
         fetch('/api/logout', {{method: 'POST', credentials: 'same-origin', headers: {{'X-Requested-With': 'tresor'}}}})
           .then(() => fetch('/api/account/open', {{method: 'POST', credentials: 'same-origin',
             headers: {{'Content-Type': 'application/json', 'X-Requested-With': 'tresor'}},
             body: JSON.stringify({body})}}))
           .then((r) => {{ localStorage.setItem('tresor.session', '1'); localStorage.setItem('tresor.lang', '{lang}'); done(r.status); }})
           .catch((e) => done(String(e)));"
    );
    assert_eq!(browser.execute_async(&script).await, json!(201));
    // Loaded again, as that player, in `lang`.
    browser
        .execute(
            "document.body.dataset.ready = ''; location.hash = '#/account'; location.reload();",
        )
        .await;
    browser
        .wait_for(&format!(
            "document.body.dataset.ready === 'true' && document.body.dataset.screen === 'account'
             && document.documentElement.lang === '{lang}' && !document.querySelector('#docs-box').hidden"
        ))
        .await;
}

/// The number a figure shows, its digits only ("€1,234.50" is 123450).
fn digits(text: &str) -> i64 {
    let digits: String = text.chars().filter(char::is_ascii_digit).collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("a number: {text:?}"))
}
