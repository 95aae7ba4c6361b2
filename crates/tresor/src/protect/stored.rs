//! The caps and the exclusion as stored (`protections`, a row per player):
//! read, written back, and written for a new player.

use super::limits::Limits;
use super::rule::Cap;
use crate::error::Error;
use crate::model::LimitKind;
use crate::store::{Conn, sql};

/// A player's row of `protections`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stored {
    pub(super) deposit: Cap,
    pub(super) stake: Cap,
    pub(super) excluded_until_ms: Option<i64>,
}

impl Default for Stored {
    /// The default caps, no exclusion: a safe reading of a missing row.
    fn default() -> Self {
        let default = Limits::default();
        Stored {
            deposit: Cap::fixed(default.deposit.cents()),
            stake: Cap::fixed(default.stake.cents()),
            excluded_until_ms: None,
        }
    }
}

impl Stored {
    pub(super) fn cap(&self, kind: LimitKind) -> Cap {
        match kind {
            LimitKind::Deposit => self.deposit,
            LimitKind::Stake => self.stake,
        }
    }
}

/// The player's caps and exclusion as stored.
pub(super) async fn load(conn: &mut Conn, player_id: i64) -> Result<Stored, Error> {
    let row = sql::query(
        "SELECT deposit_limit_cents, deposit_pending_cents, deposit_pending_at_ms, \
         stake_limit_cents, stake_pending_cents, stake_pending_at_ms, excluded_until_ms \
         FROM protections WHERE player_id = $1",
    )
    .bind(player_id)
    .fetch_optional(&mut *conn)
    .await?;
    // Every player has a row (registration writes it, the migration gave one
    // to earlier players); the defaults are a safe reading of a missing one.
    let Some(row) = row else {
        return Ok(Stored::default());
    };
    let cap = |prefix: &str| -> Result<Cap, Error> {
        let cents: Option<i64> = row.try_get(format!("{prefix}_pending_cents").as_str())?;
        let at_ms: Option<i64> = row.try_get(format!("{prefix}_pending_at_ms").as_str())?;
        Ok(Cap {
            limit_cents: row.try_get(format!("{prefix}_limit_cents").as_str())?,
            pending: cents.zip(at_ms),
        })
    };
    Ok(Stored {
        deposit: cap("deposit")?,
        stake: cap("stake")?,
        excluded_until_ms: row.try_get("excluded_until_ms")?,
    })
}

/// Writes the player's caps and exclusion back.
pub(super) async fn save(
    conn: &mut Conn,
    player_id: i64,
    stored: &Stored,
    now_ms: i64,
) -> Result<(), Error> {
    sql::query(
        "UPDATE protections SET deposit_limit_cents = $1, deposit_pending_cents = $2, \
         deposit_pending_at_ms = $3, stake_limit_cents = $4, stake_pending_cents = $5, \
         stake_pending_at_ms = $6, excluded_until_ms = $7, updated_at_ms = $8 WHERE player_id = $9",
    )
    .bind(stored.deposit.limit_cents)
    .bind(stored.deposit.pending.map(|(c, _)| c))
    .bind(stored.deposit.pending.map(|(_, t)| t))
    .bind(stored.stake.limit_cents)
    .bind(stored.stake.pending.map(|(c, _)| c))
    .bind(stored.stake.pending.map(|(_, t)| t))
    .bind(stored.excluded_until_ms)
    .bind(now_ms)
    .bind(player_id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Writes a new player's caps (inside the registration job).
pub(crate) async fn insert_limits(
    conn: &mut Conn,
    player_id: i64,
    limits: Limits,
    now_ms: i64,
) -> Result<(), Error> {
    sql::query(
        "INSERT INTO protections (player_id, deposit_limit_cents, stake_limit_cents, updated_at_ms) \
         VALUES ($1, $2, $3, $4)",
    )
    .bind(player_id)
    .bind(limits.deposit.cents())
    .bind(limits.stake.cents())
    .bind(now_ms)
    .execute(&mut *conn)
    .await?;
    Ok(())
}
