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

// The page is the same on either database (its PostgreSQL smoke test is
// browser::a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake).
on_sqlite!(
    an_operator_enrols_logs_in_and_watches_the_dashboard_move_while_players_buy,
    an_operator_suspends_a_block_verifies_an_account_and_settles_withdrawals,
    each_role_sees_only_what_it_may_do_and_is_refused_the_rest,
    a_player_sends_documents_and_an_operator_reviews_them_in_both_languages,
);

// What only the page decides (its markup and colours) needs one database.
on_sqlite!(every_console_screen_passes_axe_core);

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

async fn an_operator_enrols_logs_in_and_watches_the_dashboard_move_while_players_buy(h: &Harness) {
    let Some((site, browser)) = setup(h, 1366, 1000).await else {
        return;
    };
    add_operator(h, "olivia", "operator");
    browser
        .log_in(&site.admin, "olivia", Some("console-login-enrol"))
        .await;
    browser
        .wait_for("document.body.dataset.loaded === 'dashboard' && document.querySelector('[data-testid=ppm-chart] svg')")
        .await;
    assert_eq!(
        browser
            .execute("return document.querySelector('[data-testid=who-role]').textContent")
            .await,
        json!("operator")
    );
    let before_total = data_i64(
        &browser
            .execute("return document.querySelector('[data-testid=ppm-chart]').dataset.total")
            .await,
    );
    let before_cents = data_i64(
        &browser
            .execute("return document.querySelector('[data-testid=sales-total]').dataset.cents")
            .await,
    );
    assert_eq!(
        browser
            .execute("return document.querySelector('[data-testid=ppm-chart]').dataset.points")
            .await,
        json!("60"),
        "the last hour, minute by minute"
    );

    // Players buy in the background; the page polls every 2 s.
    let stop = Arc::new(AtomicBool::new(false));
    let bought = Arc::new(AtomicI64::new(0));
    let buyers: Vec<_> = (0..2)
        .map(|i| {
            buyer(
                site.base.clone(),
                format!("buyer_{i}"),
                Duration::from_millis(60),
                stop.clone(),
                bought.clone(),
            )
        })
        .collect();
    let started = Instant::now();
    let polls_before = data_i64(
        &browser
            .execute("return document.body.dataset.dashboardPolls")
            .await,
    );
    browser
        .wait_for(&format!(
            "Number(document.querySelector('[data-testid=ppm-chart]').dataset.total) >= {}
             && Number(document.querySelector('[data-testid=sales-total]').dataset.cents) >= {}",
            before_total + 10,
            before_cents + 1000
        ))
        .await;
    // Once more after a poll, to see it keep moving.
    let mid = data_i64(
        &browser
            .execute("return document.querySelector('[data-testid=ppm-chart]').dataset.total")
            .await,
    );
    browser
        .wait_for(&format!(
            "Number(document.querySelector('[data-testid=ppm-chart]').dataset.total) > {mid}"
        ))
        .await;
    stop.store(true, Ordering::SeqCst);
    for b in buyers {
        b.await.unwrap();
    }
    let polls = data_i64(
        &browser
            .execute("return document.body.dataset.dashboardPolls")
            .await,
    );
    assert!(
        polls > polls_before,
        "the dashboard polled ({polls_before} → {polls})"
    );
    eprintln!(
        "dashboard moved: {} purchases in {:?}, {} polls",
        bought.load(Ordering::SeqCst),
        started.elapsed(),
        polls - polls_before
    );

    // Once the buyers stop, the page settles on exactly what was bought
    // (the server answers from memory for up to a second, the page polls
    // every 2 s), and the sales figure on a euro per unit.
    let bought = bought.load(Ordering::SeqCst);
    let server_total = before_total + bought;
    browser
        .wait_for(&format!(
            "Number(document.querySelector('[data-testid=ppm-chart]').dataset.total) === {server_total}
             && Number(document.querySelector('[data-testid=sales-total]').dataset.cents) === {}",
            before_cents + 100 * bought
        ))
        .await;
    let (status, dashboard) = browser.call("GET", "/console/api/dashboard").await;
    assert_eq!(status, 200, "{dashboard}");
    let counted: i64 = dashboard["purchases_per_minute"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["count"].as_i64().unwrap())
        .sum();
    assert_eq!(counted, server_total, "the API counts what the page shows");
    // The chart's numbers are there for screen readers and in its table.
    let described = browser
        .execute("return document.querySelector('[data-testid=ppm-chart] svg desc').textContent")
        .await;
    assert!(
        described
            .as_str()
            .unwrap()
            .contains(&format!("{server_total} purchases")),
        "{described}"
    );
    let rows = browser
        .execute(
            "return document.querySelectorAll('[data-testid=ppm-chart] details tbody tr').length",
        )
        .await;
    assert_eq!(rows, json!(60));
    // Its table reads the purchases, minute by minute: they add up to the
    // total the server counted.
    let cells = browser
        .execute(
            "return [...document.querySelectorAll('[data-testid=ppm-chart] details tbody tr')]
               .map((row) => row.cells[1].textContent)",
        )
        .await;
    let in_table: i64 = cells
        .as_array()
        .unwrap()
        .iter()
        .map(|cell| digits(cell.as_str().unwrap()))
        .sum();
    assert_eq!(in_table, server_total, "the chart's table: {cells}");
    let sales_rows = browser
        .execute("return document.querySelectorAll('[data-testid=sales-row] progress').length")
        .await;
    assert!(
        sales_rows.as_u64().unwrap() >= 3,
        "a progress bar per block: {sales_rows}"
    );
    let stakes_bars = browser
        .execute("return document.querySelectorAll('[data-testid=money-chart] rect.bar').length")
        .await;
    assert_eq!(
        stakes_bars,
        json!(9),
        "three bars for each of the three stakes"
    );
    // Each bar reads the server's figure for its stake.
    let titles = browser
        .execute(
            "return [...document.querySelectorAll('[data-testid=money-chart] rect.bar title')]
               .map((t) => t.textContent)",
        )
        .await;
    let (status, dashboard) = browser.call("GET", "/console/api/dashboard").await;
    assert_eq!(status, 200, "{dashboard}");
    let per_stake = crate::common::items(&dashboard["per_stake"], "stakes");
    let mut expected = Vec::new();
    for stake in per_stake {
        for field in ["stakes_cents", "prizes_cents", "expected_prizes_cents"] {
            expected.push(stake[field].as_i64().unwrap());
        }
    }
    let shown: Vec<i64> = titles
        .as_array()
        .unwrap()
        .iter()
        .map(|title| {
            let title = title.as_str().unwrap();
            digits(title.rsplit_once(": ").expect("name: value").1)
        })
        .collect();
    assert_eq!(shown, expected, "the bars' values: {titles}");
    shot(&browser, "console-dashboard").await;

    // A tablet's width: nothing runs off the side.
    browser.set_window(768, 1024).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let overflow = browser
        .execute("return document.documentElement.scrollWidth > window.innerWidth")
        .await;
    assert_eq!(
        overflow,
        json!(false),
        "the dashboard fits a 768 px wide screen"
    );
    shot(&browser, "console-dashboard-tablet").await;

    // Logging out ends the session: the API answers 401 and the page asks again.
    browser.click("[data-testid=logout]").await;
    browser
        .wait_for("document.body.dataset.screen === 'login'")
        .await;
    let (status, body) = browser.call("GET", "/console/api/me").await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"]["code"], json!("unauthorized"));
    browser.only_expected_errors(&["/console/api/me"]).await;
    browser.close().await;
}

