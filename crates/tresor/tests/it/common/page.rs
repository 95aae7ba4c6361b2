//! The players' page as every browser test drives it, over the WebDriver
//! client of `browser.rs`: one way to get a server and a browser ([`Site`]),
//! to run a script in the page with its session ([`Browser::in_page`]), to
//! make a player through the page (registered with demo money, or with an
//! account for real money), to log in with the form, and to play an island
//! game out. A test file adds only its own screen's words.

use super::browser::{Browser, Turn, browser_paths, browser_turn};
use super::{Harness, Server};
use serde_json::{Value, json};

/// The password of the players the tests make through the page.
pub const PASSWORD: &str = "a long enough password";

/// WebDriver's keys, as [`Browser::press`] takes them.
pub const TAB: &str = "\u{E004}";
pub const ENTER: &str = "\u{E007}";
pub const ESCAPE: &str = "\u{E00C}";
pub const SPACE: &str = "\u{E00D}";

/// The real server and this test's turn (given back last, when all is
/// stopped).
pub struct Site {
    /// The players' site.
    pub base: String,
    /// The operator's listener (the console).
    pub admin: String,
    pub server: Server,
    _turn: Turn,
}

impl Site {
    /// Waits for this test's turn, then starts a browser of `width` ×
    /// `height` and the real server with `flags` (the test skipped without
    /// Chromium: `browser_paths`).
    pub async fn start(h: &Harness, flags: &[String], width: u32, height: u32) -> (Site, Browser) {
        let (turn, browser) = browser_in_turn(width, height).await;
        let server = h.server(flags).await;
        let site = Site {
            base: server.base.clone(),
            admin: server.admin_base.clone(),
            server,
            _turn: turn,
        };
        (site, browser)
    }
}

/// This test's turn and a fresh browser of `width` × `height`, for a test
/// that starts its server its own way (skipped without Chromium, before
/// waiting for a turn: `browser_paths`).
pub async fn browser_in_turn(width: u32, height: u32) -> (Turn, Browser) {
    let (chromium, chromedriver) = browser_paths();
    let turn = browser_turn().await;
    let browser = Browser::start(&chromium, &chromedriver, width, height).await;
    (turn, browser)
}

/// What every in-page script may use: `done(value)` ends it; `post(path,
/// body, headers)` (a JSON body, or bytes as they are) and `get(path)` call
/// the site with the page's session and the header the API asks of a page.
const PRELUDE: &str = "const done = arguments[arguments.length - 1];
const post = (path, body, headers = {}) => fetch(path, {method: 'POST', credentials: 'same-origin',
  headers: {'Content-Type': 'application/json', 'X-Requested-With': 'tresor', ...headers},
  body: ArrayBuffer.isView(body) ? body : JSON.stringify(body)});
const get = (path) => fetch(path, {credentials: 'same-origin'});
";

/// WCAG's contrast, for a page script to start with: `rgb(colour)` reads a
/// computed colour as numbers, `ratio(a, b)` is the contrast of two.
pub const CONTRAST: &str = "const rgb = (s) => s.match(/[\\d.]+/g).map(Number);
const lum = ([r, g, b]) => [r, g, b].map((c) => c / 255)
  .map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4))
  .reduce((sum, c, i) => sum + c * [0.2126, 0.7152, 0.0722][i], 0);
const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
";

/// `localStorage.setItem` for each `(key, value)`, as a line of script.
fn remember(items: &[(&str, &str)]) -> String {
    items
        .iter()
        .map(|(key, value)| format!("localStorage.setItem({key:?}, {value:?});"))
        .collect()
}

impl Browser {
    /// Runs `script` in the page, after [`PRELUDE`]; its value is what the
    /// script gives `done`.
    pub async fn in_page(&self, script: &str) -> Value {
        self.execute_async(&format!("{PRELUDE}{script}")).await
    }

    /// `GET path`'s JSON answer, with the page's session.
    pub async fn get_json(&self, path: &str) -> Value {
        self.in_page(&format!(
            "get({}).then((r) => r.json()).then(done, (e) => done(String(e)));",
            json!(path)
        ))
        .await
    }

