//! The page checks a play's receipt in the browser (WebCrypto's SHA-256 and
//! Ed25519, `web/assets/js/proof.js`) against the key `/log/` publishes, and
//! says so beside the play: checked for a real receipt, failed for one
//! altered in transit (one byte of the answer's record changed by a proxy
//! of the test between the browser and the real server), in French and in
//! English.

use crate::common::Harness;
use crate::common::browser::Browser;
use crate::common::fetch_json;
use crate::common::page::Site;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

// The page is the same on either database (its PostgreSQL smoke test is
// api::plays::browser::a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake).
on_sqlite!(a_plays_receipt_shows_checked_and_one_altered_in_transit_shows_failed);
on_sqlite!(a_receipt_saved_from_the_history_is_checked_on_the_fairness_page_with_no_account);

/// An HTTP proxy in front of the real server that, when `alter` is set,
/// changes one byte of the record in a purchase's answer.
struct Tamper {
    upstream: String,
    client: reqwest::Client,
    alter: AtomicBool,
}

async fn forward(tamper: Arc<Tamper>, request: axum::extract::Request) -> axum::response::Response {
    use axum::http::header;
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 1 << 20).await.unwrap();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut outgoing = tamper
        .client
        .request(parts.method.clone(), format!("{}{path}", tamper.upstream))
        .body(body);
    for (name, value) in &parts.headers {
        if name != header::CONTENT_LENGTH {
            outgoing = outgoing.header(name, value);
        }
    }
    let answer = outgoing.send().await.unwrap();
    let status = answer.status();
    let headers = answer.headers().clone();
    let mut bytes = answer.bytes().await.unwrap().to_vec();
    let purchase = parts.method == axum::http::Method::POST
        && parts.uri.path() == "/api/plays"
        && status.is_success();
    if purchase {
        let play: Value = serde_json::from_slice(&bytes).unwrap();
        assert!(
            play["receipt"].is_object(),
            "a purchase's answer carries its receipt: {play}"
        );
    }
    if tamper.alter.load(Ordering::Relaxed) && purchase {
        let mut play: Value = serde_json::from_slice(&bytes).unwrap();
        let record = &mut play["receipt"]["record"];
        let salt = record["salt"]
            .as_str()
            .expect("a receipt's salt")
            .to_owned();
        // One hex digit of the salt, changed: one byte of the leaf's data.
        let flipped = if salt.starts_with('0') { "1" } else { "0" };
        record["salt"] = Value::String(format!("{flipped}{}", &salt[1..]));
        bytes = serde_json::to_vec(&play).unwrap();
    }
    let mut response = axum::response::Response::new(axum::body::Body::from(bytes));
    *response.status_mut() = status;
    for (name, value) in &headers {
        if name != header::CONTENT_LENGTH
            && name != header::TRANSFER_ENCODING
            && name != header::CONNECTION
        {
            response.headers_mut().append(name, value.clone());
        }
    }
    response
}

async fn start_proxy(upstream: &str) -> (String, Arc<Tamper>) {
    let tamper = Arc::new(Tamper {
        upstream: upstream.to_owned(),
        client: reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap(),
        alter: AtomicBool::new(false),
    });
    let shared = tamper.clone();
    let app = axum::Router::new().fallback(move |request| forward(shared.clone(), request));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, tamper)
}

/// Registers the player `prover` through the page at `base`, with 50 €.
pub(crate) async fn register(browser: &Browser, base: &str) {
    browser.register_with_50(base, "prover").await;
}

/// Buys a unit with the mouse and waits for the proof's verdict.
pub(crate) async fn buy(browser: &Browser, state: &str) -> String {
    browser.press_play().await;
    browser.close_the_howto().await;
    proof_text(browser, state).await
}

pub(crate) async fn proof_text(browser: &Browser, state: &str) -> String {
    browser
        .wait_for(&format!(
            "(() => {{ const p = document.querySelector('[data-testid=play-proof]');
               return !p.hidden && p.dataset.state === '{state}' && p.textContent; }})()"
        ))
        .await
        .as_str()
        .unwrap()
        .to_owned()
}

