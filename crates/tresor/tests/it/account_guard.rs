//! Issue 32, findings 2, 7, 8 and 9, each as its reproduction, through
//! the HTTP API on both databases, reading the mail the server writes to its
//! outbox (finding 1, the address a stolen session cannot take, and its
//! undo link are in `email_undo.rs`): a proof of one IBAN does not verify another,
//! the current password cannot be guessed where it is asked, a reset link
//! dies with a password or address change, and address changes have a
//! quota.

use crate::common::TestApp;
use crate::common::opening::{
    DAY_MS, IBAN, OTHER_IBAN, PASSWORD, PDF, assert_refused, confirm_address, count, document_of,
    latest_token, mails_to, open_account, send_iban_proof, set_iban,
};
use crate::common::players::{logged_in, player};
use crate::common::staff::{self, CONSOLE_PASSWORD, Console, console};
use crate::common::{expect, maybe_header};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tresor::protect::RateLimits;
use tresor::service::Settings;
use tresor::staff::Role;

const THIEF: &str = "thief@example.net";

pub(crate) async fn trail_count(app: &TestApp, action: &str) -> i64 {
    count(
        app,
        &format!("SELECT COUNT(*) FROM trail WHERE action = '{action}'"),
    )
    .await
}

on_both!(a_reset_link_dies_with_a_password_or_address_change, |app| {
    open_account(&app, "rhea").await;
    confirm_address(&app, "rhea@example.org").await;
    let reset_link = |n: usize| {
        let app = &app;
        async move {
            app.ask_reset("rhea@example.org").await;
            let token = latest_token(app, "rhea@example.org", n, "/#/reset/").await;
            token.expect("a reset link")
        }
    };
    // A link asked, then the password changed (by the owner, say after a
    // thief asked it): the link no longer sets a password.
    let first = reset_link(2).await;
    expect(
        StatusCode::OK,
        app.change_password(PASSWORD, "the owner's new one").await,
    );
    assert_refused(
        &app.reset_password(&first, "the thief's password").await,
        StatusCode::BAD_REQUEST,
        "invalid_token",
    );
    // Then the address changed: the link asked before dies too.
    let second = reset_link(4).await;
    expect(
        StatusCode::OK,
        app.change_email("rhea@example.net", "the owner's new one")
            .await,
    );
    assert_refused(
        &app.reset_password(&second, "the thief's password").await,
        StatusCode::BAD_REQUEST,
        "invalid_token",
    );
    assert_refused(
        &app.another_client()
            .login("rhea", "the thief's password")
            .await,
        StatusCode::UNAUTHORIZED,
        "invalid_credentials",
    );
    assert_eq!(
        app.another_client()
            .login("rhea", "the owner's new one")
            .await
            .0,
        StatusCode::OK
    );
});

