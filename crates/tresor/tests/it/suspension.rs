//! The operator's suspension of a player account (issue 22), on both
//! databases: through the console's API and `tresor accounts
//! suspend|unsuspend`, a reason required (and kept from the player), the
//! player's sessions ended, deposits (asked, confirmed by the provider,
//! credited by an operator) and stakes (through the writer's batch)
//! refused with a neutral `account_suspended`, then lifted; both in the
//! trail. The player logs in again to read the account (issue 35: reading
//! one's balance and statement is a right), told only that it is
//! suspended.

use crate::common::assert_exit;
use crate::common::expect;
use crate::common::opening::{
    PASSWORD, PDF, assert_refused, count, deposit, open_account, webhook,
};
use crate::common::players::player;
use crate::common::staff::console;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tresor::error::Error;
use tresor::model::IdempotencyKey;
use tresor::service::Purchase;

const REASON: &str = "chargeback under review, case 4411";

fn purchase(key: &str) -> Purchase {
    Purchase {
        game: tresor_game::ile_au_tresor(),
        stake_cents: 100,
        idempotency_key: IdempotencyKey::parse(key).unwrap(),
    }
}

on_both!(
    a_suspended_player_reads_the_account_but_is_refused_deposits_and_stakes_until_lifted,
    |app| {
        player("sam").real_money().deposit(5000).on(&app).await;
        // A deposit asked before the suspension, confirmed after it.
        let asked = expect(StatusCode::CREATED, app.ask_deposit(1000).await);
        let sam = app.service.player_by_username("sam").await.unwrap();
        let path = format!("/console/api/players/{}", sam.id);
        let vera = console(&app, "vera").await;

        // A reason is required: without one, nothing changes.
        let trail = count(&app, "SELECT COUNT(*) FROM trail").await;
        for reason in ["", "  ", "no"] {
            let refused = vera.suspension(sam.id, "suspend", reason).await;
            assert_refused(&refused, StatusCode::UNPROCESSABLE_ENTITY, "validation");
        }
        let refused = vera.post(&format!("{path}/suspend"), json!({})).await;
        assert_eq!(refused.0, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.1);
        assert_eq!(count(&app, "SELECT COUNT(*) FROM trail").await, trail);
        assert_eq!(app.get("/api/account").await.0, StatusCode::OK);

        let body = expect(
            StatusCode::OK,
            vera.suspension(sam.id, "suspend", REASON).await,
        );
        assert_eq!(body["suspension"]["reason"], REASON);
        assert_eq!(body["suspension"]["suspended_by"], "staff:vera");
        let detail = vera.read(&path).await;
        assert_eq!(detail["suspension"]["reason"], REASON, "{detail}");
        // Twice is refused.
        let again = vera.suspension(sam.id, "suspend", REASON).await;
        assert_refused(&again, StatusCode::UNPROCESSABLE_ENTITY, "validation");

        // The session ended; the player logs in again, to read: the
        // account says it is suspended (never why), its balance and
        // statement are there, deposits and stakes are off.
        expect(StatusCode::UNAUTHORIZED, app.get("/api/account").await);
        expect(StatusCode::OK, app.login("sam", PASSWORD).await);
        let account = expect(StatusCode::OK, app.get("/api/account").await);
        assert_eq!(account["suspended"], json!(true), "{account}");
        assert_eq!(account["can_deposit"], json!(false), "{account}");
        assert_eq!(account["can_stake"], json!(false), "{account}");
        assert_eq!(account["balance_cents"], json!(5000), "{account}");
        assert!(!account.to_string().contains("chargeback"), "{account}");
        let statement = expect(StatusCode::OK, app.get("/api/account/statement").await);
        assert!(
            statement["movements"]
                .as_array()
                .is_some_and(|m| !m.is_empty()),
            "{statement}"
        );
        let refused = app.ask_deposit(1000).await;
        assert_refused(&refused, StatusCode::FORBIDDEN, "account_suspended");
        let message = refused.1["error"]["message"].as_str().unwrap();
        assert!(!message.contains("chargeback"), "{message}");
        assert_refused(
            &app.buy(100).await,
            StatusCode::FORBIDDEN,
            "account_suspended",
        );
        // A wrong password says nothing of the suspension.
        let wrong = app.login("sam", "not the password").await;
        assert_refused(&wrong, StatusCode::UNAUTHORIZED, "invalid_credentials");

        // Deposits, credits and stakes (through the writer's batch): refused.
        let balances = count(
            &app,
            "SELECT CAST(SUM(balance_cents) AS BIGINT) FROM accounts WHERE id > 0",
        )
        .await;
        assert!(matches!(
            app.service.ask_deposit(&sam, 1000).await,
            Err(Error::AccountSuspended)
        ));
        assert!(matches!(
            app.service.credit(&sam, 1000).await,
            Err(Error::AccountSuspended)
        ));
        assert!(matches!(
            app.service.buy(&sam, purchase("while-suspended")).await,
            Err(Error::AccountSuspended)
        ));
        // The provider's confirmation of the deposit asked before: to refund.
        let id = asked["id"].as_i64().unwrap();
        let confirmed = expect(
            StatusCode::OK,
            webhook(
                &app,
                &json!({"deposit_id": id, "transaction_id": "tx-late", "amount_cents": 1000,
                    "status": "succeeded"}),
            )
            .await,
        );
        assert_eq!(confirmed["outcome"], "to_refund");
        assert_eq!(confirmed["reason"], "account_suspended");
        assert_eq!(
            count(
                &app,
                "SELECT CAST(SUM(balance_cents) AS BIGINT) FROM accounts WHERE id > 0"
            )
            .await,
            balances
        );

        // Lifted (a reason required too): all of it open again.
        let refused = vera.suspension(sam.id, "unsuspend", "").await;
        assert_refused(&refused, StatusCode::UNPROCESSABLE_ENTITY, "validation");
        let lifted = vera.suspension(sam.id, "unsuspend", "chargeback withdrawn");
        expect(StatusCode::OK, lifted.await);
        assert_eq!(vera.read(&path).await["suspension"], Value::Null);
        let again = vera
            .suspension(sam.id, "unsuspend", "chargeback withdrawn")
            .await;
        assert_refused(&again, StatusCode::UNPROCESSABLE_ENTITY, "validation");
        assert_eq!(app.login("sam", PASSWORD).await.0, StatusCode::OK);
        assert_eq!(app.buy(100).await.0, StatusCode::CREATED);
        deposit(&app, 1000).await;

        let records: Vec<(String, String, String)> = sqlx::query_as(
            "SELECT actor, action, request FROM trail \
             WHERE action IN ('account_suspended', 'account_unsuspended') ORDER BY seq",
        )
        .fetch_all(&app.service.db.pool)
        .await
        .unwrap();
        assert_eq!(records.len(), 2, "{records:?}");
        assert_eq!(records[0].0, "staff:vera");
        assert_eq!(records[0].1, "account_suspended");
        assert!(records[0].2.contains(REASON), "{records:?}");
        assert_eq!(records[1].1, "account_unsuspended");
        assert!(records[1].2.contains("chargeback withdrawn"), "{records:?}");
        app.assert_ledger_balances().await;
        app.db.tresor_ok(&["audit", "verify"]);
    }
);

