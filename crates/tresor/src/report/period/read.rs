//! What the period report reads: the games of the blocks, the plays summed
//! by UTC hour and block within the range, and the ledger's transfers summed
//! by UTC hour, kind and side (the players' accounts as one side, each
//! system account as its own), with everything before the range as one
//! bucket (the opening balances) and everything after it as another; each
//! from the rollup's sums and the rows after its marks (`rollup`).

use super::Money;
use super::rollup::{Marks, SIDE};
use crate::error::Error;
use crate::model::{PENDING_WITHDRAWALS_ACCOUNT, RESERVES_ACCOUNT};
use crate::report::GameName;
use crate::report::paris::HOUR_MS;
use crate::report::read as base;
use crate::store::record::record;
use sqlx::any::AnyRow;
use sqlx::{AnyPool, FromRow, Row};
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

/// The game of every block, and the games' names in their emissions' order.
pub(in crate::report) struct Games {
    of_block: HashMap<i64, usize>,
    names: Vec<GameName>,
}

impl Games {
    /// The index of `block_id`'s game.
    pub(super) fn order_of(&self, block_id: i64) -> usize {
        self.of_block
            .get(&block_id)
            .copied()
            .unwrap_or(self.names.len() - 1)
    }

    pub(super) fn name(&self, order: usize) -> &GameName {
        &self.names[order]
    }

    /// The names of `games`, in the catalogue's order.
    pub(super) fn names_of(&self, games: &[String]) -> Vec<GameName> {
        self.names
            .iter()
            .filter(|n| games.contains(&n.game))
            .cloned()
            .collect()
    }
}

/// Every block's game, as its emission pinned it.
pub(super) async fn games(pool: &AnyPool) -> Result<Games, Error> {
    let catalog = crate::games::Catalog::default();
    let mut names: Vec<GameName> = Vec::new();
    let mut of_emission: HashMap<i64, usize> = HashMap::new();
    for row in base::emissions(pool).await? {
        let game = catalog
            .pinned(&row.game_sha256, row.definition.as_deref())
            .map_err(|e| Error::Definition(format!("emission {}: {e}", row.id)))?;
        let order = match names.iter().position(|n| n.game == game.id()) {
            Some(order) => order,
            None => {
                names.push(GameName::of(game));
                names.len() - 1
            }
        };
        of_emission.insert(row.id, order);
    }
    // Last, for a block of no known emission (none, by the foreign key).
    names.push(GameName {
        game: "unknown".to_owned(),
        name_fr: "inconnu".to_owned(),
        name_en: "unknown".to_owned(),
    });
    let unknown = names.len() - 1;
    let of_block = base::blocks(pool)
        .await?
        .into_iter()
        .map(|b| {
            (
                b.id,
                of_emission.get(&b.emission_id).copied().unwrap_or(unknown),
            )
        })
        .collect();
    Ok(Games { of_block, names })
}

/// The first and the last transfer's times, or now for an empty ledger:
/// the hours of the rollup's sums and the transfers after its marks (none:
/// every transfer read). Not by id: a transfer may be written after one
/// of a later time.
pub(super) async fn first_and_last_ms(
    pool: &AnyPool,
    marks: Option<Marks>,
) -> Result<(i64, i64), Error> {
    let live = sqlx::query(
        "SELECT CAST(MIN(created_at_ms) AS BIGINT) AS first, \
         CAST(MAX(created_at_ms) AS BIGINT) AS last FROM transfers WHERE id > $1",
    )
    .bind(marks.unwrap_or_default().transfers)
    .fetch_one(pool)
    .await?;
    let mut first: Option<i64> = live.try_get("first")?;
    let mut last: Option<i64> = live.try_get("last")?;
    if marks.is_some() {
        let rolled = sqlx::query(
            "SELECT CAST(MIN(hour) AS BIGINT) AS first, CAST(MAX(hour) AS BIGINT) AS last \
             FROM report_transfer_hours",
        )
        .fetch_one(pool)
        .await?;
        let hour = |name: &str| -> Result<Option<i64>, sqlx::Error> {
            Ok(rolled.try_get::<Option<i64>, _>(name)?.map(|h| h * HOUR_MS))
        };
        first = first.into_iter().chain(hour("first")?).min();
        last = last.into_iter().chain(hour("last")?).max();
    }
    let now = crate::clock::Clock::now_ms(&crate::clock::SystemClock);
    Ok((first.unwrap_or(now), last.unwrap_or(now)))
}