async fn an_operator_suspends_a_block_verifies_an_account_and_settles_withdrawals(h: &Harness) {
    let Some((site, browser)) = setup(h, 1366, 1000).await else {
        return;
    };
    add_operator(h, "oscar", "operator");
    add_operator(h, "paula", "operator");
    let base = &site.base;

    // Two players open accounts for real money: both wait for verification.
    let ana = cookie_client();
    let bea = cookie_client();
    for (client, username, birth_name) in [
        (&ana, "ana_martin", "Martin"),
        (&bea, "bea_durand", "Durand"),
    ] {
        let body = json!({
            "username": username, "password": "a long password", "accept_rules": true,
            "marketing_consent": false, "iban": IBAN,
            "deposit_limit_cents": 1_000_000, "stake_limit_cents": 1_000_000,
            "identity": {"birth_name": birth_name, "first_names": "Anne Marie", "birth_date": "1990-05-01",
                         "birth_place": "Nantes", "address": "1 rue de la Paix, 75002 Paris"},
        });
        let (status, answer) = post(client, &format!("{base}/api/account/open"), &body, None)
            .await
            .unwrap();
        assert_eq!(status, 201, "{answer}");
    }

    browser.log_in(&site.admin, "oscar", None).await;
    // An operator may not read the trail: hidden, and refused.
    assert!(!browser.nav().await.contains(&"trail".to_owned()));
    let (status, body) = browser.call("GET", "/console/api/trail").await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], json!("forbidden"));
    browser.only_expected_errors(&["/console/api/trail"]).await;

    // Emissions and blocks: suspend one block, then resume it.
    browser.open("emissions").await;
    let block = browser
        .wait_for(
            "document.querySelector('[data-testid=block-row][data-state=open]')?.dataset.blockId",
        )
        .await;
    let block = data_i64(&block);
    browser
        .click(&format!("[data-testid=suspend-{block}]"))
        .await;
    shot(&browser, "console-confirm").await;
    browser.confirm().await;
    browser
        .wait_for(&format!("document.querySelector('[data-testid=block-row][data-block-id=\"{block}\"]').dataset.state === 'suspended'"))
        .await;
    let public = get_json(&cookie_client(), &format!("{base}/api/blocks")).await;
    let state_of = |blocks: &Value| {
        blocks["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["id"] == json!(block))
            .map(|b| b["state"].clone())
    };
    assert_eq!(state_of(&public), Some(json!("suspended")), "{public}");
    shot(&browser, "console-emissions").await;
    // Escape cancels a confirmation: nothing changes, the focus goes back.
    browser
        .click(&format!("[data-testid=resume-{block}]"))
        .await;
    browser
        .wait_for("document.querySelector('#confirm').open")
        .await;
    browser.press(&["\u{E00C}"]).await;
    browser
        .wait_for(&format!(
            "!document.querySelector('#confirm').open
             && document.activeElement === document.querySelector('[data-testid=resume-{block}]')"
        ))
        .await;
    let public = get_json(&cookie_client(), &format!("{base}/api/blocks")).await;
    assert_eq!(state_of(&public), Some(json!("suspended")), "{public}");
    browser
        .click(&format!("[data-testid=resume-{block}]"))
        .await;
    browser.confirm().await;
    browser
        .wait_for(&format!("document.querySelector('[data-testid=block-row][data-block-id=\"{block}\"]').dataset.state === 'open'"))
        .await;
    let public = get_json(&cookie_client(), &format!("{base}/api/blocks")).await;
    assert_eq!(state_of(&public), Some(json!("open")), "{public}");

    // The verification queue: Ana's documents verified, then Ana; Bea,
    // who sent none, stays in it and cannot be verified yet.
    let mut documents = Vec::new();
    for (kind, bytes) in [("identity", JPEG), ("iban_proof", PDF)] {
        let response = ana
            .post(format!(
                "{base}/api/account/documents?kind={kind}&name=scan"
            ))
            .header("x-requested-with", "tresor")
            .body(bytes.to_vec())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201);
        documents.push(
            response.json::<Value>().await.unwrap()["id"]
                .as_i64()
                .unwrap(),
        );
    }
    browser.open("queues").await;
    browser
        .wait_for("document.querySelectorAll('[data-testid=verify-row]').length === 2")
        .await;
    let ana_id = data_i64(
        &browser
            .execute("return [...document.querySelectorAll('[data-testid=verify-row]')].find((r) => r.textContent.includes('ana_martin')).dataset.playerId")
            .await,
    );
    browser
        .wait_for(&format!(
            "document.querySelector('[data-testid=verify-{ana_id}-waits]') !== null"
        ))
        .await;
    for id in &documents {
        browser
            .click(&format!("[data-testid=doc-verify-{id}]"))
            .await;
        browser.confirm().await;
        browser
            .wait_for(&format!(
                "document.querySelector('[data-testid=doc-verify-{id}]') === null"
            ))
            .await;
    }
    browser
        .wait_for(&format!(
            "document.querySelector('[data-testid=verify-{ana_id}]') !== null"
        ))
        .await;
    // The button carries the IBAN the queue shows, and the verification
    // names it.
    let shown_iban = browser
        .execute(&format!(
            "return document.querySelector('[data-testid=verify-{ana_id}]').dataset.iban"
        ))
        .await;
    assert_eq!(shown_iban, json!(IBAN.replace(' ', "")));
    browser
        .click(&format!("[data-testid=verify-{ana_id}]"))
        .await;
    browser.confirm().await;
    browser
        .wait_for(&format!(
            "document.querySelectorAll('[data-testid=verify-row]').length === 1
             && !document.querySelector('[data-testid=verify-row][data-player-id=\"{ana_id}\"]')"
        ))
        .await;
    let account = get_json(&ana, &format!("{base}/api/account")).await;
    assert_eq!(account["status"], json!("verified"), "{account}");

    // The player's page: credit 30 €.
    browser.open("players").await;
    browser.type_into("[data-testid=player-q]", "ana").await;
    browser.click("[data-testid=player-search-submit]").await;
    browser
        .click(&format!("[data-testid=player-link-{ana_id}]"))
        .await;
    browser
        .wait_for(&format!(
            "document.querySelector('[data-testid=player-detail]').dataset.playerId === '{ana_id}'"
        ))
        .await;
    browser.type_into("[data-testid=credit-amount]", "30").await;
    browser.click("[data-testid=credit-submit]").await;
    browser.confirm().await;
    browser
        .wait_for("document.querySelector('[data-testid=player-balance]')?.dataset.cents === '3000' && document.querySelector('[data-testid=movement-row][data-movement=operator_credit]')")
        .await;
    assert_eq!(
        get_json(&ana, &format!("{base}/api/me")).await["balance_cents"],
        json!(3000)
    );
    shot(&browser, "console-players").await;

    // Ana asks two withdrawals: one approved, one rejected with a reason.
    let mut asked = Vec::new();
    for cents in [1000, 500] {
        let (status, w) = post(
            &ana,
            &format!("{base}/api/account/withdrawals"),
            &json!({"amount_cents": cents}),
            None,
        )
        .await
        .unwrap();
        assert_eq!(status, 201, "{w}");
        asked.push(w["id"].as_i64().unwrap());
    }
    browser.open("queues").await;
    browser
        .wait_for("document.querySelectorAll('[data-testid=withdrawal-row]').length === 2")
        .await;
    shot(&browser, "console-queues").await;
    // Four eyes: Oscar verified and credited Ana; the dialog says another
    // operator approves, and stays open.
    browser
        .click(&format!("[data-testid=approve-{}]", asked[0]))
        .await;
    browser
        .wait_for("document.querySelector('#confirm').open")
        .await;
    browser.click("[data-testid=confirm-ok]").await;
    browser
        .wait_for("!document.querySelector('#confirm-error').hidden && document.querySelector('#confirm-error').dataset.code === 'four_eyes'")
        .await;
    browser.press(&["\u{E00C}"]).await;
    browser
        .wait_for("!document.querySelector('#confirm').open")
        .await;
    browser.only_expected_errors(&["/approve"]).await;
    // Paula, who had no hand in Ana's account, approves.
    browser.call("POST", "/console/api/logout").await;
    browser.log_in(&site.admin, "paula", None).await;
    // The page asked who was logged in before Paula did: a 401, expected.
    browser.only_expected_errors(&["/console/api/me"]).await;
    browser.open("queues").await;
    browser
        .wait_for("document.querySelectorAll('[data-testid=withdrawal-row]').length === 2")
        .await;
    // Ana's account suspended (issue 32): the queue says so, and offers no
    // approval; lifted, the approval is back.
    h.tresor_ok(&[
        "accounts",
        "suspend",
        "ana_martin",
        "--reason",
        "chargeback under review",
    ]);
    browser.open("emissions").await;
    browser.open("queues").await;
    browser
        .wait_for(&format!(
            "document.querySelector('[data-testid=suspended-{0}]')?.textContent === 'account suspended'
             && document.querySelector('[data-testid=approve-{0}-suspended]') !== null
             && document.querySelector('[data-testid=approve-{0}]') === null
             && document.querySelector('[data-testid=reject-{0}]') !== null",
            asked[0]
        ))
        .await;
    shot(&browser, "console-queues-suspended").await;
    h.tresor_ok(&["accounts", "unsuspend", "ana_martin", "--reason", "cleared"]);
    // The suspension ended Ana's sessions: she logs in again.
    let (status, body) = post(
        &ana,
        &format!("{base}/api/login"),
        &json!({"username": "ana_martin", "password": "a long password"}),
        None,
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{body}");
    browser.open("emissions").await;
    browser.open("queues").await;
    browser
        .wait_for(&format!(
            "document.querySelector('[data-testid=approve-{0}]') !== null
             && document.querySelector('[data-testid=suspended-{0}]') === null",
            asked[0]
        ))
        .await;
    browser
        .click(&format!("[data-testid=approve-{}]", asked[0]))
        .await;
    browser.confirm().await;
    browser
        .wait_for("document.querySelectorAll('[data-testid=withdrawal-row]').length === 1")
        .await;
    browser
        .click(&format!("[data-testid=reject-{}]", asked[1]))
        .await;
    browser
        .wait_for("document.querySelector('#confirm').open")
        .await;
    // No reason, no rejection: the dialog says so and stays open.
    browser.click("[data-testid=confirm-ok]").await;
    browser
        .wait_for("!document.querySelector('#confirm-error').hidden && document.querySelector('#confirm').open")
        .await;
    browser
        .type_into("[data-testid=confirm-reason]", "The IBAN is closed")
        .await;
    browser.click("[data-testid=confirm-ok]").await;
    browser
        .wait_for("!document.querySelector('#confirm').open")
        .await;
    browser
        .wait_for("document.querySelectorAll('[data-testid=withdrawal-row]').length === 0")
        .await;
    let withdrawals = get_json(&ana, &format!("{base}/api/account/withdrawals")).await;
    let by_id = |id: i64| {
        withdrawals["withdrawals"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["id"] == json!(id))
            .cloned()
            .unwrap()
    };
    assert_eq!(by_id(asked[0])["state"], json!("paid"), "{withdrawals}");
    assert_eq!(by_id(asked[1])["state"], json!("rejected"), "{withdrawals}");
    assert_eq!(by_id(asked[1])["reason"], json!("The IBAN is closed"));
    assert_eq!(
        get_json(&ana, &format!("{base}/api/me")).await["balance_cents"],
        json!(2000)
    );

    // The site: an announcement to players.
    browser.open("site").await;
    browser
        .type_into(
            "[data-testid=announce-text]",
            "Maintenance tonight from 23:00 to 23:15.",
        )
        .await;
    browser.click("[data-testid=announce-save]").await;
    browser.confirm().await;
    browser
        .wait_for("document.querySelector('[data-testid=site-announcement]').textContent === 'Maintenance tonight from 23:00 to 23:15.'")
        .await;
    shot(&browser, "console-site").await;
    browser.close_without_console_errors().await;
}

