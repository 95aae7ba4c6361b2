//! Each role sees only what it may do on the page and is refused the rest.

use crate::common::staff::add_operator;
use crate::common::{Harness, cookie_client, get_response};
use crate::console_api::browser::*;
use serde_json::json;

// The page is the same on either database (its PostgreSQL smoke test is
// api::plays::browser::a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake).
on_sqlite!(each_role_sees_only_what_it_may_do_and_is_refused_the_rest,);

async fn each_role_sees_only_what_it_may_do_and_is_refused_the_rest(h: &Harness) {
    let (site, browser) = setup(h, 1366, 1000).await;
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
    let response = get_response(&anonymous, &format!("{}/console/api/me", site.admin)).await;
    assert_eq!(response.status(), 401);
    for path in ["/console", "/console/api/me", "/console/api/dashboard"] {
        let response = get_response(&anonymous, &format!("{}{path}", site.base)).await;
        assert_eq!(response.status(), 404, "{path} on the players' site");
    }
    // The page itself: strict CSP, never cached.
    let page = get_response(&anonymous, &format!("{}/console", site.admin)).await;
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
    assert_eq!(
        browser.nav().await,
        ["dashboard", "emissions", "site", "reports"]
    );
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
    browser.wait_screen("dashboard").await;
    browser
        .only_expected_errors(&[
            "/console/api/players",
            "/console/api/blocks/1/suspend",
            "/console/api/withdrawals",
            "/console/api/trail",
        ])
        .await;
    browser.log_out_of_the_console().await;

    // The auditor: the trail, and re-checking a published block.
    browser.log_in(&site.admin, "audrey", None).await;
    assert_eq!(
        browser.nav().await,
        ["dashboard", "emissions", "trail", "site", "reports"]
    );
    let (status, body) = browser.call("POST", "/console/api/blocks/1/suspend").await;
    assert_eq!(status, 403, "{body}");
    browser
        .only_expected_errors(&["/console/api/blocks/1/suspend"])
        .await;
    browser.open("trail").await;
    browser
        .click_until(
            "[data-testid=trail-verify]",
            "document.querySelector('[data-testid=notice]').dataset.code === 'trail_ok' && document.querySelector('[data-testid=trail-last]').dataset.ok === 'true'",
        )
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
    let notice = browser.text("[data-testid=notice]").await;
    assert!(
        notice.contains("head hash is copied"),
        "the hash was copied: {notice}"
    );
    let clipboard = browser
        .in_page("navigator.clipboard.readText().then(done, (e) => done('unreadable: ' + e));")
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
    let shown_hash = browser.text("[data-testid=trail-hash]").await;
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
        .click_until(
            &format!("[data-testid=recheck-{published}]"),
            "document.querySelector('[data-testid=notice]').dataset.code === 'recheck_ok'",
        )
        .await;
    browser.close_without_console_errors().await;
}
