//! The WebDriver client every browser test shares: a real headless Chromium
//! driven through chromedriver (`chromedriver.rs`), a few lines over
//! `reqwest`, so nothing is downloaded. Without Chromium and chromedriver a test says it was skipped,
//! unless `TRESOR_REQUIRE_BROWSER=1` (as in CI), where it fails instead.
//! Screenshots go to `target/screenshots/`.

use super::chromedriver::{self, Kept};
use super::wait::until;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Browser tests take turns, [`BROWSER_TURNS`] at a time: each runs a
/// server, chromedriver and a Chromium, and spends about half its time
/// waiting on the page (animations, polls), so two share a two-core machine
/// without starving each other. `TRESOR_BROWSER_TESTS_AT_ONCE` sets how many.
/// A test waiting for its turn holds a test thread: the browser tests sit
/// each beside its feature (an area's `browser` module, at most two in a
/// row in the test order), so that the threads meanwhile run other tests
/// rather than wait together (ARCHITECTURE.md, "Tests").
static TURNS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(0);

/// How many browser tests run at once unless `TRESOR_BROWSER_TESTS_AT_ONCE`
/// says otherwise.
pub const BROWSER_TURNS: usize = 2;

/// A browser test's turn, held for as long as its browser and server run.
pub type Turn = tokio::sync::SemaphorePermit<'static>;

/// Waits for a browser test's turn.
pub async fn browser_turn() -> Turn {
    static SIZED: std::sync::Once = std::sync::Once::new();
    SIZED.call_once(|| {
        let at_once = std::env::var("TRESOR_BROWSER_TESTS_AT_ONCE")
            .ok()
            .and_then(|n| n.parse().ok())
            .filter(|&n: &usize| n > 0)
            .unwrap_or(BROWSER_TURNS);
        TURNS.add_permits(at_once);
    });
    TURNS.acquire().await.expect("the turns are never closed")
}

pub fn screenshots_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A test skipped because what it needs is not installed (and not required):
/// the payload of the unwind [`skip`] starts, which the test macros end
/// quietly (`run_with`), so that a test needs no `let … else { return }` of
/// its own for it.
pub struct Skipped;

/// Ends this test as skipped, saying why: an unwind that prints no panic
/// message and that the test macros catch, any other panic going on as a
/// failure.
pub fn skip(why: &str) -> ! {
    eprintln!("skipped: {why}");
    std::panic::resume_unwind(Box::new(Skipped))
}

/// Where Chromium and chromedriver are; without them the test is skipped
/// ([`skip`]), or fails when `TRESOR_REQUIRE_BROWSER=1` (as in CI).
pub fn browser_paths() -> (PathBuf, PathBuf) {
    let chromium = std::env::var_os("CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    let driver = std::env::var_os("CHROMEDRIVER")
        .map_or_else(|| PathBuf::from("/usr/bin/chromedriver"), PathBuf::from);
    if chromium.exists() && driver.exists() {
        return (chromium, driver);
    }
    assert!(
        std::env::var("TRESOR_REQUIRE_BROWSER").as_deref() != Ok("1"),
        "TRESOR_REQUIRE_BROWSER=1 but {} or {} is missing (apt-get install chromium chromium-driver)",
        chromium.display(),
        driver.display()
    );
    skip("chromium or chromedriver is not installed")
}

/// A WebDriver session on a headless Chromium, fresh for this test
/// (`chromedriver.rs`: kept from test to test, made fresh in between).
pub struct Browser {
    http: reqwest::Client,
    session: String,
    driver: String,
    /// Every origin this test opened, whose data the next test's session
    /// clears.
    origins: Mutex<Vec<String>>,
    kept: Option<Kept>,
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(mut kept) = self.kept.take() {
            kept.origins.append(&mut self.origins.lock().unwrap());
            chromedriver::give_back(kept);
        }
    }
}

impl Browser {
    /// Waits until the balance shown is `cents`.
    pub async fn wait_balance(&self, cents: i64) {
        self.wait_for(&format!(
            "document.querySelector('[data-testid=balance]').dataset.cents === '{cents}'"
        ))
        .await;
    }

    /// The text of the element `css` now (empty when it has none).
    pub async fn text(&self, css: &str) -> String {
        let value = self
            .execute(&format!(
                "return document.querySelector('{css}')?.textContent ?? null"
            ))
            .await;
        value.as_str().unwrap_or_default().to_owned()
    }

    /// Waits until the element `css` shows a text, and returns it.
    pub async fn wait_text(&self, css: &str) -> String {
        self.wait_text_when("true", css).await
    }

    /// The text of `css` once the element is shown (no longer `hidden`).
    pub async fn wait_shown_text(&self, css: &str) -> String {
        let condition = format!("!document.querySelector('{css}').hidden");
        self.wait_text_when(&condition, css).await
    }

    /// Waits until the JavaScript `condition` holds and the element `css`
    /// shows a text, and returns that text.
    pub async fn wait_text_when(&self, condition: &str, css: &str) -> String {
        let value = self
            .wait_for(&format!(
                "({condition}) && document.querySelector('{css}')?.textContent"
            ))
            .await;
        value.as_str().unwrap().to_owned()
    }

