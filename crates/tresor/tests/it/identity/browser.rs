//! Issue 35, the console as a French operator reads it, in French and in
//! English (the real `tresor serve`, headless Chromium): the trail's actors
//! shown as recorded and found by the name shown; the verification queue
//! with each account's state first, those ready to verify first, the type
//! read from a document's bytes and a 120-character name cut with the whole
//! on hover; numbers with the language's decimal mark; API refusals in the
//! operator's language; the IBAN grouped by four; the suspended status and
//! its marker in the players list; "Mark as verified…" offered only once
//! the documents are.

use crate::common::browser::Browser;
use crate::common::staff::add_operator;
use crate::common::{Harness, buy_at, cookie_client, post};
use crate::console_api::browser::{data_i64, setup, shot};
use serde_json::{Value, json};

on_sqlite!(the_french_console_shows_data_as_recorded_and_numbers_errors_and_queues_as_an_operator_reads_them);

const IBAN: &str = "FR7630006000011234567890189";
const PDF: &[u8] = crate::common::opening::PDF;
const JPEG: &[u8] = crate::common::opening::JPEG;

/// Opens an account for real money as `username` on `base`; the client
/// keeps its session.
async fn open_account(base: &str, username: &str) -> reqwest::Client {
    let client = cookie_client();
    let body = json!({
        "username": username, "password": "a long password", "accept_rules": true,
        "marketing_consent": false, "iban": IBAN,
        "deposit_limit_cents": 1_000_000, "stake_limit_cents": 1_000_000,
        "identity": {"birth_name": username.replace('_', " "), "first_names": "Jeanne", "birth_date": "1985-03-02",
                     "birth_place": "Rouen", "address": "2 quai du Havre, 76000 Rouen"},
    });
    let (status, answer) = post(&client, &format!("{base}/api/account/open"), &body, None)
        .await
        .unwrap();
    assert_eq!(status, 201, "{answer}");
    client
}

/// Sends `bytes` as the player's document of `kind`, named `name`; its id.
async fn send(client: &reqwest::Client, base: &str, kind: &str, name: &str, bytes: &[u8]) -> i64 {
    let response = client
        .post(format!("{base}/api/account/documents"))
        .query(&[("kind", kind), ("name", name)])
        .header("x-requested-with", "tresor")
        .header("content-type", "application/octet-stream")
        .body(bytes.to_vec())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let answer: Value = response.json().await.unwrap();
    assert_eq!(status, 201, "{answer}");
    answer["document"]["id"]
        .as_i64()
        .or_else(|| answer["id"].as_i64())
        .unwrap_or_else(|| panic!("a document id in {answer}"))
}

/// Finds the player `name` in the console, opens their page, and waits
/// until it shows `testid`.
async fn open_player(browser: &Browser, admin: &str, name: &str, testid: &str) {
    let id = browser
        .call("GET", &format!("/console/api/players?q={name}"))
        .await
        .1["players"][0]["id"]
        .as_i64()
        .unwrap();
    browser
        .goto_until(
            &format!("{admin}/console#/players/{id}"),
            &format!(
                "document.querySelector('#player-detail')?.dataset.playerId === '{id}' && document.querySelector('[data-testid={testid}]')"
            ),
        )
        .await;
}

