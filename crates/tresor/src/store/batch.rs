//! The set-oriented SQL of the hot batch (`crate::batch`): each function is
//! one statement over all the batch's rows, passed as a table ([`sql::table`]:
//! one typed array a column under `UNNEST` on PostgreSQL, a list of `VALUES`
//! on SQLite), so its cost is per batch, not per command.
//!
//! Reads come in two halves: a builder (the query, run later with the
//! batch's other reads by [`sql::fetch_each`], in one round trip on
//! PostgreSQL) and a parser (its rows into structs). The writes
//! (`write.rs`) are held back (`Query::defer`) and sent together before
//! COMMIT; the purchase keys (`keys.rs`) have a room of their own.

mod keys;
mod write;

pub use keys::{
    PURCHASE_KEYS_KEEP_MS, WEEK_MS, earlier_purchases, insert_purchase_keys, prune_purchase_keys,
    purchase_keys_table, read_earlier_purchases,
};
pub use write::{
    AccountUpdate, BlockUpdate, HourCount, NewPlayRow, PlayUpdate, SetRow, TransferRow, write,
};

use crate::error::Error;
use crate::store::plays;
pub use crate::store::plays::PlayState;
use crate::store::sql::{self, ColumnType::Int, ColumnType::Text, Conn, Query, Row};
use std::collections::HashMap;

/// A play read for the batch, and whether it was read as a buyer's play in
/// progress (to be settled before the next purchase).
#[derive(Debug)]
pub struct LoadedPlay {
    pub play: PlayState,
    pub in_progress_of_buyer: bool,
}

/// An open block with units left.
#[derive(Debug, Clone)]
pub struct BlockOnSale {
    pub id: i64,
    pub emission_id: i64,
    pub game_id: String,
    pub stake_cents: i64,
    pub units_per_block: i64,
    pub units_sold: i64,
    /// Set when the batch sells its last unit.
    pub sold_out_at_ms: Option<i64>,
}

/// What may close sales before any purchase is decided: the opening time
/// (Article 1) and the hold a restore behind what was published puts on
/// them (`crate::backup`), read in one statement.
#[derive(Debug, Default, Clone)]
pub struct SalesGate {
    pub opens_at_ms: Option<i64>,
    pub held_after_restore: bool,
}

pub fn sales_gate() -> Query<'static> {
    sql::query("SELECT key, value FROM settings WHERE key IN ('sales_open_at_ms', 'restore_hold')")
}

pub fn read_sales_gate(rows: &[Row]) -> Result<SalesGate, Error> {
    let mut gate = SalesGate::default();
    for row in rows {
        let (key, value): (String, String) = sql::FromRow::from_row(row)?;
        match key.as_str() {
            "sales_open_at_ms" => gate.opens_at_ms = value.parse().ok(),
            _ => gate.held_after_restore = true,
        }
    }
    Ok(gate)
}

/// A game's stake: what a purchase buys, and what blocks are sold by.
pub type Product = (String, i64);

/// The first `window` open blocks with units left of each (game, stake),
/// by id (read by [`read_blocks_on_sale`]).
pub fn blocks_on_sale(sqlite: bool, products: &[Product], window: i64) -> Query<'static> {
    let table = sql::table(sqlite, 1, &[("game", Text), ("stake", Int)]);
    sql::query_owned(format!(
        "SELECT id, emission_id, game_id, stake_cents, units_per_block, units_sold FROM ( \
             SELECT b.id, b.emission_id, b.game_id, b.stake_cents, b.units_per_block, \
             b.units_sold, ROW_NUMBER() OVER (PARTITION BY b.game_id, b.stake_cents \
             ORDER BY b.id) AS position \
             FROM blocks b JOIN emissions e ON e.id = b.emission_id \
             WHERE b.state = 'open' AND e.state = 'open' AND b.units_sold < b.units_per_block \
             AND EXISTS (SELECT 1 FROM {table} AS d \
                 WHERE d.game = b.game_id AND d.stake = b.stake_cents)) w \
         WHERE position <= $2 ORDER BY game_id, stake_cents, id"
    ))
    .bind_rows(&table, products, |(g, s)| (g, *s))
    .bind(window)
}

pub fn read_blocks_on_sale(rows: &[Row]) -> Result<Vec<BlockOnSale>, Error> {
    rows.iter()
        .map(|row| {
            Ok(BlockOnSale {
                id: row.try_get("id")?,
                emission_id: row.try_get("emission_id")?,
                game_id: row.try_get("game_id")?,
                stake_cents: row.try_get("stake_cents")?,
                units_per_block: row.try_get("units_per_block")?,
                units_sold: row.try_get("units_sold")?,
                sold_out_at_ms: None,
            })
        })
        .collect()
}

/// Which of `products` have any block at all, whatever its state.
pub async fn products_with_blocks(
    conn: &mut Conn,
    sqlite: bool,
    products: &[Product],
) -> Result<Vec<Product>, Error> {
    let table = sql::table(sqlite, 1, &[("game", Text), ("stake", Int)]);
    sql::query_as(&format!(
        "SELECT DISTINCT b.game_id, b.stake_cents FROM blocks b \
         WHERE EXISTS (SELECT 1 FROM {table} AS d WHERE d.game = b.game_id AND d.stake = b.stake_cents)"
    ))
    .bind_rows(&table, products, |(g, s)| (g, *s))
    .fetch_all(conn)
    .await
}

