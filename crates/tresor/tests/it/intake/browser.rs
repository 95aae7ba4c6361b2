//! A player sends documents and an operator reviews them, in both languages.

use crate::common::Harness;
use crate::common::browser::Browser;
use crate::common::staff::add_operator;
use crate::console_api::browser::*;
use serde_json::{Value, json};

// The page is the same on either database (its PostgreSQL smoke test is
// api::plays::browser::a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake).
on_sqlite!(a_player_sends_documents_and_an_operator_reviews_them_in_both_languages,);

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
    let (site, browser) = setup(h, 1280, 900).await;
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
        let said = browser.text("[data-testid=docs-error]").await;
        let words = if lang == "fr" {
            "ni une photo"
        } else {
            "neither"
        };
        assert!(said.contains(words), "{said}");
        assert_eq!(
            document_status(&browser, "identity").await,
            json!("missing")
        );
        browser
            .assert_accessible_if_axe(&format!("{lang} account, documents' form"))
            .await;
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
        browser
            .assert_accessible_if_axe(&format!("{lang} account, documents"))
            .await;
        browser.settled().await;
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
            .ask(&format!("[data-testid=doc-refuse-{identity_doc}]"))
            .await;
        browser
            .type_into("#confirm-reason", "The photo is blurred")
            .await;
        browser.click_until("[data-testid=confirm-ok]", &format!(
                "!document.querySelector('#confirm').open
                 && document.querySelector('[data-testid=doc-{player}-identity]').dataset.status === 'refused'"
            )).await;
        browser
            .click_confirmed(
                &format!("[data-testid=doc-verify-{proof_doc}]"),
                &format!(
                "document.querySelector('[data-testid=doc-{player}-iban_proof]').dataset.status === 'verified'"
            ),
            )
            .await;

        // The player reads the reason and sends another photo.
        browser
            .goto_until(
                &format!("{}/?fast=1#/account", site.base),
                "document.body.dataset.screen === 'account' && document.querySelector('[data-testid=doc-identity]').dataset.status === 'refused'",
            )
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
        browser
            .goto_until(
                &format!("{}/console", site.admin),
                "document.body.dataset.role && document.body.dataset.screen !== 'login'",
            )
            .await;
        browser.open("queues").await;
        let again = data_i64(&browser.wait_for(&pending("identity")).await);
        assert_ne!(again, identity_doc);
        browser
            .click_confirmed(
                &format!("[data-testid=doc-verify-{again}]"),
                &format!("document.querySelector('[data-testid=verify-{player}]') !== null"),
            )
            .await;
        browser.log_out_of_the_console().await;

        // The player sees both verified, in their language.
        browser
            .goto_until(
                &format!("{}/?fast=1#/account", site.base),
                "document.body.dataset.screen === 'account'
                 && document.querySelector('[data-testid=doc-identity]').dataset.status === 'verified'
                 && document.querySelector('[data-testid=doc-iban_proof]').dataset.status === 'verified'",
            )
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
