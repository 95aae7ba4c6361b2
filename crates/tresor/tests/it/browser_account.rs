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

// The page is the same on either database (its PostgreSQL smoke test is
// browser::a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake).
on_sqlite!(
    an_account_opened_with_the_form_deposits_plays_withdraws_reads_its_statement_and_closes,
    the_opening_form_works_with_the_keyboard_alone_on_a_phone_and_the_account_speaks_english,
    the_reminder_window_comes_when_due_blocks_play_until_acknowledged_and_says_the_time_played,
    a_payment_declined_or_over_the_cap_shows_failed_or_is_refused_and_credits_nothing,
    a_forgotten_password_is_reset_through_the_link_in_the_outbox,
    a_suspended_player_is_told_neutrally_in_both_languages,
    an_honest_player_changes_iban_and_address_with_the_password_and_the_old_address_undoes_it,
);

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

async fn an_account_opened_with_the_form_deposits_plays_withdraws_reads_its_statement_and_closes(
    h: &Harness,
) {
    let Some((site, browser)) = setup(h, 1280, 900).await else {
        return;
    };
    let base = &site.base;
    browser.goto(&format!("{base}/?fast=1#/register")).await;
    // Fast animations on every page load, the sandbox's return included.
    browser
        .execute("localStorage.setItem('tresor.fast', '1')")
        .await;
    browser.wait_screen("register").await;
    browser.screenshot("account-open-form").await;
    let fields = [
        ("open-birth-name", "Durand"),
        ("open-first-names", "Ana Marie"),
        ("open-birth-date", "14/07/1990"),
        ("open-birth-place", "Lyon (France)"),
        ("open-address", "1 rue de la Paix, 75002 Paris"),
        ("open-email", "ana@example.org"),
        ("open-username", "ana_durand"),
        ("open-password", PASSWORD),
        ("open-iban", IBAN),
    ];
    for (testid, text) in fields {
        browser
            .type_into(&format!("[data-testid={testid}]"), text)
            .await;
    }
    // Without the rules accepted, the form says so under the box and focuses it.
    browser.click("[data-testid=open-submit]").await;
    browser
        .wait_for("document.activeElement === document.querySelector('[data-testid=open-accept]')")
        .await;
    assert!(
        browser
            .text("#open-accept_rules-error")
            .await
            .contains("règlement")
    );
    browser.click("[data-testid=open-accept]").await;
    browser.click("[data-testid=open-submit]").await;
    browser.wait_screen("account").await;
    browser
        .wait_for("document.querySelector('[data-testid=account-status]').dataset.status === 'provisional'")
        .await;
    let withdraw = browser
        .wait_for("document.querySelector('[data-testid=can-withdraw]')?.dataset.ok === 'false' && document.querySelector('[data-testid=can-withdraw]').textContent")
        .await;
    assert!(
        withdraw.as_str().unwrap().contains("identité vérifiée"),
        "the account says why it may not withdraw yet: {withdraw}"
    );
    let account = browser.get_json("/api/account").await;
    assert_eq!(account["identity"]["birth_name"], json!("Durand"));
    assert_eq!(account["identity"]["birth_date"], json!("1990-07-14"));
    assert_eq!(account["iban"], json!("FR76 •••• 0189"));
    assert_eq!(account["marketing_consent"], json!(false));
    browser.screenshot("account-provisional").await;

    // A deposit through the sandbox provider: « Pay », back on the account, credited.
    browser.ask_deposit("30").await;
    browser.screenshot("account-sandbox-page").await;
    browser.click("#pay").await;
    assert_eq!(browser.deposit_outcome().await, "credited");
    browser.wait_balance(3000).await;
    let outcome = browser.text("[data-testid=deposit-outcome]").await;
    assert!(outcome.contains("30"), "{outcome}");
    browser.screenshot("account-deposit-credited").await;

    // New rules are published: the purchase shows them to accept, then goes on.
    h.tresor_ok(&["rules", "publish"]);
    let play = browser.play_a_game_accepting_rules().await;
    let stake = play["stake_cents"].as_i64().unwrap();
    let prize = play["outcome"]["prize_cents"].as_i64().unwrap();
    let after_game = 3000 - stake + prize;
    browser.wait_balance(after_game).await;
    let account = browser.get_json("/api/account").await;
    assert_eq!(
        account["rules_version_accepted"],
        account["rules_version_current"]
    );

    // The operator checks the identity documents (here through the
    // service, as a console account does: tests/it/browser_console.rs drives
    // the console's screens) and the IBAN: withdrawals open.
    let reviewer = tresor::service::Service::new(
        h.connect().await,
        std::sync::Arc::new(tresor::service::SystemClock),
        tresor::service::Settings::default(),
    );
    crate::common::opening::documents_verified(&reviewer, "ana_durand").await;
    h.tresor_ok(&[
        "account",
        "verify",
        "--username",
        "ana_durand",
        "--iban",
        IBAN,
    ]);
    browser.click("[data-testid=nav-account]").await;
    browser
        .wait_for("document.querySelector('[data-testid=account-status]').dataset.status === 'verified' && !document.querySelector('#withdraw-form').hidden")
        .await;
    assert!(
        browser
            .text("[data-testid=withdraw-iban]")
            .await
            .contains("FR76 •••• 0189")
    );
    // More than the balance: refused in the page's language, nothing moves.
    browser.fill("[data-testid=withdraw-amount]", "1000").await;
    browser.click("[data-testid=withdraw-submit]").await;
    let refusal = browser
        .wait_for("document.querySelector('#withdraw-error').textContent")
        .await;
    assert!(
        refusal
            .as_str()
            .unwrap()
            .contains("plus que vos disponibilités"),
        "the refusal is in French: {refusal}"
    );
    assert_eq!(browser.balance_cents().await, after_game);
    browser.fill("[data-testid=withdraw-amount]", "10").await;
    browser.click("[data-testid=withdraw-submit]").await;
    // The amount leaves the balance at once, pending the operator.
    browser.wait_balance(after_game - 1000).await;
    browser
        .wait_for("document.querySelector('[data-testid=withdrawal]')?.dataset.state === 'pending'")
        .await;
    assert_eq!(
        browser
            .execute(
                "return document.querySelector('[data-testid=withdrawal]').dataset.amountCents"
            )
            .await,
        json!("1000")
    );
    browser.screenshot("account-verified-withdrawal").await;

    // The statement: every movement, each balance the one before plus its change.
    browser.click("[data-testid=statement-open]").await;
    browser.wait_screen("statement").await;
    browser
        .wait_for("document.querySelectorAll('[data-testid=statement-row]').length > 0")
        .await;
    let rows = statement_rows(&browser).await;
    let kinds: Vec<&str> = rows.iter().rev().map(|r| r.0.as_str()).collect();
    let mut expected = vec!["deposit", "stake"];
    if prize > 0 {
        expected.push("win");
    }
    expected.push("withdrawal_requested");
    assert_eq!(kinds, expected, "oldest first: {rows:?}");
    let mut running = 0;
    for (movement, delta, balance) in rows.iter().rev() {
        running += delta;
        assert_eq!(*balance, running, "the balance after {movement}");
    }
    assert_eq!(running, after_game - 1000);
    let words = browser.text("[data-testid=statement]").await;
    for word in ["Dépôt", "Mise", "Retrait demandé"] {
        assert!(words.contains(word), "{word} in {words}");
    }
    browser.screenshot("account-statement").await;

    // The CSV behind the page's link: the same movements, oldest first.
    let csv = browser
        .execute_async(
            "const done = arguments[arguments.length - 1];
             fetch(document.querySelector('[data-testid=statement-csv]').href, {credentials: 'same-origin'})
               .then((r) => r.text()).then(done, (e) => done(String(e)));",
        )
        .await;
    let csv = csv.as_str().unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (movement, delta, balance) = (
        column("movement"),
        column("delta_cents"),
        column("balance_cents"),
    );
    let from_csv: Vec<(String, i64, i64)> = lines
        .map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            (
                cells[movement].to_owned(),
                cells[delta].parse().unwrap(),
                cells[balance].parse().unwrap(),
            )
        })
        .collect();
    let shown: Vec<(String, i64, i64)> = rows.into_iter().rev().collect();
    assert_eq!(from_csv, shown, "the CSV has the statement's rows");

    // Closing: the window says the balance goes to the checked IBAN, then logged out.
    browser.click("[data-testid=statement-back]").await;
    browser.wait_screen("account").await;
    browser.click("[data-testid=close-account]").await;
    browser
        .wait_for("document.querySelector('#dlg-close').open")
        .await;
    let text = browser.text("[data-testid=close-dialog-text]").await;
    assert!(text.contains("FR76 •••• 0189"), "{text}");
    browser.screenshot("account-close-dialog").await;
    browser.click("[data-testid=close-confirm]").await;
    browser
        .wait_for("document.body.dataset.screen === 'login' && document.body.dataset.user === 'out' && document.querySelector('#login-error').dataset.code === 'account_closed'")
        .await;
    let withdrawals = h.tresor_ok(&["withdrawal", "list", "--state", "all", "--json"]);
    let withdrawals: Value = serde_json::from_slice(&withdrawals.stdout).unwrap();
    let closing: i64 = withdrawals
        .as_array()
        .or_else(|| withdrawals["withdrawals"].as_array())
        .unwrap()
        .iter()
        .filter(|w| w["closing"] == json!(true))
        .map(|w| w["amount_cents"].as_i64().unwrap())
        .sum();
    assert_eq!(
        closing,
        after_game - 1000,
        "the balance left to pay at closing"
    );
    browser.close_with_only_refusals(&[409]).await;

    h.tresor_ok(&["audit", "verify"]);
    crate::common::assert_ledger_balances(&h.connect().await).await;
}

