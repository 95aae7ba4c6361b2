//! The purchases' idempotency keys: remembered by the week of their
//! purchase in three tables, looked up by the batch, forgotten a table at a
//! time.

use super::NewPlayRow;
use super::write::SetWrite;
use crate::error::Error;
use crate::store::sql::{self, ColumnType, ColumnType::Int, ColumnType::Text, Conn, Query, Row};

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
    ["purchase_keys_0", "purchase_keys_1", "purchase_keys_2"][table_number(at_ms)]
}

/// The number of the table of purchase keys of `at_ms`: its week's, modulo 3.
fn table_number(at_ms: i64) -> usize {
    at_ms.div_euclid(WEEK_MS).rem_euclid(3) as usize
}

/// Earlier purchases under these (player, idempotency key) pairs, from the
/// keys remembered (the three tables of `purchase_keys`): (player, key,
/// play id, request hash), read by [`read_earlier_purchases`]. The request
/// hash is the play's, read by its id.
pub fn earlier_purchases(sqlite: bool, keys: &[(i64, &str)]) -> Query<'static> {
    let table = sql::table(sqlite, 1, &[("player_id", Int), ("key", Text)]);
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
    .bind_rows(&table, keys, |k| *k)
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

/// Remembers the new plays' idempotency keys ([`earlier_purchases`] reads
/// them), from the same rows as the plays inserted, each in the table of its
/// purchase's week (one statement a table: two for a batch across a week's end).
pub async fn insert_purchase_keys(
    conn: &mut Conn,
    sqlite: bool,
    rows: &[NewPlayRow],
) -> Result<(), Error> {
    let mut by_table: [Vec<&NewPlayRow>; 3] = Default::default();
    for row in rows {
        by_table[table_number(row.key().3)].push(row);
    }
    for (insert, rows) in INSERT_KEYS.iter().zip(by_table) {
        insert.run(conn, sqlite, &rows, |row| row.key()).await?;
    }
    Ok(())
}

/// The columns of a key's row, as [`NewPlayRow::key`] makes it.
const KEY_COLUMNS: &[(&str, ColumnType)] = &[
    ("id", Int),
    ("player_id", Int),
    ("key", Text),
    ("created_at_ms", Int),
];

macro_rules! insert_keys {
    ($table:literal) => {
        SetWrite {
            sql: concat!(
                "INSERT INTO ",
                $table,
                " (player_id, key, play_id, at_ms) \
                 SELECT player_id, key, id, created_at_ms FROM {rows} AS d"
            ),
            columns: KEY_COLUMNS,
            changes: Some($table),
        }
    };
}

/// The keys inserted into each week's table, by its number.
const INSERT_KEYS: [SetWrite; 3] = [
    insert_keys!("purchase_keys_0"),
    insert_keys!("purchase_keys_1"),
    insert_keys!("purchase_keys_2"),
];