async fn each_role_sees_only_what_it_may_do_and_is_refused_the_rest(h: &Harness) {
    let Some((site, browser)) = setup(h, 1366, 1000).await else {
        return;
    };
    add_operator(h, "victor", "viewer");
    add_operator(h, "audrey", "auditor");
    // A closed emission: its block's secret is published, for the auditor
    // to re-check.
    let created = h.tresor_ok(&["emission", "create", "--stakes", "50", "--blocks", "1"]);
    let created = String::from_utf8_lossy(&created.stdout).to_string();
    let newest: i64 = created
        .strip_prefix("created emission ")
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("an emission id in: {created}"));
    h.tresor_ok(&["emission", "close", &newest.to_string()]);

    // No session: 401; the players' site has no console at all.
    let anonymous = cookie_client();
    let response = anonymous
        .get(format!("{}/console/api/me", site.admin))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    for path in ["/console", "/console/api/me", "/console/api/dashboard"] {
        let response = anonymous
            .get(format!("{}{path}", site.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 404, "{path} on the players' site");
    }
    // The page itself: strict CSP, never cached.
    let page = anonymous
        .get(format!("{}/console", site.admin))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        csp.contains("script-src 'self'") && csp.contains("style-src 'self'"),
        "{csp}"
    );

    // The viewer: the dashboard, emissions and the site, read only.
    browser.log_in(&site.admin, "victor", None).await;
    assert_eq!(browser.nav().await, ["dashboard", "emissions", "site"]);
    browser.open("emissions").await;
    browser
        .wait_for("document.querySelectorAll('[data-testid=block-row]').length > 0")
        .await;
    let hidden = browser
        .execute(
            "return [document.querySelector('[data-testid=emission-form]').closest('[data-needs]').hidden,
                     document.querySelectorAll('[data-action]').length]",
        )
        .await;
    assert_eq!(
        hidden,
        json!([true, 0]),
        "no form and no action button for a viewer"
    );
    browser.open("site").await;
    assert_eq!(
        browser.execute("return document.querySelector('[data-testid=sales-form]').closest('[data-needs]').hidden").await,
        json!(true)
    );
    for (method, path, permission) in [
        ("GET", "/console/api/players?q=", "players"),
        ("POST", "/console/api/blocks/1/suspend", "emissions"),
        (
            "GET",
            "/console/api/withdrawals?state=pending",
            "withdrawals",
        ),
        ("GET", "/console/api/trail", "trail"),
    ] {
        let (status, body) = browser.call(method, path).await;
        assert_eq!(status, 403, "{method} {path}: {body}");
        assert_eq!(body["error"]["code"], json!("forbidden"), "{body}");
        assert_eq!(body["error"]["permission"], json!(permission), "{body}");
    }
    // A typed URL to a hidden screen lands on one the role has.
    browser.execute("location.hash = '#/trail'").await;
    browser
        .wait_for("document.body.dataset.screen === 'dashboard'")
        .await;
    browser
        .only_expected_errors(&[
            "/console/api/players",
            "/console/api/blocks/1/suspend",
            "/console/api/withdrawals",
            "/console/api/trail",
        ])
        .await;
    browser.click("[data-testid=logout]").await;
    browser
        .wait_for("document.body.dataset.screen === 'login'")
        .await;

    // The auditor: the trail, and re-checking a published block.
    browser.log_in(&site.admin, "audrey", None).await;
    assert_eq!(
        browser.nav().await,
        ["dashboard", "emissions", "trail", "site"]
    );
    let (status, body) = browser.call("POST", "/console/api/blocks/1/suspend").await;
    assert_eq!(status, 403, "{body}");
    browser
        .only_expected_errors(&["/console/api/blocks/1/suspend"])
        .await;
    browser.open("trail").await;
    browser.click("[data-testid=trail-verify]").await;
    browser
        .wait_for("document.querySelector('[data-testid=notice]').dataset.code === 'trail_ok' && document.querySelector('[data-testid=trail-last]').dataset.ok === 'true'")
        .await;
    // The copy button puts the head's hash on the clipboard (or says it
    // could not).
    browser.click("[data-testid=trail-copy]").await;
    let copied = browser
        .wait_for(
            "document.querySelector('[data-testid=notice]').textContent.includes('copied')
             || document.querySelector('[data-testid=notice]').dataset.code === 'copy'",
        )
        .await;
    assert_eq!(copied, json!(true));
    let notice = browser
        .execute("return document.querySelector('[data-testid=notice]').textContent")
        .await;
    assert!(
        notice.as_str().unwrap().contains("head hash is copied"),
        "the hash was copied: {notice}"
    );
    let clipboard = browser
        .execute_async(
            "const done = arguments[arguments.length - 1];
             navigator.clipboard.readText().then(done, (e) => done('unreadable: ' + e));",
        )
        .await;
    browser.click("[data-testid=trail-export]").await;
    let records = data_i64(
        &browser
            .wait_for("document.querySelector('[data-testid=trail-export-result]').dataset.records")
            .await,
    );
    let (status, trail) = browser.call("GET", "/console/api/trail").await;
    assert_eq!(status, 200, "{trail}");
    // The trail's records are numbered from 1 without a gap: the export
    // holds every one up to the head.
    assert_eq!(
        json!(records),
        trail["head"]["seq"],
        "records exported, and the head: {trail}"
    );
    let shown_hash = browser
        .execute("return document.querySelector('[data-testid=trail-hash]').textContent")
        .await;
    assert_eq!(shown_hash, trail["head"]["hash"]);
    if !clipboard
        .as_str()
        .unwrap_or_default()
        .starts_with("unreadable")
    {
        assert_eq!(clipboard, shown_hash, "the clipboard holds the head's hash");
    }
    shot(&browser, "console-trail").await;

    browser.open("emissions").await;
    let published = browser
        .wait_for("[...document.querySelectorAll('[data-testid=block-row]')].find((r) => r.querySelector('[data-action=recheck]'))?.dataset.blockId")
        .await;
    let published = data_i64(&published);
    browser
        .click(&format!("[data-testid=recheck-{published}]"))
        .await;
    browser
        .wait_for("document.querySelector('[data-testid=notice]').dataset.code === 'recheck_ok'")
        .await;
    browser.close_without_console_errors().await;
}

