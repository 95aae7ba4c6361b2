//! A receipt (docs/AUDIT.md, "Receipts"): one record with its place in its
//! writer's log, a signed checkpoint that includes it and the inclusion
//! proof (RFC 9162 §2.1.3.2) — what a player keeps to show, without anyone's
//! help, that the play is in the public log. Verify it with the key you
//! pinned yourself, never with the receipt's own `key` alone.

use super::Record;
use super::audit::open_note;
use super::leaf::Leaf;
use super::log::{Head, MapReader, read_hashes};
use crate::error::Error;
use crate::store::{Conn, sql};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use tlog_tiles::{Hash, HashReader};

/// The record's fields a receipt carries (its leaf with origin and index).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiptRecord {
    pub at_ms: i64,
    pub actor: String,
    pub action: String,
    pub request: String,
    pub result: String,
    pub salt: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipt {
    pub origin: String,
    pub index: u64,
    pub record: ReceiptRecord,
    /// The signed note of a checkpoint whose tree includes the record.
    pub checkpoint: String,
    /// The inclusion proof, hashes in base64.
    pub proof: Vec<String>,
    /// The verifier key that signed the checkpoint (informative).
    pub key: String,
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

impl Receipt {
    /// The receipt of a record appended in this transaction, before its
    /// proof and checkpoint exist.
    pub fn pending(record: &Record, origin: &str) -> Receipt {
        Receipt {
            origin: origin.to_owned(),
            index: record.idx.unwrap_or_default() as u64,
            record: ReceiptRecord {
                at_ms: record.at_ms,
                actor: record.actor.clone(),
                action: record.action.clone(),
                request: record.request.clone(),
                result: record.result.clone(),
                salt: record.salt.clone().unwrap_or_default(),
            },
            checkpoint: String::new(),
            proof: Vec::new(),
            key: String::new(),
        }
    }

    /// The record's leaf.
    pub fn leaf(&self) -> Leaf<'_> {
        Leaf {
            origin: &self.origin,
            idx: self.index,
            at_ms: self.record.at_ms,
            actor: &self.record.actor,
            action: &self.record.action,
            request: &self.record.request,
            result: &self.record.result,
            salt: &self.record.salt,
        }
    }

    /// Checks the receipt against `vkey` (the verifier's own): the
    /// checkpoint's signature, its origin, and the proof of the leaf in it.
    pub fn check(&self, vkey: &str) -> Result<(), String> {
        let (_, checkpoint) = open_note(&self.checkpoint, &[vkey])?;
        if checkpoint.origin() != self.origin {
            return Err("the checkpoint is of another log".to_owned());
        }
        let proof = self
            .proof
            .iter()
            .map(|h| {
                let bytes = b64().decode(h).map_err(|_| "a proof hash is not base64")?;
                Ok(Hash(
                    bytes
                        .try_into()
                        .map_err(|_| "a proof hash is not 32 bytes")?,
                ))
            })
            .collect::<Result<Vec<Hash>, &str>>()?;
        tlog_tiles::check_record(
            &proof,
            checkpoint.size(),
            *checkpoint.hash(),
            self.index,
            self.leaf().hash(),
        )
        .map_err(|_| "the proof does not put the record in the checkpoint's tree".to_owned())
    }

    /// In the writer, before the transaction's checkpoint is signed: the
    /// proof against the head's tree, from memory.
    pub fn prove_in(&mut self, head: &Head) -> bool {
        match head.prove(self.index) {
            Some(proof) => {
                self.proof = proof.iter().map(|h| b64().encode(h.0)).collect();
                true
            }
            None => false,
        }
    }
}

/// Records the indexes `tlog_tiles` asks for, answering none.
#[derive(Default)]
struct Wanted(RefCell<Vec<u64>>);

impl HashReader for Wanted {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<Hash>, tlog_tiles::Error> {
        self.0.borrow_mut().extend_from_slice(indexes);
        Err(tlog_tiles::Error::IndexesNotInTree)
    }
}

