//! A log's stored hashes kept by tile (migration 0021, issue 34): a row of
//! `log_tiles` per (log, tree level, chunk of [`WIDTH`] positions at that
//! level) holds the chunk's hashes end to end, from position `first_pos` of
//! the chunk. A transaction appends its new hashes to the rows of their
//! chunks (one statement, a row per level and chunk touched: about ten for
//! a batch of forty purchases), where `log_hashes` took a row per stored
//! hash (about four per purchase). Hashes stored before the migration stay
//! in `log_hashes` and are read from there when no tile holds them.
//!
//! A stored hash's index is Go's sumdb/tlog numbering
//! ([`tlog_tiles::stored_hash_index`]): level and position are
//! [`tlog_tiles::split_stored_hash_index`] of it.

use super::leaf::hash_from_hex;
use crate::error::Error;
use crate::store::{Conn, sql};
use std::collections::{BTreeMap, BTreeSet};
use tlog_tiles::{Hash, split_stored_hash_index, stored_hash_index};

/// Positions per chunk row: 32 hashes, 1 KiB, kept in the row's page on
/// both databases (no TOAST on PostgreSQL).
pub const WIDTH: u64 = 32;

/// The new stored hashes of a transaction grouped by chunk: (level, chunk)
/// → (position in the chunk of the first, the hashes' bytes end to end).
fn group<'a>(
    hashes: impl Iterator<Item = (&'a u64, &'a Hash)>,
) -> BTreeMap<(u8, u64), (u64, Vec<u8>)> {
    let mut chunks: BTreeMap<(u8, u64), (u64, Vec<u8>)> = BTreeMap::new();
    for (index, hash) in hashes {
        let (level, n) = split_stored_hash_index(*index);
        let (first, bytes) = chunks
            .entry((level, n / WIDTH))
            .or_insert_with(|| (n % WIDTH, Vec::new()));
        // Positions come in order at each level, with no gap.
        debug_assert_eq!(*first + bytes.len() as u64 / 32, n % WIDTH);
        bytes.extend_from_slice(&hash.0);
    }
    chunks
}

/// Appends a transaction's new stored hashes (`hashes`, by index) to their
/// chunks, held back with the batch's writes. A chunk's row must end where
/// the new hashes begin: otherwise the statement changes fewer rows than
/// chunks and the batch fails (nothing is overwritten, nothing skipped).
pub async fn append<'a>(
    conn: &mut Conn,
    log_id: i64,
    hashes: impl Iterator<Item = (&'a u64, &'a Hash)>,
) -> Result<(), Error> {
    let chunks = group(hashes);
    if chunks.is_empty() {
        return Ok(());
    }
    let rows: Vec<(u8, u64, u64, String)> = chunks
        .into_iter()
        .map(|((level, chunk), (first, bytes))| (level, chunk, first, hex::encode(bytes)))
        .collect();
    let sqlite = conn.is_sqlite();
    use sql::ColumnType::{Int, Text};
    let table = sql::table(
        sqlite,
        2,
        &[
            ("level", Int),
            ("chunk", Int),
            ("first_pos", Int),
            ("hashes", Text),
        ],
    );
    // SQLite's `||` makes text of two blobs; the cast makes it a blob again.
    let (unhex, appended) = if sqlite {
        (
            "unhex(hashes)",
            "CAST(log_tiles.hashes || excluded.hashes AS BLOB)",
        )
    } else {
        (
            "decode(hashes, 'hex')",
            "log_tiles.hashes || excluded.hashes",
        )
    };
    // `WHERE true` tells SQLite's parser that ON CONFLICT is not a join's.
    sql::query(&format!(
        "INSERT INTO log_tiles (log_id, level, chunk, first_pos, hashes) \
         SELECT $1, level, chunk, first_pos, {unhex} FROM {table} AS d WHERE true \
         ON CONFLICT (log_id, level, chunk) DO UPDATE SET hashes = {appended} \
         WHERE log_tiles.first_pos + length(log_tiles.hashes) / 32 = excluded.first_pos"
    ))
    .bind(log_id)
    .bind_rows(&table, &rows, |row| row)
    .defer_expecting(conn, "log_tiles", rows.len())
    .await
}