    pub async fn balance_cents(&self) -> i64 {
        let value = self
            .wait_for("document.querySelector('[data-testid=balance]').dataset.cents")
            .await;
        value.as_str().unwrap().parse().unwrap()
    }

    pub async fn start(chromium: &Path, chromedriver: &Path, width: u32, height: u32) -> Browser {
        let http = reqwest::Client::new();
        let kept = chromedriver::session(&http, chromium, chromedriver).await;
        Browser::on(http, kept, width, height).await
    }

    /// A browser on the `kept` session, its window `width` × `height`.
    async fn on(http: reqwest::Client, kept: Kept, width: u32, height: u32) -> Browser {
        let browser = Browser {
            http,
            session: kept.session.clone(),
            driver: kept.driver.clone(),
            origins: Mutex::new(Vec::new()),
            kept: Some(kept),
        };
        browser.set_window(width, height).await;
        browser
    }

    /// This browser's session, made fresh as the next test would get it.
    pub async fn made_fresh(mut self, width: u32, height: u32) -> Browser {
        let mut kept = self.kept.take().expect("a kept session");
        kept.origins.append(&mut self.origins.lock().unwrap());
        let kept = kept
            .fresh(&self.http)
            .await
            .expect("the session made fresh");
        Browser::on(self.http.clone(), kept, width, height).await
    }

    /// The WebDriver session's id.
    pub fn session_id(&self) -> &str {
        &self.session
    }