async fn the_opening_form_works_with_the_keyboard_alone_on_a_phone_and_the_account_speaks_english(
    h: &Harness,
) {
    let Some((site, browser)) = setup(h, 360, 740).await else {
        return;
    };
    let base = &site.base;
    browser.phone(360, 740).await;
    browser.goto(&format!("{base}/?fast=1#/register")).await;
    browser.wait_screen("register").await;
    assert_eq!(
        browser.execute("return window.innerWidth").await,
        json!(360)
    );
    assert!(browser.fits_360().await, "the register screen fits 360 px");

    browser.tab_to("open-birth-name").await;
    let typed = [
        "Martin",
        "Louise",
        // Under 18 by the server's clock: refused as a minor.
        "01/01/2015",
        "Nantes (France)",
        "3 place Royale, 44000 Nantes",
        "",
        "louise_m",
        PASSWORD,
        "",
        "",
        "",
    ];
    for (i, text) in typed.iter().enumerate() {
        browser.type_keys(text).await;
        if i + 1 < typed.len() {
            browser.press(&[TAB]).await;
        }
    }
    browser.press(&[TAB]).await;
    assert_eq!(browser.focused().await, json!("open-accept"));
    browser.press(&[SPACE]).await;
    browser.tab_to("open-submit").await;
    browser.press(&[ENTER]).await;
    // The server's refusal lands under the birth date, which gets the focus.
    browser
        .wait_for(
            "document.activeElement === document.querySelector('[data-testid=open-birth-date]')",
        )
        .await;
    let error = browser.text("#open-birth_date-error").await;
    assert!(error.contains("18 ans"), "{error}");
    assert_eq!(
        browser
            .execute("return document.activeElement.getAttribute('aria-invalid')")
            .await,
        json!("true")
    );
    browser.screenshot("account-phone-open-minor").await;
    browser.press(&[END]).await;
    browser.press(&[BACKSPACE; 10]).await;
    browser.type_keys("01/01/1990").await;
    browser.tab_to("open-submit").await;
    browser.press(&[ENTER]).await;
    browser.wait_screen("account").await;
    browser
        .wait_for("document.querySelector('[data-testid=account-status]').dataset.status === 'provisional'")
        .await;
    assert!(browser.fits_360().await, "the account screen fits 360 px");
    browser.screenshot("account-phone-account").await;

    // Every visible word of the account screen in English (on a phone the
    // language switch is in the menu).
    browser.click("[data-testid=menu]").await;
    browser.click("[data-testid=lang]").await;
    browser
        .wait_for("document.documentElement.lang === 'en' && document.querySelector('#account-title').textContent === 'My account'")
        .await;
    let text = browser
        .execute("return document.querySelector('#screen-account').innerText")
        .await;
    let text = text.as_str().unwrap().to_lowercase();
    for french in [
        "é", "è", "ê", "à", "ç", "ô", " le ", " la ", " les ", " des ", " du ", " vous ",
        " votre ", " vos ", " mon ", " mes ", " oui", "jamais", "retrait", "dépôt", "compte ",
    ] {
        assert!(
            !text.contains(french),
            "French ({french:?}) left on the English account screen: {text}"
        );
    }
    let untranslated = browser
        .execute(
            "return [...document.querySelectorAll('#screen-account [data-i18n]')]
               .filter((n) => n.offsetParent !== null && n.textContent.trim() === '')
               .map((n) => n.dataset.i18n)",
        )
        .await;
    assert_eq!(untranslated, json!([]), "every label has its words");
    browser.screenshot("account-phone-english").await;

    browser.click("[data-testid=statement-open]").await;
    browser.wait_screen("statement").await;
    browser
        .wait_for("document.querySelector('#screen-statement').dataset.loaded !== undefined")
        .await;
    assert!(browser.fits_360().await, "the statement screen fits 360 px");
    // Tap targets: every button and link of the screen is 44 px high at least.
    let small = browser
        .execute(
            "return [...document.querySelectorAll('#screen-statement a, #screen-statement button, #screen-account button')]
               .filter((n) => n.offsetParent !== null && n.getBoundingClientRect().height < 44)
               .map((n) => n.dataset.testid || n.id || n.textContent)",
        )
        .await;
    assert_eq!(small, json!([]), "tap targets of 44 px");
    browser.close_with_only_refusals(&[403]).await;
}

