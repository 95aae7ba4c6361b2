//! Issue 32, finding 3: a suspended account's pending withdrawal is not
//! paid. The reproduction: an account with a withdrawal pending is
//! suspended; the console's queue says so, and approving it is refused with
//! `account_suspended`, changing nothing; once the suspension is lifted the
//! same withdrawal is approved as before. On both databases.

use crate::common::TestApp;
use crate::common::opening::{
    IBAN, assert_refused, console, console_get, console_post, count, deposit, documents_verified,
    open_account,
};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// What an approval must not change: the withdrawal's state, the money and
/// the trail.
async fn state_of(app: &TestApp, id: i64) -> (String, i64, i64, i64) {
    let state: String = sqlx::query_scalar("SELECT state FROM withdrawals WHERE id = $1")
        .bind(id)
        .fetch_one(&app.service.db.pool)
        .await
        .unwrap();
    (
        state,
        count(app, "SELECT COUNT(*) FROM transfers").await,
        count(
            app,
            &format!(
                "SELECT balance_cents FROM accounts WHERE id = {}",
                tresor::model::PAID_OUT_ACCOUNT
            ),
        )
        .await,
        count(app, "SELECT COUNT(*) FROM trail").await,
    )
}

/// The queue's row of withdrawal `id`.
fn row_of(queue: &Value, id: i64) -> Value {
    queue["withdrawals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["id"] == id)
        .unwrap_or_else(|| panic!("withdrawal {id} in the queue: {queue}"))
        .clone()
}

on_both!(
    a_suspended_accounts_withdrawal_is_shown_suspended_and_not_paid,
    |app| {
        open_account(&app, "sam").await;
        documents_verified(&app.service, "sam").await;
        let sam = app.service.player_by_username("sam").await.unwrap();
        app.service
            .verify_account_as(
                tresor::trail::Actor::staff("vera"),
                &sam,
                &tresor::account::Iban::parse(IBAN).unwrap(),
            )
            .await
            .unwrap();
        deposit(&app, 5_000).await;
        let (status, asked) = app
            .post("/api/account/withdrawals", json!({"amount_cents": 3_000}))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{asked}");
        let id = asked["id"].as_i64().unwrap();

        // Paula had no hand in the account (four eyes let her approve).
        let paula = console(&app, "paula").await;
        let queue = console_get(&paula, &app, "/console/api/withdrawals?state=pending").await;
        assert_eq!(row_of(&queue, id)["suspended"], false, "{queue}");

        let player = format!("/console/api/players/{}", sam.id);
        let (status, body) = console_post(
            &paula,
            &app,
            &format!("{player}/suspend"),
            json!({"reason": "chargeback under review"}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");

        // The queue shows the suspension.
        let queue = console_get(&paula, &app, "/console/api/withdrawals?state=pending").await;
        let row = row_of(&queue, id);
        assert_eq!(row["suspended"], true, "{queue}");
        assert!(row["suspended_at"].is_string(), "{row}");
        // The player's own view says nothing of it.
        let all = console_get(&paula, &app, "/console/api/withdrawals").await;
        assert_eq!(row_of(&all, id)["suspended"], true, "{all}");

        // Approving is refused, and nothing changes: at the console and
        // through the service the command line calls.
        let before = state_of(&app, id).await;
        let refused = console_post(
            &paula,
            &app,
            &format!("/console/api/withdrawals/{id}/approve"),
            json!({}),
        )
        .await;
        assert_refused(&refused, StatusCode::FORBIDDEN, "account_suspended");
        assert!(matches!(
            app.service
                .decide_withdrawal(id, tresor::service::Settlement::Paid, None)
                .await,
            Err(tresor::error::Error::AccountSuspended)
        ));
        assert_eq!(state_of(&app, id).await, before);
        assert_eq!(before.0, "pending");
        assert_eq!(
            count(
                &app,
                "SELECT COUNT(*) FROM trail WHERE action = 'withdrawal_paid'"
            )
            .await,
            0
        );

        // Lifted: the queue says so, and the same withdrawal is paid.
        let (status, body) = console_post(
            &paula,
            &app,
            &format!("{player}/unsuspend"),
            json!({"reason": "chargeback withdrawn"}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let queue = console_get(&paula, &app, "/console/api/withdrawals?state=pending").await;
        assert_eq!(row_of(&queue, id)["suspended"], false, "{queue}");
        let (status, paid) = console_post(
            &paula,
            &app,
            &format!("/console/api/withdrawals/{id}/approve"),
            json!({}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{paid}");
        assert_eq!(paid["state"], "paid");
        app.assert_ledger_balances().await;
    }
);

on_both!(
    a_suspended_accounts_withdrawal_can_still_be_rejected,
    |app| {
        open_account(&app, "rita").await;
        documents_verified(&app.service, "rita").await;
        let rita = app.service.player_by_username("rita").await.unwrap();
        app.service
            .verify_account_as(
                tresor::trail::Actor::staff("vera"),
                &rita,
                &tresor::account::Iban::parse(IBAN).unwrap(),
            )
            .await
            .unwrap();
        deposit(&app, 2_000).await;
        let (status, asked) = app
            .post("/api/account/withdrawals", json!({"amount_cents": 1_500}))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{asked}");
        let id = asked["id"].as_i64().unwrap();
        let paula = console(&app, "paula").await;
        let (status, body) = console_post(
            &paula,
            &app,
            &format!("/console/api/players/{}/suspend", rita.id),
            json!({"reason": "identity in doubt"}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        // The money goes back to the account, which stays suspended.
        let (status, rejected) = console_post(
            &paula,
            &app,
            &format!("/console/api/withdrawals/{id}/reject"),
            json!({"reason": "account under review"}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{rejected}");
        assert_eq!(rejected["state"], "rejected");
        let detail = console_get(&paula, &app, &format!("/console/api/players/{}", rita.id)).await;
        assert_eq!(detail["account"]["balance_cents"], 2_000, "{detail}");
        assert!(detail["suspension"].is_object(), "{detail}");
        app.assert_ledger_balances().await;
    }
);