/// The number a figure shows, its digits only ("€1,234.50" is 123450).
fn digits(text: &str) -> i64 {
    let digits: String = text.chars().filter(char::is_ascii_digit).collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("a number: {text:?}"))
}

/// axe-core (WCAG 2.1 A and AA) on every screen of the console, its login
/// and enrolment, a confirmation and a player's page: no serious or critical
/// finding. All findings are listed before failing.
async fn every_console_screen_passes_axe_core(h: &Harness) {
    let Some(axe) = axe_source() else {
        return;
    };
    let Some((site, browser)) = setup(h, 1280, 900).await else {
        return;
    };
    for lang in ["fr", "en"] {
        add_operator(h, &format!("olga_{lang}"), "operator");
        add_operator(h, &format!("aude_{lang}"), "auditor");
    }
    let base = &site.base;
    // A player waiting for verification, so the queue has a row.
    let ana = cookie_client();
    let body = json!({
        "username": "ana_martin", "password": "a long password", "accept_rules": true,
        "marketing_consent": false, "iban": IBAN,
        "deposit_limit_cents": 1_000_000, "stake_limit_cents": 1_000_000,
        "identity": {"birth_name": "Martin", "first_names": "Anne Marie", "birth_date": "1990-05-01",
                     "birth_place": "Nantes", "address": "1 rue de la Paix, 75002 Paris"},
    });
    let (status, answer) = post(&ana, &format!("{base}/api/account/open"), &body, None)
        .await
        .unwrap();
    assert_eq!(status, 201, "{answer}");
    // Her identity document waits for review: the queue shows it.
    let response = ana
        .post(format!(
            "{base}/api/account/documents?kind=identity&name=passport.jpg"
        ))
        .header("x-requested-with", "tresor")
        .body(JPEG.to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);

    let mut findings = Vec::new();
    for lang in ["fr", "en"] {
        // axe-core's findings, and any box that scrolls sideways (a table 1 px
        // wider than its card showed a scroll bar at 1280 px).
        let mut check = async |name: &str| {
            findings.extend(
                browser
                    .axe_findings(&axe)
                    .await
                    .into_iter()
                    .map(|f| format!("{lang} {name}: {f}")),
            );
            let wide = browser
                .execute(
                    "return [...document.querySelectorAll('body *')].filter((e) => {
                       const s = getComputedStyle(e);
                       return e.offsetParent !== null && ['auto', 'scroll'].includes(s.overflowX)
                         && e.scrollWidth > e.clientWidth;
                     }).map((e) => `${e.tagName.toLowerCase()}#${e.id}.${e.className} ${e.scrollWidth}>${e.clientWidth}`)
                     .concat(document.documentElement.scrollWidth > innerWidth ? ['the page itself'] : [])",
                )
                .await;
            for item in wide.as_array().unwrap() {
                findings.push(format!(
                    "{lang} {name}: scrolls sideways at {}: {item}",
                    browser.execute("return innerWidth").await
                ));
            }
        };
        browser
            .goto(&format!("{}/console?lang={lang}", site.admin))
            .await;
        browser
            .wait_for("document.body.dataset.screen === 'login'")
            .await;
        check("login").await;
        let secret = browser
            .up_to_enrolment(&site.admin, &format!("olga_{lang}"), lang)
            .await;
        check("enrolment").await;
        browser.enter_code(&secret).await;
        // The console speaks the language asked (French by default), amounts
        // in its format.
        let words = browser
            .execute(
                "return [document.documentElement.lang,
                         document.querySelector('[data-testid=nav-dashboard]').textContent,
                         document.querySelector('[data-testid=who-role]').textContent]",
            )
            .await;
        let expected = if lang == "fr" {
            json!(["fr", "Tableau de bord", "opérateur"])
        } else {
            json!(["en", "Dashboard", "operator"])
        };
        assert_eq!(words, expected);
        for screen in ["dashboard", "emissions", "players", "queues", "site"] {
            browser.open(screen).await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            check(screen).await;
            shot(&browser, &format!("console-{screen}-{lang}")).await;
        }
        // The queue shows the IBAN in groups of four, as it is checked by eye.
        browser.open("queues").await;
        let queue = browser
            .execute("return document.querySelector('main').innerText")
            .await;
        assert!(
            queue
                .as_str()
                .unwrap()
                .contains("FR76 3000 6000 0112 3456 7890 189"),
            "{queue}"
        );
        // A tablet's width: every screen still fits its boxes.
        browser.set_window(768, 1000).await;
        for screen in ["dashboard", "emissions", "players", "queues", "site"] {
            browser.open(screen).await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            check(screen).await;
            if screen == "queues" {
                shot(&browser, &format!("console-queues-768-{lang}")).await;
            }
        }
        browser.set_window(1280, 900).await;
        browser.open("emissions").await;
        let block = browser
            .wait_for(
                "document.querySelector('[data-testid=block-row][data-state=open]')?.dataset.blockId",
            )
            .await;
        browser
            .click(&format!("[data-testid=suspend-{}]", data_i64(&block)))
            .await;
        browser
            .wait_for("document.querySelector('#confirm').open")
            .await;
        check("confirmation").await;
        // Leaving the screen (here as the browser's back button would) cancels
        // the confirmation: it does not stay over the next screen.
        browser.execute("location.hash = '#/players';").await;
        browser
            .wait_for("document.body.dataset.loaded === 'players'")
            .await;
        assert_eq!(
            browser
                .execute("return document.querySelector('#confirm').open")
                .await,
            json!(false),
            "the confirmation closed with its screen"
        );
        browser.open("players").await;
        browser.type_into("[data-testid=player-q]", "ana").await;
        browser.click("[data-testid=player-search-submit]").await;
        browser.click("[data-testid^=player-link-]").await;
        browser
            .wait_for("document.querySelector('[data-testid=player-detail]')?.dataset.playerId")
            .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        check("a player").await;
        browser.click("[data-testid=logout]").await;
        browser
            .wait_for("document.body.dataset.screen === 'login'")
            .await;
        let secret = browser
            .up_to_enrolment(&site.admin, &format!("aude_{lang}"), lang)
            .await;
        browser.enter_code(&secret).await;
        browser.open("trail").await;
        browser
            .wait_for("document.querySelector('[data-testid=trail-records]').dataset.count > 0")
            .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        check("trail").await;
        shot(&browser, &format!("console-trail-{lang}")).await;
        // A search that matches nothing says so.
        browser
            .type_into("[data-testid=trail-action]", "no_such_action")
            .await;
        browser.click("[data-testid=trail-search-submit]").await;
        browser
            .wait_for("document.querySelector('[data-testid=trail-records]').dataset.count === '0' && document.querySelector('#trail-records .empty') !== null")
            .await;
        check("trail, nothing found").await;
        browser.click("[data-testid=logout]").await;
        browser
            .wait_for("document.body.dataset.screen === 'login'")
            .await;
    }
    // The switch in the bar changes the language, and it is remembered.
    browser.goto(&format!("{}/console", site.admin)).await;
    browser
        .wait_for("document.documentElement.lang === 'en' && document.querySelector('#login-title').textContent === 'Operator\\'s console'")
        .await;
    browser.click("[data-testid=console-lang]").await;
    browser
        .wait_for("document.documentElement.lang === 'fr' && document.querySelector('#login-title').textContent === 'Console de l\\'opérateur'")
        .await;
    browser.goto(&format!("{}/console", site.admin)).await;
    browser
        .wait_for("document.documentElement.lang === 'fr' && document.querySelector('[data-testid=login-submit]').textContent === 'Continuer'")
        .await;
    assert!(
        findings.is_empty(),
        "{} serious or critical accessibility findings:\n  {}",
        findings.len(),
        findings.join("\n  ")
    );
    browser.only_expected_errors(&[]).await;
    browser.close().await;
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

