//! Player protection (décret n° 2010-518, art. 16): the 7-day caps on
//! deposits and on stakes that each player sets, and self-exclusion.
//!
//! The caps are checked, and the movement counted, inside the writer job
//! that moves the money, so that two concurrent requests cannot both slip
//! under a cap. Lowering a cap is immediate; raising
//! it waits 48 hours. An exclusion ends every session of the player at once
//! and can only be lengthened.

use crate::clock::rfc3339;
use crate::error::Error;
use crate::model::Player;
pub use crate::model::{LimitKind, euros};
use crate::store::{Conn, sql};
use crate::trail::{self, Actor};
use serde::Serialize;
use serde_json::json;

mod exclusion;
mod logins;
pub use exclusion::ExclusionLength;
pub(crate) use exclusion::exclude;
pub use logins::FailedLogins;

/// The caps are rolling: a movement counts for seven days.
pub const WINDOW_MS: i64 = 7 * 24 * 3600 * 1000;
/// A raised cap applies this long after it is asked for.
pub const RAISE_DELAY_MS: i64 = 48 * 3600 * 1000;
/// The cap of a player who registers without choosing one: 500 €.
pub const DEFAULT_LIMIT_CENTS: i64 = 50_000;
/// The highest cap a player may choose: 100,000 € in 7 days, a guard against
/// typing mistakes rather than a policy.
pub const MAX_LIMIT_CENTS: i64 = 10_000_000;
/// The longest exclusion the operator may type in days (ten years).
pub const MAX_EXCLUSION_DAYS: i64 = 3650;

/// Throttles against abuse, kept in memory by the HTTP edge
/// (`http/throttle.rs`), per server. Each "per minute/hour" figure is a
/// number of requests allowed at once, refilled evenly over the period named;
/// failed logins wait longer after each failure past the free ones
/// ([`FailedLogins`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimits {
    /// Failed logins per (username typed, address) before each further
    /// attempt of that pair waits (1 s, doubling, up to 15 minutes). The
    /// account itself is never locked.
    pub failed_logins_free_per_name_and_address: u32,
    /// Failed logins per address, whatever the names, before its attempts wait.
    pub failed_logins_free_per_address: u32,
    /// Login attempts per client address per minute.
    pub logins_per_minute_per_address: u32,
    /// Registrations per client address per hour.
    pub registrations_per_hour_per_address: u32,
    /// Purchases per player per minute.
    pub purchases_per_minute_per_player: u32,
    /// Purchases per client address per minute (many players may share an
    /// address behind a NAT, hence higher).
    pub purchases_per_minute_per_address: u32,
    /// Other requests that reach the writer (throws, logouts, deposits, cap
    /// changes, exclusions) per player per minute.
    pub actions_per_minute_per_player: u32,
    /// The same per client address (checked before the session is read).
    pub actions_per_minute_per_address: u32,
    /// Take the client address from the last `X-Forwarded-For` entry (set
    /// only behind a reverse proxy that writes it).
    pub trust_forwarded_for: bool,
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits {
            failed_logins_free_per_name_and_address: 5,
            failed_logins_free_per_address: 50,
            logins_per_minute_per_address: 30,
            registrations_per_hour_per_address: 30,
            purchases_per_minute_per_player: 120,
            purchases_per_minute_per_address: 1200,
            // Four throws a purchase, and a little more.
            actions_per_minute_per_player: 600,
            actions_per_minute_per_address: 6000,
            trust_forwarded_for: false,
        }
    }
}

impl RateLimits {
    /// No practical limit: for load tests where many players share one
    /// address and play as fast as they can.
    pub fn unthrottled() -> Self {
        RateLimits {
            failed_logins_free_per_name_and_address: u32::MAX,
            failed_logins_free_per_address: u32::MAX,
            logins_per_minute_per_address: u32::MAX,
            registrations_per_hour_per_address: u32::MAX,
            purchases_per_minute_per_player: u32::MAX,
            purchases_per_minute_per_address: u32::MAX,
            actions_per_minute_per_player: u32::MAX,
            actions_per_minute_per_address: u32::MAX,
            trust_forwarded_for: false,
        }
    }
}

/// A weekly cap in cents, from 1 to [`MAX_LIMIT_CENTS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitCents(i64);

impl LimitCents {
    pub fn parse(kind: LimitKind, cents: i64) -> Result<Self, Error> {
        if (1..=MAX_LIMIT_CENTS).contains(&cents) {
            Ok(LimitCents(cents))
        } else {
            Err(Error::Validation(format!(
                "{}_limit_cents: between 1 and {MAX_LIMIT_CENTS}",
                kind.as_str()
            )))
        }
    }