async fn the_reminder_window_comes_when_due_blocks_play_until_acknowledged_and_says_the_time_played(
    h: &Harness,
) {
    let Some((site, browser)) = setup(h, 1280, 900).await else {
        return;
    };
    let base = &site.base;
    browser.open_quickly(base, "reminded", 10000).await;
    // Money to play with: a deposit paid on the sandbox's page.
    browser.ask_deposit("10").await;
    browser.click("#pay").await;
    assert_eq!(browser.deposit_outcome().await, "credited");

    browser
        .execute("document.querySelector('[data-testid=reminder-every]').value = '5'")
        .await;
    browser.click("[data-testid=reminder-save]").await;
    browser
        .wait_for("document.querySelector('[data-testid=reminder-notice]').textContent !== ''")
        .await;
    assert_eq!(
        browser.get_json("/api/account").await["reminder_every_minutes"],
        json!(5)
    );
    browser.click("[data-testid=brand]").await;
    browser
        .wait_for("document.body.dataset.screen === 'game' && !document.querySelector('[data-testid=play]').disabled")
        .await;
    assert!(
        !browser
            .execute("return document.querySelector('#dlg-reminder').open")
            .await
            .as_bool()
            .unwrap()
    );

    // Five minutes of play pass on the page's clock.
    browser.reminded_after(5 * 60, 5 * 60).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    browser.screenshot("account-reminder").await;
    // Escape does not dismiss it, and play waits.
    browser.press(&[ESCAPE]).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        browser
            .execute("return document.querySelector('#dlg-reminder').open")
            .await,
        json!(true)
    );
    assert_eq!(
        browser
            .execute("return document.querySelector('[data-testid=play]').disabled")
            .await,
        json!(true)
    );
    let balance = browser.balance_cents().await;
    let before = browser.account_state().await;
    assert_eq!(before.1, Vec::<Value>::new(), "no play before the reminder");
    // From here every request the page sends is recorded.
    browser.requests_sent().await;
    browser
        .execute("document.querySelector('[data-testid=play]').click()")
        .await;
    // Time for a purchase to be asked; the verdict is the page's requests,
    // checked again when play has gone on.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        browser
            .execute("return document.querySelector('#dlg-howto').open")
            .await,
        json!(false),
        "no purchase while the reminder waits"
    );
    assert_eq!(browser.balance_cents().await, balance);
    assert_eq!(
        browser.account_state().await,
        before,
        "nothing debited, no play bought, by the server's account"
    );

    let mut sent = browser.requests_sent().await;
    assert_eq!(
        purchases(&sent),
        0,
        "no purchase asked while the reminder waits: {sent:?}"
    );

    // Acknowledged: play goes on, and the window does not come back before the next 5 minutes.
    browser.click("[data-testid=reminder-ok]").await;
    browser
        .wait_for("!document.querySelector('#dlg-reminder').open && !document.querySelector('[data-testid=play]').disabled")
        .await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(
        browser
            .execute("return document.querySelector('#dlg-reminder').open")
            .await,
        json!(false)
    );
    let play = browser.play_a_game_accepting_rules().await;
    assert_eq!(play["state"], json!("finished"));
    // The one purchase asked since the reminder came is this game's, and
    // the server holds no play before it.
    sent.extend(browser.requests_sent().await);
    assert_eq!(purchases(&sent), 1, "{sent:?}");
    assert_eq!(browser.account_state().await.1, vec![play["id"].clone()]);
    browser.reminded_after(5 * 60, 10 * 60).await;
    browser.click("[data-testid=reminder-ok]").await;
    browser.close_without_console_errors().await;
}