/// `count` fresh play ids (read by [`read_new_play_ids`]). On PostgreSQL
/// from the plays' sequence (several servers may insert); on SQLite after
/// the largest, which the writer's `BEGIN IMMEDIATE` keeps to itself until
/// it commits.
pub fn new_play_ids(sqlite: bool, count: usize) -> Query<'static> {
    if sqlite {
        return sql::query("SELECT COALESCE(MAX(id), 0) FROM plays");
    }
    sql::query("SELECT nextval(pg_get_serial_sequence('plays', 'id')) FROM generate_series(1, $1)")
        .bind(count as i64)
}

pub fn read_new_play_ids(sqlite: bool, count: usize, rows: &[Row]) -> Result<Vec<i64>, Error> {
    if sqlite {
        let last: i64 = rows.first().map_or(Ok(0), |row| row.try_get(0usize))?;
        return Ok((1..=count as i64).map(|n| last + n).collect());
    }
    rows.iter().map(|row| row.try_get(0usize)).collect()
}

/// The plays named by id (throws, settlements) and the play in progress of
/// each buyer, with their players' accounts. A player has at most one play
/// in progress and it is their latest (a purchase settles the one before),
/// so it is found as the player's last play (`plays_by_player`). On
/// PostgreSQL this avoids the partial index of plays in progress, whose
/// entries for settled plays stay until a vacuum: under a steady load each
/// look-up through it visited every play the player had settled since
/// (0.36 ms at 1,400 plays a player, found selling a whole block).
///
/// Read by [`read_plays_for_batch`].
pub fn plays_for_batch(sqlite: bool, play_ids: &[i64], buyers: &[i64]) -> Query<'static> {
    use plays::{COLUMNS, FROM};
    let ids = sql::table(sqlite, 1, &[("id", Int)]);
    let players = sql::table(sqlite, 2, &[("id", Int)]);
    sql::query_owned(format!(
        "SELECT {COLUMNS}, 0 AS of_buyer FROM {FROM} \
         WHERE p.id IN (SELECT id FROM {ids} AS d) \
         UNION ALL \
         SELECT {COLUMNS}, 1 AS of_buyer FROM {FROM} \
         WHERE p.state = 'in_progress' AND p.id IN ( \
             SELECT (SELECT MAX(m.id) FROM plays m WHERE m.player_id = d.id) FROM {players} AS d)"
    ))
    .bind_rows(&ids, play_ids, |id| [*id])
    .bind_rows(&players, buyers, |id| [*id])
}

pub fn read_plays_for_batch(rows: &[Row]) -> Result<Vec<LoadedPlay>, Error> {
    rows.iter()
        .map(|row| {
            let of_buyer: i64 = row.try_get("of_buyer")?;
            Ok(LoadedPlay {
                play: PlayState::from_row(row)?,
                in_progress_of_buyer: of_buyer == 1,
            })
        })
        .collect()
}

/// Which of the sessions named by the batch's purchases are still live
/// (not ended; their age and idle limits are checked where the request
/// came in), read by [`read_live_sessions`]: a purchase resolved its
/// session from a cache (`service::session_cache`), and this read, in the
/// transaction that sells, is what refuses a session ended meanwhile.
pub fn live_sessions(sqlite: bool, token_hashes: &[&str]) -> Query<'static> {
    let table = sql::table(sqlite, 1, &[("token_hash", Text)]);
    sql::query_owned(format!(
        "SELECT token_hash FROM sessions WHERE ended_at_ms IS NULL \
         AND token_hash IN (SELECT token_hash FROM {table} AS d)"
    ))
    .bind_rows(&table, token_hashes, |hash| [*hash])
}

pub fn read_live_sessions(rows: &[Row]) -> Result<std::collections::HashSet<String>, Error> {
    rows.iter().map(|row| row.try_get(0usize)).collect()
}

/// Locks the rows of the players who buy in this batch, for the rest of its
/// transaction (PostgreSQL; SQLite has one writer), in the order of their ids
/// so that two batches never wait on each other in a circle. Each server
/// appends to its own log, so nothing else orders two servers' batches: this
/// lock makes a player's purchases on two servers at once decide one after
/// the other, each on what the other committed (the 7-day caps, the balance,
/// exclusions, an idempotency key).
///
/// `None` where there is nothing to lock (SQLite, no buyer); its rows are
/// not read. Sent first among the batch's reads, which run after it.
pub fn lock_players(sqlite: bool, players: &[i64]) -> Option<Query<'static>> {
    if sqlite || players.is_empty() {
        return None;
    }
    let table = sql::table(sqlite, 1, &[("id", Int)]);
    Some(
        sql::query_owned(format!(
            "SELECT id FROM players WHERE id IN (SELECT id FROM {table} AS d) ORDER BY id FOR UPDATE"
        ))
        .bind_rows(&table, players, |id| [*id]),
    )
}

/// The balances of the buyers' `accounts` and of the accounts of the plays
/// named by id (thrown, settled), read by [`read_balances`]: the plays'
/// accounts are found here rather than from the plays read, so that this
/// read goes with the others.
pub fn balances(sqlite: bool, accounts: &[i64], play_ids: &[i64]) -> Query<'static> {
    let table = sql::table(sqlite, 1, &[("id", Int)]);
    let plays = sql::table(sqlite, 2, &[("id", Int)]);
    sql::query_owned(format!(
        "SELECT id, balance_cents FROM accounts WHERE id IN (\
         SELECT id FROM {table} AS d UNION \
         SELECT pl.account_id FROM plays p JOIN players pl ON pl.id = p.player_id \
         WHERE p.id IN (SELECT id FROM {plays} AS e))"
    ))
    .bind_rows(&table, accounts, |id| [*id])
    .bind_rows(&plays, play_ids, |id| [*id])
}

pub fn read_balances(rows: &[Row]) -> Result<HashMap<i64, i64>, Error> {
    rows.iter()
        .map(<(i64, i64) as sql::FromRow>::from_row)
        .collect()
}
