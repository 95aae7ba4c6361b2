//! One Merkle log per writer (docs/AUDIT.md, "The log"). A writer's
//! transaction locks its own `logs` row, appends leaves in memory (the
//! stored hashes of Go's sumdb/tlog, computed by `tlog_tiles` over the
//! log's right edge, which the writer keeps between transactions), then
//! writes the new stored hashes, the new size and a signed checkpoint before
//! COMMIT. No row is written by every transaction of every writer: the
//! writer's head also names its own stakes and prizes accounts
//! (`store::writer_accounts`), found or made when it opens its log.

use super::leaf::{Leaf, hash_hex, new_salt};
use super::{Actor, Record};
use crate::error::Error;
use crate::logcheck::{VerifierKey, open_checkpoint};
use crate::store::writer_accounts::{self, WriterAccounts};
use crate::store::{Conn, sql};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use tlog_tiles::{Hash, HashReader, RecordProof};

/// A log's right edge as its writer keeps it between transactions: the
/// stored hashes of the complete subtrees that make up the tree of `size`.
#[derive(Debug, Clone)]
pub struct Edge {
    log_id: i64,
    origin: Arc<str>,
    accounts: WriterAccounts,
    size: u64,
    hashes: BTreeMap<u64, Hash>,
}

/// The log as one transaction of its writer moves it: its right edge when
/// the transaction began, and every stored hash appended since.
#[derive(Debug, Clone)]
pub struct Head {
    pub log_id: i64,
    pub origin: Arc<str>,
    /// The writer's own stakes and prizes accounts, which its batches move.
    pub accounts: WriterAccounts,
    /// Leaves when the transaction began.
    start: u64,
    /// Leaves now.
    pub size: u64,
    hashes: BTreeMap<u64, Hash>,
}

/// Stored hashes held in memory, as `tlog_tiles` reads them.
#[derive(Debug)]
pub struct MapReader<'a>(pub &'a BTreeMap<u64, Hash>);

impl HashReader for MapReader<'_> {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<Hash>, tlog_tiles::Error> {
        indexes
            .iter()
            .map(|i| {
                self.0
                    .get(i)
                    .copied()
                    .ok_or(tlog_tiles::Error::IndexesNotInTree)
            })
            .collect()
    }
}

impl Head {
    /// Appends the record as the log's next leaf (with a fresh salt) and
    /// returns it, ready to insert.
    pub fn chain(
        &mut self,
        at_ms: i64,
        actor: &Actor,
        action: &str,
        request: &Value,
        result: &Value,
    ) -> Record {
        let actor = actor.label();
        let request = request.to_string();
        let result = result.to_string();
        let salt = new_salt();
        let idx = self.size;
        let hash = Leaf {
            origin: &self.origin,
            idx,
            at_ms,
            actor: &actor,
            action,
            request: &request,
            result: &result,
            salt: &salt,
        }
        .hash();
        let stored = tlog_tiles::stored_hashes_for_record_hash(idx, hash, &MapReader(&self.hashes))
            .expect("the log's right edge is in memory");
        let first = tlog_tiles::stored_hash_index(0, idx);
        for (offset, stored) in (0u64..).zip(stored) {
            self.hashes.insert(first + offset, stored);
        }
        self.size += 1;
        Record {
            seq: 0,
            at_ms,
            actor,
            action: action.to_owned(),
            request,
            result,
            prev_hash: String::new(),
            hash: hash_hex(&hash),
            log_id: Some(self.log_id),
            idx: Some(idx as i64),
            salt: Some(salt),
        }
    }

    /// Whether this transaction appended to the log.
    pub fn appended(&self) -> bool {
        self.size > self.start
    }

    /// The tree's root at its current size.
    pub fn root(&self) -> Hash {
        tlog_tiles::tree_hash(self.size, &MapReader(&self.hashes))
            .expect("the log's right edge is in memory")
    }

