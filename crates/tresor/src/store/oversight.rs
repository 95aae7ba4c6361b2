//! Four eyes on money, as stored: each operator's credit by whom
//! (`operator_credits`), what an operator credited lately (the per-operator
//! limits), and who credited an account (who may not approve its
//! withdrawals). Who verified an account is `player_accounts.verified_by`.
//! On PostgreSQL several servers write: one actor's credits are taken one
//! after the other ([`lock_actor_credits`]) so that the per-operator limit
//! counts what the other servers committed.

use super::sql::{self, Conn};
use crate::error::Error;

/// Takes, until the end of the transaction, the lock of `actor`'s credits
/// (a PostgreSQL advisory transaction lock keyed on the actor's label):
/// a credit by the same actor on another server waits for this
/// transaction's COMMIT, then reads what it credited. SQLite has one server
/// and one writer per database, which already runs credits one at a time.
pub async fn lock_actor_credits(conn: &mut Conn, actor: &str) -> Result<(), Error> {
    if conn.is_sqlite() {
        return Ok(());
    }
    // Two keys: a class of its own (no other advisory lock of the
    // installation shares it), and the label's 32-bit hash.
    sql::query("SELECT 1 FROM (SELECT pg_advisory_xact_lock(7432032, hashtext($1))) AS l")
        .bind(actor)
        .execute(conn)
        .await?;
    Ok(())
}

/// Records an operator's credit of `amount_cents` to `player_id` by `actor`
/// (an actor label), in the job that moves the money.
pub async fn record_credit(
    conn: &mut Conn,
    player_id: i64,
    actor: &str,
    amount_cents: i64,
    now_ms: i64,
) -> Result<(), Error> {
    sql::query(
        "INSERT INTO operator_credits (player_id, actor, amount_cents, at_ms) VALUES ($1, $2, $3, $4)",
    )
    .bind(player_id)
    .bind(actor)
    .bind(amount_cents)
    .bind(now_ms)
    .execute(conn)
    .await?;
    Ok(())
}

/// What `actor` credited, to any player, after `since_ms`.
pub async fn credited_since(conn: &mut Conn, actor: &str, since_ms: i64) -> Result<i64, Error> {
    sql::query_scalar(
        "SELECT CAST(COALESCE(SUM(amount_cents), 0) AS BIGINT) FROM operator_credits \
         WHERE actor = $1 AND at_ms > $2",
    )
    .bind(actor)
    .bind(since_ms)
    .fetch_one(conn)
    .await
}

/// Everyone who ever credited the account of `player_id`, by name.
pub async fn creditors(conn: &mut Conn, player_id: i64) -> Result<Vec<String>, Error> {
    sql::query_scalar(
        "SELECT DISTINCT actor FROM operator_credits WHERE player_id = $1 ORDER BY actor",
    )
    .bind(player_id)
    .fetch_all(conn)
    .await
}