on_both!(a_proof_of_one_iban_does_not_verify_another, |app| {
    let ines = player("ines").documents().on(&app).await.id;
    let vera = console(&app, "vera").await;
    // Without the password, or with a wrong one, the IBAN stays.
    for body in [
        json!({"iban": OTHER_IBAN}),
        json!({"iban": OTHER_IBAN, "current_password": "a guess at it"}),
    ] {
        let refused = app.put_json("/api/account/iban", body).await;
        assert_refused(&refused, StatusCode::UNPROCESSABLE_ENTITY, "validation");
    }
    let (_, account) = app.get("/api/account").await;
    assert_eq!(account["iban"], "FR76 •••• 0189", "{account}");
    // The same IBAN again changes nothing: its proof stays verified.
    set_iban(&app, IBAN).await;
    let (_, documents) = app.get("/api/account/documents").await;
    // Both documents sent, each verified still (an empty list is not).
    let mut reviewed: Vec<(String, String)> = documents["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["kind"].to_string(), d["status"].to_string()))
        .collect();
    reviewed.sort();
    assert_eq!(
        reviewed,
        [
            (r#""iban_proof""#.to_owned(), r#""verified""#.to_owned()),
            (r#""identity""#.to_owned(), r#""verified""#.to_owned())
        ],
        "{documents}"
    );
    // The player changes it, with the password.
    app.clock.advance_ms(60_000);
    set_iban(&app, OTHER_IBAN).await;
    // Its proof is back to review, and the player is told.
    let (_, documents) = app.get("/api/account/documents").await;
    let proof = document_of(&documents, "iban_proof");
    assert_eq!(proof["status"], "pending", "{documents}");
    let mails = mails_to(&app, "ines@example.org", 2).await.join("\n");
    assert!(mails.contains("Your account's IBAN is now DE89"), "{mails}");
    assert_eq!(trail_count(&app, "document_back_to_review").await, 1);
    // A second operator verifies the account with the new IBAN: refused,
    // nothing changed.
    let answer = vera.verify_account(ines, OTHER_IBAN).await;
    assert_refused(&answer, StatusCode::CONFLICT, "documents_required");
    // A proof checked before the IBAN was given (what a database from
    // before this change holds) is refused by its own code.
    sqlx::query(
        "UPDATE identity_documents SET status = 'verified', decided_by = 'staff:docs', \
         decided_at_ms = (SELECT iban_set_at_ms - 1 FROM player_accounts a \
         WHERE a.player_id = identity_documents.player_id) WHERE kind = 'iban_proof'",
    )
    .execute(&app.service.db.pool)
    .await
    .unwrap();
    let answer = vera.verify_account(ines, OTHER_IBAN).await;
    assert_refused(&answer, StatusCode::CONFLICT, "iban_proof_outdated");
    assert_eq!(
        app.get("/api/account").await.1["status"],
        "provisional",
        "nothing verified"
    );
    sqlx::query(
        "UPDATE identity_documents SET status = 'pending', decided_by = NULL, \
         decided_at_ms = NULL WHERE kind = 'iban_proof'",
    )
    .execute(&app.service.db.pool)
    .await
    .unwrap();
    // The honest path: the old proof is refused, a proof of the new IBAN
    // is sent and verified, and the account is verified with it.
    let old = proof["id"].as_i64().unwrap();
    expect(
        StatusCode::OK,
        vera.refuse_document(old, "this proof shows another IBAN")
            .await,
    );
    let player = app.service.player_by_username("ines").await.unwrap();
    let new = send_iban_proof(&app.service, &player, "rib.pdf").await;
    expect(StatusCode::OK, vera.verify_document(new.id).await);
    expect(StatusCode::OK, vera.verify_account(ines, OTHER_IBAN).await);
    assert_eq!(app.get("/api/account").await.1["status"], "verified");
});

/// Failed logins counted as the server's defaults do (five free per name
/// and address), every other throttle off.
fn login_throttle() -> Settings {
    Settings {
        rate_limits: RateLimits {
            failed_logins_free_per_name_and_address: 5,
            failed_logins_free_per_address: 50,
            ..RateLimits::unthrottled()
        },
        ..Settings::default()
    }
}

on_both!(
    wrong_current_passwords_are_counted_and_end_the_session,
    login_throttle(),
    |app| {
        open_account(&app, "gus").await;
        let elsewhere = app.another_client();
        assert_eq!(elsewhere.login("gus", PASSWORD).await.0, StatusCode::OK);
        // A thief with the cookie guesses where the password is asked: the
        // password, the address and the IBAN changes count together.
        let guesses = [
            (
                "POST",
                "/api/account/password",
                json!({"current_password": "guess 1", "new_password": "a brand new password"}),
            ),
            (
                "POST",
                "/api/account/password",
                json!({"current_password": "guess 2", "new_password": "a brand new password"}),
            ),
            (
                "PUT",
                "/api/account/email",
                json!({"current_password": "guess 3", "email": THIEF}),
            ),
            (
                "PUT",
                "/api/account/email",
                json!({"current_password": "guess 4", "email": THIEF}),
            ),
            (
                "PUT",
                "/api/account/iban",
                json!({"current_password": "guess 5", "iban": OTHER_IBAN}),
            ),
            (
                "POST",
                "/api/account/password",
                json!({"current_password": "guess 6", "new_password": "a brand new password"}),
            ),
        ];
        for (i, (method, path, body)) in guesses.into_iter().enumerate() {
            let answer = if method == "PUT" {
                app.put_json(path, body).await
            } else {
                app.post(path, body).await
            };
            match i {
                0..4 => assert_refused(&answer, StatusCode::UNPROCESSABLE_ENTITY, "validation"),
                4 => {
                    assert_refused(&answer, StatusCode::UNAUTHORIZED, "unauthorized");
                    assert_eq!(
                        answer.1["error"]["reason"], "wrong_passwords",
                        "{}",
                        answer.1
                    );
                }
                _ => assert_eq!(answer.0, StatusCode::UNAUTHORIZED, "{}", answer.1),
            }
        }
        assert_eq!(app.get("/api/account").await.0, StatusCode::UNAUTHORIZED);
        assert_eq!(trail_count(&app, "session_ended_wrong_passwords").await, 1);
        // The owner's other session stays, and nothing changed.
        let (status, account) = elsewhere.get("/api/account").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(account["identity"]["email"], "gus@example.org");
        assert_eq!(account["iban"], "FR76 •••• 0189");
        // Counted with failed logins: from this address, a login waits.
        let waits = app.login("gus", PASSWORD).await;
        assert_refused(&waits, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
        app.clock.advance_ms(1000);
        assert_eq!(app.login("gus", PASSWORD).await.0, StatusCode::OK);
    }
);

on_both!(
    a_console_session_ends_after_wrong_current_passwords,
    login_throttle(),
    |app| {
        let (olga, secret) = staff::logged_in(&app, "olga", Role::Operator).await;
        for i in 0..5 {
            let answer = olga.post("/console/api/password", json!({"current_password": format!("guess {i}"), "new_password": "a new console password"})).await;
            if i < 4 {
                assert_refused(&answer, StatusCode::UNPROCESSABLE_ENTITY, "validation");
            } else {
                assert_refused(&answer, StatusCode::UNAUTHORIZED, "unauthorized");
                assert_eq!(
                    answer.1["error"]["reason"], "wrong_passwords",
                    "{}",
                    answer.1
                );
            }
        }
        assert_eq!(
            olga.get("/console/api/me").await.0,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            count(
                &app,
                "SELECT COUNT(*) FROM trail WHERE action = 'session_ended_wrong_passwords' \
                 AND actor = 'staff:olga'"
            )
            .await,
            1
        );
        // Counted with failed logins: the password step waits here.
        let waits = Console::logs_in(&app, "olga", CONSOLE_PASSWORD, &secret)
            .await
            .expect_err("a wait");
        assert_refused(&waits, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
        // A second later (and a new code), the owner logs in.
        app.clock.advance_ms(31_000);
        assert!(
            Console::logs_in(&app, "olga", CONSOLE_PASSWORD, &secret)
                .await
                .is_ok()
        );
    }
);

/// PUTs a new address with the password; the status, the Retry-After and
/// the body.
async fn change_address(
    app: &TestApp,
    client: &reqwest::Client,
    email: &str,
) -> (StatusCode, Option<u64>, Value) {
    let response = client
        .put(format!("{}/api/account/email", app.address))
        .header("x-requested-with", "tresor")
        .json(&json!({"email": email, "current_password": PASSWORD}))
        .send()
        .await
        .unwrap();
    let status = response.status();
    let retry = maybe_header(&response, "retry-after").map(|v| v.parse().unwrap());
    (status, retry, response.json().await.unwrap())
}

on_both!(
    address_changes_have_a_quota_per_player_and_per_address,
    |app| {
        open_account(&app, "quin").await;
        let quin = logged_in(&app, "quin").await;
        for i in 0..5 {
            let (status, _, body) =
                change_address(&app, &quin, &format!("quin{i}@example.net")).await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }
        let (status, retry, body) = change_address(&app, &quin, "quin5@example.net").await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
        assert_eq!(body["error"]["code"], "mail_quota", "{body}");
        assert!(
            retry.is_some_and(|s| (1..=24 * 3600).contains(&s)),
            "{retry:?}"
        );
        // Nothing changed, no mail to the refused address.
        let (_, account) = app.get("/api/account").await;
        assert_eq!(account["identity"]["email"], "quin4@example.net");
        assert_eq!(
            count(
                &app,
                "SELECT COUNT(*) FROM mail_tokens WHERE email = 'quin5@example.net'"
            )
            .await,
            0
        );
        // A day later the player may again (in a new session: one lasts 12 hours).
        app.clock.advance_ms(DAY_MS);
        let quin = logged_in(&app, "quin").await;
        let (status, _, body) = change_address(&app, &quin, "quin5@example.net").await;
        assert_eq!(status, StatusCode::OK, "{body}");

        // Per address: three players give the same one; the fourth is refused.
        for (i, name) in ["vic", "val", "ved", "von"].into_iter().enumerate() {
            let browser = app.another_client();
            open_account(&browser, name).await;
            let client = logged_in(&app, name).await;
            let (status, retry, body) = change_address(&app, &client, "victim@example.com").await;
            if i < 3 {
                assert_eq!(status, StatusCode::OK, "{body}");
            } else {
                assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
                assert_eq!(body["error"]["code"], "mail_quota", "{body}");
                assert!(retry.is_some(), "Retry-After");
            }
        }
        assert_eq!(
            count(
                &app,
                "SELECT COUNT(*) FROM mail_tokens WHERE email = 'victim@example.com'"
            )
            .await,
            3
        );
    }
);

on_both!(the_same_iban_given_again_keeps_its_proof, |app| {
    let jade = player("jade").documents().on(&app).await.id;
    let vera = console(&app, "vera").await;
    // The player saves the IBAN on file again, a minute after its proof
    // was checked: nothing changes, and the account is verified with it.
    app.clock.advance_ms(60_000);
    set_iban(&app, IBAN).await;
    assert_eq!(trail_count(&app, "document_back_to_review").await, 0);
    let body = expect(StatusCode::OK, vera.verify_account(jade, IBAN).await);
    assert_eq!(body["status"], "verified", "{body}");
});

on_both!(a_proof_of_the_new_iban_replaces_the_old_one, |app| {
    let kai = player("kai").documents().on(&app).await.service_player;
    let vera = console(&app, "vera").await;
    app.clock.advance_ms(60_000);
    set_iban(&app, OTHER_IBAN).await;
    // The honest player sends a proof of the new IBAN at once: it replaces
    // the old one (refused, with a reason the player reads).
    app.clock.advance_ms(60_000);
    let new = send_iban_proof(&app.service, &kai, "new-rib.pdf").await;
    let (_, documents) = app.get("/api/account/documents").await;
    let proofs: Vec<&Value> = documents["documents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == "iban_proof")
        .collect();
    assert_eq!(proofs.len(), 2, "{documents}");
    assert_eq!(proofs[0]["status"], "pending");
    assert_eq!(proofs[1]["status"], "refused");
    assert_eq!(
        proofs[1]["reason"],
        "replaced by a proof of the IBAN given since"
    );
    // A proof sent after the IBAN cannot be sent twice while it waits.
    let again = app
        .service
        .upload_document(
            &kai,
            tresor::account::documents::DocumentKind::IbanProof,
            "again.pdf",
            PDF.to_vec(),
        )
        .await;
    assert!(
        matches!(
            &again,
            Err(tresor::error::Error::Document {
                code: "document_already_sent",
                ..
            })
        ),
        "{again:?}"
    );
    expect(StatusCode::OK, vera.verify_document(new.id).await);
    expect(
        StatusCode::OK,
        vera.verify_account(kai.id, OTHER_IBAN).await,
    );
});
