//! The ledger of the account module: double-entry transfers with both
//! balances, an account's balance, and the statement's rows.

use super::record::record;
use super::sql::{self, Conn};
use crate::error::Error;
use crate::model::Player;

/// One double-entry movement of the account module.
#[derive(Debug, Clone, Copy)]
pub struct Transfer {
    pub debit: i64,
    pub credit: i64,
    pub amount_cents: i64,
    pub kind: &'static str,
    pub deposit_id: Option<i64>,
    pub withdrawal_id: Option<i64>,
    pub now_ms: i64,
}

/// Moves the money and updates both balances, refusing to take a player
/// account below zero (`InsufficientFunds`, nothing written). Returns the
/// debited and credited accounts' new balances.
pub async fn transfer(conn: &mut Conn, t: Transfer) -> Result<(i64, i64), Error> {
    assert!(t.amount_cents > 0, "a transfer moves a positive amount");
    let debited: Option<i64> = sql::query_scalar(
        "UPDATE accounts SET balance_cents = balance_cents - $1 \
         WHERE id = $2 AND (kind <> 'player' OR balance_cents >= $1) RETURNING balance_cents",
    )
    .bind(t.amount_cents)
    .bind(t.debit)
    .fetch_optional(conn)
    .await?;
    let Some(debit_balance_cents) = debited else {
        return Err(Error::InsufficientFunds {
            balance_cents: balance(conn, t.debit).await?,
            needed_cents: t.amount_cents,
        });
    };
    let credit_balance_cents: i64 = sql::query_scalar(
        "UPDATE accounts SET balance_cents = balance_cents + $1 WHERE id = $2 RETURNING balance_cents",
    )
    .bind(t.amount_cents)
    .bind(t.credit)
    .fetch_one(conn)
    .await?;
    sql::query(
        "INSERT INTO transfers (debit_account_id, credit_account_id, amount_cents, kind, \
         created_at_ms, deposit_id, withdrawal_id) VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(t.debit)
    .bind(t.credit)
    .bind(t.amount_cents)
    .bind(t.kind)
    .bind(t.now_ms)
    .bind(t.deposit_id)
    .bind(t.withdrawal_id)
    .execute(conn)
    .await?;
    Ok((debit_balance_cents, credit_balance_cents))
}

pub async fn balance(conn: &mut Conn, account_id: i64) -> Result<i64, Error> {
    sql::query_scalar("SELECT balance_cents FROM accounts WHERE id = $1")
        .bind(account_id)
        .fetch_one(conn)
        .await
}

record! {
    /// One movement of a player's account, with the balance after it.
    #[derive(Debug, Clone)]
    pub struct StatementRow {
        pub transfer_id: i64 = "id",
        pub kind: String,
        /// Signed: what the movement added to the balance (0 for a withdrawal
        /// paid, which leaves the pending account, not the player's).
        pub delta_cents: i64,
        pub amount_cents: i64,
        pub balance_cents: i64,
        pub at_ms: i64 = "created_at_ms",
        pub play_id: Option<i64>,
        pub deposit_id: Option<i64>,
        pub withdrawal_id: Option<i64>,
    }
}

/// The player's movements, newest first, before the transfer `before` (all
/// when `None`), at most `limit`.
pub async fn statement(
    conn: &mut Conn,
    player: &Player,
    before: Option<i64>,
    limit: i64,
) -> Result<Vec<StatementRow>, Error> {
    // The balance after each movement is the account's balance now less
    // what moved after it: the movements newer than the page (none on the
    // first page) and those of the page above it, all read in one statement,
    // so one snapshot. Only the page is summed row by row, never the whole
    // history from the account's first movement. A player's account is
    // above -1000, which lets the partial indexes by account serve it
    // (migration 0021: the writers' own accounts are left out of them). A
    // stake is found through the player's plays (`plays_by_player`, then
    // `transfers_one_stake_per_play`): migration 0022 left stakes out of
    // `transfers_by_debit`, where every purchase put an entry for this
    // statement alone.
    sql::query_as(
        "WITH page AS (SELECT t.id, t.kind, t.amount_cents, t.created_at_ms, t.play_id, \
           t.deposit_id, t.withdrawal_id, CASE WHEN t.credit_account_id = $1 THEN t.amount_cents \
             WHEN t.debit_account_id = $1 THEN -t.amount_cents ELSE 0 END AS delta_cents \
         FROM transfers t WHERE ((t.credit_account_id = $1 AND t.credit_account_id > -1000) \
           OR (t.debit_account_id = $1 AND t.debit_account_id > -1000 AND t.kind <> 'stake') \
           OR (t.kind = 'stake' AND t.play_id IN (SELECT id FROM plays WHERE player_id = $2)) \
           OR (t.kind = 'withdrawal_paid' AND t.withdrawal_id IN (SELECT id FROM withdrawals WHERE player_id = $2))) \
           AND ($3 = 0 OR t.id < $3) ORDER BY t.id DESC LIMIT $4), \
         newer AS (SELECT COALESCE(SUM(CASE WHEN t.credit_account_id = $1 THEN t.amount_cents \
             ELSE -t.amount_cents END), 0) AS cents \
         FROM transfers t WHERE $3 <> 0 AND t.id >= $3 \
           AND ((t.credit_account_id = $1 AND t.credit_account_id > -1000) \
             OR (t.debit_account_id = $1 AND t.debit_account_id > -1000 AND t.kind <> 'stake') \
             OR (t.kind = 'stake' AND t.play_id IN (SELECT id FROM plays WHERE player_id = $2)))) \
         SELECT page.*, CAST((SELECT balance_cents FROM accounts WHERE id = $1) \
           - (SELECT cents FROM newer) \
           - COALESCE(SUM(page.delta_cents) OVER (ORDER BY page.id DESC \
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS BIGINT) AS balance_cents \
         FROM page ORDER BY page.id DESC",
    )
    .bind(player.account_id)
    .bind(player.id)
    .bind(before.unwrap_or(0))
    .bind(limit)
    .fetch_all(conn)
    .await
}