async fn the_french_console_shows_data_as_recorded_and_numbers_errors_and_queues_as_an_operator_reads_them(
    h: &Harness,
) {
    let (site, browser) = setup(h, 1280, 900).await;
    let base = site.base.clone();
    // One sale, so that the payout and the blocks' progress are numbers.
    crate::common::register_and_deposit(&cookie_client(), &base, "buyer", 10_000).await;
    let buyer = cookie_client();
    crate::common::register_and_deposit(&buyer, &base, "buyer_two", 10_000).await;
    let (status, body) = buy_at(&buyer, &base, 100, "one").await.unwrap();
    assert_eq!(status, 201, "{body}");

    for lang in ["fr", "en"] {
        let fr = lang == "fr";
        // Three provisional accounts, opened in the order the queue must
        // not keep: nothing sent, one document waiting, both verified.
        let nothing = format!("nora_{lang}");
        let waiting = format!("paul_{lang}");
        let ready = format!("zoe_{lang}");
        open_account(&base, &nothing).await;
        let paul = open_account(&base, &waiting).await;
        let zoe = open_account(&base, &ready).await;
        // A PDF named like a photo, and a name of 120 characters.
        let pdf_named_png = send(&paul, &base, "identity", "photo.png", PDF).await;
        let long_name =
            format!("{}.pdf", "releve-d-identite-bancaire-".repeat(5))[..116].to_owned() + ".pdf";
        assert_eq!(long_name.chars().count(), 120);
        send(&paul, &base, "iban_proof", &long_name, PDF).await;
        let zoe_docs = [
            send(&zoe, &base, "identity", "passeport.jpg", JPEG).await,
            send(&zoe, &base, "iban_proof", "rib.pdf", PDF).await,
        ];

        // The operator suspends nora from the command line: the trail
        // records the actor `operator`.
        h.tresor_ok(&[
            "accounts",
            "suspend",
            &nothing,
            "--reason",
            "checking a chargeback",
        ]);

        let operator = format!("oscar_{lang}");
        add_operator(h, &operator, "operator");
        let secret = browser.up_to_enrolment(&site.admin, &operator, lang).await;
        browser.enter_code(&secret).await;
        for id in zoe_docs {
            let (status, body) = browser
                .call("POST", &format!("/console/api/documents/{id}/verify"))
                .await;
            assert_eq!(status, 200, "{body}");
        }

        // The dashboard: « Écritures en base », decimal commas in French.
        browser
            .wait_for("document.querySelector('[data-testid=writer-p50]') && document.querySelector('[data-testid=payout]')")
            .await;
        let writes = browser.text("#writer-title").await;
        assert_eq!(
            writes,
            if fr {
                "Écritures en base"
            } else {
                "Database writes"
            }
        );
        let p50 = browser.text("[data-testid=writer-p50]").await;
        let payout = browser.text("[data-testid=payout] .tile-value").await;
        let progress = browser
            .execute("return [...document.querySelectorAll('#sales td.num span.num, #sales .num')].map((n) => n.textContent).filter((t) => t.includes('%'))")
            .await;
        let progress: Vec<String> = serde_json::from_value(progress).unwrap();
        assert!(!progress.is_empty(), "the blocks' progress is shown");
        if fr {
            assert!(
                matches(&browser, &p50, r"^\d+,\d\u{a0}ms$").await,
                "a decimal comma: {p50:?}"
            );
            assert!(
                matches(&browser, &payout, r"^\d+,\d[\u{a0}\u{202f}]%$").await,
                "« 0,0 % »: {payout:?}"
            );
            for p in &progress {
                assert!(
                    matches(&browser, p, r"^\d+,\d[\u{a0}\u{202f}]%$").await,
                    "{p:?}"
                );
            }
        } else {
            assert!(
                matches(&browser, &p50, r"^\d+\.\d\u{a0}ms$").await,
                "{p50:?}"
            );
            assert!(
                matches(&browser, &payout, r"^\d+\.\d%$").await,
                "{payout:?}"
            );
        }

        // The queue: each account's state first; ready to verify, then
        // documents to review, then nothing sent.
        browser.open("queues").await;
        let order = browser
            .wait_for("(() => { const rows = [...document.querySelectorAll('[data-testid=verify-row]')];
                         return rows.length >= 3 && rows.map((r) => [r.querySelector('.person a').textContent, Number(r.dataset.stage), r.querySelector('[data-testid=queue-stage]').textContent]); })()")
            .await;
        let order: Vec<(String, i64, String)> = serde_json::from_value(order).unwrap();
        let stages: Vec<i64> = order.iter().map(|r| r.1).collect();
        assert!(
            stages.windows(2).all(|w| w[0] <= w[1]),
            "sorted by state: {order:?}"
        );
        let at = |name: &str| order.iter().position(|r| r.0 == name).unwrap();
        assert!(
            at(&ready) < at(&waiting) && at(&waiting) < at(&nothing),
            "{order:?}"
        );
        let first_column = browser.text("#verify-queue thead th").await;
        assert_eq!(first_column, json!(if fr { "État" } else { "State" }));
        let said = |name: &str| order.iter().find(|r| r.0 == name).unwrap().2.clone();
        if fr {
            assert_eq!(said(&ready), "prêt à vérifier");
            assert_eq!(said(&waiting), "justificatifs à examiner");
            assert_eq!(said(&nothing), "rien d'envoyé");
        } else {
            assert_eq!(said(&ready), "ready to verify");
            assert_eq!(said(&nothing), "nothing sent");
        }
        // The PDF named photo.png opens as what its bytes are.
        let link = browser
            .text(&format!("[data-testid=doc-open-{pdf_named_png}]"))
            .await;
        assert_eq!(link, if fr { "Ouvrir le PDF" } else { "Open the PDF" });
        assert!(!link.contains("png"), "{link}");
        // The long name is cut with an ellipsis, whole in its title, and
        // nothing runs out of the page.
        let cut = browser
            .execute(&format!(
                "const n = [...document.querySelectorAll('[data-testid=doc-name]')].find((n) => n.title === {long_name:?});
                 const cell = n.closest('td').getBoundingClientRect();
                 return [n.scrollWidth > n.clientWidth, getComputedStyle(n).textOverflow, n.textContent.length,
                         n.getBoundingClientRect().right <= cell.right + 1,
                         document.documentElement.scrollWidth <= window.innerWidth];"
            ))
            .await;
        assert_eq!(
            cut,
            json!([true, "ellipsis", 120, true, true]),
            "the long name"
        );
        browser
            .assert_accessible_if_axe(&format!("{lang} queue"))
            .await;
        shot(&browser, &format!("console-queue-{lang}")).await;

        // The players list marks the suspended account; its status says so.
        browser.open("players").await;
        browser
            .type_into("#player-q", &format!("{nothing}\u{E007}"))
            .await;
        let marker = browser
            .wait_for(&format!(
                "(() => {{ const row = [...document.querySelectorAll('[data-testid=player-row]')]
                   .find((r) => r.textContent.includes('{nothing}'));
                   return row && row.dataset.suspended === 'true' && row.querySelector('[data-testid=suspended-marker]')?.textContent; }})()"
            ))
            .await;
        assert_eq!(marker, json!(if fr { "suspendu" } else { "suspended" }));
        let nora_id = data_i64(
            &browser
                .execute(&format!(
                    "return [...document.querySelectorAll('[data-testid=player-row]')].find((r) => r.textContent.includes('{nothing}')).dataset.playerId"
                ))
                .await,
        );
        browser
            .goto_until(
                &format!("{}/console#/players/{nora_id}", site.admin),
                &format!(
                    "document.querySelector('#player-detail')?.dataset.playerId === '{nora_id}'"
                ),
            )
            .await;
        let status = browser.text("[data-testid=player-status]").await;
        assert!(
            status.contains(if fr { "suspendu" } else { "suspended" }),
            "{status}"
        );
        // Nothing sent: no verification offered.
        assert_eq!(
            browser
                .execute("return [!!document.querySelector('[data-testid=verify-player]'), !!document.querySelector('[data-testid=verify-player-waits]')]")
                .await,
            json!([false, true])
        );
        // The amount's placeholder in the operator's language.
        let placeholder = browser
            .execute("return document.querySelector('[data-testid=credit-amount]').placeholder")
            .await;
        assert_eq!(placeholder, json!(if fr { "10,00" } else { "10.00" }));
        // A refusal of the API, in the operator's language: a credit to
        // a suspended account.
        browser.type_into("[data-testid=credit-amount]", "5").await;
        browser.ask("[data-testid=credit-submit]").await;
        browser.click("[data-testid=confirm-ok]").await;
        let refusal = browser
            .wait_for("(() => { const e = document.querySelector('#confirm-error'); return !e.hidden && e.dataset.code && [e.dataset.code, e.textContent]; })()")
            .await;
        assert_eq!(refusal[0], json!("account_suspended"));
        let refusal = refusal[1].as_str().unwrap();
        if fr {
            assert!(refusal.starts_with("Ce compte est suspendu"), "{refusal}");
        } else {
            assert!(refusal.contains("this account is suspended"), "{refusal}");
        }
        browser.cancel().await;

        // zoe's documents are verified: « Marquer comme vérifié… » is
        // offered, and its dialog groups the IBAN by four.
        open_player(&browser, &site.admin, &ready, "verify-player").await;
        browser.ask("[data-testid=verify-player]").await;
        let dialog = browser.text("#confirm-text").await;
        assert!(
            dialog.contains("FR76 3000 6000 0112 3456 7890 189"),
            "{dialog}"
        );
        browser.cancel().await;
        // paul's documents wait: no verification offered yet.
        open_player(&browser, &site.admin, &waiting, "verify-player-waits").await;
        browser.log_out_of_the_console().await;

        // The auditor reads the trail: the command line's actor as
        // recorded (`operator`, not « opérateur »), and searching the name
        // shown finds its records.
        let auditor = format!("aude_{lang}");
        add_operator(h, &auditor, "auditor");
        let secret = browser.up_to_enrolment(&site.admin, &auditor, lang).await;
        browser.enter_code(&secret).await;
        browser.open("trail").await;
        let shown = browser
            .wait_for("(() => { const r = document.querySelector('[data-testid=trail-record][data-action=account_suspended]');
                         return r && r.querySelectorAll('td')[2].textContent; })()")
            .await;
        assert_eq!(shown, json!("operator"), "the actor as recorded");
        let shown = shown.as_str().unwrap().to_owned();
        browser.type_into("#trail-actor", &shown).await;
        browser.click("[data-testid=trail-search-submit]").await;
        let found = browser
            .wait_for("(() => { const rows = [...document.querySelectorAll('[data-testid=trail-record]')];
                         const actors = rows.map((r) => r.querySelectorAll('td')[2].textContent);
                         return rows.length > 0 && actors.every((a) => a === actors[0])
                           && rows.map((r, i) => [r.dataset.action, actors[i]]); })()")
            .await;
        let found: Vec<(String, String)> = serde_json::from_value(found).unwrap();
        assert!(
            found
                .iter()
                .any(|(action, _)| action == "account_suspended"),
            "{found:?}"
        );
        assert!(
            found.iter().all(|(_, actor)| actor == "operator"),
            "{found:?}"
        );
        // The labels around it are translated.
        let heading = browser
            .execute(
                "return document.querySelector('#trail-records thead th:nth-child(3)').textContent",
            )
            .await;
        assert_eq!(heading, json!(if fr { "Auteur" } else { "Actor" }));
        browser.log_out_of_the_console().await;
    }
    // The refusal this test asked for (the credit, 403).
    browser.only_expected_errors(&["credit"]).await;
    browser.close().await;
}

/// Whether `text` matches the JavaScript regular expression `pattern`
/// (tried in the page: the test crate has no regex of its own).
async fn matches(browser: &Browser, text: &str, pattern: &str) -> bool {
    browser
        .execute(&format!(
            "return new RegExp({}, 'u').test({});",
            serde_json::to_string(pattern).unwrap(),
            serde_json::to_string(text).unwrap()
        ))
        .await
        == json!(true)
}
