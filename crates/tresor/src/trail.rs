//! The game trail (the "coffre-fort"): an append-only, hash-chained record of
//! every exchange between a player and the platform that changes or reveals
//! game or money state, and of every operator action.
//!
//! Each record is appended by the very writer job that makes the change it
//! records, so a change and its record commit or roll back together.
//!
//! Version 2 (today): each record is a leaf of its writer's Merkle log
//! ([`log`], [`leaf`]), and every transaction that appends signs a
//! checkpoint of the log with a key the database never holds
//! ([`crate::logkey`]);
//! [`audit`] recomputes every log and checks it against every checkpoint.
//! Version 1 (databases made before): each record carries the SHA-256 of the
//! previous one, its own hash covering a canonical encoding of its fields;
//! that chain is still verified as it was, and its final hash is the first
//! leaf of the first log (`trail_v1_sealed`).

pub mod audit;
pub mod leaf;
pub mod log;
pub mod receipt;
mod replay;
pub mod retired;
pub mod search;
pub mod tiles;

pub use crate::logkey as key;
pub use audit::{Trust, verify_with};
pub use log::Head;
pub use receipt::Receipt;

use crate::error::Error;
use crate::store::record::record;
use crate::store::{Conn, sql};
use serde::Serialize;
use serde_json::Value;
use sqlx::{AnyPool, Row};

/// The `prev_hash` of the first record.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Who made an exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    /// A player, by id and username (usernames never change).
    Player { id: i64, username: String },
    /// Someone at the operator's command line.
    Operator,
    /// A console account, by its username (`docs/CONSOLE.md`).
    Staff { username: String },
    /// The server on its own: automatic settlement, demo set-up.
    System,
    /// A request from no known player (a login with an unknown username).
    Anonymous,
}

impl Actor {
    pub fn player(id: i64, username: &str) -> Actor {
        Actor::Player {
            id,
            username: username.to_owned(),
        }
    }

    pub fn staff(username: &str) -> Actor {
        Actor::Staff {
            username: username.to_owned(),
        }
    }

    /// The text stored in the `actor` column: `player:ID:USERNAME`,
    /// `operator`, `staff:USERNAME`, `system` or `anonymous`.
    pub fn label(&self) -> String {
        match self {
            Actor::Player { id, username } => format!("player:{id}:{username}"),
            Actor::Operator => "operator".to_owned(),
            Actor::Staff { username } => format!("staff:{username}"),
            Actor::System => "system".to_owned(),
            Actor::Anonymous => "anonymous".to_owned(),
        }
    }
}

/// One record of the trail, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Record {
    /// The order of insertion: 1, 2, 3 … with no gap for v1 records (the
    /// chain's order); for v2 records a number from the database (no row
    /// lock shared by the writers), their place being (`log_id`, `idx`).
    pub seq: i64,
    pub at_ms: i64,
    pub actor: String,
    pub action: String,
    /// The request's essentials, as JSON text.
    pub request: String,
    /// What the exchange did, as JSON text.
    pub result: String,
    /// v1: the previous record's hash; v2: empty.
    pub prev_hash: String,
    /// v1: the chain's hash; v2: the leaf hash (hex), a copy for lookups:
    /// the audit recomputes it.
    pub hash: String,
    /// v2: the writer's log and the leaf's index in it, from 0.
    pub log_id: Option<i64>,
    pub idx: Option<i64>,
    /// v2: the 32 random bytes (hex) the leaf covers.
    pub salt: Option<String>,
}

record! {
    impl sqlx for Record {
        seq,
        at_ms,
        actor,
        action,
        request,
        result,
        prev_hash,
        hash,
        log_id,
        idx,
        salt,
    }
}

/// The columns [`Record::from_row`] reads.
pub const COLUMNS: &str =
    "seq, at_ms, actor, action, request, result, prev_hash, hash, log_id, idx, salt";

impl Record {
    /// The records of a page of `trail` rows read with [`COLUMNS`].
    pub fn from_rows(rows: &[sqlx::any::AnyRow]) -> Result<Vec<Record>, sqlx::Error> {
        rows.iter().map(Record::from_row).collect()
    }

    /// The record of one `trail` row read with [`COLUMNS`].
    pub fn from_row(row: &sqlx::any::AnyRow) -> Result<Record, sqlx::Error> {
        <Record as sqlx::FromRow<_>>::from_row(row)
    }

    /// A v2 record's leaf in the log of `origin`.
    pub fn leaf<'a>(&'a self, origin: &'a str) -> leaf::Leaf<'a> {
        leaf::Leaf {
            origin,
            idx: self.idx.unwrap_or_default() as u64,
            at_ms: self.at_ms,
            actor: &self.actor,
            action: &self.action,
            request: &self.request,
            result: &self.result,
            salt: self.salt.as_deref().unwrap_or_default(),
        }
    }

