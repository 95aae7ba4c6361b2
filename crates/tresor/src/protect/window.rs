//! What a player moved in the rolling 7-day window, counted by the hour, and
//! the refusals it decides: a deposit or a stake past a cap, or while an
//! exclusion lasts. Checked and counted inside the writer job that moves the
//! money, so that two concurrent requests cannot both slip under a cap.

use super::WINDOW_MS;
use super::stored::load;
use crate::error::Error;
use crate::model::{LimitKind, Player};
use crate::store::{Conn, sql};

/// Movements are counted by the hour (`movement_hours`), so that checking a
/// cap reads at most 169 rows however much the player plays. A player's
/// latest hour of stakes is kept in their account's row instead
/// (`accounts.stake_hour_ms`, `stake_hour_cents`, migration 0022), which
/// each stake rewrites anyway for its balance, and moved to `movement_hours`
/// by the first stake of another hour (issue 34: one b-tree entry less a
/// purchase). Every reader adds it.
pub(super) const HOUR_MS: i64 = 3600 * 1000;

/// What the player moved in the window ending at `now_ms`, and when the
/// oldest of it leaves the window. An hour's movements leave together, an
/// hour after the first could have: the count errs on the player's side.
pub(super) async fn used(
    conn: &mut Conn,
    kind: LimitKind,
    player_id: i64,
    now_ms: i64,
) -> Result<(i64, Option<i64>), Error> {
    let (sum, oldest): (i64, Option<i64>) = sql::query_as(
        "SELECT CAST(COALESCE(SUM(amount_cents), 0) AS BIGINT), MIN(hour_ms) FROM ( \
           SELECT amount_cents, hour_ms FROM movement_hours \
           WHERE player_id = $1 AND kind = $2 AND hour_ms > $3 \
           UNION ALL SELECT ac.stake_hour_cents, ac.stake_hour_ms \
           FROM players pl JOIN accounts ac ON ac.id = pl.account_id \
           WHERE pl.id = $1 AND $2 = 'stake' AND ac.stake_hour_ms > $3) m",
    )
    .bind(player_id)
    .bind(kind.as_str())
    .bind(now_ms - WINDOW_MS - HOUR_MS)
    .fetch_one(&mut *conn)
    .await?;
    Ok((sum, oldest.map(|hour_ms| hour_ms + HOUR_MS + WINDOW_MS)))
}

/// Refuses while the player is excluded.
pub(crate) async fn refuse_if_excluded(
    conn: &mut Conn,
    player_id: i64,
    now_ms: i64,
) -> Result<(), Error> {
    let until: Option<i64> =
        sql::query_scalar("SELECT excluded_until_ms FROM protections WHERE player_id = $1")
            .bind(player_id)
            .fetch_optional(&mut *conn)
            .await?
            .flatten();
    refuse_excluded(until, now_ms)
}

/// Refuses a deposit or a stake of `amount_cents` that an exclusion forbids
/// or that would take the player past a cap, counting nothing: a deposit is
/// checked so when it is asked, and counted ([`check_movement`]) when the
/// provider confirms it.
pub(crate) async fn refuse_past_cap(
    conn: &mut Conn,
    kind: LimitKind,
    player_id: i64,
    amount_cents: i64,
    now_ms: i64,
) -> Result<(), Error> {
    let stored = load(conn, player_id).await?;
    refuse_excluded(stored.excluded_until_ms, now_ms)?;
    let limit_cents = stored.cap(kind).settled(now_ms).limit_cents;
    let (used_cents, resets_at_ms) = used(conn, kind, player_id, now_ms).await?;
    refuse_past(kind, limit_cents, used_cents, resets_at_ms, amount_cents)
}

/// Refuses a deposit or a stake of `amount_cents` that an exclusion forbids
/// or that would take the player past a cap, and counts it otherwise. Runs
/// inside the job that moves the money.
pub(crate) async fn check_movement(
    conn: &mut Conn,
    kind: LimitKind,
    player: &Player,
    amount_cents: i64,
    now_ms: i64,
) -> Result<(), Error> {
    refuse_past_cap(conn, kind, player.id, amount_cents, now_ms).await?;
    // Counted in the same job as the movement: both commit or neither.
    sql::query(
        "INSERT INTO movement_hours (player_id, kind, hour_ms, amount_cents) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (player_id, kind, hour_ms) \
         DO UPDATE SET amount_cents = movement_hours.amount_cents + excluded.amount_cents",
    )
    .bind(player.id)
    .bind(kind.as_str())
    .bind(hour_of(now_ms))
    .bind(amount_cents)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// The hour a movement at `now_ms` is counted in.
pub(super) fn hour_of(now_ms: i64) -> i64 {
    now_ms - now_ms.rem_euclid(HOUR_MS)
}

/// Refuses anything while an exclusion ending at `excluded_until_ms` lasts.
pub(super) fn refuse_excluded(excluded_until_ms: Option<i64>, now_ms: i64) -> Result<(), Error> {
    match excluded_until_ms {
        Some(until_ms) if until_ms > now_ms => Err(Error::Excluded { until_ms }),
        _ => Ok(()),
    }
}

/// Refuses `amount_cents` of `kind` that would take what was moved in the
/// window (`used_cents`) past `limit_cents`; `resets_at_ms` is when the
/// oldest of it leaves the window.
pub(super) fn refuse_past(
    kind: LimitKind,
    limit_cents: i64,
    used_cents: i64,
    resets_at_ms: Option<i64>,
    amount_cents: i64,
) -> Result<(), Error> {
    if used_cents + amount_cents > limit_cents {
        return Err(Error::LimitReached {
            kind,
            amount_cents,
            limit_cents,
            left_cents: (limit_cents - used_cents).max(0),
            resets_at_ms,
        });
    }
    Ok(())
}
