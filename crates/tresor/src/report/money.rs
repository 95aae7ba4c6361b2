//! The report's money side: what went in and out of the players' accounts,
//! read from the ledger's system accounts and transfers (all emissions).

use crate::error::Error;
use crate::model::{
    DEPOSITS_ACCOUNT, PAID_OUT_ACCOUNT, PENDING_WITHDRAWALS_ACCOUNT, PROVIDER_ACCOUNT,
    RESERVES_ACCOUNT, TO_REFUND_ACCOUNT,
};
use serde::Serialize;
use sqlx::AnyPool;

/// The money side, from the ledger's system accounts and transfers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MoneyFigures {
    /// Deposits credited through the payment provider.
    pub provider_deposits_cents: i64,
    /// Demo deposits and operator credits.
    pub other_deposits_cents: i64,
    /// Confirmations received but never credited, owed back to the payer.
    pub to_refund_cents: i64,
    /// Withdrawals asked and not yet paid, rejected or cancelled.
    pub withdrawals_pending_cents: i64,
    /// Withdrawals paid out.
    pub withdrawals_paid_cents: i64,
    /// Balances of closed accounts kept in reserve (six years).
    pub reserves_cents: i64,
    /// Every stake taken: the sum of every stakes account (each writer's
    /// own, and account 2 of a database made before migration 0016).
    pub stakes_taken_cents: i64,
    /// Every win credited: what every prizes account paid out (each
    /// writer's own, and account 3).
    pub wins_credited_cents: i64,
    /// What the players' accounts hold.
    pub player_balances_cents: i64,
    /// The sum of every account's balance: zero, or the ledger is broken.
    pub ledger_sum_cents: i64,
}

/// Reads the money side of the report.
pub(super) async fn money(pool: &AnyPool) -> Result<MoneyFigures, Error> {
    let balance = |id: i64| async move {
        sqlx::query_scalar::<_, i64>("SELECT balance_cents FROM accounts WHERE id = $1")
            .bind(id)
            .fetch_optional(pool)
            .await
            .map(Option::unwrap_or_default)
    };
    let sum = |condition: &'static str| async move {
        sqlx::query_scalar::<_, i64>(&format!(
            "SELECT CAST(COALESCE(SUM(balance_cents), 0) AS BIGINT) FROM accounts WHERE {condition}"
        ))
        .fetch_one(pool)
        .await
    };
    // The partial index's predicate spelled out (`> -1000`, not a stake:
    // migrations 0021 and 0022), so that SQLite uses it.
    let provider_deposits_cents: i64 = sqlx::query_scalar(
        "SELECT CAST(COALESCE(SUM(amount_cents), 0) AS BIGINT) FROM transfers \
         WHERE kind = 'deposit' AND debit_account_id = $1 AND debit_account_id > -1000 AND kind <> 'stake'",
    )
    .bind(PROVIDER_ACCOUNT)
    .fetch_one(pool)
    .await?;
    Ok(MoneyFigures {
        provider_deposits_cents,
        other_deposits_cents: -balance(DEPOSITS_ACCOUNT).await?,
        to_refund_cents: balance(TO_REFUND_ACCOUNT).await?,
        withdrawals_pending_cents: balance(PENDING_WITHDRAWALS_ACCOUNT).await?,
        withdrawals_paid_cents: balance(PAID_OUT_ACCOUNT).await?,
        reserves_cents: balance(RESERVES_ACCOUNT).await?,
        stakes_taken_cents: sum("kind = 'stakes'").await?,
        wins_credited_cents: -sum("kind = 'prizes'").await?,
        player_balances_cents: sum("kind = 'player'").await?,
        ledger_sum_cents: sum("1 = 1").await?,
    })
}