/// The rows of `live` (binding the range's bounds in ms and the rows' mark:
/// every row after it, or all without a rollup), then, with a rollup
/// (`mark`), those of `rolled` (binding the range's bounds in hours).
async fn hour_rows(
    pool: &AnyPool,
    range: &Range<i64>,
    mark: Option<i64>,
    live: &str,
    rolled: &str,
) -> Result<Vec<AnyRow>, Error> {
    let mut rows = sqlx::query(live)
        .bind(range.start)
        .bind(range.end)
        .bind(mark.unwrap_or_default())
        .fetch_all(pool)
        .await?;
    if mark.is_some() {
        let rolled = sqlx::query(rolled)
            .bind(range.start.div_euclid(HOUR_MS))
            .bind(range.end.div_euclid(HOUR_MS))
            .fetch_all(pool)
            .await?;
        rows.extend(rolled);
    }
    Ok(rows)
}

/// The plays of one UTC hour and block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::report) struct PlayHour {
    pub(in crate::report) hour: i64,
    pub(in crate::report) block_id: i64,
    pub(in crate::report) units: i64,
    pub(in crate::report) stakes: i64,
    pub(in crate::report) prizes: i64,
}

/// The plays bought within `range`, summed by UTC hour and block: from the
/// rollup's sums up to `marks` (none: every play read live) and the plays
/// after them.
pub(super) async fn plays(
    pool: &AnyPool,
    range: &Range<i64>,
    marks: Option<Marks>,
) -> Result<Vec<PlayHour>, Error> {
    let live = "SELECT created_at_ms / 3600000 AS hour, block_id, COUNT(*) AS units, \
         CAST(SUM(stake_cents) AS BIGINT) AS stakes, CAST(SUM(prize_cents) AS BIGINT) AS prizes \
         FROM plays WHERE id > $3 AND created_at_ms >= $1 AND created_at_ms < $2 \
         GROUP BY created_at_ms / 3600000, block_id";
    let rolled = "SELECT hour, block_id, CAST(SUM(units) AS BIGINT) AS units, \
         CAST(SUM(stakes_cents) AS BIGINT) AS stakes, \
         CAST(SUM(prizes_cents) AS BIGINT) AS prizes FROM report_play_hours \
         WHERE hour >= $1 AND hour < $2 GROUP BY hour, block_id";
    let rows = hour_rows(pool, range, marks.map(|m| m.plays), live, rolled).await?;
    let mut hours: BTreeMap<(i64, i64), PlayHour> = BTreeMap::new();
    for row in &rows {
        let (hour, block_id): (i64, i64) = (row.try_get("hour")?, row.try_get("block_id")?);
        let sums = hours.entry((hour, block_id)).or_insert(PlayHour {
            hour,
            block_id,
            units: 0,
            stakes: 0,
            prizes: 0,
        });
        sums.units += row.try_get::<i64, _>("units")?;
        sums.stakes += row.try_get::<i64, _>("stakes")?;
        sums.prizes += row.try_get::<i64, _>("prizes")?;
    }
    Ok(hours.into_values().collect())
}

/// Transfers of one UTC hour, kind and sides, summed.
#[derive(Debug, Clone)]
pub(in crate::report) struct Flow {
    pub(in crate::report) hour: i64,
    pub(in crate::report) kind: String,
    pub(in crate::report) debit: i64,
    pub(in crate::report) credit: i64,
    pub(in crate::report) amount: i64,
}

record! {
    impl sqlx for Flow { hour, kind, debit, credit, amount }
}

/// The ledger around and within the range.
#[derive(Debug, Clone, Default)]
pub(in crate::report) struct Transfers {
    /// What the accounts held when the range began.
    pub(in crate::report) before: Balances,
    /// What moved within the range, by hour.
    pub(in crate::report) within: Vec<Flow>,
    /// What moved after it.
    pub(in crate::report) after: Flows,
}

