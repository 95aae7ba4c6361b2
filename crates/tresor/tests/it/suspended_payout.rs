//! Issue 32, finding 3: a suspended account's pending withdrawal is not
//! paid. The reproduction: an account with a withdrawal pending is
//! suspended; the console's queue says so, and approving it is refused with
//! `account_suspended`, changing nothing; once the suspension is lifted the
//! same withdrawal is approved as before. On both databases.

use crate::common::opening::{assert_refused, count, withdraw};
use crate::common::players::player;
use crate::common::staff::console;
use crate::common::{TestApp, expect};
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
        let sam = player("sam").verified().deposit(5_000).on(&app).await;
        let id = withdraw(&app, 3_000).await;

        // Paula had no hand in the account (four eyes let her approve).
        let paula = console(&app, "paula").await;
        let queue = paula.read("/console/api/withdrawals?state=pending").await;
        assert_eq!(row_of(&queue, id)["suspended"], false, "{queue}");

        let suspended = paula.suspension(sam.id, "suspend", "chargeback under review");
        expect(StatusCode::OK, suspended.await);

        // The queue shows the suspension.
        let queue = paula.read("/console/api/withdrawals?state=pending").await;
        let row = row_of(&queue, id);
        assert_eq!(row["suspended"], true, "{queue}");
        assert!(row["suspended_at"].is_string(), "{row}");
        // The player's own view says nothing of it.
        let all = paula.read("/console/api/withdrawals").await;
        assert_eq!(row_of(&all, id)["suspended"], true, "{all}");

        // Approving is refused, and nothing changes: at the console and
        // through the service the command line calls.
        let before = state_of(&app, id).await;
        let refused = paula.approve(id).await;
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
        let lifted = paula.suspension(sam.id, "unsuspend", "chargeback withdrawn");
        expect(StatusCode::OK, lifted.await);
        let queue = paula.read("/console/api/withdrawals?state=pending").await;
        assert_eq!(row_of(&queue, id)["suspended"], false, "{queue}");
        let paid = expect(StatusCode::OK, paula.approve(id).await);
        assert_eq!(paid["state"], "paid");
        app.assert_ledger_balances().await;
    }
);

on_both!(
    a_suspended_accounts_withdrawal_can_still_be_rejected,
    |app| {
        let rita = player("rita").verified().deposit(2_000).on(&app).await;
        let id = withdraw(&app, 1_500).await;
        let paula = console(&app, "paula").await;
        expect(
            StatusCode::OK,
            paula
                .act(
                    "players",
                    rita.id,
                    "suspend",
                    json!({"reason": "identity in doubt"}),
                )
                .await,
        );
        // The money goes back to the account, which stays suspended.
        let rejected = expect(
            StatusCode::OK,
            paula.reject(id, "account under review").await,
        );
        assert_eq!(rejected["state"], "rejected");
        let detail = paula
            .read(&format!("/console/api/players/{}", rita.id))
            .await;
        assert_eq!(detail["account"]["balance_cents"], 2_000, "{detail}");
        assert!(detail["suspension"].is_object(), "{detail}");
        app.assert_ledger_balances().await;
    }
);