    /// The inclusion proof of leaf `idx`, appended by this transaction, in
    /// the tree of the current size, from memory.
    pub fn prove(&self, idx: u64) -> Option<RecordProof> {
        if idx < self.start || idx >= self.size {
            return None;
        }
        tlog_tiles::prove_record(self.size, idx, &MapReader(&self.hashes)).ok()
    }

    /// The right edge at the current size, to keep for the next transaction.
    pub fn into_edge(self) -> Edge {
        let keep = edge_indexes(self.size);
        let hashes = keep
            .into_iter()
            .filter_map(|i| self.hashes.get(&i).map(|h| (i, *h)))
            .collect();
        Edge {
            log_id: self.log_id,
            origin: self.origin,
            accounts: self.accounts,
            size: self.size,
            hashes,
        }
    }
}

/// The stored hashes of the complete subtrees that make up a tree of `size`
/// leaves: all that appending, the root and the proofs of new leaves read.
fn edge_indexes(size: u64) -> Vec<u64> {
    if size == 0 {
        Vec::new()
    } else {
        tlog_tiles::sub_tree_index(0, size, Vec::new())
    }
}

/// The writer's log: its name, and the right edge it kept.
#[derive(Debug, Default)]
pub struct Writer {
    pub name: Arc<str>,
    pub edge: Option<Edge>,
}

/// Locks the log of `writer` for the rest of the transaction (creating it
/// the first time), and returns its head. The right edge kept from the last
/// transaction is used when the log has not moved since (another process
/// with the same writer name may have appended: then it is read again).
/// Without a kept edge (the writer's first transaction, or after a rollback)
/// the writer's stakes and prizes accounts are found, or made.
///
/// With `signer` (the verifier key the writer signs checkpoints with), a
/// log read from the database is first checked against its last signed
/// checkpoint ([`check_signed`]): a writer never extends a log that someone
/// without the key has rewritten. When another key signed that checkpoint
/// (a rotation, seen from this log), its size is recorded as the last that
/// key signed of this log ([`super::retired`]).
pub async fn lock(
    conn: &mut Conn,
    writer: &str,
    kept: Option<Edge>,
    now_ms: i64,
    signer: Option<&str>,
) -> Result<Head, Error> {
    let row = match sql::query(LOCK).bind(writer).fetch_optional(conn).await? {
        Some(row) => row,
        None => created(conn, writer, now_ms).await?,
    };
    head_of(conn, writer, &row, kept, now_ms, signer).await
}

/// Locks the log's row and reads it.
const LOCK: &str = "UPDATE logs SET size = size WHERE writer = $1 RETURNING id, origin, size";

/// Makes the log of `writer` and locks its row.
async fn created(conn: &mut Conn, writer: &str, now_ms: i64) -> Result<sql::Row, Error> {
    create(conn, writer, now_ms).await?;
    sql::query(LOCK).bind(writer).fetch_one(conn).await
}

/// The head of the log whose row, locked, is `row`, as [`lock`] says.
async fn head_of(
    conn: &mut Conn,
    writer: &str,
    row: &sql::Row,
    kept: Option<Edge>,
    now_ms: i64,
    signer: Option<&str>,
) -> Result<Head, Error> {
    let log_id: i64 = row.try_get("id")?;
    let origin: String = row.try_get("origin")?;
    let size = row.try_get::<i64, _>("size")? as u64;
    let accounts = match &kept {
        Some(edge) if edge.log_id == log_id => edge.accounts,
        _ => writer_accounts::find_or_create(conn, writer, log_id).await?,
    };
    let hashes = match kept {
        Some(edge) if edge.log_id == log_id && edge.size == size => edge.hashes,
        _ => {
            let hashes = read_hashes(conn, log_id, &edge_indexes(size)).await?;
            if let Some(signer) = signer {
                let last = check_signed(conn, log_id, &origin, size, &hashes, true).await?;
                if let Some(other) = last.filter(|vkey| vkey != signer) {
                    super::retired::record(conn, &other, log_id, size).await?;
                }
            }
            hashes
        }
    };
    let mut head = Head {
        log_id,
        origin: Arc::from(origin),
        accounts,
        start: size,
        size,
        hashes,
    };
    if size == 0 {
        seal_v1(conn, &mut head, now_ms).await?;
    }
    Ok(head)
}

