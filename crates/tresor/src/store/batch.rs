//! The set-oriented SQL of the hot batch (`crate::batch`): each function is
//! one statement over all the batch's rows, passed as one JSON parameter
//! ([`sql::json_rows`]), so its cost is per batch, not per command.
//!
//! Reads come in two halves: a builder (the query, run later with the
//! batch's other reads by [`sql::fetch_each`], in one round trip on
//! PostgreSQL) and a parser (its rows into structs). Writes are held back
//! (`Query::defer`) and sent together before COMMIT.

use crate::error::Error;
use crate::store::plays;
pub use crate::store::plays::PlayState;
use crate::store::sql::{self, ColumnType::Int, ColumnType::Text, Conn, Query, Row};
use serde::Serialize;
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

/// A play the batch creates.
#[derive(Debug, Serialize)]
pub struct NewPlayRow(
    i64,          // id
    i64,          // player_id
    i64,          // block_id
    i64,          // unit_index
    i64,          // stake_cents
    i64,          // level
    i64,          // prize_cents
    i64,          // throws_made
    &'static str, // state
    String,       // idempotency_key
    String,       // request_hash
    i64,          // created_at_ms
    Option<i64>,  // finished_at_ms
    Option<i64>,  // buy_log_id
    Option<i64>,  // buy_idx
);

impl NewPlayRow {
    /// `leaf`: the purchase's record in the trail (log, index), which
    /// finds the play's receipt (migration 0021).
    pub fn from_state(
        play: &PlayState,
        idempotency_key: String,
        request_hash: String,
        leaf: Option<(i64, i64)>,
    ) -> Self {
        NewPlayRow(
            play.id,
            play.player_id,
            play.block_id,
            play.unit_index,
            play.stake_cents,
            play.level,
            play.prize_cents,
            play.throws_made,
            state_text(play.finished),
            idempotency_key,
            request_hash,
            play.created_at_ms,
            play.finished_at_ms,
            leaf.map(|(log_id, _)| log_id),
            leaf.map(|(_, idx)| idx),
        )
    }
}

/// A play read from the database that the batch changed; the update checks
/// that it still has `throws_before` throws and is in progress.
#[derive(Debug)]
pub struct PlayUpdate {
    pub id: i64,
    pub throws_before: i64,
    pub throws_made: i64,
    pub state: &'static str,
    pub finished_at_ms: Option<i64>,
}

impl PlayUpdate {
    pub fn from_state(play: &PlayState, throws_before: i64) -> Self {
        PlayUpdate {
            id: play.id,
            throws_before,
            throws_made: play.throws_made,
            state: state_text(play.finished),
            finished_at_ms: play.finished_at_ms,
        }
    }
}

fn state_text(finished: bool) -> &'static str {
    if finished { "finished" } else { "in_progress" }
}

/// A transfer of the ledger.
#[derive(Debug)]
pub struct TransferRow {
    pub debit_account_id: i64,
    pub credit_account_id: i64,
    pub amount_cents: i64,
    pub kind: &'static str,
    pub play_id: i64,
    pub created_at_ms: i64,
}

/// A block the batch sold from.
#[derive(Debug)]
pub struct BlockUpdate {
    pub id: i64,
    pub units_sold_before: i64,
    pub units_sold: i64,
    pub sold_out_at_ms: Option<i64>,
}

/// Stakes to add to a player's hour.
#[derive(Debug)]
pub struct HourCount {
    pub player_id: i64,
    pub hour_ms: i64,
    pub amount_cents: i64,
}

