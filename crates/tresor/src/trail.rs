//! The game trail (the "coffre-fort"): an append-only, hash-chained record of
//! every exchange between a player and the platform that changes or reveals
//! game or money state, and of every operator action.
//!
//! Each record is appended by the very writer job that makes the change it
//! records, so a change and its record commit or roll back together. Each
//! record carries the SHA-256 of the previous one; its own hash covers a
//! canonical encoding of all its fields, so editing, removing, inserting or
//! reordering records breaks the chain at the first record touched.

use crate::error::Error;
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
    /// 1, 2, 3 … with no gap, in the order of the chain.
    pub seq: i64,
    pub at_ms: i64,
    pub actor: String,
    pub action: String,
    /// The request's essentials, as JSON text.
    pub request: String,
    /// What the exchange did, as JSON text.
    pub result: String,
    pub prev_hash: String,
    pub hash: String,
}

impl Record {
    fn from_row(row: &sqlx::any::AnyRow) -> Result<Record, sqlx::Error> {
        Ok(Record {
            seq: row.try_get("seq")?,
            at_ms: row.try_get("at_ms")?,
            actor: row.try_get("actor")?,
            action: row.try_get("action")?,
            request: row.try_get("request")?,
            result: row.try_get("result")?,
            prev_hash: row.try_get("prev_hash")?,
            hash: row.try_get("hash")?,
        })
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

/// The chain's head as the writer holds it during one batch: the number and
/// hash of the last record appended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub seq: i64,
    pub hash: String,
}

tokio::task_local! {
    /// The head of the writer's current transaction. The writer locks the
    /// `trail_head` row as the transaction's first statement and writes it
    /// back once before committing, so a batch of N appends costs N inserts
    /// and two head statements instead of 3 N statements.
    static BATCH_HEAD: std::cell::RefCell<Head>;
}

/// Locks the head row for the rest of the transaction and reads it. Taking
/// this lock first in every writer transaction orders all writers (servers
/// and operator commands) on one row, so they never deadlock on the others.
pub async fn lock_head(conn: &mut Conn) -> Result<Head, Error> {
    let row = sql::query("UPDATE trail_head SET seq = seq WHERE id = 1 RETURNING seq, hash")
        .fetch_one(&mut *conn)
        .await?;
    Ok(Head {
        seq: row.try_get("seq")?,
        hash: row.try_get("hash")?,
    })
}

/// Writes the head back, in the transaction that locked it.
pub async fn store_head(conn: &mut Conn, head: &Head) -> Result<(), Error> {
    sql::query("UPDATE trail_head SET seq = $1, hash = $2 WHERE id = 1")
        .bind(head.seq)
        .bind(&head.hash)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Runs `future` (the writer's jobs) with `head` as the batch's head; appends
/// inside it move the head in memory. Returns the output and the final head.
pub async fn with_batch_head<F: std::future::Future>(head: Head, future: F) -> (F::Output, Head) {
    BATCH_HEAD
        .scope(std::cell::RefCell::new(head), async move {
            let output = future.await;
            (output, batch_head().expect("inside the batch scope"))
        })
        .await
}

/// The current batch's head, inside [`with_batch_head`].
pub fn batch_head() -> Option<Head> {
    BATCH_HEAD.try_with(|head| head.borrow().clone()).ok()
}

/// Puts the batch's head back (after a job's savepoint is rolled back).
pub fn reset_batch_head(head: Head) {
    let _ = BATCH_HEAD.try_with(|cell| *cell.borrow_mut() = head);
}

/// Appends a record inside the caller's writer job and returns its number.
///
/// The number and the previous hash come from the one-row `trail_head`, moved
/// in the same transaction: on PostgreSQL the row is locked, so appends from
/// several servers queue up instead of forking the chain, and a job that
/// rolls back gives its number back. Inside the writer the head row was
/// locked when the batch began and is held in memory until it commits
/// ([`with_batch_head`]); elsewhere it is read and moved here.
pub async fn append(
    conn: &mut Conn,
    at_ms: i64,
    actor: &Actor,
    action: &str,
    request: Value,
    result: Value,
) -> Result<i64, Error> {
    let in_batch = batch_head();
    let (seq, prev_hash) = match &in_batch {
        Some(head) => (head.seq + 1, head.hash.clone()),
        None => {
            let head =
                sql::query("UPDATE trail_head SET seq = seq + 1 WHERE id = 1 RETURNING seq, hash")
                    .fetch_one(&mut *conn)
                    .await?;
            (head.try_get("seq")?, head.try_get("hash")?)
        }
    };
    let actor = actor.label();
    let request = request.to_string();
    let result = result.to_string();
    let hash = record_hash(seq, at_ms, &actor, action, &request, &result, &prev_hash);
    if in_batch.is_some() {
        reset_batch_head(Head {
            seq,
            hash: hash.clone(),
        });
    } else {
        sql::query("UPDATE trail_head SET hash = $1 WHERE id = 1")
            .bind(&hash)
            .execute(&mut *conn)
            .await?;
    }
    sql::query(
        "INSERT INTO trail (seq, at_ms, actor, action, request, result, prev_hash, hash) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(seq)
    .bind(at_ms)
    .bind(actor)
    .bind(action)
    .bind(request)
    .bind(result)
    .bind(prev_hash)
    .bind(hash)
    .execute(&mut *conn)
    .await?;
    Ok(seq)
}

/// The record that follows `head`: its number, previous hash and hash.
/// The hot batch chains its records in memory with this, then inserts them
/// at once ([`insert_records`]).
pub fn chain(
    head: &Head,
    at_ms: i64,
    actor: &Actor,
    action: &str,
    request: &Value,
    result: &Value,
) -> Record {
    let seq = head.seq + 1;
    let actor = actor.label();
    let request = request.to_string();
    let result = result.to_string();
    let hash = record_hash(seq, at_ms, &actor, action, &request, &result, &head.hash);
    Record {
        seq,
        at_ms,
        actor,
        action: action.to_owned(),
        request,
        result,
        prev_hash: head.hash.clone(),
        hash,
    }
}

/// Inserts records chained in memory, in one statement.
pub async fn insert_records(
    conn: &mut Conn,
    sqlite: bool,
    records: &[Record],
) -> Result<(), Error> {
    if records.is_empty() {
        return Ok(());
    }
    use sql::ColumnType::{Int, Text};
    let table = sql::json_rows(
        sqlite,
        1,
        &[
            ("seq", Int),
            ("at_ms", Int),
            ("actor", Text),
            ("action", Text),
            ("request", Text),
            ("result", Text),
            ("prev_hash", Text),
            ("hash", Text),
        ],
    );
    let rows: Vec<_> = records
        .iter()
        .map(|r| {
            (
                r.seq,
                r.at_ms,
                &r.actor,
                &r.action,
                &r.request,
                &r.result,
                &r.prev_hash,
                &r.hash,
            )
        })
        .collect();
    sql::query(&format!(
        "INSERT INTO trail (seq, at_ms, actor, action, request, result, prev_hash, hash) \
         SELECT seq, at_ms, actor, action, request, result, prev_hash, hash FROM {table} AS d"
    ))
    .bind(serde_json::to_string(&rows).expect("records serialise"))
    .execute(conn)
    .await?;
    Ok(())
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
    const COLUMNS: &str = "seq, at_ms, actor, action, request, result, prev_hash, hash";
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
    Ok(rows
        .iter()
        .map(Record::from_row)
        .collect::<Result<_, _>>()?)
}

/// Checks the whole chain, calling `progress` with the number of records
/// checked so far. Names the first record that does not hold.
pub async fn verify(pool: &AnyPool, mut progress: impl FnMut(u64)) -> Result<Verdict, Error> {
    let mut expected_seq = 1;
    let mut prev_hash = GENESIS_HASH.to_owned();
    loop {
        let records = page(pool, expected_seq - 1, None).await?;
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
        assert_ne!(
            base,
            record_hash(2, 2, "operator", "x", "{}", "{}", GENESIS_HASH)
        );
        assert_ne!(
            base,
            record_hash(1, 3, "operator", "x", "{}", "{}", GENESIS_HASH)
        );
        assert_ne!(
            base,
            record_hash(1, 2, "system", "x", "{}", "{}", GENESIS_HASH)
        );
        assert_ne!(
            base,
            record_hash(1, 2, "operator", "y", "{}", "{}", GENESIS_HASH)
        );
        assert_ne!(
            base,
            record_hash(1, 2, "operator", "x", "[]", "{}", GENESIS_HASH)
        );
        assert_ne!(
            base,
            record_hash(1, 2, "operator", "x", "{}", "[]", GENESIS_HASH)
        );
        assert_ne!(
            base,
            record_hash(1, 2, "operator", "x", "{}", "{}", &"1".repeat(64))
        );
    }
}
