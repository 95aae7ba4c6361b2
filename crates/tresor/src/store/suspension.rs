//! The operator's suspension of a player account, apart from an exclusion
//! (migration 0014): when, by whom and why (the reason is the staff's
//! only). Stakes (`protect::stake_allowances`) and deposits
//! (`accounts::refuse_money_in`) read `suspended_at_ms`, and so do the
//! player's own changes ([`refuse_changes`]); logins do not (a suspended
//! player still reads their account: docs/ACCOUNT.md).

use super::sql::{self, Conn};
use crate::error::Error;

/// A suspension in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suspension {
    pub at_ms: i64,
    /// The staff's actor label.
    pub by: String,
    pub reason: String,
}

/// The suspension in force on `player_id`'s account, if any.
pub async fn suspension(conn: &mut Conn, player_id: i64) -> Result<Option<Suspension>, Error> {
    let row = sql::query(
        "SELECT suspended_at_ms, suspended_by, suspended_reason FROM player_accounts \
         WHERE player_id = $1 AND suspended_at_ms IS NOT NULL",
    )
    .bind(player_id)
    .fetch_optional(conn)
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    Ok(Some(Suspension {
        at_ms: row.try_get("suspended_at_ms")?,
        by: row
            .try_get::<Option<String>, _>("suspended_by")?
            .unwrap_or_default(),
        reason: row
            .try_get::<Option<String>, _>("suspended_reason")?
            .unwrap_or_default(),
    }))
}

/// Refuses what the player changes of their own account while it is
/// suspended, read-only as the console says (issue 42, finding 9): the
/// address, the IBAN, a document sent. Reading, withdrawals (held), caps,
/// exclusion, password and sessions do not ask it.
pub async fn refuse_changes(conn: &mut Conn, player_id: i64) -> Result<(), Error> {
    match suspension(conn, player_id).await? {
        Some(_) => Err(Error::AccountSuspended),
        None => Ok(()),
    }
}

/// Suspends the account (`Some`) or lifts its suspension (`None`).
pub async fn set_suspension(
    conn: &mut Conn,
    player_id: i64,
    suspension: Option<&Suspension>,
) -> Result<(), Error> {
    sql::query(
        "UPDATE player_accounts SET suspended_at_ms = $1, suspended_by = $2, \
         suspended_reason = $3 WHERE player_id = $4",
    )
    .bind(suspension.map(|s| s.at_ms))
    .bind(suspension.map(|s| s.by.clone()))
    .bind(suspension.map(|s| s.reason.clone()))
    .bind(player_id)
    .execute(conn)
    .await?;
    Ok(())
}