async fn a_payment_declined_or_over_the_cap_shows_failed_or_is_refused_and_credits_nothing(
    h: &Harness,
) {
    let Some((site, browser)) = setup(h, 1280, 900).await else {
        return;
    };
    let base = &site.base;
    // A 20 € weekly cap on deposits, for the second payment below.
    browser.open_quickly(base, "declined", 2000).await;
    browser.ask_deposit("15").await;
    browser.click("#decline").await;
    assert_eq!(browser.deposit_outcome().await, "failed");
    let id = browser
        .execute("return document.querySelector('[data-testid=deposit-outcome]').dataset.id")
        .await;
    let deposit = browser
        .get_json(&format!("/api/account/deposits/{}", id.as_str().unwrap()))
        .await;
    assert_eq!(deposit["state"], json!("failed"));
    let text = browser.text("[data-testid=deposit-outcome]").await;
    assert!(text.contains("n'a pas abouti"), "{text}");
    browser.screenshot("account-deposit-failed").await;
    assert_eq!(browser.balance_cents().await, 0);
    assert_eq!(
        browser.account_state().await,
        (json!(0), vec![]),
        "nothing credited, by the server's account"
    );

    // Over what is left of the deposit cap: refused when asked (it used to be
    // paid, then only refunded), the reason under the amount, the player still
    // on the account screen, nothing paid or credited. (A payment confirmed
    // past the cap is still recorded to refund: tests/it/account.rs.)
    browser.click("[data-testid=nav-account]").await;
    browser
        .wait_for("!document.querySelector('#pay-form').hidden")
        .await;
    browser.fill("[data-testid=pay-amount]", "25").await;
    browser.click("[data-testid=pay-submit]").await;
    let text = browser
        .wait_for("document.querySelector('[data-testid=pay-error]').textContent")
        .await;
    assert!(
        !text.as_str().unwrap().is_empty()
            && browser.execute("return location.pathname").await == json!("/"),
        "{text}"
    );
    browser.screenshot("account-deposit-over-the-cap").await;
    assert_eq!(browser.balance_cents().await, 0);
    assert_eq!(browser.account_state().await, (json!(0), vec![]));
    let statement = browser.get_json("/api/account/statement").await;
    assert_eq!(statement["movements"], json!([]));
    assert_eq!(statement["balance_cents"], json!(0));
    // The browser logs the refusal it was answered (403), and nothing else.
    let errors = browser.console_errors().await;
    assert!(
        errors
            .iter()
            .all(|e| e.contains("/api/account/deposits") && e.contains("403")),
        "console errors: {errors:?}"
    );
    browser.close().await;
    crate::common::assert_ledger_balances(&h.connect().await).await;
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

/// What the reset's screens say, in each language.
struct ResetWords {
    sent: &'static str,
    saved: &'static str,
    refused: &'static str,
}

const RESET_WORDS: [(&str, ResetWords); 2] = [
    (
        "fr",
        ResetWords {
            sent: "lien",
            saved: "enregistré",
            refused: "plus valable",
        },
    ),
    (
        "en",
        ResetWords {
            sent: "link",
            saved: "saved",
            refused: "no longer valid",
        },
    ),
];

async fn a_forgotten_password_is_reset_through_the_link_in_the_outbox(h: &Harness) {
    let turn = browser_turn().await;
    let Some((chromium, chromedriver)) = browser_paths() else {
        return;
    };
    let outbox = tempfile::tempdir().unwrap();
    let server = h
        .server(&[
            "--mail-outbox".to_owned(),
            outbox.path().display().to_string(),
        ])
        .await;
    let base = server.base.clone();
    let site = Site {
        base: base.clone(),
        _server: server,
        _turn: turn,
    };
    let browser = Browser::start(&chromium, &chromedriver, 1280, 900).await;
    for (lang, words) in &RESET_WORDS {
        reset_in(&browser, &site.base, outbox.path(), lang, words).await;
    }
    browser.close().await;
}

/// A player of `lang`'s page forgets the password and resets it through
/// the link the server wrote to its outbox; the link is used once.
async fn reset_in(
    browser: &Browser,
    base: &str,
    outbox: &std::path::Path,
    lang: &str,
    words: &ResetWords,
) {
    let username = format!("lea_{lang}");
    let email = format!("lea_{lang}@example.org");
    // The account, opened through the API.
    let client = reqwest::Client::builder()
        .cookie_store(true)
        .build()
        .unwrap();
    let opened = client
        .post(format!("{base}/api/account/open"))
        .header("x-requested-with", "tresor")
        .json(&json!({
            "username": username, "password": PASSWORD, "accept_rules": true,
            "identity": {"birth_name": format!("Martin {lang}"), "first_names": "Léa", "birth_date": "1990-07-14",
                         "birth_place": "Brest", "address": "2 quai de la Douane, 29200 Brest",
                         "email": email},
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status(), reqwest::StatusCode::CREATED);
    // The address confirmed by its link (a reset goes only to a confirmed one).
    let confirm = outbox_link(outbox, &email, "/#/confirm-email/").await;
    let token = confirm.rsplit('/').next().unwrap();
    let confirmed = client
        .post(format!("{base}/api/email/confirm"))
        .header("x-requested-with", "tresor")
        .json(&json!({"token": token}))
        .send()
        .await
        .unwrap();
    assert_eq!(confirmed.status(), reqwest::StatusCode::OK);
    // The page in `lang` (the switch remembered), logged out.
    browser.goto(&format!("{base}/?fast=1#/login")).await;
    browser
        .execute_async(&format!(
            "const done = arguments[arguments.length - 1];
             localStorage.setItem('tresor.lang', '{lang}'); localStorage.removeItem('tresor.session');
             fetch('/api/logout', {{method: 'POST', credentials: 'same-origin',
               headers: {{'X-Requested-With': 'tresor'}}}}).then(() => done(true), () => done(true));"
        ))
        .await;
    browser
        .execute("document.body.dataset.ready = ''; location.reload();")
        .await;
    browser.wait_screen("login").await;
    browser
        .wait_for(&format!("document.documentElement.lang === '{lang}'"))
        .await;
    browser.click("[data-testid=forgot-link]").await;
    browser.wait_screen("forgot").await;
    browser
        .type_into("[data-testid=forgot-email]", &email)
        .await;
    browser.click("[data-testid=forgot-submit]").await;
    let told = browser
        .wait_for("document.querySelector('[data-testid=forgot-notice]').textContent")
        .await;
    assert!(told.as_str().unwrap().contains(words.sent), "{told}");
    browser
        .screenshot(&shot_name("account-password-forgotten", lang))
        .await;

    // The link the server wrote to its outbox opens the reset screen.
    let link = outbox_link(outbox, &email, "/#/reset/").await;
    assert!(link.starts_with(base), "{link}");
    browser.goto(&link).await;
    browser.wait_screen("reset").await;
    browser
        .type_into("[data-testid=reset-password]", "my brand new password")
        .await;
    browser.click("[data-testid=reset-submit]").await;
    let done = browser
        .wait_for("document.querySelector('[data-testid=reset-notice]').textContent")
        .await;
    assert!(done.as_str().unwrap().contains(words.saved), "{done}");
    browser
        .screenshot(&shot_name("account-password-reset", lang))
        .await;

    // The old password no longer opens the account; the new one does.
    let old = client
        .post(format!("{base}/api/login"))
        .header("x-requested-with", "tresor")
        .json(&json!({"username": username, "password": PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(old.status(), reqwest::StatusCode::UNAUTHORIZED);
    browser.goto(&format!("{base}/#/login")).await;
    browser.wait_screen("login").await;
    browser
        .type_into("[data-testid=login-username]", &username)
        .await;
    browser
        .type_into("[data-testid=login-password]", "my brand new password")
        .await;
    browser.click("[data-testid=login-submit]").await;
    browser
        .wait_for("document.body.dataset.screen !== 'login'")
        .await;
    let me = browser.get_json("/api/me").await;
    assert_eq!(me["username"], json!(username), "{me}");

    // The same link again: refused, and said so in the page's language.
    browser.goto(&link).await;
    browser.wait_screen("reset").await;
    browser
        .type_into("[data-testid=reset-password]", "yet another password")
        .await;
    browser.click("[data-testid=reset-submit]").await;
    let refused = browser
        .wait_for("document.querySelector('[data-testid=reset-error]').dataset.code")
        .await;
    assert_eq!(refused, json!("invalid_token"));
    assert!(
        browser
            .text("[data-testid=reset-error]")
            .await
            .contains(words.refused)
    );
}

/// The operator's reason for the suspension: the staff's only.
const SUSPENSION_REASON: &str = "chargeback under review, case 4411";

async fn a_suspended_player_is_told_neutrally_in_both_languages(h: &Harness) {
    let Some((site, browser)) = setup(h, 1280, 900).await else {
        return;
    };
    let db = h.connect().await;
    for (lang, suspended) in [("fr", "suspendu"), ("en", "suspended")] {
        let username = format!("sam_{lang}");
        // A player with 10 € of demo money, on the game screen in `lang`.
        browser.goto(&format!("{}/?fast=1#/", site.base)).await;
        let script = format!(
            "const done = arguments[arguments.length - 1];
             const post = (path, body) => fetch(path, {{method: 'POST', credentials: 'same-origin',
               headers: {{'Content-Type': 'application/json', 'X-Requested-With': 'tresor'}},
               body: JSON.stringify(body)}});
             post('/api/logout', {{}})
               .then(() => post('/api/register', {{username: '{username}', password: '{PASSWORD}', adult: true, accept_rules: true}}))
               .then((r) => r.status === 201 ? post('/api/demo/deposit', {{amount_cents: 1000}}) : r)
               .then((r) => {{ localStorage.setItem('tresor.session', '1'); localStorage.setItem('tresor.lang', '{lang}');
                              localStorage.setItem('tresor.fast', '1'); done(r.status); }})
               .catch((e) => done(String(e)));"
        );
        assert_eq!(browser.execute_async(&script).await, json!(200));
        browser
            .execute("document.body.dataset.ready = ''; location.reload();")
            .await;
        browser
            .wait_for(&format!(
                "document.body.dataset.ready === 'true' && document.body.dataset.user === 'in'
                 && document.documentElement.lang === '{lang}'"
            ))
            .await;
        browser.wait_balance(1000).await;
        browser
            .wait_for("document.body.dataset.screen === 'game' && !document.querySelector('[data-testid=play]').disabled")
            .await;

        // The operator suspends the account: its sessions end.
        h.tresor_ok(&[
            "accounts",
            "suspend",
            &username,
            "--reason",
            SUSPENSION_REASON,
        ]);
        // A stake now: refused (the session is gone), and the page sends
        // the player to log in, with nothing of the reason.
        browser.click("[data-testid=play]").await;
        browser.wait_screen("login").await;
        let page = browser.execute("return document.body.innerText").await;
        assert!(!page.as_str().unwrap().contains("chargeback"), "{page}");
        let plays: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM plays p JOIN players u ON u.id = p.player_id WHERE u.username = $1",
        )
        .bind(&username)
        .fetch_one(&db.pool)
        .await
        .unwrap();
        assert_eq!(plays, 0, "no unit was sold to a suspended account");

        // Logging in again: in, to read (issue 35: a suspended account
        // reads its balance and statement), told neutrally that it is
        // suspended, in `lang`; staking is off.
        browser
            .fill("[data-testid=login-username]", &username)
            .await;
        browser.fill("[data-testid=login-password]", PASSWORD).await;
        browser.click("[data-testid=login-submit]").await;
        browser
            .wait_for("document.body.dataset.user === 'in'")
            .await;
        browser.wait_balance(1000).await;
        browser.execute("location.hash = '#/account';").await;
        browser.wait_screen("account").await;
        let said = browser
            .wait_for(&format!(
                "(() => {{ const t = document.querySelector('#account-status-text').textContent;
                   return t.includes('{suspended}') && t; }})()"
            ))
            .await;
        let said = said.as_str().unwrap();
        assert!(
            !said.contains("chargeback"),
            "the reason is the staff's: {said}"
        );
        assert_eq!(
            browser
                .wait_for("document.querySelector('[data-testid=can-stake]')?.dataset.ok")
                .await,
            json!("false")
        );
        browser
            .screenshot(&shot_name("account-suspended-login", lang))
            .await;
        // Its session is a real one: logging out ends it.
        browser.click("[data-testid=logout]").await;
        browser
            .wait_for("document.body.dataset.user === 'out'")
            .await;
    }
    // The browser logged the refusals this test asked for: the stake with
    // its ended session (401).
    browser.close_with_only_refusals(&[401, 403]).await;
    crate::common::assert_ledger_balances(&db).await;
}

/// Issue 32: the IBAN and address forms ask the current password (a wrong
/// one is told and changes nothing); the address change is undone from the
/// link the old address received, which logs the page out.
async fn an_honest_player_changes_iban_and_address_with_the_password_and_the_old_address_undoes_it(
    h: &Harness,
) {
    let turn = browser_turn().await;
    let Some((chromium, chromedriver)) = browser_paths() else {
        return;
    };
    let outbox = tempfile::tempdir().unwrap();
    let server = h
        .server(&[
            "--mail-outbox".to_owned(),
            outbox.path().display().to_string(),
        ])
        .await;
    let base = server.base.clone();
    let _site = Site {
        base: base.clone(),
        _server: server,
        _turn: turn,
    };
    let browser = Browser::start(&chromium, &chromedriver, 1280, 900).await;
    browser.goto(&format!("{base}/?fast=1#/")).await;
    let body = json!({
        "username": "iris", "password": PASSWORD, "accept_rules": true,
        "identity": {"birth_name": "Durand", "first_names": "Iris", "birth_date": "1990-07-14",
                     "birth_place": "Lyon", "address": "1 rue de la Paix, 75002 Paris",
                     "email": "iris@example.org"},
        "iban": IBAN, "deposit_limit_cents": 100_000,
    });
    let script = format!(
        "const done = arguments[arguments.length - 1];
         fetch('/api/account/open', {{method: 'POST', credentials: 'same-origin',
           headers: {{'Content-Type': 'application/json', 'X-Requested-With': 'tresor'}},
           body: JSON.stringify({body})}})
           .then((r) => {{ localStorage.setItem('tresor.session', '1'); localStorage.setItem('tresor.fast', '1');
                          localStorage.setItem('tresor.lang', 'en'); done(r.status); }})
           .catch((e) => done(String(e)));"
    );
    assert_eq!(browser.execute_async(&script).await, json!(201));
    // The address confirmed: only a confirmed one gets the undo link.
    let confirm = outbox_link(outbox.path(), "iris@example.org", "/#/confirm-email/").await;
    browser.goto(&confirm).await;
    browser
        .wait_for("document.querySelector('[data-testid=confirm-text]').dataset.kind === 'notice'")
        .await;
    browser.goto(&format!("{base}/?fast=1#/account")).await;
    browser
        .execute("document.body.dataset.ready = ''; location.reload();")
        .await;
    browser.wait_screen("account").await;
    browser
        .wait_for("!document.querySelector('#iban-box').hidden && !document.querySelector('#email-box').hidden")
        .await;

    // A wrong password: told, nothing changed.
    browser
        .fill("[data-testid=iban-input]", "DE89 3704 0044 0532 0130 00")
        .await;
    browser
        .fill("[data-testid=iban-password]", "not my password")
        .await;
    browser.click("[data-testid=iban-save]").await;
    let told = browser
        .wait_for("document.querySelector('[data-testid=iban-error]').textContent")
        .await;
    assert!(
        told.as_str().unwrap().contains("not your current password"),
        "{told}"
    );
    assert!(
        browser
            .text("[data-testid=iban-current]")
            .await
            .contains("FR76")
    );
    // The right one: saved.
    browser.fill("[data-testid=iban-password]", PASSWORD).await;
    browser.click("[data-testid=iban-save]").await;
    browser
        .wait_for(
            "document.querySelector('[data-testid=iban-current]').textContent.includes('DE89')",
        )
        .await;

    // The address, with the password.
    browser
        .fill("[data-testid=email-input]", "iris@example.net")
        .await;
    browser.fill("[data-testid=email-password]", PASSWORD).await;
    browser.click("[data-testid=email-submit]").await;
    browser
        .wait_for("document.querySelector('[data-testid=email-current]').textContent.includes('iris@example.net')")
        .await;
    browser.screenshot("account-address-changed").await;

    // The link mailed to the old address undoes it: the page says so and
    // is logged out (every session ended).
    let link = outbox_link(outbox.path(), "iris@example.org", "/#/undo-email/").await;
    assert!(link.starts_with(&base), "{link}");
    browser.goto(&link).await;
    let done = browser
        .wait_for("document.querySelector('[data-testid=confirm-text]').dataset.kind === 'notice' && document.querySelector('[data-testid=confirm-text]').textContent")
        .await;
    assert!(
        done.as_str()
            .unwrap()
            .contains("former e-mail address is back"),
        "{done}"
    );
    browser.screenshot("account-address-change-undone").await;
    let me = browser
        .execute_async(
            "const done = arguments[arguments.length - 1];
             fetch('/api/account', {credentials: 'same-origin'}).then((r) => done(r.status));",
        )
        .await;
    assert_eq!(me, json!(401));
    browser.close_with_only_refusals(&[401, 422]).await;
}
