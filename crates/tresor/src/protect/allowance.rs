//! The stake allowances of a batch of purchases: each buyer's cap, what they
//! staked in the window and their account's gate, read for the whole batch
//! at once and then moved in memory as the batch decides.

use super::WINDOW_MS;
use super::rule::Cap;
use super::stored::Stored;
use super::window::{HOUR_MS, hour_of, refuse_excluded, refuse_past};
use crate::account::StakeGate;
use crate::error::Error;
use crate::model::LimitKind;
use crate::store::sql;
use std::collections::HashMap;

/// What a batch of purchases needs to check one player's stakes against
/// the cap, read for all the batch's buyers at once
/// ([`stake_allowances`]) and then moved in memory as the batch decides.
#[derive(Debug, Clone)]
pub(crate) struct StakeAllowance {
    stake: Cap,
    excluded_until_ms: Option<i64>,
    used_cents: i64,
    oldest_hour_ms: Option<i64>,
    /// The hour of stakes the player's account row holds (its hour, the
    /// stakes in it), not yet in `movement_hours` (migration 0022): see
    /// [`StakeAllowance::count`].
    hour: Option<(i64, i64)>,
    /// The account's side: closed, banned, provisional, rules accepted.
    gate: StakeGate,
}

impl Default for StakeAllowance {
    /// A player with no protections row: the defaults, as `stored::load`
    /// reads it.
    fn default() -> Self {
        StakeAllowance {
            stake: Stored::default().stake,
            excluded_until_ms: None,
            used_cents: 0,
            oldest_hour_ms: None,
            hour: None,
            gate: StakeGate::default(),
        }
    }
}

impl StakeAllowance {
    /// Refuses a stake that an exclusion forbids or that would pass the
    /// cap, with the same refusals as `check_movement`.
    pub(crate) fn check(&self, amount_cents: i64, now_ms: i64) -> Result<(), Error> {
        refuse_excluded(self.excluded_until_ms, now_ms)?;
        self.gate.check(now_ms)?;
        refuse_past(
            LimitKind::Stake,
            self.stake.settled(now_ms).limit_cents,
            self.used_cents,
            self.oldest_hour_ms.map(|h| h + HOUR_MS + WINDOW_MS),
            amount_cents,
        )
    }

    /// Counts a stake the batch accepted, in the hour its account row holds
    /// (written with the balance the stake changes anyway: no entry of its
    /// own), and returns the hour that row held before, (hour, stakes), when
    /// the stake starts another: the batch moves it to `movement_hours`.
    pub(crate) fn count(&mut self, amount_cents: i64, now_ms: i64) -> Option<(i64, i64)> {
        self.used_cents += amount_cents;
        let hour_ms = hour_of(now_ms);
        self.oldest_hour_ms = Some(self.oldest_hour_ms.map_or(hour_ms, |o| o.min(hour_ms)));
        match self.hour {
            Some((h, cents)) if h == hour_ms => {
                self.hour = Some((h, cents + amount_cents));
                None
            }
            before => {
                self.hour = Some((hour_ms, amount_cents));
                before
            }
        }
    }

    /// The hour of stakes for the player's account row: (hour, stakes).
    pub(crate) fn hour(&self) -> Option<(i64, i64)> {
        self.hour
    }
}

