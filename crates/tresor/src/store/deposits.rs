//! Deposits through the payment provider, and the provider's payments
//! (confirmations) recorded against them.

use super::record::record;
use super::sql::{self, Conn};
use crate::error::Error;

record! {
    #[derive(Debug, Clone, serde::Serialize)]
    pub struct DepositRow {
        pub id: i64,
        pub player_id: i64,
        pub amount_cents: i64,
        pub provider: String,
        pub state: String,
        pub created_at_ms: i64,
        pub settled_at_ms: Option<i64>,
    }
}

pub async fn insert_deposit(
    conn: &mut Conn,
    player_id: i64,
    amount_cents: i64,
    provider: &str,
    now_ms: i64,
) -> Result<i64, Error> {
    sql::query_scalar(
        "INSERT INTO deposits (player_id, amount_cents, provider, state, created_at_ms) \
         VALUES ($1, $2, $3, 'pending', $4) RETURNING id",
    )
    .bind(player_id)
    .bind(amount_cents)
    .bind(provider)
    .bind(now_ms)
    .fetch_one(conn)
    .await
}

pub async fn deposit(conn: &mut Conn, id: i64) -> Result<Option<DepositRow>, Error> {
    sql::query_as(
        "SELECT id, player_id, amount_cents, provider, state, created_at_ms, settled_at_ms \
         FROM deposits WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(conn)
    .await
}

pub async fn settle_deposit(
    conn: &mut Conn,
    id: i64,
    state: &str,
    now_ms: i64,
) -> Result<(), Error> {
    sql::query(
        "UPDATE deposits SET state = $1, settled_at_ms = $2 WHERE id = $3 AND state = 'pending'",
    )
    .bind(state)
    .bind(now_ms)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(())
}

/// An earlier confirmation with the same provider transaction id: its
/// deposit, outcome and reason.
pub async fn payment(
    conn: &mut Conn,
    provider: &str,
    transaction_id: &str,
) -> Result<Option<(i64, String, Option<String>)>, Error> {
    sql::query_as(
        "SELECT deposit_id, outcome, reason FROM payments WHERE provider = $1 AND transaction_id = $2",
    )
    .bind(provider)
    .bind(transaction_id)
    .fetch_optional(conn)
    .await
}

#[allow(clippy::too_many_arguments, reason = "one column each")]
pub async fn insert_payment(
    conn: &mut Conn,
    provider: &str,
    transaction_id: &str,
    deposit_id: i64,
    amount_cents: i64,
    outcome: &str,
    reason: Option<&str>,
    now_ms: i64,
) -> Result<(), Error> {
    sql::query(
        "INSERT INTO payments (provider, transaction_id, deposit_id, amount_cents, outcome, reason, received_at_ms) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(provider)
    .bind(transaction_id)
    .bind(deposit_id)
    .bind(amount_cents)
    .bind(outcome)
    .bind(reason)
    .bind(now_ms)
    .execute(conn)
    .await?;
    Ok(())
}