    /// The hash this record's fields call for.
    pub fn expected_hash(&self) -> String {
        record_hash(
            self.seq,
            self.at_ms,
            &self.actor,
            &self.action,
            &self.request,
            &self.result,
            &self.prev_hash,
        )
    }
}

/// SHA-256 (hex) of the canonical encoding of a record: a version tag, then
/// every field as a netstring (`LENGTH:BYTES,`), numbers in decimal. Length
/// prefixes make the encoding unambiguous: no two different records encode to
/// the same bytes, whatever their fields contain.
pub fn record_hash(
    seq: i64,
    at_ms: i64,
    actor: &str,
    action: &str,
    request: &str,
    result: &str,
    prev_hash: &str,
) -> String {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    let seq = seq.to_string();
    let at_ms = at_ms.to_string();
    for field in [
        "tresor-trail-v1",
        seq.as_str(),
        at_ms.as_str(),
        actor,
        action,
        request,
        result,
        prev_hash,
    ] {
        hasher.update(field.len().to_string().as_bytes());
        hasher.update(b":");
        hasher.update(field.as_bytes());
        hasher.update(b",");
    }
    hex::encode(hasher.finalize())
}

tokio::task_local! {
    /// The head of the writer's log in its current transaction. The writer
    /// locks its own log's row as the transaction's first statement
    /// ([`log::lock`], or [`log::lock_ahead`] in front of the batch's reads)
    /// and writes the log's new size, stored hashes and
    /// checkpoint once before committing ([`log::store`]).
    static BATCH_HEAD: std::cell::RefCell<Head>;
}

tokio::task_local! {
    /// The log's lock sent ahead of the batch's reads, not read yet
    /// ([`log::lock_ahead`], [`settle_batch_head`]).
    static AHEAD: std::cell::RefCell<Option<log::Ahead>>;
}

/// Runs `future` (the writer's jobs) with `head` as the batch's head; appends
/// inside it move the head in memory. Returns the output and the final head.
/// With `ahead`, the head is the one the writer's kept edge makes, until
/// [`settle_batch_head`] reads the lock that went ahead.
pub async fn with_batch_head<F: std::future::Future>(
    head: Head,
    ahead: Option<log::Ahead>,
    future: F,
) -> (F::Output, Head) {
    let future = AHEAD.scope(std::cell::RefCell::new(ahead), future);
    BATCH_HEAD
        .scope(std::cell::RefCell::new(head), async move {
            let output = future.await;
            (output, batch_head().expect("inside the batch scope"))
        })
        .await
}

/// Reads the log's lock that went ahead of the batch's reads, if one did,
/// and makes the batch's head the log's as it is locked ([`log::settle`]).
/// What decides on the head runs it first: the batch's decisions, and every
/// append.
pub async fn settle_batch_head(conn: &mut Conn) -> Result<(), Error> {
    let ahead = AHEAD
        .try_with(|ahead| ahead.borrow_mut().take())
        .ok()
        .flatten();
    let Some(ahead) = ahead else {
        return Ok(());
    };
    let head = batch_head().expect("inside the batch scope");
    // Boxed: every append awaits this, and the writer's SQLite thread
    // polls its futures on its own stack.
    reset_batch_head(Box::pin(log::settle(conn, head, ahead)).await?);
    Ok(())
}

/// The current batch's head, inside [`with_batch_head`].
pub fn batch_head() -> Option<Head> {
    BATCH_HEAD.try_with(|head| head.borrow().clone()).ok()
}

/// Puts the batch's head back (after a job's savepoint is rolled back).
pub fn reset_batch_head(head: Head) {
    let _ = BATCH_HEAD.try_with(|cell| *cell.borrow_mut() = head);
}

/// Appends a record inside the caller's writer job and returns its index
/// in the writer's log.
///
/// The writer locked its log's row when the batch began and holds the log's
/// head in memory until it commits ([`with_batch_head`]); a job that rolls
/// back gives its leaves back ([`reset_batch_head`]). Appends happen only
/// inside the writer.
pub async fn append(
    conn: &mut Conn,
    at_ms: i64,
    actor: &Actor,
    action: &str,
    request: Value,
    result: Value,
) -> Result<i64, Error> {
    settle_batch_head(conn).await?;
    let record = BATCH_HEAD
        .try_with(|head| {
            head.borrow_mut()
                .chain(at_ms, actor, action, &request, &result)
        })
        .expect("the trail is appended to only inside the writer's transaction");
    let idx = record.idx.unwrap_or_default();
    let sqlite = conn.is_sqlite();
    insert_records(conn, sqlite, &[record]).await?;
    Ok(idx)
}