    pub async fn command(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}/session/{}{}", self.driver, self.session, path);
        let mut request = self.http.request(method, url);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let value = answer(request).await["value"].clone();
        if let Some(error) = value.get("error") {
            panic!("WebDriver {path}: {error}: {}", value["message"]);
        }
        value
    }

    pub async fn post(&self, path: &str, body: Value) -> Value {
        self.command(reqwest::Method::POST, path, Some(body)).await
    }

    pub async fn goto(&self, url: &str) {
        let origin = chromedriver::origin(url);
        self.origins.lock().unwrap().extend(origin);
        self.post("/url", json!({ "url": url })).await;
        self.wait_for("document.body.dataset.ready === 'true'")
            .await;
    }

    /// Opens `url`, and waits until the JavaScript `condition` holds too:
    /// the screen it asked for is shown.
    pub async fn goto_until(&self, url: &str, condition: &str) {
        self.goto(url).await;
        self.wait_for(condition).await;
    }

    pub async fn execute(&self, script: &str) -> Value {
        self.post("/execute/sync", json!({ "script": script, "args": [] }))
            .await
    }

    /// Runs an async script: its last argument is the callback to call with the result.
    pub async fn execute_async(&self, script: &str) -> Value {
        self.post("/execute/async", json!({ "script": script, "args": [] }))
            .await
    }

    pub async fn find(&self, css: &str) -> String {
        let value = self
            .post("/element", json!({ "using": "css selector", "value": css }))
            .await;
        value
            .as_object()
            .unwrap()
            .values()
            .next()
            .unwrap()
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Clicks `css`, waiting (a bounded while) for it to become clickable:
    /// under load an element may still be fading in or under a closing dialog.
    pub async fn click(&self, css: &str) {
        until(
            format!("{css} clickable"),
            Duration::from_secs(10),
            move || async move {
                let element = self.find(css).await;
                let url = format!(
                    "{}/session/{}/element/{element}/click",
                    self.driver, self.session
                );
                let response = answer(self.http.post(url).json(&json!({}))).await;
                let Some(error) = response["value"].get("error") else {
                    return Some(());
                };
                let retry = matches!(
                    error.as_str(),
                    Some(
                        "element not interactable"
                            | "element click intercepted"
                            | "stale element reference"
                    )
                );
                assert!(
                    retry,
                    "WebDriver click on {css}: {error}: {}",
                    response["value"]["message"]
                );
                None
            },
        )
        .await;
    }

    /// Clicks `css`, and waits until the JavaScript `condition` holds: what
    /// the click does is done.
    pub async fn click_until(&self, css: &str, condition: &str) {
        self.click(css).await;
        self.wait_for(condition).await;
    }

    pub async fn type_into(&self, css: &str, text: &str) {
        let element = self.find(css).await;
        self.post(
            &format!("/element/{element}/value"),
            json!({ "text": text }),
        )
        .await;
    }

    /// Presses keys (WebDriver key codes, e.g. "\u{E004}" for Tab) one after another.
    pub async fn press(&self, keys: &[&str]) {
        let actions: Vec<Value> = keys
            .iter()
            .flat_map(|k| {
                [
                    json!({"type": "keyDown", "value": k}),
                    json!({"type": "keyUp", "value": k}),
                ]
            })
            .collect();
        self.post(
            "/actions",
            json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]}),
        )
        .await;
    }

    /// Waits until the JavaScript expression is truthy, and returns its value.
    pub async fn wait_for(&self, expression: &str) -> Value {
        let script = &format!("return ({expression});");
        until(expression, Duration::from_secs(30), move || async move {
            let value = self.execute(script).await;
            let falsy =
                value.is_null() || value == json!(false) || value == json!("") || value == json!(0);
            (!falsy).then_some(value)
        })
        .await
    }

    /// Waits until the dialog (or `<details>`) `css` is open.
    pub async fn wait_open(&self, css: &str) {
        self.wait_for(&format!("document.querySelector('{css}').open"))
            .await;
    }

    /// Waits until the dialog (or `<details>`) `css` is closed.
    pub async fn wait_closed(&self, css: &str) {
        self.wait_for(&format!("!document.querySelector('{css}').open"))
            .await;
    }

    /// Waits until the page shows `screen` with its button `testid` enabled:
    /// ready for the next game.
    pub async fn wait_ready(&self, screen: &str, testid: &str) {
        self.wait_for(&format!(
            "document.body.dataset.screen === '{screen}' && \
             !document.querySelector('[data-testid={testid}]').disabled"
        ))
        .await;
    }

    /// Waits until the page is still: no animation or transition running
    /// but the endless ones (the waves, a spinner). Before colours are
    /// read, a layout measured or a screenshot taken.
    pub async fn settled(&self) {
        self.wait_for(
            "document.getAnimations().every((a) => a.playState !== 'running'
               || a.effect?.getComputedTiming().iterations === Infinity)",
        )
        .await;
    }

    /// Presses `key` and waits until the page has seen it released: what
    /// the key does is done (a refusal to act then shows at once).
    pub async fn press_handled(&self, key: &str) {
        self.execute(
            "window.tresorKeyUp = false;
             document.addEventListener('keyup', () => { window.tresorKeyUp = true; },
               {capture: true, once: true});",
        )
        .await;
        self.press(&[key]).await;
        self.wait_for("window.tresorKeyUp === true").await;
    }

    pub async fn screenshot(&self, name: &str) {
        let data = self
            .command(reqwest::Method::GET, "/screenshot", None)
            .await;
        let png = base64_decode(data.as_str().unwrap());
        std::fs::write(screenshots_dir().join(format!("{name}.png")), png).unwrap();
    }

    /// A phone's screen, `width` × `height` CSS pixels. Headless Chromium
    /// keeps its window 500 px wide at least, so the page's viewport is set
    /// through the DevTools protocol, as the browser's own device mode does.
    pub async fn phone(&self, width: u32, height: u32) {
        self.post(
            "/goog/cdp/execute",
            json!({"cmd": "Emulation.setDeviceMetricsOverride", "params": {
                "width": width, "height": height, "deviceScaleFactor": 1, "mobile": true,
            }}),
        )
        .await;
    }

    pub async fn set_window(&self, width: u32, height: u32) {
        self.post("/window/rect", json!({"width": width, "height": height}))
            .await;
    }

    /// The browser console's errors since the last call.
    pub async fn console_errors(&self) -> Vec<String> {
        let logs = self.post("/se/log", json!({"type": "browser"})).await;
        logs.as_array()
            .into_iter()
            .flatten()
            .filter(|entry| entry["level"] == "SEVERE")
            .map(|entry| entry["message"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// The requests the page sent since the last call, as `METHOD url`
    /// (Chromium's own network events: fetch, XHR, beacons, navigations).
    pub async fn requests_sent(&self) -> Vec<String> {
        let logs = self.post("/se/log", json!({"type": "performance"})).await;
        logs.as_array()
            .into_iter()
            .flatten()
            .filter_map(|entry| serde_json::from_str::<Value>(entry["message"].as_str()?).ok())
            .filter(|event| event["message"]["method"] == "Network.requestWillBeSent")
            .map(|event| {
                let request = &event["message"]["params"]["request"];
                format!(
                    "{} {}",
                    request["method"].as_str().unwrap_or_default(),
                    request["url"].as_str().unwrap_or_default()
                )
            })
            .collect()
    }

    /// Ends this test's use of the browser (the next test's session is
    /// made fresh from it: `chromedriver.rs`).
    pub async fn close(self) {
        drop(self);
    }

    /// Checks that the console showed no error, then closes the browser.
    pub async fn close_without_console_errors(self) {
        let errors = self.console_errors().await;
        assert!(errors.is_empty(), "console errors: {errors:?}");
        self.close().await;
    }
}

/// Chromedriver's JSON answer to `request`.
async fn answer(request: reqwest::RequestBuilder) -> Value {
    let response = request.send().await.expect("chromedriver answers");
    response
        .json()
        .await
        .expect("a JSON answer from chromedriver")
}

pub fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let clean: Vec<u8> = text
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && *c != b'=')
        .collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let mut bits = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            bits |= value(*c) << (18 - 6 * i);
        }
        out.push((bits >> 16) as u8);
        if chunk.len() > 2 {
            out.push((bits >> 8) as u8);
        }
        if chunk.len() > 3 {
            out.push(bits as u8);
        }
    }
    out
}