on_both!(the_command_line_suspends_and_lifts_with_a_reason, |app| {
    open_account(&app, "cli").await;
    // Money to stake once lifted (a deposit is refused while suspended).
    deposit(&app, 1000).await;
    // No reason: clap refuses it (exit 2), nothing changes.
    let refused = app.db.tresor(&["accounts", "suspend", "cli"]);
    assert_exit(&refused, 2);
    let refused = app
        .db
        .tresor(&["accounts", "suspend", "cli", "--reason", " "]);
    assert_exit(&refused, 2);
    assert_eq!(app.get("/api/account").await.0, StatusCode::OK);
    app.db
        .tresor_ok(&["accounts", "suspend", "cli", "--reason", REASON]);
    assert_eq!(app.get("/api/account").await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(app.login("cli", PASSWORD).await.0, StatusCode::OK);
    let account = app.get("/api/account").await.1;
    assert_eq!(account["suspended"], json!(true), "{account}");
    assert_eq!(account["can_stake"], json!(false), "{account}");
    assert_refused(
        &app.buy(100).await,
        StatusCode::FORBIDDEN,
        "account_suspended",
    );
    app.db
        .tresor_ok(&["account", "unsuspend", "cli", "--reason", "cleared"]);
    // Lifted: a login worked while suspended too; what changed is that the
    // account may stake again, and a purchase goes through.
    assert_eq!(app.login("cli", PASSWORD).await.0, StatusCode::OK);
    let account = app.get("/api/account").await.1;
    assert_eq!(account["suspended"], json!(false), "{account}");
    assert_eq!(account["can_stake"], json!(true), "{account}");
    expect(StatusCode::CREATED, app.buy(100).await);
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM trail WHERE actor = 'operator' \
             AND action IN ('account_suspended', 'account_unsuspended')"
        )
        .await,
        2
    );
});