/// The chunks that hold `indexes`, as a condition on `level` and `chunk`
/// (integers the server computed).
fn chunks_condition(chunks: &BTreeSet<(u8, u64)>) -> String {
    let mut by_level: BTreeMap<u8, Vec<u64>> = BTreeMap::new();
    for (level, chunk) in chunks {
        by_level.entry(*level).or_default().push(*chunk);
    }
    by_level
        .into_iter()
        .map(|(level, chunks)| {
            let list: Vec<String> = chunks.iter().map(u64::to_string).collect();
            format!("(level = {level} AND chunk IN ({}))", list.join(", "))
        })
        .collect::<Vec<_>>()
        .join(" OR ")
}

fn hex_of(sqlite: bool, column: &str) -> String {
    if sqlite {
        format!("hex({column})")
    } else {
        format!("encode({column}, 'hex')")
    }
}

/// The stored hashes a chunk row holds, by index.
fn expand(level: i64, chunk: i64, first: i64, hex: &str, into: &mut BTreeMap<u64, Hash>) {
    let Ok(bytes) = hex::decode(hex) else { return };
    for (k, bytes) in bytes.chunks_exact(32).enumerate() {
        let n = chunk as u64 * WIDTH + first as u64 + k as u64;
        if let Ok(hash) = bytes.try_into() {
            into.insert(stored_hash_index(level as u8, n), Hash(hash));
        }
    }
}

/// The stored hashes of `log_id` among `indexes` that the database holds
/// (tiles first, then `log_hashes` for those made before the tiles); an
/// index held nowhere is left out.
pub async fn read(
    conn: &mut Conn,
    log_id: i64,
    indexes: &[u64],
) -> Result<BTreeMap<u64, Hash>, Error> {
    let mut found = BTreeMap::new();
    if indexes.is_empty() {
        return Ok(found);
    }
    let sqlite = conn.is_sqlite();
    let chunks: BTreeSet<(u8, u64)> = indexes
        .iter()
        .map(|i| {
            let (level, n) = split_stored_hash_index(*i);
            (level, n / WIDTH)
        })
        .collect();
    let rows = sql::query(&format!(
        "SELECT level, chunk, first_pos, {} FROM log_tiles WHERE log_id = $1 AND ({})",
        hex_of(sqlite, "hashes"),
        chunks_condition(&chunks)
    ))
    .bind(log_id)
    .fetch_all(&mut *conn)
    .await?;
    let mut held = BTreeMap::new();
    for row in &rows {
        let hex: String = row.try_get(3usize)?;
        expand(
            row.try_get(0usize)?,
            row.try_get(1usize)?,
            row.try_get(2usize)?,
            &hex,
            &mut held,
        );
    }
    let mut older = Vec::new();
    for index in indexes {
        match held.get(index) {
            Some(hash) => {
                found.insert(*index, *hash);
            }
            None => older.push(index.to_string()),
        }
    }
    if !older.is_empty() {
        let rows: Vec<(i64, String)> = sql::query_as(&format!(
            "SELECT idx, {} FROM log_hashes WHERE log_id = $1 AND idx IN ({})",
            hex_of(sqlite, "hash"),
            older.join(", ")
        ))
        .bind(log_id)
        .fetch_all(&mut *conn)
        .await?;
        for (index, hex) in rows {
            if let Some(hash) = hash_from_hex(&hex) {
                found.insert(index as u64, hash);
            }
        }
    }
    Ok(found)
}

