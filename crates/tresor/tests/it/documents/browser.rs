//! Issue 35, the players' page as a French player reads it (the real
//! `tresor serve`, headless Chromium), in French and in English: a
//! document's 120-character name in « Mes justificatifs », cut with the
//! whole on hover; the sessions' devices in the page's language (« Chrome
//! sous Linux »); a session ended elsewhere noticed by the page within a
//! minute, with no click; the « SYMBOLES » panel's names whole at 1280 px.

use crate::common::browser::Browser;
use crate::common::page::{PASSWORD, Site};
use crate::common::wait::until;
use crate::common::{Harness, post};
use serde_json::json;
use std::time::{Duration, Instant};

on_sqlite!(
    a_long_document_name_and_the_sessions_read_well_and_a_session_ended_elsewhere_is_noticed,
    the_symbols_panel_shows_every_name_whole_at_1280_px,
);

const IBAN: &str = "FR76 3000 6000 0112 3456 7890 189";
const FIREFOX_ON_WINDOWS: &str =
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Firefox/128.0";

/// Reloads the page in `lang` on `route` and waits until it is ready.
async fn reload(browser: &Browser, lang: &str, route: &str) {
    browser
        .reload_after(&format!(
            "localStorage.setItem('tresor.lang', '{lang}'); localStorage.setItem('tresor.fast', '1');
             location.hash = '{route}';"
        ))
        .await;
    browser
        .wait_for(&format!("document.documentElement.lang === '{lang}'"))
        .await;
}

async fn a_long_document_name_and_the_sessions_read_well_and_a_session_ended_elsewhere_is_noticed(
    h: &Harness,
) {
    let (site, browser) = Site::start(h, &[], 1280, 900).await;
    let base = &site.base;
    let long_name =
        format!("{}.pdf", "justificatif-de-domicile-".repeat(5))[..116].to_owned() + ".pdf";
    assert_eq!(long_name.chars().count(), 120);
    for lang in ["fr", "en"] {
        let fr = lang == "fr";
        let username = format!("jeanne_{lang}");
        browser.goto(&format!("{base}/?fast=1#/")).await;
        let body = json!({
            "username": username, "password": PASSWORD, "accept_rules": true,
            "identity": {"birth_name": username.replace('_', " "), "first_names": "Jeanne", "birth_date": "1985-03-02",
                         "birth_place": "Rouen", "address": "2 quai du Havre, 76000 Rouen"},
            "iban": IBAN,
        });
        browser.log_out_in_page().await;
        browser.open_account_in_page(&body, None).await;
        let pdf = crate::common::opening::PDF;
        let pdf_bytes: Vec<String> = pdf.iter().map(u8::to_string).collect();
        let status = browser
            .in_page(&format!(
                "post('/api/account/documents?kind=iban_proof&name=' + encodeURIComponent({long_name:?}),
                   new Uint8Array([{}]), {{'Content-Type': 'application/octet-stream'}})
                   .then((r) => done(r.status), (e) => done(String(e)));",
                pdf_bytes.join(",")
            ))
            .await;
        assert_eq!(status, json!(201));
        // A second session of the same player, from another device.
        let other = reqwest::Client::builder()
            .cookie_store(true)
            .user_agent(FIREFOX_ON_WINDOWS)
            .build()
            .unwrap();
        let (status, answer) = post(
            &other,
            &format!("{base}/api/login"),
            &json!({"username": username, "password": PASSWORD}),
            None,
        )
        .await
        .unwrap();
        assert_eq!(status, 200, "{answer}");

        reload(&browser, lang, "#/account").await;
        browser
            .wait_for("document.body.dataset.screen === 'account' && document.querySelector('[data-testid=doc-name-iban_proof]')")
            .await;
        // The name is cut with an ellipsis inside its box, whole on hover.
        let cut = browser
            .execute(
                "const n = document.querySelector('[data-testid=doc-name-iban_proof]');
                 const box = document.querySelector('#docs-box').getBoundingClientRect();
                 const li = n.closest('li').getBoundingClientRect();
                 return [n.title, n.scrollWidth > n.clientWidth, getComputedStyle(n).textOverflow,
                         n.getBoundingClientRect().right <= box.right + 1, li.right <= box.right + 1,
                         document.documentElement.scrollWidth <= window.innerWidth];",
            )
            .await;
        assert_eq!(
            cut,
            json!([long_name, true, "ellipsis", true, true, true]),
            "{lang}: the long name"
        );
        // The sessions, their devices in the page's language.
        let devices = browser
            .wait_for(
                "(() => { const d = [...document.querySelectorAll('[data-testid=session-device]')].map((n) => n.textContent);
                   return d.length === 2 && d; })()",
            )
            .await;
        let devices: Vec<String> = serde_json::from_value(devices).unwrap();
        let (ours, theirs) = if fr {
            ("Chrome sous Linux", "Firefox sous Windows")
        } else {
            ("Chrome on Linux", "Firefox on Windows")
        };
        assert!(devices.contains(&ours.to_owned()), "{devices:?}");
        assert!(devices.contains(&theirs.to_owned()), "{devices:?}");
        browser
            .screenshot(&format!("account-documents-long-{lang}"))
            .await;

        // The other device closes every other session: this page notices
        // with no click, at its next check (every 30 s, every 3 s at the
        // tests' speed).
        let (status, answer) = post(
            &other,
            &format!("{base}/api/account/sessions/end-others"),
            &json!({}),
            None,
        )
        .await
        .unwrap();
        assert_eq!(status, 200, "{answer}");
        let ended = Instant::now();
        let page = &browser;
        until(
            format!("{lang}: the page noticing its session ended"),
            Duration::from_secs(30),
            move || async move {
                let out = page
                    .execute(
                        "return document.body.dataset.user === 'out' && document.body.dataset.screen === 'login'
                         && document.querySelector('#login-error').dataset.code === 'session_ended'",
                    )
                    .await;
                (out == json!(true)).then_some(())
            },
        )
        .await;
        let noticed = ended.elapsed();
        assert!(noticed < Duration::from_secs(15), "{noticed:?}");
        eprintln!("{lang}: a session ended elsewhere noticed after {noticed:?}");
        let said = browser.text("#login-error").await;
        assert!(
            said.contains(if fr { "fermée" } else { "closed" }),
            "{said}"
        );
        // The other session still holds: the poll changed nothing.
        let response = other
            .get(format!("{base}/api/session"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 204);
    }
    // The poll's 401, asked for by ending the session.
    let errors = browser.console_errors().await;
    assert!(
        errors.iter().all(|e| e.contains("401")),
        "console errors: {errors:?}"
    );
    browser.close().await;
}