/// Inserts records chained in memory, in one statement run now.
pub async fn insert_records(
    conn: &mut Conn,
    sqlite: bool,
    records: &[Record],
) -> Result<(), Error> {
    match records_insert(sqlite, records) {
        Some(insert) => insert.execute(conn).await.map(drop),
        None => Ok(()),
    }
}

/// As [`insert_records`], the statement held back with the batch's other
/// writes until COMMIT (`Query::defer`).
pub async fn defer_records(conn: &mut Conn, sqlite: bool, records: &[Record]) -> Result<(), Error> {
    match records_insert(sqlite, records) {
        Some(insert) => insert.defer(conn).await,
        None => Ok(()),
    }
}

/// The statement that inserts `records` (`None` for none).
fn records_insert(sqlite: bool, records: &[Record]) -> Option<sql::Query<'static>> {
    if records.is_empty() {
        return None;
    }
    use sql::ColumnType::{Int, Text};
    let table = sql::table(
        sqlite,
        1,
        &[
            ("at_ms", Int),
            ("actor", Text),
            ("action", Text),
            ("request", Text),
            ("result", Text),
            ("prev_hash", Text),
            ("hash", Text),
            ("log_id", Int),
            ("idx", Int),
            ("salt", Text),
        ],
    );
    let insert = sql::query_owned(format!(
        "INSERT INTO trail (at_ms, actor, action, request, result, prev_hash, hash, log_id, idx, \
         salt) SELECT at_ms, actor, action, request, result, prev_hash, hash, log_id, idx, salt \
         FROM {table} AS d ORDER BY idx"
    ))
    .bind_rows(&table, records, |r| {
        (
            r.at_ms,
            &r.actor,
            &r.action,
            &r.request,
            &r.result,
            &r.prev_hash,
            &r.hash,
            r.log_id,
            r.idx,
            &r.salt,
        )
    });
    Some(insert)
}

/// What `verify` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every record chains to the previous one and the head names the last.
    Intact { records: i64, head_hash: String },
    /// The first record that does not hold, and why.
    Broken { seq: i64, reason: String },
}

/// How many records a page of `verify` or `export` reads at once.
const PAGE: i64 = 5_000;

/// The number of records, for a progress bar.
pub async fn count(pool: &AnyPool) -> Result<i64, Error> {
    Ok(sqlx::query_scalar("SELECT COUNT(*) FROM trail")
        .fetch_one(pool)
        .await?)
}

/// The next page of records after `after_seq`, all of them or only those with
/// `from_ms <= at_ms < to_ms`.
pub async fn page(
    pool: &AnyPool,
    after_seq: i64,
    window: Option<(i64, i64)>,
) -> Result<Vec<Record>, Error> {
    let rows = match window {
        None => {
            sqlx::query(&format!(
                "SELECT {COLUMNS} FROM trail WHERE seq > $1 ORDER BY seq LIMIT $2"
            ))
            .bind(after_seq)
            .bind(PAGE)
            .fetch_all(pool)
            .await?
        }
        Some((from_ms, to_ms)) => {
            sqlx::query(&format!(
                "SELECT {COLUMNS} FROM trail WHERE seq > $1 AND at_ms >= $2 AND at_ms < $3 \
                 ORDER BY seq LIMIT $4"
            ))
            .bind(after_seq)
            .bind(from_ms)
            .bind(to_ms)
            .bind(PAGE)
            .fetch_all(pool)
            .await?
        }
    };
    Ok(Record::from_rows(&rows)?)
}

/// Checks the whole trail (see [`audit`]): the v1 chain, then every log
/// against every signed checkpoint, with the keys the database lists.
pub async fn verify(pool: &AnyPool, progress: impl FnMut(u64)) -> Result<Verdict, Error> {
    verify_with(pool, &Trust::default(), progress).await
}

/// The next page of v1 records after `after_seq`.
async fn page_v1(pool: &AnyPool, after_seq: i64) -> Result<Vec<Record>, Error> {
    let rows = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM trail WHERE seq > $1 AND log_id IS NULL ORDER BY seq LIMIT $2"
    ))
    .bind(after_seq)
    .bind(PAGE)
    .fetch_all(pool)
    .await?;
    Ok(Record::from_rows(&rows)?)
}