/// A log whose lock was sent ahead ([`lock_ahead`]) and is not read yet:
/// what [`settle`] needs to finish what [`lock`] does.
#[derive(Debug)]
pub struct Ahead {
    writer: Arc<str>,
    log_id: i64,
    size: u64,
    now_ms: i64,
    signer: Option<String>,
}

/// As [`lock`], with the log's lock put in front of the transaction's next
/// message (on the writer's PostgreSQL connection: the batch's reads) rather
/// than sent alone, when the writer kept the log's right edge and the log
/// is not empty: the head returned is then the one the kept edge makes,
/// to be confirmed by [`settle`] before anything decides on it. Otherwise
/// (SQLite, a first transaction, after a rollback, an empty log) it is
/// [`lock`] itself, and there is nothing to settle.
pub async fn lock_ahead(
    conn: &mut Conn,
    writer: &Arc<str>,
    kept: Option<Edge>,
    now_ms: i64,
    signer: Option<&str>,
) -> Result<(Head, Option<Ahead>), Error> {
    match kept {
        Some(edge) if edge.size > 0 && conn.lead(sql::query(LOCK).bind(&**writer)) => {
            let ahead = Ahead {
                writer: writer.clone(),
                log_id: edge.log_id,
                size: edge.size,
                now_ms,
                signer: signer.map(str::to_owned),
            };
            let head = Head {
                log_id: edge.log_id,
                origin: edge.origin,
                accounts: edge.accounts,
                start: edge.size,
                size: edge.size,
                hashes: edge.hashes,
            };
            Ok((head, Some(ahead)))
        }
        kept => Ok((lock(conn, writer, kept, now_ms, signer).await?, None)),
    }
}

/// Reads the lock sent ahead ([`lock_ahead`]) and returns the log's head:
/// `head` (the kept edge's, nothing appended yet) when the row locked is
/// the log it was taken from, at the same size and origin; otherwise
/// exactly what [`lock`] makes of that row with the kept edge (another
/// process of the same name appended: the log is read again and checked
/// against its last signed checkpoint), or of a log made anew when its row
/// is gone.
pub async fn settle(conn: &mut Conn, head: Head, ahead: Ahead) -> Result<Head, Error> {
    debug_assert!(!head.appended(), "settled before anything is appended");
    let Ahead {
        writer,
        log_id,
        size,
        now_ms,
        signer,
    } = ahead;
    let row = match conn.led().await?.into_iter().next() {
        Some(row) => row,
        None => created(conn, &writer, now_ms).await?,
    };
    let same = row.try_get::<i64, _>("id")? == log_id
        && row.try_get::<i64, _>("size")? as u64 == size
        && *row.try_get::<String, _>("origin")? == *head.origin;
    if same {
        return Ok(head);
    }
    let kept = Some(head.into_edge());
    head_of(conn, &writer, &row, kept, now_ms, signer.as_deref()).await
}

