//! What a player sees of their caps (in force, used, left, a raise waiting)
//! and of their exclusion, and their change of a cap, recorded in the trail.

use super::WINDOW_MS;
use super::limits::{LimitCents, LimitChange};
use super::rule::Cap;
use super::stored::{Stored, load, save};
use super::window::used;
use crate::clock::rfc3339;
use crate::error::Error;
use crate::model::{LimitKind, Player};
use crate::store::Conn;
use crate::trail::{self, Actor};
use serde::Serialize;
use serde_json::json;

/// One cap as the player sees it.
#[derive(Debug, Clone, Serialize)]
pub struct CapView {
    /// The cap in force now.
    pub limit_cents: i64,
    /// Moved in the last seven days.
    pub used_cents: i64,
    /// What may still be moved now.
    pub left_cents: i64,
    /// When the oldest counted movement leaves the window (none if nothing
    /// is counted).
    pub resets_at: Option<String>,
    /// A raise waiting for its time.
    pub pending: Option<PendingView>,
}

/// A raised cap and when it applies.
#[derive(Debug, Clone, Serialize)]
pub struct PendingView {
    pub limit_cents: i64,
    pub effective_at: String,
}

/// Both caps.
#[derive(Debug, Clone, Serialize)]
pub struct LimitsView {
    pub window_days: i64,
    pub deposit: CapView,
    pub stake: CapView,
}

async fn cap_view(
    conn: &mut Conn,
    kind: LimitKind,
    cap: Cap,
    player_id: i64,
    now_ms: i64,
) -> Result<CapView, Error> {
    let cap = cap.settled(now_ms);
    let (used_cents, resets_at_ms) = used(conn, kind, player_id, now_ms).await?;
    Ok(CapView {
        limit_cents: cap.limit_cents,
        used_cents,
        left_cents: (cap.limit_cents - used_cents).max(0),
        resets_at: resets_at_ms.map(rfc3339),
        pending: cap.pending.map(|(cents, at_ms)| PendingView {
            limit_cents: cents,
            effective_at: rfc3339(at_ms),
        }),
    })
}

async fn limits_view(
    conn: &mut Conn,
    stored: &Stored,
    player_id: i64,
    now_ms: i64,
) -> Result<LimitsView, Error> {
    Ok(LimitsView {
        window_days: WINDOW_MS / (24 * 3600 * 1000),
        deposit: cap_view(conn, LimitKind::Deposit, stored.deposit, player_id, now_ms).await?,
        stake: cap_view(conn, LimitKind::Stake, stored.stake, player_id, now_ms).await?,
    })
}

/// The player's caps, what is used and left of them, and any pending
/// raise; and the end of an exclusion in force.
pub(crate) async fn protection(
    conn: &mut Conn,
    player_id: i64,
    now_ms: i64,
) -> Result<(LimitsView, Option<i64>), Error> {
    let stored = load(conn, player_id).await?;
    let limits = limits_view(conn, &stored, player_id, now_ms).await?;
    Ok((limits, stored.excluded_until_ms.filter(|&t| t > now_ms)))
}

/// Changes one cap or both (recorded in the trail); returns the caps. Runs
/// inside a writer job.
pub(crate) async fn change_limits(
    conn: &mut Conn,
    player: &Player,
    change: LimitChange,
    now_ms: i64,
) -> Result<LimitsView, Error> {
    let mut stored = load(conn, player.id).await?;
    if let Some(to) = change.deposit {
        stored.deposit = stored.deposit.changed(to, now_ms);
    }
    if let Some(to) = change.stake {
        stored.stake = stored.stake.changed(to, now_ms);
    }
    save(conn, player.id, &stored, now_ms).await?;
    trail::append(
        conn,
        now_ms,
        &Actor::player(player.id, &player.username),
        "limits",
        json!({
            "deposit_limit_cents": change.deposit.map(LimitCents::cents),
            "stake_limit_cents": change.stake.map(LimitCents::cents),
        }),
        json!({"deposit": stored.deposit.to_json(), "stake": stored.stake.to_json()}),
    )
    .await?;
    limits_view(conn, &stored, player.id, now_ms).await
}