/// The receipt of leaf `idx` of log `log_id`, against the latest checkpoint
/// witnesses cosigned that covers it (the note with their lines), else the
/// log's latest; `None` when there is no such record or no checkpoint yet.
pub async fn of_leaf(conn: &mut Conn, log_id: i64, idx: u64) -> Result<Option<Receipt>, Error> {
    let record = sql::query(
        "SELECT t.at_ms, t.actor, t.action, t.request, t.result, t.salt, l.origin \
         FROM trail t JOIN logs l ON l.id = t.log_id WHERE t.log_id = $1 AND t.idx = $2",
    )
    .bind(log_id)
    .bind(idx as i64)
    .fetch_optional(conn)
    .await?;
    let Some(record) = record else {
        return Ok(None);
    };
    // The latest checkpoint witnesses cosigned, if one covers the record;
    // else the latest signed one.
    let latest =
        match latest_cosigned(conn, log_id, idx + 1).await? {
            Some(cosigned) => Some(cosigned),
            None => sql::query_as(
                "SELECT size, note FROM checkpoints WHERE log_id = $1 ORDER BY size DESC LIMIT 1",
            )
            .bind(log_id)
            .fetch_optional(&mut *conn)
            .await?,
        };
    let Some((size, note)) = latest else {
        return Ok(None);
    };
    let size = size as u64;
    if idx >= size {
        return Ok(None);
    }
    let wanted = Wanted::default();
    let _ = tlog_tiles::prove_record(size, idx, &wanted);
    let hashes = read_hashes(conn, log_id, &wanted.0.into_inner()).await?;
    let proof = tlog_tiles::prove_record(size, idx, &MapReader(&hashes))
        .map_err(|_| Error::Unavailable("the log's stored hashes do not give a proof"))?;
    let vkeys: Vec<String> = sql::query_scalar("SELECT vkey FROM log_keys ORDER BY id DESC")
        .fetch_all(conn)
        .await?;
    let listed: Vec<&str> = vkeys.iter().map(String::as_str).collect();
    let key = open_note(&note, &listed)
        .map(|(k, _)| vkeys[k].clone())
        .unwrap_or_default();
    Ok(Some(Receipt {
        origin: record.try_get("origin")?,
        index: idx,
        record: ReceiptRecord {
            at_ms: record.try_get("at_ms")?,
            actor: record.try_get("actor")?,
            action: record.try_get("action")?,
            request: record.try_get("request")?,
            result: record.try_get("result")?,
            salt: record
                .try_get::<Option<String>, _>("salt")?
                .unwrap_or_default(),
        },
        checkpoint: note,
        proof: proof.iter().map(|h| b64().encode(h.0)).collect(),
        key,
    }))
}

/// The latest checkpoint of log `log_id` of at least `min_size` records
/// that witnesses cosigned: its size and its note with their cosignature
/// lines appended (C2SP: extra signature lines), or `None`.
pub async fn latest_cosigned(
    conn: &mut Conn,
    log_id: i64,
    min_size: u64,
) -> Result<Option<(i64, String)>, Error> {
    let size: Option<i64> =
        sql::query_scalar("SELECT MAX(size) FROM cosignatures WHERE log_id = $1 AND size >= $2")
            .bind(log_id)
            .bind(min_size as i64)
            .fetch_one(&mut *conn)
            .await?;
    let Some(size) = size else {
        return Ok(None);
    };
    let note: Option<String> =
        sql::query_scalar("SELECT note FROM checkpoints WHERE log_id = $1 AND size = $2")
            .bind(log_id)
            .bind(size)
            .fetch_optional(&mut *conn)
            .await?;
    let Some(mut note) = note else {
        return Ok(None);
    };
    let lines: Vec<String> = sql::query_scalar(
        "SELECT line FROM cosignatures WHERE log_id = $1 AND size = $2 ORDER BY witness_vkey",
    )
    .bind(log_id)
    .bind(size)
    .fetch_all(&mut *conn)
    .await?;
    for line in lines {
        note.push_str(&line);
        note.push('\n');
    }
    Ok(Some((size, note)))
}

/// The receipt of a play's purchase (its `buy` record, not a replay's),
/// as [`of_leaf`] gives it. The play names its record's leaf (migration
/// 0021), found by the play's id and `trail_by_leaf`; the record must be
/// that play's purchase by `actor`.
pub async fn of_play(
    conn: &mut Conn,
    actor: &str,
    play_id: i64,
    created_at_ms: i64,
) -> Result<Option<Receipt>, Error> {
    let leaf: Option<(i64, i64)> = sql::query_as(
        "SELECT t.log_id, t.idx FROM plays p \
         JOIN trail t ON t.log_id = p.buy_log_id AND t.idx = p.buy_idx \
         WHERE p.id = $1 AND t.at_ms = $2 AND t.action = 'buy' AND t.actor = $3 \
         AND t.result LIKE $4 AND t.result NOT LIKE '%\"replayed\":true%'",
    )
    .bind(play_id)
    .bind(created_at_ms)
    .bind(actor)
    .bind(format!("%\"play_id\":{play_id},%"))
    .fetch_optional(conn)
    .await?;
    match leaf {
        Some((log_id, idx)) => of_leaf(conn, log_id, idx as u64).await,
        None => Ok(None),
    }
}