/// Checks a log as its writer finds it in the database against its last
/// signed checkpoint: the checkpoint covers every record (a transaction that
/// appends signs the checkpoint of its records before it commits, so records
/// past the last checkpoint were written by someone without the key), its
/// signature is by a key of the installation (`log_keys`), and its root is
/// the root of the log's stored hashes. `edge` holds the stored hashes of
/// the tree of `size` (its right edge). `locked`: the caller holds the log's
/// row, so no checkpoint past `size` can be committing (one past it means
/// records were cut off). Costs two reads and one signature
/// check, when a writer takes its log: at its first transaction, after a
/// rollback, or when another process of the same name appended. Returns the
/// verifier key that signed the last checkpoint (none for an empty log).
pub async fn check_signed(
    conn: &mut Conn,
    log_id: i64,
    origin: &str,
    size: u64,
    edge: &BTreeMap<u64, Hash>,
    locked: bool,
) -> Result<Option<String>, Error> {
    if size == 0 {
        return Ok(None);
    }
    let refuse = |why: String| {
        Error::LogDoesNotHold(format!(
            "the log {origin} does not hold: {why}; nothing more is written to it. \
             Run `tresor audit verify` to find the record that changed"
        ))
    };
    if locked {
        let longer: Option<i64> = sql::query_scalar(
            "SELECT size FROM checkpoints WHERE log_id = $1 AND size > $2 LIMIT 1",
        )
        .bind(log_id)
        .bind(size as i64)
        .fetch_optional(&mut *conn)
        .await?;
        if let Some(signed) = longer {
            return Err(refuse(format!(
                "it holds {size} records, fewer than a checkpoint signed ({signed})"
            )));
        }
    }
    let last: Option<(i64, String)> = sql::query_as(
        "SELECT size, note FROM checkpoints WHERE log_id = $1 AND size <= $2 \
         ORDER BY size DESC LIMIT 1",
    )
    .bind(log_id)
    .bind(size as i64)
    .fetch_optional(&mut *conn)
    .await?;
    let Some((signed_size, note)) = last else {
        return Err(refuse(format!(
            "its {size} records are covered by no signed checkpoint"
        )));
    };
    let signed_size = signed_size as u64;
    if signed_size < size {
        return Err(refuse(format!(
            "its records {signed_size} to {} are covered by no signed checkpoint \
             (written without the log's key)",
            size - 1
        )));
    }
    let vkeys: Vec<String> = sql::query_scalar("SELECT vkey FROM log_keys ORDER BY id")
        .fetch_all(&mut *conn)
        .await?;
    let (signer, checkpoint) = vkeys
        .iter()
        .filter_map(|vkey| VerifierKey::parse(vkey).ok())
        .find_map(|key| Some((key.as_str().to_owned(), open_checkpoint(&note, &key).ok()?)))
        .ok_or_else(|| {
            refuse(format!(
                "its last checkpoint (size {size}) is signed by no key of the installation"
            ))
        })?;
    let root = tlog_tiles::tree_hash(size, &MapReader(edge))
        .map_err(|_| refuse("its stored hashes are incomplete".to_owned()))?;
    if checkpoint.origin != origin || checkpoint.size != size || checkpoint.root != root {
        return Err(refuse(format!(
            "its last checkpoint (size {size}) names another tree than its stored hashes"
        )));
    }
    Ok(Some(signer))
}

/// Every log of the database checked as [`check_signed`] does: what a
/// command that writes runs before it starts (`tresor serve` and the
/// others), so that a rewritten log stops the installation at once. Outside
/// the writers' transactions: another server may be appending meanwhile, so
/// a checkpoint past the size read is not taken for a cut.
pub async fn check_all_signed(conn: &mut Conn) -> Result<(), Error> {
    let logs: Vec<(i64, String, i64)> =
        sql::query_as("SELECT id, origin, size FROM logs ORDER BY id")
            .fetch_all(&mut *conn)
            .await?;
    for (log_id, origin, size) in logs {
        let size = size as u64;
        let edge = read_hashes(conn, log_id, &edge_indexes(size)).await?;
        check_signed(conn, log_id, &origin, size, &edge, false).await?;
    }
    Ok(())
}

/// Makes the log of `writer`: origin `tresor/<installation id>/<writer>`.
async fn create(conn: &mut Conn, writer: &str, now_ms: i64) -> Result<(), Error> {
    let installation = installation_id(conn).await?;
    sql::query(
        "INSERT INTO logs (writer, origin, size, created_ms) VALUES ($1, $2, 0, $3) \
         ON CONFLICT DO NOTHING",
    )
    .bind(writer)
    .bind(format!("tresor/{installation}/{writer}"))
    .bind(now_ms)
    .execute(conn)
    .await?;
    Ok(())
}

