//! Withdrawals' storage: a withdrawal asked, read, listed and settled once
//! (the settling update checks it is still pending). The operator's queue
//! is paged, pending ones oldest first, so that none is ever out of sight;
//! each row says whether its account is suspended now.

use super::record::record;
use super::sql::{self, Conn};
use crate::error::Error;

record! {
    #[derive(Debug, Clone, serde::Serialize)]
    pub struct WithdrawalRow {
        pub id: i64,
        pub player_id: i64,
        pub username: String,
        pub amount_cents: i64,
        pub iban: String,
        pub state: String,
        pub reason: Option<String>,
        pub closing: bool => |row| row.try_get::<i64, _>("closing")? == 1,
        pub requested_at_ms: i64,
        pub settled_at_ms: Option<i64>,
        /// When the operator suspended the account, if it is suspended now: a
        /// suspended account's withdrawal is not paid (the staff's only).
        pub suspended_at_ms: Option<i64>,
    }
}

pub async fn insert_withdrawal(
    conn: &mut Conn,
    player_id: i64,
    amount_cents: i64,
    iban: &str,
    closing: bool,
    now_ms: i64,
) -> Result<i64, Error> {
    sql::query_scalar(
        "INSERT INTO withdrawals (player_id, amount_cents, iban, state, closing, requested_at_ms) \
         VALUES ($1, $2, $3, 'pending', $4, $5) RETURNING id",
    )
    .bind(player_id)
    .bind(amount_cents)
    .bind(iban)
    .bind(i64::from(closing))
    .bind(now_ms)
    .fetch_one(conn)
    .await
}

const WITHDRAWAL_COLUMNS: &str = "w.id, w.player_id, p.username, w.amount_cents, w.iban, w.state, \
     w.reason, w.closing, w.requested_at_ms, w.settled_at_ms, a.suspended_at_ms \
     FROM withdrawals w JOIN players p ON p.id = w.player_id \
     LEFT JOIN player_accounts a ON a.player_id = w.player_id";

pub async fn withdrawal(conn: &mut Conn, id: i64) -> Result<Option<WithdrawalRow>, Error> {
    sql::query_as(&format!("SELECT {WITHDRAWAL_COLUMNS} WHERE w.id = $1"))
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// A player's own withdrawals, newest first (the last 1,000).
pub async fn withdrawals_of_player(
    conn: &mut Conn,
    player_id: i64,
) -> Result<Vec<WithdrawalRow>, Error> {
    sql::query_as(&format!(
        "SELECT {WITHDRAWAL_COLUMNS} WHERE w.player_id = $1 ORDER BY w.id DESC LIMIT 1000"
    ))
    .bind(player_id)
    .fetch_all(conn)
    .await
}

/// A page of every player's withdrawals in `state` (all when `None`) for
/// the operator, after the withdrawal `cursor`: pending ones oldest first
/// (the queue: the one waiting longest comes first, and paging on reaches
/// every one), the others newest first. Returns the page and the cursor of
/// the next one, if any is left.
pub async fn withdrawal_queue(
    conn: &mut Conn,
    state: Option<&str>,
    cursor: Option<i64>,
    limit: i64,
) -> Result<(Vec<WithdrawalRow>, Option<i64>), Error> {
    let oldest_first = state == Some("pending");
    let text = if oldest_first {
        format!(
            "SELECT {WITHDRAWAL_COLUMNS} WHERE w.state = $1 AND w.id > $2 ORDER BY w.id LIMIT $3"
        )
    } else {
        format!(
            "SELECT {WITHDRAWAL_COLUMNS} WHERE ($1 = '' OR w.state = $1) AND ($2 = 0 OR w.id < $2) \
             ORDER BY w.id DESC LIMIT $3"
        )
    };
    // One more than asked tells whether a next page exists.
    let mut page: Vec<WithdrawalRow> = sql::query_as(&text)
        .bind(state.unwrap_or(""))
        .bind(cursor.unwrap_or(0))
        .bind(limit + 1)
        .fetch_all(conn)
        .await?;
    let next = if page.len() as i64 > limit {
        page.truncate(limit as usize);
        page.last().map(|w| w.id)
    } else {
        None
    };
    Ok((page, next))
}

/// Moves a pending withdrawal to `state`; false when it was no longer pending.
pub async fn settle_withdrawal(
    conn: &mut Conn,
    id: i64,
    state: &str,
    reason: Option<&str>,
    now_ms: i64,
) -> Result<bool, Error> {
    let changed = sql::query(
        "UPDATE withdrawals SET state = $1, reason = $2, settled_at_ms = $3 WHERE id = $4 AND state = 'pending'",
    )
    .bind(state)
    .bind(reason)
    .bind(now_ms)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(changed == 1)
}