/// Serialises rows as the JSON array of arrays that [`sql::json_rows`]
/// reads, each row as the tuple `columns` makes of it (in the order of the
/// statement's column list).
fn json_table<'r, T, U: Serialize + 'r>(rows: &'r [T], columns: impl Fn(&'r T) -> U) -> String {
    let tuples: Vec<U> = rows.iter().map(columns).collect();
    serde_json::to_string(&tuples).expect("rows serialise")
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

/// How long a purchase's idempotency key is remembered at least: 7 days.
/// Keys are kept by the week of their purchase (counted from the epoch), in
/// three tables, the week's number modulo 3 (`purchase_keys_0` to `_2`,
/// migration 0022), and a week's table is emptied whole during the second
/// week after it ([`prune_purchase_keys`]): a key is forgotten between 7
/// and 21 days after its purchase, and the same key then buys a new unit,
/// as a key never seen would (ARCHITECTURE.md, "Invariants"). No index by
/// time is written for the prune (issue 34: it was one entry a purchase).
pub const PURCHASE_KEYS_KEEP_MS: i64 = WEEK_MS;

/// A week, the span of a table of purchase keys.
pub const WEEK_MS: i64 = 7 * 24 * 3600 * 1000;

/// The table of purchase keys that holds the keys of purchases made at `at_ms`.
pub fn purchase_keys_table(at_ms: i64) -> &'static str {
    ["purchase_keys_0", "purchase_keys_1", "purchase_keys_2"]
        [at_ms.div_euclid(WEEK_MS).rem_euclid(3) as usize]
}

/// Earlier purchases under these (player, idempotency key) pairs, from the
/// keys remembered (the three tables of `purchase_keys`): (player, key,
/// play id, request hash), read by [`read_earlier_purchases`]. The request
/// hash is the play's, read by its id.
pub fn earlier_purchases(sqlite: bool, keys: &[(i64, &str)]) -> Query<'static> {
    let table = sql::json_rows(sqlite, 1, &[("player_id", Int), ("key", Text)]);
    let each = |keys: &str| {
        format!(
            "SELECT k.player_id, k.key, k.play_id, p.request_hash FROM {keys} k \
             JOIN {table} AS d ON k.player_id = d.player_id AND k.key = d.key \
             JOIN plays p ON p.id = k.play_id"
        )
    };
    sql::query_owned(format!(
        "{} UNION ALL {} UNION ALL {}",
        each("purchase_keys_0"),
        each("purchase_keys_1"),
        each("purchase_keys_2")
    ))
    .bind(json_table(keys, |k| *k))
}

pub fn read_earlier_purchases(rows: &[Row]) -> Result<Vec<(i64, String, i64, String)>, Error> {
    rows.iter()
        .map(|row| {
            Ok((
                row.try_get(0usize)?,
                row.try_get(1usize)?,
                row.try_get(2usize)?,
                row.try_get(3usize)?,
            ))
        })
        .collect()
}

/// Forgets the purchase keys of two weeks before the newest purchase's (and
/// any older left in that table), held back with the batch's writes: their
/// table is emptied whole (no entry of it written one by one on SQLite,
/// whose `DELETE` without `WHERE` drops the table's pages). The writer runs
/// it now and then (`writer::batch_loop`). The week is the newest play's,
/// not the clock's, so that a clock set wrong forgets no key early.
pub async fn prune_purchase_keys(conn: &mut Conn) -> Result<(), Error> {
    let newest: Option<i64> =
        sql::query_scalar("SELECT created_at_ms FROM plays ORDER BY id DESC LIMIT 1")
            .fetch_optional(&mut *conn)
            .await?;
    let Some(newest_ms) = newest else {
        return Ok(());
    };
    // The table of the week after the newest holds the keys of two weeks
    // before it (three tables: weeks w - 2, w - 1, w).
    let table = purchase_keys_table(newest_ms + WEEK_MS);
    sql::query(&format!("DELETE FROM {table}"))
        .defer(conn)
        .await
}

/// A game's stake: what a purchase buys, and what blocks are sold by.
pub type Product = (String, i64);

