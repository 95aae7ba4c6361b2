//! Issue 22's smaller findings, through the HTTP API on both databases: a
//! deposit past what is left of the 7-day cap refused when asked, the dates
//! of `verification_required`, an operator's exclusion told neutrally, the
//! marketing consent changed after opening, and the page and its assets
//! sent compressed.

use crate::common::opening::{DAY_MS, PASSWORD, assert_refused, count, deposit, open_account};
use crate::common::players::player;
use crate::common::{expect, maybe_header};
use reqwest::StatusCode;
use serde_json::json;
use std::io::Read;

on_both!(
    a_deposit_past_what_is_left_of_the_cap_is_refused_when_asked,
    |app| {
        player("dina")
            .limits(5000, 1_000_000)
            .real_money()
            .on(&app)
            .await;
        deposit(&app, 3000).await;
        let deposits = count(&app, "SELECT COUNT(*) FROM deposits").await;
        let trail = count(&app, "SELECT COUNT(*) FROM trail").await;
        // 20 € are left of the 50 €: 25 € is refused now, not paid then refunded.
        let refused = app.ask_deposit(2500).await;
        assert_refused(&refused, StatusCode::FORBIDDEN, "deposit_limit_reached");
        assert_eq!(refused.1["error"]["left_cents"], 2000, "{}", refused.1);
        assert_eq!(refused.1["error"]["limit_cents"], 5000, "{}", refused.1);
        assert_eq!(count(&app, "SELECT COUNT(*) FROM deposits").await, deposits);
        assert_eq!(count(&app, "SELECT COUNT(*) FROM trail").await, trail);
        // What is left is accepted.
        deposit(&app, 2000).await;
        assert_eq!(
            count(
                &app,
                "SELECT COUNT(*) FROM payments WHERE outcome = 'to_refund'"
            )
            .await,
            0
        );
        app.assert_ledger_balances().await;
    }
);

on_both!(
    verification_required_names_when_the_account_became_provisional,
    |app| {
        let opened_at = app.service.now_ms();
        player("vic").real_money().deposit(2000).on(&app).await;
        let (_, account) = app.get("/api/account").await;
        let until = account["provisional_until"].as_str().unwrap().to_owned();
        app.clock.advance_ms(30 * DAY_MS + 1000);
        app.login("vic", PASSWORD).await;
        let refused = app.buy(100).await;
        assert_refused(&refused, StatusCode::FORBIDDEN, "verification_required");
        let error = &refused.1["error"];
        let since = error["provisional_since"].as_str().unwrap();
        assert_eq!(since, account["opened_at"].as_str().unwrap(), "{error}");
        let since_ms =
            time::OffsetDateTime::parse(since, &time::format_description::well_known::Rfc3339)
                .unwrap()
                .unix_timestamp()
                * 1000;
        assert!(
            (since_ms - opened_at).abs() < 2000,
            "{since} is the opening"
        );
        assert_eq!(error["provisional_until"], until.as_str(), "{error}");
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("provisional since {since}")),
            "{message}"
        );
    }
);

on_both!(
    an_operators_exclusion_does_not_say_the_player_asked_it,
    |app| {
        let player = open_account(&app, "oscar").await.service_player;
        app.service
            .exclude(
                &player,
                tresor::trail::Actor::staff("vera"),
                tresor::protect::ExclusionLength::days(30).unwrap(),
            )
            .await
            .unwrap();
        let refused = app.login("oscar", PASSWORD).await;
        assert_refused(&refused, StatusCode::FORBIDDEN, "excluded");
        let message = refused.1["error"]["message"].as_str().unwrap();
        assert!(!message.contains("yourself"), "{message}");
        assert!(message.contains("excluded from play until"), "{message}");
    }
);