/// Checks the v1 chain (the records made before the log): every record
/// chains to the previous one and `trail_head` names the last. `Intact`
/// gives its length and final hash.
pub async fn verify_v1(pool: &AnyPool, mut progress: impl FnMut(u64)) -> Result<Verdict, Error> {
    let mut expected_seq = 1;
    let mut prev_hash = GENESIS_HASH.to_owned();
    loop {
        let records = page_v1(pool, expected_seq - 1).await?;
        if records.is_empty() {
            break;
        }
        for record in &records {
            if let Some(reason) = check(record, expected_seq, &prev_hash) {
                // A gap means the expected record was removed: name it.
                let seq = record.seq.min(expected_seq);
                return Ok(Verdict::Broken { seq, reason });
            }
            prev_hash.clone_from(&record.hash);
            expected_seq += 1;
        }
        progress(records.len() as u64);
    }
    let last_seq = expected_seq - 1;
    // The head catches records removed from, or added to, the end.
    let head = sqlx::query("SELECT seq, hash FROM trail_head WHERE id = 1")
        .fetch_optional(pool)
        .await?;
    let Some(head) = head else {
        return Ok(Verdict::Broken {
            seq: last_seq + 1,
            reason: "the trail's head row is missing".to_owned(),
        });
    };
    let head_seq: i64 = head.try_get("seq")?;
    let head_hash: String = head.try_get("hash")?;
    if head_seq > last_seq {
        return Ok(Verdict::Broken {
            seq: last_seq + 1,
            reason: format!(
                "missing: the head says the trail has {head_seq} records, only {last_seq} are there"
            ),
        });
    }
    if head_seq < last_seq {
        return Ok(Verdict::Broken {
            seq: head_seq + 1,
            reason: format!("added: the head says the trail ends at record {head_seq}"),
        });
    }
    if head_hash != prev_hash {
        return Ok(Verdict::Broken {
            seq: last_seq,
            reason: "the head's hash is not the hash of the last record".to_owned(),
        });
    }
    Ok(Verdict::Intact {
        records: last_seq,
        head_hash,
    })
}

/// Why `record` does not follow a record `expected_seq - 1` of hash
/// `prev_hash`, if it does not.
fn check(record: &Record, expected_seq: i64, prev_hash: &str) -> Option<String> {
    if record.seq != expected_seq {
        return Some(format!(
            "missing: record {expected_seq} is not there (the next record is {})",
            record.seq
        ));
    }
    if record.prev_hash != prev_hash {
        return Some("its previous hash is not the hash of the record before it".to_owned());
    }
    if record.hash != record.expected_hash() {
        return Some("its hash does not match its contents".to_owned());
    }
    None
}

/// Records in chain order, all of them or only those with
/// `from_ms <= at_ms < to_ms`, a page at a time: `each` is called once per
/// record.
pub async fn export(
    pool: &AnyPool,
    window: Option<(i64, i64)>,
    mut each: impl FnMut(&Record) -> Result<(), Error>,
) -> Result<u64, Error> {
    let mut after_seq = 0;
    let mut exported = 0;
    loop {
        let records = page(pool, after_seq, window).await?;
        let Some(last) = records.last() else {
            return Ok(exported);
        };
        after_seq = last.seq;
        for record in &records {
            each(record)?;
            exported += 1;
        }
    }
}

/// Every record, in chain order (for tests and small trails).
pub async fn all(pool: &AnyPool) -> Result<Vec<Record>, Error> {
    let mut records = Vec::new();
    export(pool, None, |record| {
        records.push(record.clone());
        Ok(())
    })
    .await?;
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_encoding_tells_apart_fields_that_concatenate_alike() {
        let a = record_hash(1, 2, "ab", "c", "{}", "{}", GENESIS_HASH);
        let b = record_hash(1, 2, "a", "bc", "{}", "{}", GENESIS_HASH);
        assert_ne!(a, b);
    }

    #[test]
    fn a_record_hashes_every_field() {
        let base = record_hash(1, 2, "operator", "x", "{}", "{}", GENESIS_HASH);
        let other_prev = "1".repeat(64);
        // Each field changed alone, the others as in `base`.
        let changed = [
            (2, 2, "operator", "x", "{}", "{}", GENESIS_HASH),
            (1, 3, "operator", "x", "{}", "{}", GENESIS_HASH),
            (1, 2, "system", "x", "{}", "{}", GENESIS_HASH),
            (1, 2, "operator", "y", "{}", "{}", GENESIS_HASH),
            (1, 2, "operator", "x", "[]", "{}", GENESIS_HASH),
            (1, 2, "operator", "x", "{}", "[]", GENESIS_HASH),
            (1, 2, "operator", "x", "{}", "{}", other_prev.as_str()),
        ];
        for (seq, at_ms, actor, action, request, result, prev) in changed {
            let hash = record_hash(seq, at_ms, actor, action, request, result, prev);
            assert_ne!(
                base, hash,
                "{seq} {at_ms} {actor} {action} {request} {result}"
            );
        }
    }
}