// Issue 42, finding 9: a suspended account (read-only, as the console's
// dialog says) changes neither its address nor its IBAN and sends no
// document, and nothing of them is written; reading, the caps, the
// password, the sessions and the exclusion stay open; lifted, the
// changes are taken again.
on_both!(
    a_suspended_account_changes_neither_address_nor_iban_and_sends_no_document,
    |app| {
        let sue = open_account(&app, "sue").await.service_player;
        let actor = tresor::trail::Actor::staff("vera");
        app.service
            .suspend_account(actor.clone(), &sue, REASON)
            .await
            .unwrap();
        assert_eq!(app.login("sue", PASSWORD).await.0, StatusCode::OK);
        let written = "SELECT COUNT(*) FROM trail WHERE action IN \
                       ('email_set', 'iban_set', 'document_uploaded')";
        let change_email = json!({"email": "sue@example.net", "current_password": PASSWORD});
        let change_iban =
            json!({"iban": "DE89 3704 0044 0532 0130 00", "current_password": PASSWORD});
        let refused = [
            app.put_json("/api/account/email", change_email.clone())
                .await,
            app.put_json("/api/account/iban", change_iban.clone()).await,
            app.upload("identity", "id.pdf", PDF).await,
        ];
        for answer in &refused {
            assert_refused(answer, StatusCode::FORBIDDEN, "account_suspended");
            let message = answer.1["error"]["message"].as_str().unwrap();
            assert!(!message.contains("chargeback"), "{message}");
        }
        // Nothing written, no mail asked.
        assert_eq!(count(&app, written).await, 0);
        assert_eq!(count(&app, "SELECT COUNT(*) FROM email_changes").await, 0);
        assert_eq!(
            count(&app, "SELECT COUNT(*) FROM identity_documents").await,
            0
        );
        let account = expect(StatusCode::OK, app.get("/api/account").await);
        assert_eq!(account["identity"]["email"], "sue@example.org");
        assert_eq!(account["iban"], "FR76 •••• 0189");

        // Open: reading, the caps, the sessions, the password.
        for path in [
            "/api/account/documents",
            "/api/account/sessions",
            "/api/limits",
        ] {
            let (status, body) = app.get(path).await;
            assert_eq!(status, StatusCode::OK, "{path}: {body}");
        }
        expect(
            StatusCode::OK,
            app.post("/api/limits", json!({"stake_limit_cents": 500}))
                .await,
        );
        expect(
            StatusCode::OK,
            app.post("/api/account/sessions/end-others", json!({}))
                .await,
        );
        expect(
            StatusCode::OK,
            app.change_password(PASSWORD, "another long password").await,
        );

        // Lifted: the same changes are taken.
        app.service
            .unsuspend_account(actor, &sue, "chargeback withdrawn")
            .await
            .unwrap();
        let change_email =
            json!({"email": "sue@example.net", "current_password": "another long password"});
        let change_iban = json!({"iban": "DE89 3704 0044 0532 0130 00", "current_password": "another long password"});
        assert_eq!(
            app.login("sue", "another long password").await.0,
            StatusCode::OK
        );
        let taken = [
            app.put_json("/api/account/email", change_email).await,
            app.put_json("/api/account/iban", change_iban).await,
            app.upload("identity", "id.pdf", PDF).await,
        ];
        for answer in &taken {
            assert!(answer.0.is_success(), "{answer:?}");
        }
        assert_eq!(count(&app, written).await, 3);

        // The exclusion stays open to a suspended account (it ends the sessions).
        app.service
            .suspend_account(tresor::trail::Actor::staff("vera"), &sue, REASON)
            .await
            .unwrap();
        assert_eq!(
            app.login("sue", "another long password").await.0,
            StatusCode::OK
        );
        expect(
            StatusCode::OK,
            app.post("/api/exclusion", json!({"period": "7d"})).await,
        );
        app.assert_ledger_balances().await;
    }
);