    pub fn cents(self) -> i64 {
        self.0
    }
}

/// The two caps a player starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub deposit: LimitCents,
    pub stake: LimitCents,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            deposit: LimitCents(DEFAULT_LIMIT_CENTS),
            stake: LimitCents(DEFAULT_LIMIT_CENTS),
        }
    }
}

impl Limits {
    /// The caps chosen at registration; an absent one is the default.
    pub fn parse(deposit_cents: Option<i64>, stake_cents: Option<i64>) -> Result<Self, Error> {
        let default = Limits::default();
        Ok(Limits {
            deposit: deposit_cents
                .map(|c| LimitCents::parse(LimitKind::Deposit, c))
                .transpose()?
                .unwrap_or(default.deposit),
            stake: stake_cents
                .map(|c| LimitCents::parse(LimitKind::Stake, c))
                .transpose()?
                .unwrap_or(default.stake),
        })
    }

    /// The highest caps, for accounts that move large sums (tests, bulk
    /// simulations).
    pub fn highest() -> Self {
        Limits {
            deposit: LimitCents(MAX_LIMIT_CENTS),
            stake: LimitCents(MAX_LIMIT_CENTS),
        }
    }
}

/// A requested change of one cap or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitChange {
    pub deposit: Option<LimitCents>,
    pub stake: Option<LimitCents>,
}

impl LimitChange {
    pub fn parse(deposit_cents: Option<i64>, stake_cents: Option<i64>) -> Result<Self, Error> {
        if deposit_cents.is_none() && stake_cents.is_none() {
            return Err(Error::Validation(
                "deposit_limit_cents or stake_limit_cents: give at least one".to_owned(),
            ));
        }
        Ok(LimitChange {
            deposit: deposit_cents
                .map(|c| LimitCents::parse(LimitKind::Deposit, c))
                .transpose()?,
            stake: stake_cents
                .map(|c| LimitCents::parse(LimitKind::Stake, c))
                .transpose()?,
        })
    }
}

// ---------------------------------------------------------------------------
// The stored caps.

/// One cap as stored: its value, and a raise waiting for its time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cap {
    limit_cents: i64,
    pending: Option<(i64, i64)>,
}

impl Cap {
    /// The cap in force at `now_ms`: a pending raise whose time has come.
    fn settled(self, now_ms: i64) -> Cap {
        match self.pending {
            Some((cents, at_ms)) if at_ms <= now_ms => Cap {
                limit_cents: cents,
                pending: None,
            },
            _ => self,
        }
    }

    /// Lowering (or keeping) applies at once and drops a pending raise; a
    /// raise waits [`RAISE_DELAY_MS`] and replaces any pending one.
    fn changed(self, to: LimitCents, now_ms: i64) -> Cap {
        let current = self.settled(now_ms);
        if to.cents() <= current.limit_cents {
            Cap {
                limit_cents: to.cents(),
                pending: None,
            }
        } else {
            Cap {
                limit_cents: current.limit_cents,
                pending: Some((to.cents(), now_ms + RAISE_DELAY_MS)),
            }
        }
    }

    fn to_json(self) -> serde_json::Value {
        json!({
            "limit_cents": self.limit_cents,
            "pending_cents": self.pending.map(|(c, _)| c),
            "pending_at": self.pending.map(|(_, t)| rfc3339(t)),
        })
    }
}

#[derive(Debug, Clone, Copy)]
struct Stored {
    deposit: Cap,
    stake: Cap,
    excluded_until_ms: Option<i64>,
}

impl Stored {
    fn cap(&self, kind: LimitKind) -> Cap {
        match kind {
            LimitKind::Deposit => self.deposit,
            LimitKind::Stake => self.stake,
        }
    }
}