/// Once the page is switched to `lang`, the proof line (of a play whose
/// proof ended `state`) says `words`.
async fn proof_says_in(browser: &Browser, lang: &str, state: &str, words: &str) {
    browser.switch_language(lang).await;
    let text = proof_text(browser, state).await;
    assert!(text.contains(words), "{text}");
}

async fn a_plays_receipt_shows_checked_and_one_altered_in_transit_shows_failed(h: &Harness) {
    let (site, browser) = Site::start(h, &[], 1280, 900).await;
    let (base, tamper) = start_proxy(&site.base).await;
    register(&browser, &base).await;

    // A real receipt: checked, said in words and with a sign.
    let text = buy(&browser, "checked").await;
    assert!(text.contains("Dans le registre public, vérifié"), "{text}");
    assert!(text.contains('✓'), "{text}");
    browser.screenshot("proof-checked-fr").await;
    proof_says_in(&browser, "en", "checked", "In the public log, checked").await;
    browser.finish_the_game().await;

    // One byte of the next answer's record changed on its way: failed.
    tamper.alter.store(true, Ordering::Relaxed);
    let text = buy(&browser, "failed").await;
    assert!(text.contains("Proof failed"), "{text}");
    assert!(text.contains('✗'), "{text}");
    browser.screenshot("proof-failed-en").await;
    proof_says_in(&browser, "fr", "failed", "Preuve invalide").await;
    // The element is a live status region: a screen reader says it too.
    assert_eq!(
        browser
            .execute(
                "return document.querySelector('[data-testid=play-proof]').getAttribute('role')"
            )
            .await,
        json!("status")
    );
    browser.finish_the_game().await;
    tamper.alter.store(false, Ordering::Relaxed);

    // The fairness page shows the key and the latest checkpoint.
    browser.click("[data-testid=nav-fairness]").await;
    let key = browser
        .wait_text_when(
            "document.querySelector('[data-testid=log-key]').textContent.startsWith('tresor/')",
            "[data-testid=log-key]",
        )
        .await;
    let published = fetch_json(&format!("{}/log/", site.base)).await;
    assert_eq!(key, published["key"]);
    browser
        .wait_for("document.querySelector('[data-testid=log-checkpoint]')?.textContent.includes('— tresor/')")
        .await;
    browser.close().await;
}

/// The fairness page in `lang`, with no session.
pub(crate) async fn open_fairness(browser: &Browser, base: &str, lang: &str) {
    browser.goto(&format!("{base}/?fast=1#/fairness")).await;
    browser
        .reload_after(&format!("localStorage.setItem('tresor.lang', '{lang}');"))
        .await;
    browser.wait_screen("fairness").await;
}

/// Sets the fairness page's receipt box to `text` (as a paste does), checks
/// it, and gives the verdict: `[result, reason, text]`.
pub(crate) async fn check_pasted(browser: &Browser, text: &str) -> Value {
    browser
        .execute(&format!(
            "const r = document.querySelector('[data-testid=receipt-result]'); r.dataset.result = '';
             document.querySelector('[data-testid=receipt-text]').value = {};",
            serde_json::to_string(text).unwrap()
        ))
        .await;
    browser.click("[data-testid=receipt-check]").await;
    verdict(browser).await
}

pub(crate) async fn verdict(browser: &Browser) -> Value {
    browser
        .wait_for(
            "(() => { const r = document.querySelector('[data-testid=receipt-result]');
               return ['ok', 'failed'].includes(r.dataset.result) && [r.dataset.result, r.dataset.reason, r.textContent]; })()",
        )
        .await
}