impl Transfers {
    /// What moved between `start` and `end` (ms, end excluded).
    pub(super) fn between(&self, start: i64, end: i64) -> Flows {
        let mut flows = Flows::default();
        for flow in &self.within {
            if (start..end).contains(&(flow.hour * 3_600_000)) {
                flows.add(flow);
            }
        }
        flows
    }
}

/// Every transfer, summed by hour within `range`, before and after it: from
/// the rollup's sums up to `marks` (none: every transfer read live) and the
/// transfers after them.
pub(super) async fn transfers(
    pool: &AnyPool,
    range: &Range<i64>,
    marks: Option<Marks>,
) -> Result<Transfers, Error> {
    let sql = format!(
        "SELECT CASE WHEN created_at_ms < $1 THEN -1 WHEN created_at_ms >= $2 THEN -2 \
         ELSE created_at_ms / 3600000 END AS hour, kind, {} AS debit, {} AS credit, \
         CAST(SUM(amount_cents) AS BIGINT) AS amount FROM transfers WHERE id > $3 \
         GROUP BY 1, 2, 3, 4",
        SIDE.replace("{c}", "debit_account_id"),
        SIDE.replace("{c}", "credit_account_id"),
    );
    // The range's bounds are whole hours (Paris days): an hour is before,
    // within or after it.
    let rolled = "SELECT CASE WHEN hour < $1 THEN -1 WHEN hour >= $2 THEN -2 ELSE hour END \
         AS hour, kind, debit, credit, CAST(SUM(amount_cents) AS BIGINT) AS amount \
         FROM report_transfer_hours GROUP BY 1, 2, 3, 4";
    let rows = hour_rows(pool, range, marks.map(|m| m.transfers), &sql, rolled).await?;
    let mut transfers = Transfers::default();
    let mut before = Flows::default();
    for row in &rows {
        let flow = Flow::from_row(row)?;
        match flow.hour {
            -1 => before.add(&flow),
            -2 => transfers.after.add(&flow),
            _ => transfers.within.push(flow),
        }
    }
    transfers.before = Balances::default().after(&before);
    Ok(transfers)
}

/// What the accounts the report shows hold at an instant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(in crate::report) struct Balances {
    pub(in crate::report) players: i64,
    pub(in crate::report) pending: i64,
    pub(in crate::report) reserves: i64,
}

impl Balances {
    /// The balances once `flows` moved.
    pub(in crate::report) fn after(&self, flows: &Flows) -> Balances {
        Balances {
            players: self.players + flows.players_net,
            pending: self.pending + flows.pending_net,
            reserves: self.reserves + flows.reserves_net,
        }
    }
}

/// What moved in a stretch of time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(in crate::report) struct Flows {
    pub(in crate::report) deposits: i64,
    pub(in crate::report) withdrawals_paid: i64,
    pub(in crate::report) prizes_credited: i64,
    pub(in crate::report) stakes: i64,
    pub(in crate::report) players_net: i64,
    pub(in crate::report) pending_net: i64,
    pub(in crate::report) reserves_net: i64,
}

impl Flows {
    pub(in crate::report) fn add(&mut self, flow: &Flow) {
        let a = flow.amount;
        match flow.kind.as_str() {
            "deposit" | "credit" if flow.credit == 0 => self.deposits += a,
            "withdrawal_paid" => self.withdrawals_paid += a,
            "prize" => self.prizes_credited += a,
            "stake" => self.stakes += a,
            _ => {}
        }
        let net = |account: i64| {
            i64::from(flow.credit == account) * a - i64::from(flow.debit == account) * a
        };
        self.players_net += net(0);
        self.pending_net += net(PENDING_WITHDRAWALS_ACCOUNT);
        self.reserves_net += net(RESERVES_ACCOUNT);
    }

    /// A period's money, opening at `opening`.
    pub(super) fn money(&self, opening: &Balances) -> Money {
        let closing = opening.after(self);
        Money {
            deposits_cents: self.deposits,
            withdrawals_paid_cents: self.withdrawals_paid,
            prizes_credited_cents: self.prizes_credited,
            opening_player_balances_cents: opening.players,
            player_balances_cents: closing.players,
            withdrawals_pending_cents: closing.pending,
            opening_reserves_cents: opening.reserves,
            reserves_cents: closing.reserves,
        }
    }
}