    /// Runs `first` (storage, a route), reloads the page and waits until it
    /// is ready again (the old page's mark cleared first).
    pub async fn reload_after(&self, first: &str) {
        self.execute(&format!(
            "{first}\ndocument.body.dataset.ready = ''; location.reload();"
        ))
        .await;
        self.wait_for("document.body.dataset.ready === 'true'")
            .await;
    }

    /// Registers `username` through the API from inside the page at
    /// `base/path` (`?fast=1#/`, say), accepting the rules, with
    /// `deposit_cents` of demo money and the page in `lang` (`None`: its
    /// default), then reloads as that player: for tests about something
    /// else than the registration form.
    pub async fn register_in_page(
        &self,
        base: &str,
        path: &str,
        username: &str,
        deposit_cents: i64,
        lang: Option<&str>,
    ) {
        self.goto(&format!("{base}/{path}")).await;
        let mut storage = vec![("tresor.session", "1")];
        if path.contains("fast=1") {
            storage.push(("tresor.fast", "1"));
        }
        storage.extend(lang.map(|lang| ("tresor.lang", lang)));
        let status = self
            .in_page(&format!(
                "post('/api/register', {{username: {username:?}, password: {PASSWORD:?}, adult: true, accept_rules: true}})
                   .then((r) => r.status === 201 ? post('/api/demo/deposit', {{amount_cents: {deposit_cents}}}) : r)
                   .then((r) => {{ {} done(r.status); }}, (e) => done(String(e)));",
                remember(&storage)
            ))
            .await;
        assert_eq!(status, json!(200), "{username} registered and paid in");
        self.reload_after("").await;
        self.wait_for("document.body.dataset.user === 'in'").await;
        if let Some(lang) = lang {
            self.wait_for(&format!("document.documentElement.lang === '{lang}'"))
                .await;
        }
    }

    /// [`Browser::register_in_page`] the way most tests want a player: 50 €
    /// of demo money, on the island's screen, animations fast.
    pub async fn register_with_50(&self, base: &str, username: &str) {
        self.register_in_page(base, "?fast=1#/", username, 5000, None)
            .await;
    }

    /// Opens an account for real money through the API from inside the page
    /// (`body` as `POST /api/account/open` takes it); the page keeps the
    /// session, runs fast and speaks `lang` (`None`: its default) from its
    /// next load on.
    pub async fn open_account_in_page(&self, body: &Value, lang: Option<&str>) {
        let mut storage = vec![("tresor.session", "1"), ("tresor.fast", "1")];
        storage.extend(lang.map(|lang| ("tresor.lang", lang)));
        let status = self
            .in_page(&format!(
                "post('/api/account/open', {body})
                   .then((r) => {{ {} done(r.status); }}, (e) => done(String(e)));",
                remember(&storage)
            ))
            .await;
        assert_eq!(status, json!(201), "the account opened: {body}");
    }

    /// Ends the page's session through the API (the page not told).
    pub async fn log_out_in_page(&self) {
        let status = self
            .in_page("post('/api/logout', {}).then((r) => done(r.status), (e) => done(String(e)));")
            .await;
        assert!(status.as_u64().is_some_and(|s| s < 300), "{status}");
    }

    /// Switches the page's language with its button, and waits until it speaks `lang`.
    pub async fn switch_language(&self, lang: &str) {
        self.click_until(
            "[data-testid=lang]",
            &format!("document.documentElement.lang === '{lang}'"),
        )
        .await;
    }

    /// Waits until the page, loaded, shows `screen`.
    pub async fn wait_screen(&self, screen: &str) {
        self.wait_for(&format!(
            "document.body.dataset.ready === 'true' && document.body.dataset.screen === '{screen}'"
        ))
        .await;
    }

    /// What the server says of the player's money and plays, through the
    /// API with the page's session (not what the page shows): the balance
    /// and the ids of the plays.
    pub async fn server_state(&self) -> (Value, Vec<Value>) {
        let me = self.get_json("/api/me").await;
        let plays = self.get_json("/api/plays?limit=100").await;
        assert!(me["balance_cents"].is_i64(), "the balance: {me}");
        let ids = plays["plays"]
            .as_array()
            .unwrap_or_else(|| panic!("the plays: {plays}"))
            .iter()
            .map(|play| play["id"].clone())
            .collect();
        (me["balance_cents"].clone(), ids)
    }