/// The first `window` open blocks with units left of each (game, stake),
/// by id (read by [`read_blocks_on_sale`]).
pub fn blocks_on_sale(sqlite: bool, products: &[Product], window: i64) -> Query<'static> {
    let table = sql::json_rows(sqlite, 1, &[("game", Text), ("stake", Int)]);
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
    .bind(json_table(products, |(g, s)| (g, *s)))
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
    let table = sql::json_rows(sqlite, 1, &[("game", Text), ("stake", Int)]);
    sql::query_as(&format!(
        "SELECT DISTINCT b.game_id, b.stake_cents FROM blocks b \
         WHERE EXISTS (SELECT 1 FROM {table} AS d WHERE d.game = b.game_id AND d.stake = b.stake_cents)"
    ))
    .bind(json_table(products, |(g, s)| (g, *s)))
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
    let ids = sql::json_rows(sqlite, 1, &[("id", Int)]);
    let players = sql::json_rows(sqlite, 2, &[("id", Int)]);
    sql::query_owned(format!(
        "SELECT {COLUMNS}, 0 AS of_buyer FROM {FROM} \
         WHERE p.id IN (SELECT id FROM {ids} AS d) \
         UNION ALL \
         SELECT {COLUMNS}, 1 AS of_buyer FROM {FROM} \
         WHERE p.state = 'in_progress' AND p.id IN ( \
             SELECT (SELECT MAX(m.id) FROM plays m WHERE m.player_id = d.id) FROM {players} AS d)"
    ))
    .bind(json_table(play_ids, |id| [*id]))
    .bind(json_table(buyers, |id| [*id]))
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
    let table = sql::json_rows(sqlite, 1, &[("id", Int)]);
    Some(
        sql::query_owned(format!(
            "SELECT id FROM players WHERE id IN (SELECT id FROM {table} AS d) ORDER BY id FOR UPDATE"
        ))
        .bind(json_table(players, |id| [*id])),
    )
}

/// The balances of the buyers' `accounts` and of the accounts of the plays
/// named by id (thrown, settled), read by [`read_balances`]: the plays'
/// accounts are found here rather than from the plays read, so that this
/// read goes with the others.
pub fn balances(sqlite: bool, accounts: &[i64], play_ids: &[i64]) -> Query<'static> {
    let table = sql::json_rows(sqlite, 1, &[("id", Int)]);
    let plays = sql::json_rows(sqlite, 2, &[("id", Int)]);
    sql::query_owned(format!(
        "SELECT id, balance_cents FROM accounts WHERE id IN (\
         SELECT id FROM {table} AS d UNION \
         SELECT pl.account_id FROM plays p JOIN players pl ON pl.id = p.player_id \
         WHERE p.id IN (SELECT id FROM {plays} AS e))"
    ))
    .bind(json_table(accounts, |id| [*id]))
    .bind(json_table(play_ids, |id| [*id]))
}

pub fn read_balances(rows: &[Row]) -> Result<HashMap<i64, i64>, Error> {
    rows.iter()
        .map(<(i64, i64) as sql::FromRow>::from_row)
        .collect()
}

pub async fn insert_plays(conn: &mut Conn, sqlite: bool, rows: &[NewPlayRow]) -> Result<(), Error> {
    if rows.is_empty() {
        return Ok(());
    }
    let table = sql::json_rows(
        sqlite,
        1,
        &[
            ("id", Int),
            ("player_id", Int),
            ("block_id", Int),
            ("unit_index", Int),
            ("stake_cents", Int),
            ("level", Int),
            ("prize_cents", Int),
            ("throws_made", Int),
            ("state", Text),
            ("idempotency_key", Text),
            ("request_hash", Text),
            ("created_at_ms", Int),
            ("finished_at_ms", Int),
            ("buy_log_id", Int),
            ("buy_idx", Int),
        ],
    );
    sql::query(&format!(
        "INSERT INTO plays (id, player_id, block_id, unit_index, stake_cents, level, prize_cents, \
         throws_made, state, idempotency_key, request_hash, created_at_ms, finished_at_ms, \
         buy_log_id, buy_idx) \
         SELECT id, player_id, block_id, unit_index, stake_cents, level, prize_cents, throws_made, \
         state, idempotency_key, request_hash, created_at_ms, finished_at_ms, buy_log_id, buy_idx \
         FROM {table} AS d"
    ))
    .bind(json_table(rows, |row| row))
    .defer_expecting(conn, "plays", rows.len())
    .await
}

