//! Reserves: money kept for a player until a date.

use super::record::record;
use super::sql::{self, Conn};
use crate::error::Error;

/// Adds `amount_cents` to the player's reserve, kept until `kept_until_ms`.
pub async fn add_reserve(
    conn: &mut Conn,
    player_id: i64,
    amount_cents: i64,
    kept_until_ms: i64,
    now_ms: i64,
) -> Result<(), Error> {
    sql::query(
        "INSERT INTO reserves (player_id, amount_cents, kept_until_ms, created_at_ms) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (player_id) DO UPDATE SET amount_cents = reserves.amount_cents + excluded.amount_cents, \
         kept_until_ms = excluded.kept_until_ms",
    )
    .bind(player_id)
    .bind(amount_cents)
    .bind(kept_until_ms)
    .bind(now_ms)
    .execute(conn)
    .await?;
    Ok(())
}

record! {
    #[derive(Debug, Clone, serde::Serialize)]
    pub struct ReserveRow {
        pub player_id: i64,
        pub username: String,
        pub amount_cents: i64,
        pub kept_until_ms: i64,
        pub created_at_ms: i64,
    }
}

pub async fn reserves(conn: &mut Conn) -> Result<Vec<ReserveRow>, Error> {
    sql::query_as(
        "SELECT r.player_id, p.username, r.amount_cents, r.kept_until_ms, r.created_at_ms \
         FROM reserves r JOIN players p ON p.id = r.player_id ORDER BY r.player_id",
    )
    .fetch_all(conn)
    .await
}