    /// The `data-testid` of the element that has the focus (null: none).
    pub async fn focused(&self) -> Value {
        self.execute("return document.activeElement.dataset.testid ?? null")
            .await
    }

    /// Presses Tab until the element `testid` has the focus.
    pub async fn tab_to(&self, testid: &str) {
        for _ in 0..60 {
            if self.focused().await == json!(testid) {
                return;
            }
            self.press(&[TAB]).await;
        }
        panic!("{testid} is not reachable with Tab");
    }

    /// Sets a field's value (replacing what is there), as a player would by typing.
    pub async fn fill(&self, css: &str, text: &str) {
        self.execute(&format!(
            "document.querySelector({}).value = '';",
            json!(css)
        ))
        .await;
        self.type_into(css, text).await;
    }

    /// Logs in with the players' form (the page on its login screen) and
    /// waits until the page is in as that player.
    pub async fn log_in_with_the_form(&self, username: &str, password: &str) {
        self.fill("[data-testid=login-username]", username).await;
        self.fill("[data-testid=login-password]", password).await;
        self.click_until(
            "[data-testid=login-submit]",
            "document.body.dataset.user === 'in' && document.body.dataset.screen !== 'login'",
        )
        .await;
    }

    /// Clicks « Jouer » and waits for the how-to-play window that opens over
    /// the purchase.
    pub async fn press_play(&self) {
        self.click_until(
            "[data-testid=play]",
            "document.querySelector('#dlg-howto').open",
        )
        .await;
    }

    /// Closes the how-to-play window and waits for the game to be playable.
    pub async fn close_the_howto(&self) {
        self.click("[data-testid=howto-close]").await;
        self.wait_mode("playing").await;
    }

    /// Waits until the game screen is in `mode` (buying, playing, finished…).
    pub async fn wait_mode(&self, mode: &str) {
        self.wait_for(&format!(
            "document.querySelector('#screen-game').dataset.mode === '{mode}'"
        ))
        .await;
    }

    /// The play on the game screen.
    pub async fn play_id(&self) -> i64 {
        self.wait_for("document.querySelector('#screen-game').dataset.playId")
            .await
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    }

    /// The play `id` as the API tells it to its player.
    pub async fn fetch_play(&self, id: i64) -> Value {
        self.get_json(&format!("/api/plays/{id}")).await
    }

    /// Presses « Lancer » and waits for the throw to be played out.
    pub async fn throw_and_wait(&self, number: usize) {
        self.click("[data-testid=throw]").await;
        self.wait_throw(number).await;
    }

    /// Waits until throw `number` is played out (or the game is over).
    pub async fn wait_throw(&self, number: usize) {
        self.wait_for(&format!(
            "document.querySelector('#pips').dataset.used === '{number}' &&
             !document.querySelector('[data-testid=throw]').disabled ||
             document.querySelector('#screen-game').dataset.mode === 'finished'"
        ))
        .await;
    }

    /// The island's four throws with « Lancer », each played out, to the
    /// game's end; the play as the API tells it.
    pub async fn throw_to_the_end(&self) -> Value {
        for number in 1..=4 {
            self.throw_and_wait(number).await;
        }
        self.wait_mode("finished").await;
        self.fetch_play(self.play_id().await).await
    }

    /// Closes the congratulation window, which a won game (`prize_cents` >
    /// 0) opens, and waits until no window is open.
    pub async fn dismiss_win(&self, prize_cents: i64) {
        if prize_cents > 0 {
            self.wait_for("document.querySelector('#dlg-win').open")
                .await;
            self.click("[data-testid=win-close]").await;
        }
        self.wait_for("!document.querySelector('#dlg-win').open")
            .await;
    }

    /// Throws to the end, closes the congratulations if the play won, and
    /// waits until « Jouer » can be pressed again; the finished play.
    pub async fn finish_the_game(&self) -> Value {
        let play = self.throw_to_the_end().await;
        self.dismiss_win(play["outcome"]["prize_cents"].as_i64().unwrap())
            .await;
        self.wait_for("!document.querySelector('[data-testid=play]').disabled")
            .await;
        play
    }
}