/// Remembers the new plays' idempotency keys ([`earlier_purchases`] reads
/// them), from the same rows as [`insert_plays`], each in the table of its
/// purchase's week (one statement a table: two for a batch across a week's end).
pub async fn insert_purchase_keys(
    conn: &mut Conn,
    sqlite: bool,
    rows: &[NewPlayRow],
) -> Result<(), Error> {
    let mut by_table: Vec<(&'static str, Vec<&NewPlayRow>)> = Vec::new();
    for row in rows {
        let keys = purchase_keys_table(row.11);
        match by_table.iter_mut().find(|(t, _)| *t == keys) {
            Some((_, rows)) => rows.push(row),
            None => by_table.push((keys, vec![row])),
        }
    }
    for (keys, rows) in by_table {
        insert_keys_into(conn, sqlite, keys, &rows).await?;
    }
    Ok(())
}

async fn insert_keys_into(
    conn: &mut Conn,
    sqlite: bool,
    keys: &'static str,
    rows: &[&NewPlayRow],
) -> Result<(), Error> {
    let table = sql::json_rows(
        sqlite,
        1,
        &[
            ("id", Int),
            ("player_id", Int),
            ("key", Text),
            ("created_at_ms", Int),
        ],
    );
    sql::query(&format!(
        "INSERT INTO {keys} (player_id, key, play_id, at_ms) \
         SELECT player_id, key, id, created_at_ms FROM {table} AS d"
    ))
    .bind(json_table(rows, |row| (row.0, row.1, &row.9, row.11)))
    .defer_expecting(conn, keys, rows.len())
    .await
}

pub async fn update_plays(conn: &mut Conn, sqlite: bool, rows: &[PlayUpdate]) -> Result<(), Error> {
    if rows.is_empty() {
        return Ok(());
    }
    let table = sql::json_rows(
        sqlite,
        1,
        &[
            ("id", Int),
            ("throws_before", Int),
            ("throws_made", Int),
            ("state", Text),
            ("finished_at_ms", Int),
        ],
    );
    sql::query(&format!(
        "UPDATE plays SET throws_made = d.throws_made, state = d.state, \
         finished_at_ms = d.finished_at_ms FROM {table} AS d \
         WHERE plays.id = d.id AND plays.throws_made = d.throws_before \
         AND plays.state = 'in_progress'"
    ))
    .bind(json_table(rows, |u| {
        (
            u.id,
            u.throws_before,
            u.throws_made,
            u.state,
            u.finished_at_ms,
        )
    }))
    .defer_expecting(conn, "plays", rows.len())
    .await
}

pub async fn insert_transfers(
    conn: &mut Conn,
    sqlite: bool,
    rows: &[TransferRow],
) -> Result<(), Error> {
    if rows.is_empty() {
        return Ok(());
    }
    let table = sql::json_rows(
        sqlite,
        1,
        &[
            ("debit_account_id", Int),
            ("credit_account_id", Int),
            ("amount_cents", Int),
            ("kind", Text),
            ("play_id", Int),
            ("created_at_ms", Int),
        ],
    );
    sql::query(&format!(
        "INSERT INTO transfers (debit_account_id, credit_account_id, amount_cents, kind, play_id, \
         created_at_ms) SELECT debit_account_id, credit_account_id, amount_cents, kind, play_id, \
         created_at_ms FROM {table} AS d"
    ))
    .bind(json_table(rows, |t| {
        (
            t.debit_account_id,
            t.credit_account_id,
            t.amount_cents,
            t.kind,
            t.play_id,
            t.created_at_ms,
        )
    }))
    .defer(conn)
    .await
}

/// What the batch changes of an account: its balance, and for a buyer the
/// hour of stakes its row holds (`crate::protect`, migration 0022).
#[derive(Debug)]
pub struct AccountUpdate {
    pub id: i64,
    pub delta_cents: i64,
    /// (hour, stakes in it), or `None` to leave it as it is.
    pub stake_hour: Option<(i64, i64)>,
}

/// Adds each delta to its account's balance and sets the buyers' hours of
/// stakes, in one statement. A player's balance below zero is refused by
/// the `CHECK` (the batch checked it before).
pub async fn update_accounts(
    conn: &mut Conn,
    sqlite: bool,
    rows: &[AccountUpdate],
) -> Result<(), Error> {
    if rows.is_empty() {
        return Ok(());
    }
    let table = sql::json_rows(
        sqlite,
        1,
        &[
            ("id", Int),
            ("delta", Int),
            ("hour_ms", Int),
            ("hour_cents", Int),
        ],
    );
    sql::query(&format!(
        "UPDATE accounts SET balance_cents = accounts.balance_cents + d.delta, \
         stake_hour_ms = COALESCE(d.hour_ms, accounts.stake_hour_ms), \
         stake_hour_cents = COALESCE(d.hour_cents, accounts.stake_hour_cents) \
         FROM {table} AS d WHERE accounts.id = d.id"
    ))
    .bind(json_table(rows, |a| {
        (
            a.id,
            a.delta_cents,
            a.stake_hour.map(|(h, _)| h),
            a.stake_hour.map(|(_, c)| c),
        )
    }))
    .defer_expecting(conn, "accounts", rows.len())
    .await
}

/// Moves the blocks' counts of units sold; a block that sold its last unit
/// becomes sold out and its secret published.
pub async fn update_blocks(
    conn: &mut Conn,
    sqlite: bool,
    rows: &[BlockUpdate],
) -> Result<(), Error> {
    if rows.is_empty() {
        return Ok(());
    }
    let table = sql::json_rows(
        sqlite,
        1,
        &[
            ("id", Int),
            ("units_sold_before", Int),
            ("units_sold", Int),
            ("sold_out_at_ms", Int),
        ],
    );
    sql::query(&format!(
        "UPDATE blocks SET units_sold = d.units_sold, \
         state = CASE WHEN d.sold_out_at_ms IS NULL THEN blocks.state ELSE 'sold_out' END, \
         published_at_ms = COALESCE(d.sold_out_at_ms, blocks.published_at_ms) \
         FROM {table} AS d \
         WHERE blocks.id = d.id AND blocks.units_sold = d.units_sold_before AND blocks.state = 'open'"
    ))
    .bind(json_table(rows, |b| {
        (b.id, b.units_sold_before, b.units_sold, b.sold_out_at_ms)
    }))
    .defer_expecting(conn, "blocks", rows.len())
    .await
}

/// Counts stakes in the players' hours (the 7-day caps read them): the
/// hours a buyer's account row held before a stake of another hour.
pub async fn count_stake_hours(
    conn: &mut Conn,
    sqlite: bool,
    rows: &[HourCount],
) -> Result<(), Error> {
    if rows.is_empty() {
        return Ok(());
    }
    let table = sql::json_rows(
        sqlite,
        1,
        &[("player_id", Int), ("hour_ms", Int), ("amount_cents", Int)],
    );
    // `WHERE true` tells SQLite's parser that ON CONFLICT is not a join's.
    sql::query(&format!(
        "INSERT INTO movement_hours (player_id, kind, hour_ms, amount_cents) \
         SELECT player_id, 'stake', hour_ms, amount_cents FROM {table} AS d WHERE true \
         ON CONFLICT (player_id, kind, hour_ms) \
         DO UPDATE SET amount_cents = movement_hours.amount_cents + excluded.amount_cents"
    ))
    .bind(json_table(rows, |h| {
        (h.player_id, h.hour_ms, h.amount_cents)
    }))
    .defer(conn)
    .await
}
