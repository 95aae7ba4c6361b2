//! An operator suspends a block, verifies an account and settles withdrawals from the page.

use crate::common::staff::add_operator;
use crate::common::{Harness, cookie_client, get_json, post, upload_document};
use crate::console_api::browser::*;
use serde_json::{Value, json};

// The page is the same on either database (its PostgreSQL smoke test is
// api::plays::browser::a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake).
on_sqlite!(an_operator_suspends_a_block_verifies_an_account_and_settles_withdrawals,);

async fn an_operator_suspends_a_block_verifies_an_account_and_settles_withdrawals(h: &Harness) {
    let (site, browser) = setup(h, 1366, 1000).await;
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
    browser.ask(&format!("[data-testid=resume-{block}]")).await;
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
        .click_confirmed(
            &format!("[data-testid=resume-{block}]"),
            &format!("document.querySelector('[data-testid=block-row][data-block-id=\"{block}\"]').dataset.state === 'open'"),
        )
        .await;
    let public = get_json(&cookie_client(), &format!("{base}/api/blocks")).await;
    assert_eq!(state_of(&public), Some(json!("open")), "{public}");

    // The verification queue: Ana's documents verified, then Ana; Bea,
    // who sent none, stays in it and cannot be verified yet.
    let mut documents = Vec::new();
    for (kind, bytes) in [("identity", JPEG), ("iban_proof", PDF)] {
        documents.push(upload_document(&ana, base, kind, "scan", bytes).await);
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
            .click_confirmed(
                &format!("[data-testid=doc-verify-{id}]"),
                &format!("document.querySelector('[data-testid=doc-verify-{id}]') === null"),
            )
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
        .click_confirmed(
            &format!("[data-testid=verify-{ana_id}]"),
            &format!(
                "document.querySelectorAll('[data-testid=verify-row]').length === 1
             && !document.querySelector('[data-testid=verify-row][data-player-id=\"{ana_id}\"]')"
            ),
        )
        .await;
    let account = get_json(&ana, &format!("{base}/api/account")).await;
    assert_eq!(account["status"], json!("verified"), "{account}");

    // The player's page: credit 30 €.
    browser.open("players").await;
    browser.type_into("[data-testid=player-q]", "ana").await;
    browser.click("[data-testid=player-search-submit]").await;
    browser
        .click_until(
            &format!("[data-testid=player-link-{ana_id}]"),
            &format!(
                "document.querySelector('[data-testid=player-detail]').dataset.playerId === '{ana_id}'"
            ),
        )
        .await;
    browser.type_into("[data-testid=credit-amount]", "30").await;
    browser
        .click_confirmed(
            "[data-testid=credit-submit]",
            "document.querySelector('[data-testid=player-balance]')?.dataset.cents === '3000' && document.querySelector('[data-testid=movement-row][data-movement=operator_credit]')",
        )
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
        .click_refused(
            &format!("[data-testid=approve-{}]", asked[0]),
            "document.querySelector('#confirm-error').dataset.code === 'four_eyes'",
        )
        .await;
    browser.press(&["\u{E00C}"]).await;
    browser.wait_closed("#confirm").await;
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
        .click_confirmed(
            &format!("[data-testid=approve-{}]", asked[0]),
            "document.querySelectorAll('[data-testid=withdrawal-row]').length === 1",
        )
        .await;
    // No reason, no rejection: the dialog says so and stays open.
    browser
        .click_refused(
            &format!("[data-testid=reject-{}]", asked[1]),
            "document.querySelector('#confirm').open",
        )
        .await;
    browser
        .type_into("[data-testid=confirm-reason]", "The IBAN is closed")
        .await;
    browser.click("[data-testid=confirm-ok]").await;
    browser.wait_closed("#confirm").await;
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
    browser
        .click_confirmed(
            "[data-testid=announce-save]",
            "document.querySelector('[data-testid=site-announcement]').textContent === 'Maintenance tonight from 23:00 to 23:15.'",
        )
        .await;
    shot(&browser, "console-site").await;
    browser.close_without_console_errors().await;
}
