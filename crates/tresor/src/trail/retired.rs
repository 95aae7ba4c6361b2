//! The last checkpoint each retired log key signed of each log (issue 42;
//! docs/AUDIT.md, "Keys: custody and rotation"): `GET /log/` publishes it,
//! and the fairness page and `tresor audit receipt --log` take a checkpoint
//! signed with a retired key only up to that size, so that whoever holds a
//! retired key cannot sign a made-up tree that a receipt check accepts.
//!
//! A writer records it when it takes a log whose last checkpoint another
//! key signed (`log::lock`: a rotation, seen from that log); a log whose
//! last checkpoint a retired key signed is still being signed with it (a
//! server not yet started again), and its latest size is that key's last
//! (`service::publish`). A database rotated before this record existed is
//! scanned once, at the first start of a command that writes ([`backfill`]).

use crate::error::Error;
use crate::logcheck::{VerifierKey, split_note};
use crate::store::{Conn, Db, sql};
use base64::Engine as _;
use std::collections::HashMap;

/// Records that the key `vkey` signed the log `log_id` up to `size`
/// records (kept when a larger size is already recorded).
pub async fn record(conn: &mut Conn, vkey: &str, log_id: i64, size: u64) -> Result<(), Error> {
    sql::query(
        "INSERT INTO log_key_ends (vkey, log_id, size) VALUES ($1, $2, $3) \
         ON CONFLICT (vkey, log_id) DO UPDATE SET size = excluded.size \
         WHERE log_key_ends.size < excluded.size",
    )
    .bind(vkey)
    .bind(log_id)
    .bind(size as i64)
    .execute(conn)
    .await?;
    Ok(())
}

/// Every recorded end: the key, the log's origin, the size.
pub async fn recorded(conn: &mut Conn) -> Result<Vec<(String, String, u64)>, Error> {
    let rows: Vec<(String, String, i64)> = sql::query_as(
        "SELECT e.vkey, l.origin, e.size FROM log_key_ends e JOIN logs l ON l.id = e.log_id \
         ORDER BY l.id",
    )
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(vkey, origin, size)| (vkey, origin, size.max(0) as u64))
        .collect())
}

/// The key among `keys` whose name and key id a signature line of `note`
/// carries (not verified: the site's own stored checkpoints, each verified
/// when it was signed and by `tresor audit verify`).
pub fn named_signer<'k>(note: &str, keys: &'k [VerifierKey]) -> Option<&'k VerifierKey> {
    let (_, lines) = split_note(note).ok()?;
    lines.iter().find_map(|line| {
        let rest = line.strip_prefix("— ")?;
        let (name, encoded) = rest.split_once(' ')?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()?;
        let id = u32::from_be_bytes(bytes.get(..4)?.try_into().ok()?);
        keys.iter().find(|k| k.name() == name && k.id() == id)
    })
}

/// The checkpoints read at once by [`backfill`].
const PAGE: i64 = 1000;

/// In a database whose keys were rotated before the ends were recorded
/// (migration 0025 leaves `log_key_ends_backfill` then), every checkpoint
/// of every log is read once and each retired key's last size recorded, in
/// one transaction. Run before the writer starts; one read once done.
pub async fn backfill(db: &Db) -> Result<(), Error> {
    const DUE: &str = "SELECT value FROM settings WHERE key = 'log_key_ends_backfill'";
    let mut read = db.conn().await?;
    let due: Option<String> = sql::query_scalar(DUE).fetch_optional(&mut read).await?;
    drop(read);
    if due.is_none() {
        return Ok(());
    }
    let mut conn = Conn::Tx(db.begin().await?);
    let vkeys: Vec<String> = sql::query_scalar("SELECT vkey FROM log_keys ORDER BY id")
        .fetch_all(&mut conn)
        .await?;
    let keys: Vec<VerifierKey> = vkeys
        .iter()
        .filter_map(|v| VerifierKey::parse(v).ok())
        .collect();
    let current = vkeys.last().cloned().unwrap_or_default();
    let logs: Vec<i64> = sql::query_scalar("SELECT id FROM logs ORDER BY id")
        .fetch_all(&mut conn)
        .await?;
    for log_id in logs {
        for (vkey, size) in scan(&mut conn, log_id, &keys, &current).await? {
            record(&mut conn, &vkey, log_id, size).await?;
        }
    }
    sql::query("DELETE FROM settings WHERE key = 'log_key_ends_backfill'")
        .execute(&mut conn)
        .await?;
    let Conn::Tx(transaction) = conn else {
        unreachable!("begun as a transaction")
    };
    transaction.commit().await?;
    Ok(())
}

/// The last size each key of `keys` but `current` signed of the log
/// `log_id`, from its checkpoints read in pages.
async fn scan(
    conn: &mut Conn,
    log_id: i64,
    keys: &[VerifierKey],
    current: &str,
) -> Result<HashMap<String, u64>, Error> {
    let mut last: HashMap<String, u64> = HashMap::new();
    let mut after = 0_i64;
    loop {
        let page: Vec<(i64, String)> = sql::query_as(
            "SELECT size, note FROM checkpoints WHERE log_id = $1 AND size > $2 \
             ORDER BY size LIMIT $3",
        )
        .bind(log_id)
        .bind(after)
        .bind(PAGE)
        .fetch_all(&mut *conn)
        .await?;
        for (size, note) in &page {
            if let Some(key) = named_signer(note, keys).filter(|k| k.as_str() != current) {
                last.insert(key.as_str().to_owned(), *size as u64);
            }
        }
        match page.last() {
            Some((size, _)) if page.len() as i64 == PAGE => after = *size,
            _ => return Ok(last),
        }
    }
}