/// Sends `path` as a document of `kind` with the account screen's form.
async fn send_document(browser: &Browser, kind: &str, path: &std::path::Path) {
    browser
        .execute(&format!(
            "const s = document.querySelector('[data-testid=docs-kind]'); s.value = '{kind}';"
        ))
        .await;
    browser
        .type_into("[data-testid=docs-file]", &path.display().to_string())
        .await;
    browser.click("[data-testid=docs-send]").await;
}

/// The status the account screen shows for the player's document of `kind`.
async fn document_status(browser: &Browser, kind: &str) -> Value {
    browser
        .execute(&format!(
            "return document.querySelector('[data-testid=doc-{kind}]').dataset.status"
        ))
        .await
}

async fn a_player_sends_documents_and_an_operator_reviews_them_in_both_languages(h: &Harness) {
    let Some((site, browser)) = setup(h, 1280, 900).await else {
        return;
    };
    let files = tempfile::tempdir().unwrap();
    let jpeg = files.path().join("passport.jpg");
    let png = files.path().join("passport-again.png");
    let pdf = files.path().join("rib.pdf");
    let fake = files.path().join("notes.jpg");
    std::fs::write(&jpeg, JPEG).unwrap();
    std::fs::write(&png, crate::common::opening::PNG).unwrap();
    std::fs::write(&pdf, PDF).unwrap();
    std::fs::write(&fake, "a text file named like a photo").unwrap();
    for lang in ["fr", "en"] {
        let username = format!("camille_{lang}");
        let operator = format!("oscar_{lang}");
        add_operator(h, &operator, "operator");

        // The player sends a file that is no photo: refused, in the page's language.
        player_on_account_screen(&browser, &site.base, &username, lang).await;
        send_document(&browser, "identity", &fake).await;
        let code = browser
            .wait_for("document.querySelector('[data-testid=docs-error]').dataset.code")
            .await;
        assert_eq!(code, json!("document_type"));
        let said = browser
            .execute("return document.querySelector('[data-testid=docs-error]').textContent")
            .await;
        let words = if lang == "fr" {
            "ni une photo"
        } else {
            "neither"
        };
        assert!(said.as_str().unwrap().contains(words), "{said}");
        assert_eq!(
            document_status(&browser, "identity").await,
            json!("missing")
        );
        if let Some(axe) = axe_source() {
            let findings = browser.axe_findings(&axe).await;
            assert!(
                findings.is_empty(),
                "{lang} account, documents' form: {findings:?}"
            );
        }
        // Then both documents.
        send_document(&browser, "identity", &jpeg).await;
        browser
            .wait_for(
                "document.querySelector('[data-testid=doc-identity]').dataset.status === 'pending'",
            )
            .await;
        send_document(&browser, "iban_proof", &pdf).await;
        browser
            .wait_for("document.querySelector('[data-testid=doc-iban_proof]').dataset.status === 'pending'")
            .await;
        // Every kind is sent: the form gives way to the statuses.
        browser
            .wait_for("document.querySelector('#docs-form').hidden")
            .await;
        // The account screen with its documents passes axe-core.
        if let Some(axe) = axe_source() {
            let findings = browser.axe_findings(&axe).await;
            assert!(
                findings.is_empty(),
                "{lang} account, documents: {findings:?}"
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
        browser
            .screenshot(&format!("account-documents-{lang}"))
            .await;
        if lang == "fr" {
            shot(&browser, "account-documents").await;
        }

        // The operator, in the same language, sees who the person is beside
        // the documents; refuses the identity document with a reason.
        let secret = browser.up_to_enrolment(&site.admin, &operator, lang).await;
        browser.enter_code(&secret).await;
        browser.open("queues").await;
        let player = data_i64(
            &browser
                .wait_for(&format!(
                    "[...document.querySelectorAll('[data-testid=verify-row]')].find((r) => r.textContent.includes('{username}'))?.dataset.playerId"
                ))
                .await,
        );
        let identity = browser
            .execute(&format!(
                "return document.querySelector('[data-testid=identity-{player}]').textContent"
            ))
            .await;
        let identity = identity.as_str().unwrap();
        for part in [
            format!("Camille Nom {lang}").as_str(),
            "1990-07-14, Lyon",
            "3 rue des Lilas",
        ] {
            assert!(identity.contains(part), "{part} in {identity}");
        }
        let pending = |kind: &str| {
            format!(
                "document.querySelector('[data-testid=doc-{player}-{kind}] [data-action=doc-verify]')?.dataset.id"
            )
        };
        let identity_doc = data_i64(&browser.wait_for(&pending("identity")).await);
        let proof_doc = data_i64(&browser.wait_for(&pending("iban_proof")).await);
        // The document opens on the console's listener, as the file it is.
        let (status, _) = browser
            .call("GET", &format!("/console/api/documents/{identity_doc}"))
            .await;
        assert_eq!(status, 200);
        shot(&browser, &format!("console-documents-{lang}")).await;
        browser
            .click(&format!("[data-testid=doc-refuse-{identity_doc}]"))
            .await;
        browser
            .wait_for("document.querySelector('#confirm').open")
            .await;
        browser
            .type_into("#confirm-reason", "The photo is blurred")
            .await;
        browser.click("[data-testid=confirm-ok]").await;
        browser
            .wait_for(&format!(
                "!document.querySelector('#confirm').open
                 && document.querySelector('[data-testid=doc-{player}-identity]').dataset.status === 'refused'"
            ))
            .await;
        browser
            .click(&format!("[data-testid=doc-verify-{proof_doc}]"))
            .await;
        browser.confirm().await;
        browser
            .wait_for(&format!(
                "document.querySelector('[data-testid=doc-{player}-iban_proof]').dataset.status === 'verified'"
            ))
            .await;

        // The player reads the reason and sends another photo.
        browser
            .goto(&format!("{}/?fast=1#/account", site.base))
            .await;
        browser
            .wait_for("document.body.dataset.screen === 'account' && document.querySelector('[data-testid=doc-identity]').dataset.status === 'refused'")
            .await;
        let reason = browser
            .execute(
                "return document.querySelector('[data-testid=doc-reason-identity]').textContent",
            )
            .await;
        assert!(
            reason.as_str().unwrap().contains("The photo is blurred"),
            "{reason}"
        );
        send_document(&browser, "identity", &png).await;
        browser
            .wait_for(
                "document.querySelector('[data-testid=doc-identity]').dataset.status === 'pending'",
            )
            .await;

        // The operator verifies it; the account can then be verified.
        browser.goto(&format!("{}/console", site.admin)).await;
        browser
            .wait_for("document.body.dataset.role && document.body.dataset.screen !== 'login'")
            .await;
        browser.open("queues").await;
        let again = data_i64(&browser.wait_for(&pending("identity")).await);
        assert_ne!(again, identity_doc);
        browser
            .click(&format!("[data-testid=doc-verify-{again}]"))
            .await;
        browser.confirm().await;
        browser
            .wait_for(&format!(
                "document.querySelector('[data-testid=verify-{player}]') !== null"
            ))
            .await;
        browser.click("[data-testid=logout]").await;
        browser
            .wait_for("document.body.dataset.screen === 'login'")
            .await;

        // The player sees both verified, in their language.
        browser
            .goto(&format!("{}/?fast=1#/account", site.base))
            .await;
        browser
            .wait_for("document.body.dataset.screen === 'account'
                       && document.querySelector('[data-testid=doc-identity]').dataset.status === 'verified'
                       && document.querySelector('[data-testid=doc-iban_proof]').dataset.status === 'verified'")
            .await;
        let shown = browser
            .execute(
                "return document.querySelector('[data-testid=doc-status-identity]').textContent",
            )
            .await;
        assert_eq!(
            shown,
            json!(if lang == "fr" {
                "vérifié"
            } else {
                "verified"
            })
        );
    }
    // The browser logged the refusal of the text file (415), nothing else.
    browser.only_expected_errors(&["415"]).await;
    browser.close().await;
}