async fn load(conn: &mut Conn, player_id: i64) -> Result<Stored, Error> {
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
        let default = Limits::default();
        return Ok(Stored {
            deposit: Cap {
                limit_cents: default.deposit.cents(),
                pending: None,
            },
            stake: Cap {
                limit_cents: default.stake.cents(),
                pending: None,
            },
            excluded_until_ms: None,
        });
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

async fn save(conn: &mut Conn, player_id: i64, stored: &Stored, now_ms: i64) -> Result<(), Error> {
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

/// Movements are counted by the hour (`movement_hours`), so that checking a
/// cap reads at most 169 rows however much the player plays. A player's
/// latest hour of stakes is kept in their account's row instead
/// (`accounts.stake_hour_ms`, `stake_hour_cents`, migration 0022), which
/// each stake rewrites anyway for its balance, and moved to `movement_hours`
/// by the first stake of another hour (issue 34: one b-tree entry less a
/// purchase). Every reader adds it.
const HOUR_MS: i64 = 3600 * 1000;

/// What the player moved in the window ending at `now_ms`, and when the
/// oldest of it leaves the window. An hour's movements leave together, an
/// hour after the first could have: the count errs on the player's side.
async fn used(
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
    match until {
        Some(until_ms) if until_ms > now_ms => Err(Error::Excluded { until_ms }),
        _ => Ok(()),
    }
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
    if let Some(until_ms) = stored.excluded_until_ms.filter(|&t| t > now_ms) {
        return Err(Error::Excluded { until_ms });
    }
    let limit_cents = stored.cap(kind).settled(now_ms).limit_cents;
    let (used_cents, resets_at_ms) = used(conn, kind, player_id, now_ms).await?;
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
pub(crate) fn hour_of(now_ms: i64) -> i64 {
    now_ms - now_ms.rem_euclid(HOUR_MS)
}

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
    gate: crate::account::StakeGate,
}

impl Default for StakeAllowance {
    /// A player with no protections row: the defaults, as [`load`] reads it.
    fn default() -> Self {
        StakeAllowance {
            stake: Cap {
                limit_cents: Limits::default().stake.cents(),
                pending: None,
            },
            excluded_until_ms: None,
            used_cents: 0,
            oldest_hour_ms: None,
            hour: None,
            gate: crate::account::StakeGate::default(),
        }
    }
}

impl StakeAllowance {
    /// Refuses a stake that an exclusion forbids or that would pass the
    /// cap, with the same refusals as [`check_movement`].
    pub(crate) fn check(&self, amount_cents: i64, now_ms: i64) -> Result<(), Error> {
        if let Some(until_ms) = self.excluded_until_ms.filter(|&t| t > now_ms) {
            return Err(Error::Excluded { until_ms });
        }
        self.gate.check(now_ms)?;
        let limit_cents = self.stake.settled(now_ms).limit_cents;
        if self.used_cents + amount_cents > limit_cents {
            return Err(Error::LimitReached {
                kind: LimitKind::Stake,
                amount_cents,
                limit_cents,
                left_cents: (limit_cents - self.used_cents).max(0),
                resets_at_ms: self.oldest_hour_ms.map(|h| h + HOUR_MS + WINDOW_MS),
            });
        }
        Ok(())
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
/// just left its window, erring on the player's side, as [`used`] does).
///
/// Read by [`read_stake_allowances`], run with the batch's other reads.
pub(crate) fn stake_allowances(sqlite: bool, players: &[i64], now_ms: i64) -> sql::Query<'static> {
    let table = sql::json_rows(sqlite, 1, &[("id", sql::ColumnType::Int)]);
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
    .bind(serde_json::to_string(&players.iter().map(|id| [*id]).collect::<Vec<_>>()).expect("ids"))
    .bind(now_ms - WINDOW_MS - HOUR_MS)
}

pub(crate) fn read_stake_allowances(
    rows: &[sql::Row],
) -> Result<std::collections::HashMap<i64, StakeAllowance>, Error> {
    let mut allowances = std::collections::HashMap::with_capacity(rows.len());
    for row in rows {
        let limit_cents: Option<i64> = row.try_get("stake_limit_cents")?;
        let pending_cents: Option<i64> = row.try_get("stake_pending_cents")?;
        let pending_at_ms: Option<i64> = row.try_get("stake_pending_at_ms")?;
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
        let mut allowance = StakeAllowance {
            used_cents,
            oldest_hour_ms,
            hour,
            excluded_until_ms: row.try_get("excluded_until_ms")?,
            gate: crate::account::StakeGate {
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
            },
            ..StakeAllowance::default()
        };
        if let Some(limit_cents) = limit_cents {
            allowance.stake = Cap {
                limit_cents,
                pending: pending_cents.zip(pending_at_ms),
            };
        }
        allowances.insert(row.try_get("id")?, allowance);
    }
    Ok(allowances)
}

// ---------------------------------------------------------------------------
// Views for the player.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lowered_cap_applies_at_once_and_a_raised_one_after_48_hours() {
        let cap = Cap {
            limit_cents: 10_000,
            pending: None,
        };
        let lowered = cap.changed(LimitCents(5_000), 0);
        assert_eq!(lowered.settled(0).limit_cents, 5_000);
        let raised = lowered.changed(LimitCents(20_000), 0);
        assert_eq!(raised.settled(RAISE_DELAY_MS - 1).limit_cents, 5_000);
        assert_eq!(raised.settled(RAISE_DELAY_MS).limit_cents, 20_000);
        // A new change replaces the pending raise.
        assert_eq!(raised.changed(LimitCents(4_000), 1).pending, None);
    }
}