/// Issue 35: a player keeps a play's receipt (the history's « Reçu »
/// saves `GET /api/plays/{id}/receipt`), and anyone checks it on the
/// fairness page, in the browser, with no account: the leaf hash, the
/// inclusion proof up to the checkpoint's root and the checkpoint's
/// signature under the key `/log/` publishes. Altered receipts fail, each
/// saying which check.
async fn a_receipt_saved_from_the_history_is_checked_on_the_fairness_page_with_no_account(
    h: &Harness,
) {
    let (site, browser) = Site::start(h, &[], 1280, 900).await;
    let base = site.base.clone();
    let player = crate::common::cookie_client();
    crate::common::register_and_deposit(&player, &base, "keeper", 5_000).await;
    let play = crate::common::buy_and_play(&player, &base, 100).await;
    crate::common::buy_and_play(&player, &base, 100).await;
    let receipt =
        crate::common::get_json(&player, &format!("{base}/api/plays/{}/receipt", play["id"])).await;
    assert!(receipt["proof"].is_array(), "{receipt}");
    let files = tempfile::tempdir().unwrap();
    let saved = files
        .path()
        .join(format!("tresor-receipt-{}.json", play["id"]));
    std::fs::write(&saved, serde_json::to_string_pretty(&receipt).unwrap()).unwrap();

    // A browser with no session, on the fairness page, in French.
    open_fairness(&browser, &base, "fr").await;
    assert_eq!(
        browser.execute("return document.body.dataset.user").await,
        json!("out")
    );

    // The saved file, chosen: checked.
    browser
        .type_into("[data-testid=receipt-file]", &saved.display().to_string())
        .await;
    let said = verdict(&browser).await;
    assert_eq!(said[0], json!("ok"), "{said}");
    let text = said[2].as_str().unwrap();
    assert!(text.starts_with("Reçu vérifié"), "{text}");
    assert!(text.contains(receipt["origin"].as_str().unwrap()), "{text}");
    browser.screenshot("fairness-receipt-checked-fr").await;
    browser.assert_accessible_if_axe("fairness page").await;

    // Pasted, the same: checked; each alteration fails on its own check.
    let pasted = serde_json::to_string(&receipt).unwrap();
    assert_eq!(check_pasted(&browser, &pasted).await[0], json!("ok"));
    let altered = |change: &dyn Fn(&mut Value)| {
        let mut r = receipt.clone();
        change(&mut r);
        serde_json::to_string(&r).unwrap()
    };
    let cases: [(&str, String); 6] = [
        // The record's result, changed: its leaf is not in the log.
        (
            "inclusion",
            altered(&|r| {
                r["record"]["result"] =
                    json!(format!("{} ", r["record"]["result"].as_str().unwrap()))
            }),
        ),
        // A step of the proof, another hash.
        (
            "inclusion",
            altered(&|r| {
                if let Some(first) = r["proof"].as_array_mut().and_then(|p| p.first_mut()) {
                    *first = json!("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
                } else {
                    r["index"] = json!(r["index"].as_u64().unwrap() ^ 1);
                }
            }),
        ),
        // The checkpoint's size, changed under its signature.
        (
            "signature",
            altered(&|r| {
                let note = r["checkpoint"].as_str().unwrap().to_owned();
                let mut lines: Vec<String> = note.split('\n').map(str::to_owned).collect();
                lines[1] = (lines[1].parse::<u64>().unwrap() + 1).to_string();
                r["checkpoint"] = json!(lines.join("\n"));
            }),
        ),
        // A key that the site does not publish.
        (
            "key",
            altered(&|r| {
                r["key"] =
                    json!("tresor/other+00000000+AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
            }),
        ),
        ("format", altered(&|r| r["proof"] = json!("not a list"))),
        ("json", "{ not json".to_owned()),
    ];
    for (reason, text) in &cases {
        let said = check_pasted(&browser, text).await;
        assert_eq!(said[0], json!("failed"), "{reason}: {said}");
        assert_eq!(said[1], json!(reason), "{said}");
        let words = said[2].as_str().unwrap();
        assert!(
            words.starts_with("Échec") || words.starts_with("Ce texte"),
            "{words}"
        );
    }
    browser.screenshot("fairness-receipt-failed-fr").await;

    // In English, the verdict is said again in the new language.
    assert_eq!(check_pasted(&browser, &pasted).await[0], json!("ok"));
    browser.switch_language("en").await;
    let text = browser.wait_text_when("document.querySelector('[data-testid=receipt-result]').textContent.startsWith('Receipt checked')", "[data-testid=receipt-result]").await;
    assert!(text.contains("signed by the published key"), "{text}");
    let said = check_pasted(&browser, &cases[0].1).await;
    assert!(said[2].as_str().unwrap().starts_with("Failed"), "{said}");
    browser.close().await;
}