/// The stake allowances of `players` in the window that ends at `now_ms`
/// (the batch's earliest time: a later command may count an hour that has
/// just left its window, erring on the player's side, as `window::used` does).
///
/// Read by [`read_stake_allowances`], run with the batch's other reads.
pub(crate) fn stake_allowances(sqlite: bool, players: &[i64], now_ms: i64) -> sql::Query<'static> {
    let table = sql::table(sqlite, 1, &[("id", sql::ColumnType::Int)]);
    sql::query_owned(format!(
        "SELECT d.id, p.stake_limit_cents, p.stake_pending_cents, p.stake_pending_at_ms, \
         p.excluded_until_ms, \
         (SELECT CAST(COALESCE(SUM(m.amount_cents), 0) AS BIGINT) FROM movement_hours m \
          WHERE m.player_id = d.id AND m.kind = 'stake' AND m.hour_ms > $2) AS used_cents, \
         (SELECT MIN(m.hour_ms) FROM movement_hours m \
          WHERE m.player_id = d.id AND m.kind = 'stake' AND m.hour_ms > $2) AS oldest_hour_ms, \
         ac.stake_hour_ms, ac.stake_hour_cents, CAST($2 AS BIGINT) AS window_from_ms, \
         a.status, a.provisional_until_ms, a.opened_at_ms, a.suspended_at_ms, a.banned_at_ms, a.rules_version, \
         (SELECT value FROM settings WHERE key = 'rules_version') AS rules_current, \
         (SELECT i.duplicate_of FROM identities i WHERE i.player_id = d.id) AS duplicate_of \
         FROM {table} AS d LEFT JOIN protections p ON p.player_id = d.id \
         LEFT JOIN player_accounts a ON a.player_id = d.id \
         LEFT JOIN players pl ON pl.id = d.id LEFT JOIN accounts ac ON ac.id = pl.account_id"
    ))
    .bind_rows(&table, players, |id| [*id])
    .bind(now_ms - WINDOW_MS - HOUR_MS)
}

/// The allowances of the rows [`stake_allowances`] read, by player id.
pub(crate) fn read_stake_allowances(
    rows: &[sql::Row],
) -> Result<HashMap<i64, StakeAllowance>, Error> {
    let mut allowances = HashMap::with_capacity(rows.len());
    for row in rows {
        allowances.insert(row.try_get("id")?, allowance_of(row)?);
    }
    Ok(allowances)
}

fn allowance_of(row: &sql::Row) -> Result<StakeAllowance, Error> {
    let hour_ms: Option<i64> = row.try_get("stake_hour_ms")?;
    let hour_cents: Option<i64> = row.try_get("stake_hour_cents")?;
    let hour = hour_ms.zip(hour_cents);
    let window_from_ms: i64 = row.try_get("window_from_ms")?;
    let mut used_cents: i64 = row.try_get("used_cents")?;
    let mut oldest_hour_ms: Option<i64> = row.try_get("oldest_hour_ms")?;
    // The account row's hour counts as a row of movement_hours would.
    if let Some((hour_ms, cents)) = hour.filter(|(h, _)| *h > window_from_ms) {
        used_cents += cents;
        oldest_hour_ms = Some(oldest_hour_ms.map_or(hour_ms, |o| o.min(hour_ms)));
    }
    Ok(StakeAllowance {
        stake: stake_cap_of(row)?,
        excluded_until_ms: row.try_get("excluded_until_ms")?,
        used_cents,
        oldest_hour_ms,
        hour,
        gate: gate_of(row)?,
    })
}

/// The stake cap as stored; a player with no protections row has the
/// defaults, as `stored::load` reads it.
fn stake_cap_of(row: &sql::Row) -> Result<Cap, Error> {
    let limit_cents: Option<i64> = row.try_get("stake_limit_cents")?;
    let pending_cents: Option<i64> = row.try_get("stake_pending_cents")?;
    let pending_at_ms: Option<i64> = row.try_get("stake_pending_at_ms")?;
    Ok(match limit_cents {
        Some(limit_cents) => Cap {
            limit_cents,
            pending: pending_cents.zip(pending_at_ms),
        },
        None => Stored::default().stake,
    })
}

/// The account's side of the allowance (a player with no account row
/// stakes as `StakeGate::default` says).
fn gate_of(row: &sql::Row) -> Result<StakeGate, Error> {
    Ok(StakeGate {
        closed: row.try_get::<Option<String>, _>("status")?.as_deref() == Some("closed"),
        suspended: row.try_get::<Option<i64>, _>("suspended_at_ms")?.is_some(),
        banned: row.try_get::<Option<i64>, _>("banned_at_ms")?.is_some(),
        duplicate: row.try_get::<Option<i64>, _>("duplicate_of")?.is_some(),
        provisional_until_ms: row.try_get("provisional_until_ms")?,
        provisional_since_ms: row
            .try_get::<Option<i64>, _>("opened_at_ms")?
            .unwrap_or_default(),
        rules_accepted: row.try_get::<Option<i64>, _>("rules_version")?.unwrap_or(1),
        rules_current: row
            .try_get::<Option<String>, _>("rules_current")?
            .and_then(|v| v.parse().ok())
            .unwrap_or(1),
    })
}