/// The installation's id (migration 0012).
pub async fn installation_id(conn: &mut Conn) -> Result<String, Error> {
    Ok(
        sql::query_scalar::<String>("SELECT value FROM settings WHERE key = 'installation_id'")
            .fetch_optional(conn)
            .await?
            .unwrap_or_default(),
    )
}

/// In a database that holds v1 records, the first leaf of the first log is
/// `trail_v1_sealed`, whose request names the v1 chain's length and final
/// hash: the signed log then covers the whole v1 chain.
async fn seal_v1(conn: &mut Conn, head: &mut Head, now_ms: i64) -> Result<(), Error> {
    // A database made with logs has no v1 record, and never will (nobody
    // writes trail_head any more): its writers' first transactions need not
    // queue on trail_head's row.
    let v1_records: Option<i64> = sql::query_scalar("SELECT seq FROM trail_head WHERE id = 1")
        .fetch_optional(&mut *conn)
        .await?;
    if v1_records.unwrap_or(0) == 0 {
        return Ok(());
    }
    let v1 = sql::query("UPDATE trail_head SET seq = seq WHERE id = 1 RETURNING seq, hash")
        .fetch_optional(conn)
        .await?;
    let Some(v1) = v1 else {
        return Ok(());
    };
    let records: i64 = v1.try_get("seq")?;
    let head_hash: String = v1.try_get("hash")?;
    if records == 0 {
        return Ok(());
    }
    let sealed: i64 =
        sql::query_scalar("SELECT COUNT(*) FROM trail WHERE action = 'trail_v1_sealed'")
            .fetch_one(conn)
            .await?;
    if sealed > 0 {
        return Ok(());
    }
    let record = head.chain(
        now_ms,
        &Actor::System,
        "trail_v1_sealed",
        &json!({"records": records, "head_hash": head_hash}),
        &json!({}),
    );
    let sqlite = conn.is_sqlite();
    super::insert_records(conn, sqlite, &[record]).await
}

/// Stored hashes of a log by index, from the database (its tiles, or
/// `log_hashes` for those stored before them: [`super::tiles`]).
pub async fn read_hashes(
    conn: &mut Conn,
    log_id: i64,
    indexes: &[u64],
) -> Result<BTreeMap<u64, Hash>, Error> {
    let hashes = super::tiles::read(conn, log_id, indexes).await?;
    if indexes.iter().any(|i| !hashes.contains_key(i)) {
        return Err(Error::Unavailable(
            "the log's stored hashes are missing: run tresor audit verify",
        ));
    }
    Ok(hashes)
}

/// Writes what the transaction appended: the new stored hashes (by tile), the log's
/// size and, with a key, the signed checkpoint of the new tree, held back
/// with the batch's other writes until COMMIT (`Query::defer`). Returns the
/// right edge to keep and the checkpoint's note.
pub async fn store(
    conn: &mut Conn,
    head: Head,
    key: Option<&crate::logkey::LogKey>,
    now_ms: i64,
) -> Result<(Edge, Option<String>), Error> {
    if !head.appended() {
        return Ok((head.into_edge(), None));
    }
    let first = tlog_tiles::stored_hash_index(0, head.start);
    super::tiles::append(conn, head.log_id, head.hashes.range(first..)).await?;
    sql::query("UPDATE logs SET size = $1 WHERE id = $2")
        .bind(head.size as i64)
        .bind(head.log_id)
        .defer(conn)
        .await?;
    let note = match key {
        Some(key) => {
            let note = key.sign_checkpoint(&head.origin, head.size, head.root());
            sql::query(
                "INSERT INTO checkpoints (log_id, size, at_ms, note) VALUES ($1, $2, $3, $4)",
            )
            .bind(head.log_id)
            .bind(head.size as i64)
            .bind(now_ms)
            .bind(note.clone())
            .defer(conn)
            .await?;
            Some(note)
        }
        None => None,
    };
    Ok((head.into_edge(), note))
}