on_both!(the_marketing_consent_changes_after_opening, |app| {
    open_account(&app, "mia").await;
    assert_eq!(app.get("/api/account").await.1["marketing_consent"], false);
    let account = expect(
        StatusCode::OK,
        app.put_json("/api/account/marketing", json!({"consent": true}))
            .await,
    );
    assert_eq!(account["marketing_consent"], true);
    assert_eq!(app.get("/api/account").await.1["marketing_consent"], true);
    let (status, account) = app
        .put_json("/api/account/marketing", json!({"consent": false}))
        .await;
    assert_eq!(status, StatusCode::OK, "{account}");
    assert_eq!(account["marketing_consent"], false);
    // A malformed body changes nothing.
    let trail = count(&app, "SELECT COUNT(*) FROM trail").await;
    let refused = app
        .put_json("/api/account/marketing", json!({"consent": "yes"}))
        .await;
    assert_eq!(refused.0, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.1);
    assert_eq!(count(&app, "SELECT COUNT(*) FROM trail").await, trail);
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM trail WHERE action = 'marketing_consent_set'"
        )
        .await,
        2
    );
});

/// GETs `url` accepting `encoding`; the status, Content-Encoding and the
/// body decoded.
async fn fetch(url: &str, encoding: &str) -> (StatusCode, Option<String>, Vec<u8>, usize) {
    let response = reqwest::Client::new()
        .get(url)
        .header("accept-encoding", encoding)
        .send()
        .await
        .unwrap();
    let status = response.status();
    let used = maybe_header(&response, "content-encoding");
    let raw = response.bytes().await.unwrap().to_vec();
    let mut body = Vec::new();
    match used.as_deref() {
        Some("gzip") => {
            flate2::read::GzDecoder::new(&raw[..])
                .read_to_end(&mut body)
                .unwrap();
        }
        Some("br") => {
            brotli::Decompressor::new(&raw[..], 4096)
                .read_to_end(&mut body)
                .unwrap();
        }
        _ => body = raw.clone(),
    }
    if used.is_some() {
        assert!(
            raw.len() < body.len(),
            "{url}: {} of {}",
            raw.len(),
            body.len()
        );
    }
    (status, used, body, raw.len())
}

on_both!(the_page_and_its_assets_are_sent_compressed, |app| {
    let mut pages = vec![(app.address.clone(), "/".to_owned())];
    pages.push((app.admin_address.clone(), "/console".to_owned()));
    for (base, page) in pages {
        let (_, plain, html, _) = fetch(&format!("{base}{page}"), "identity").await;
        assert_eq!(plain, None);
        let html = String::from_utf8(html).unwrap();
        let mut urls = vec![page.clone()];
        for (i, _) in html.match_indices("/assets/") {
            let start = html[..i].rfind('"').unwrap() + 1;
            let end = i + html[i..].find('"').unwrap();
            urls.push(html[start..end].to_owned());
        }
        assert!(urls.len() > 2, "{page} names its assets");
        // Bytes sent: as they are, with gzip, with brotli.
        let mut sent = [0usize; 3];
        for url in urls {
            let url = format!("{base}{url}");
            let (status, _, identity, size) = fetch(&url, "identity").await;
            assert_eq!(status, StatusCode::OK, "{url}");
            sent[0] += size;
            for (i, encoding) in ["gzip", "br"].into_iter().enumerate() {
                let (status, used, body, size) = fetch(&url, encoding).await;
                assert_eq!(status, StatusCode::OK, "{url}");
                if identity.len() > 1024 {
                    assert_eq!(used.as_deref(), Some(encoding), "{url}");
                }
                assert_eq!(body, identity, "{url} decoded with {encoding}");
                sent[i + 1] += size;
            }
        }
        eprintln!(
            "{page} and its assets: {} bytes, gzip {}, brotli {}",
            sent[0], sent[1], sent[2]
        );
        assert!(sent[2] * 2 < sent[0] && sent[1] * 2 < sent[0], "{sent:?}");
    }
    // The API is not compressed (a secret beside what a request reflects).
    let response = reqwest::Client::new()
        .get(format!("{}/api/status", app.address))
        .header("accept-encoding", "gzip, br")
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers().get("content-encoding"), None);
});