/// Every stored hash of `log_id` with index in `from..to`, as served (a
/// tile's over an older `log_hashes` row's), for the audit.
pub async fn read_between(
    pool: &sqlx::AnyPool,
    log_id: i64,
    from: u64,
    to: u64,
) -> Result<BTreeMap<u64, Hash>, Error> {
    let sqlite = !pool
        .connect_options()
        .database_url
        .scheme()
        .starts_with("postgres");
    let mut found = BTreeMap::new();
    if from >= to {
        return Ok(found);
    }
    let rows: Vec<(i64, String)> = sqlx::query_as(&format!(
        "SELECT idx, {} FROM log_hashes WHERE log_id = $1 AND idx >= $2 AND idx < $3",
        hex_of(sqlite, "hash")
    ))
    .bind(log_id)
    .bind(from as i64)
    .bind(to as i64)
    .fetch_all(pool)
    .await?;
    for (index, hex) in rows {
        if let Some(hash) = hash_from_hex(&hex) {
            found.insert(index as u64, hash);
        }
    }
    // The chunks of each level's first to last position in the range.
    let levels = (0..64u8).take_while(|level| stored_hash_index(*level, 0) < to);
    let mut condition = Vec::new();
    for level in levels {
        let first = first_position_at_or_after(level, from);
        let last = last_position_before(level, to);
        if let (Some(first), Some(last)) = (first, last)
            && first <= last
        {
            condition.push(format!(
                "(level = {level} AND chunk BETWEEN {} AND {})",
                first / WIDTH,
                last / WIDTH
            ));
        }
    }
    if condition.is_empty() {
        return Ok(found);
    }
    let rows: Vec<(i64, i64, i64, String)> = sqlx::query_as(&format!(
        "SELECT level, chunk, first_pos, {} FROM log_tiles WHERE log_id = $1 AND ({})",
        hex_of(sqlite, "hashes"),
        condition.join(" OR ")
    ))
    .bind(log_id)
    .fetch_all(pool)
    .await?;
    let mut held = BTreeMap::new();
    for (level, chunk, first, hex) in &rows {
        expand(*level, *chunk, *first, hex, &mut held);
    }
    found.extend(held.range(from..to).map(|(i, h)| (*i, *h)));
    Ok(found)
}

/// The first position `n` at `level` whose stored index is `>= from`.
fn first_position_at_or_after(level: u8, from: u64) -> Option<u64> {
    // stored_hash_index grows with n at a fixed level, and is at least
    // n << level: a binary search below (from >> level) + 1.
    let (mut lo, mut hi) = (0u64, (from >> level) + 1);
    if stored_hash_index(level, hi) < from {
        return None;
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if stored_hash_index(level, mid) >= from {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(lo)
}

/// The last position `n` at `level` whose stored index is `< to`.
fn last_position_before(level: u8, to: u64) -> Option<u64> {
    if stored_hash_index(level, 0) >= to {
        return None;
    }
    // The largest n with stored_hash_index(level, n) < to (n << level <= it).
    let (mut lo, mut hi) = (0u64, to >> level);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if stored_hash_index(level, mid) < to {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Some(lo)
}

#[cfg(test)]
mod tests {
    use super::super::leaf::hash_hex;
    use super::*;

    #[test]
    fn chunks_group_each_levels_positions_in_order() {
        let hashes: BTreeMap<u64, Hash> = (0..200u64).map(|i| (i, Hash([i as u8; 32]))).collect();
        let chunks = group(hashes.iter());
        let mut back = BTreeMap::new();
        for ((level, chunk), (first, bytes)) in &chunks {
            expand(
                i64::from(*level),
                *chunk as i64,
                *first as i64,
                &hash_hex_all(bytes),
                &mut back,
            );
        }
        assert_eq!(back, hashes);
    }

    fn hash_hex_all(bytes: &[u8]) -> String {
        bytes
            .chunks_exact(32)
            .map(|b| hash_hex(&Hash(b.try_into().unwrap())))
            .collect()
    }

    #[test]
    fn positions_bound_a_range_of_indexes() {
        for (from, to) in [(0u64, 1u64), (5, 90), (100, 101), (37, 1000)] {
            for level in 0..10u8 {
                let inside: Vec<u64> = (0..1000u64)
                    .filter(|n| {
                        let i = stored_hash_index(level, *n);
                        from <= i && i < to
                    })
                    .collect();
                assert_eq!(
                    first_position_at_or_after(level, from)
                        .filter(|n| stored_hash_index(level, *n) < to),
                    inside.first().copied(),
                    "level {level} {from}..{to}"
                );
                if let Some(last) = inside.last() {
                    assert_eq!(last_position_before(level, to), Some(*last));
                }
            }
        }
    }
}