/// A symbol's name, every one the panel can show in French and English,
/// set in a real row of the panel after a game: whole (no ellipsis) and
/// inside the panel at 1280 px.
async fn the_symbols_panel_shows_every_name_whole_at_1280_px(h: &Harness) {
    let (site, browser) = Site::start(h, &[], 1280, 800).await;
    browser
        .register_in_page(&site.base, "?fast=1#/", "symbols", 5000, None)
        .await;
    for lang in ["fr", "en"] {
        reload(&browser, lang, "#/").await;
        browser
            .wait_for("document.body.dataset.user === 'in' && !document.querySelector('[data-testid=play]').disabled")
            .await;
        // Games until one reveals a symbol.
        for _ in 0..8 {
            play_one(&browser).await;
            let found = browser
                .execute("return document.querySelectorAll('[data-testid=found-symbol]').length")
                .await;
            if found.as_i64().unwrap_or(0) > 0 {
                break;
            }
        }
        let names = if lang == "fr" {
            [
                "chandelier",
                "tête de mort",
                "coffre vide",
                "saphir",
                "singe",
            ]
        } else {
            ["candlestick", "empty chest", "sapphire", "monkey", "skull"]
        };
        let whole = browser
            .execute(&format!(
                "const list = document.querySelector('#found');
                 const row = list.querySelector('[data-testid=found-symbol]');
                 if (!row) return 'no symbol found';
                 const panel = list.closest('.panel').getBoundingClientRect();
                 const out = [];
                 const rows = [...list.querySelectorAll('[data-testid=found-symbol]')];
                 for (const name of {names:?}) {{
                   const copy = row.cloneNode(true);
                   copy.querySelector('.label').textContent = name;
                   list.append(copy);
                   rows.push(copy);
                 }}
                 for (const r of rows) {{
                   const label = r.querySelector('.label');
                   const cut = label.scrollWidth > label.clientWidth + 1
                     || label.getBoundingClientRect().right > panel.right + 1;
                   if (cut) out.push(label.textContent);
                 }}
                 for (const r of rows.slice(rows.length - {})) r.remove();
                 return out;",
                names.len()
            ))
            .await;
        assert_eq!(whole, json!([]), "{lang}: names cut at 1280 px");
        browser
            .screenshot(&format!("game-symbols-1280-{lang}"))
            .await;
    }
    browser.close().await;
}

/// Buys a unit with the mouse and plays its four throws out (the
/// how-to-play window, when it comes, closed first).
async fn play_one(browser: &Browser) {
    browser
        .click_until(
            "[data-testid=play]",
            "document.querySelector('#dlg-howto').open || document.querySelector('#screen-game').dataset.mode === 'playing'",
        )
        .await;
    if browser
        .execute("return document.querySelector('#dlg-howto').open")
        .await
        == json!(true)
    {
        browser.close_the_howto().await;
    }
    browser.wait_mode("playing").await;
    browser.finish_the_game().await;
}
