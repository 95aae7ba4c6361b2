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
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use tlog_tiles::{Hash, HashReader};

/// The receipt is the one its holder checks from outside
/// ([`crate::logcheck`]): the same type, built here.
pub use crate::logcheck::Receipt;
use crate::logcheck::Record as ReceiptRecord;

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
    let key = signer(&note, &vkeys);
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

/// Checkpoint notes whose signature was verified, with the verifier key
/// that signed each: a receipt's checkpoint is the log's latest, the same
/// for every receipt read until the next batch, so its signature is
/// verified once, not on every replay and every row of a history (issue
/// 34). Kept by the whole note (its text and signature lines), so a note
/// is never taken for another, whichever database it came from; a key is
/// only taken again while the installation still lists it.
static VERIFIED: std::sync::Mutex<Option<std::collections::HashMap<String, String>>> =
    std::sync::Mutex::new(None);

/// Notes kept verified at most; past it the memory starts again.
const VERIFIED_KEPT: usize = 4096;

/// The verifier key among `vkeys` that signed `note` (empty when none).
fn signer(note: &str, vkeys: &[String]) -> String {
    if let Ok(verified) = VERIFIED.lock()
        && let Some(vkey) = verified.as_ref().and_then(|known| known.get(note))
        && vkeys.contains(vkey)
    {
        return vkey.clone();
    }
    let listed: Vec<&str> = vkeys.iter().map(String::as_str).collect();
    #[cfg(test)]
    NOTES_VERIFIED.with(|n| n.set(n.get() + 1));
    let Ok((k, _)) = open_note(note, &listed) else {
        return String::new();
    };
    let vkey = vkeys[k].clone();
    if let Ok(mut verified) = VERIFIED.lock() {
        let known = verified.get_or_insert_with(Default::default);
        if known.len() >= VERIFIED_KEPT {
            known.clear();
        }
        known.insert(note.to_owned(), vkey.clone());
    }
    vkey
}

#[cfg(test)]
thread_local! {
    /// Signatures [`signer`] verified on this thread (the tests count them).
    static NOTES_VERIFIED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
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
    Ok(of_plays(conn, actor, &[(play_id, created_at_ms)])
        .await?
        .remove(&play_id))
}

/// A play's `buy` record, found for [`of_plays`].
struct Found {
    play_id: i64,
    idx: u64,
    origin: String,
    record: ReceiptRecord,
}

/// The receipts of the purchases of several plays of one player (`actor`),
/// `(play id, time of purchase)` each, by play id: each as [`of_leaf`]
/// gives it (against the latest cosigned checkpoint that covers it, else
/// the log's latest), with the reads shared (issue 34): the records in one
/// read (by the leaf each play names, migration 0021), then per log its checkpoints and
/// the hashes of every proof in one read each; each checkpoint's signature
/// verified once ([`signer`]). A page of history thus reads a few rows per
/// log, not eight statements and a signature per play.
pub async fn of_plays(
    conn: &mut Conn,
    actor: &str,
    plays: &[(i64, i64)],
) -> Result<HashMap<i64, Receipt>, Error> {
    let mut receipts = HashMap::new();
    if plays.is_empty() {
        return Ok(receipts);
    }
    let by_log = records_of(conn, actor, plays).await?;
    if by_log.is_empty() {
        return Ok(receipts);
    }
    let vkeys: Vec<String> = sql::query_scalar("SELECT vkey FROM log_keys ORDER BY id DESC")
        .fetch_all(&mut *conn)
        .await?;
    for (log_id, found) in by_log {
        receipts_in_log(conn, log_id, found, &vkeys, &mut receipts).await?;
    }
    Ok(receipts)
}

/// The `buy` records of `plays` (`(play id, time of purchase)` each) by
/// `actor`, by log: each play names its record's leaf (migration 0021),
/// found by the plays' ids and `trail_by_leaf`.
async fn records_of(
    conn: &mut Conn,
    actor: &str,
    plays: &[(i64, i64)],
) -> Result<BTreeMap<i64, Vec<Found>>, Error> {
    let wanted: HashMap<i64, i64> = plays.iter().copied().collect();
    let ids: Vec<[i64; 1]> = plays.iter().map(|(id, _)| [*id]).collect();
    let table = sql::json_rows(conn.is_sqlite(), 1, &[("id", sql::ColumnType::Int)]);
    let rows = sql::query_owned(format!(
        "SELECT t.log_id, t.idx, t.at_ms, t.actor, t.action, t.request, t.result, t.salt, \
         l.origin FROM plays p \
         JOIN trail t ON t.log_id = p.buy_log_id AND t.idx = p.buy_idx \
         JOIN logs l ON l.id = t.log_id \
         WHERE p.id IN (SELECT id FROM {table} AS d) AND t.action = 'buy' \
         AND t.actor = $2 AND t.log_id IS NOT NULL"
    ))
    .bind(serde_json::to_string(&ids).expect("play ids"))
    .bind(actor)
    .fetch_all(&mut *conn)
    .await?;
    let mut by_log: BTreeMap<i64, Vec<Found>> = BTreeMap::new();
    for row in &rows {
        if let Some((log_id, found)) = found_in(row, &wanted)? {
            by_log.entry(log_id).or_default().push(found);
        }
    }
    Ok(by_log)
}

/// A record read by [`records_of`], with its log's id, if it is the
/// purchase of a play asked for at its time (not a replay's record).
fn found_in(row: &sql::Row, wanted: &HashMap<i64, i64>) -> Result<Option<(i64, Found)>, Error> {
    let result: String = row.try_get("result")?;
    let Ok(value) = serde_json::from_str::<serde_json::Value>(&result) else {
        return Ok(None);
    };
    let Some(play_id) = value.get("play_id").and_then(serde_json::Value::as_i64) else {
        return Ok(None);
    };
    let at_ms: i64 = row.try_get("at_ms")?;
    let replayed = value.get("replayed") == Some(&serde_json::Value::Bool(true));
    if replayed || wanted.get(&play_id) != Some(&at_ms) {
        return Ok(None);
    }
    let found = Found {
        play_id,
        idx: row.try_get::<i64, _>("idx")? as u64,
        origin: row.try_get("origin")?,
        record: ReceiptRecord {
            at_ms,
            actor: row.try_get("actor")?,
            action: row.try_get("action")?,
            request: row.try_get("request")?,
            result,
            salt: row
                .try_get::<Option<String>, _>("salt")?
                .unwrap_or_default(),
        },
    };
    Ok(Some((row.try_get("log_id")?, found)))
}

/// The receipts of the records `found` in log `log_id`, into `receipts`:
/// each record's checkpoint chosen as [`of_leaf`] chooses it, the hashes of
/// every proof read at once.
async fn receipts_in_log(
    conn: &mut Conn,
    log_id: i64,
    found: Vec<Found>,
    vkeys: &[String],
    receipts: &mut HashMap<i64, Receipt>,
) -> Result<(), Error> {
    let chosen = checkpoints_of(conn, log_id, &found).await?;
    let asked = Wanted::default();
    for (f, checkpoint) in found.iter().zip(&chosen) {
        if let Some((size, _)) = checkpoint {
            let _ = tlog_tiles::prove_record(*size as u64, f.idx, &asked);
        }
    }
    let mut indexes = asked.0.into_inner();
    indexes.sort_unstable();
    indexes.dedup();
    let hashes = read_hashes(conn, log_id, &indexes).await?;
    for (f, checkpoint) in found.into_iter().zip(chosen) {
        let Some((size, note)) = checkpoint else {
            continue;
        };
        let proof = tlog_tiles::prove_record(size as u64, f.idx, &MapReader(&hashes))
            .map_err(|_| Error::Unavailable("the log's stored hashes do not give a proof"))?;
        let key = signer(&note, vkeys);
        receipts.insert(
            f.play_id,
            Receipt {
                origin: f.origin,
                index: f.idx,
                record: f.record,
                checkpoint: note,
                proof: proof.iter().map(|h| b64().encode(h.0)).collect(),
                key,
            },
        );
    }
    Ok(())
}

/// Each record's checkpoint (size and note), as [`of_leaf`] chooses it:
/// the latest cosigned one that covers it, else the log's latest.
async fn checkpoints_of(
    conn: &mut Conn,
    log_id: i64,
    found: &[Found],
) -> Result<Vec<Option<(i64, String)>>, Error> {
    let lowest = found.iter().map(|f| f.idx).min().unwrap_or_default();
    let cosigned = latest_cosigned(conn, log_id, lowest + 1).await?;
    let needs_latest = found.iter().any(|f| {
        cosigned
            .as_ref()
            .is_none_or(|(size, _)| f.idx + 1 > *size as u64)
    });
    let latest: Option<(i64, String)> = if needs_latest {
        sql::query_as(
            "SELECT size, note FROM checkpoints WHERE log_id = $1 ORDER BY size DESC LIMIT 1",
        )
        .bind(log_id)
        .fetch_optional(&mut *conn)
        .await?
    } else {
        None
    };
    Ok(found
        .iter()
        .map(|f| {
            let checkpoint = match &cosigned {
                Some(c) if f.idx < c.0 as u64 => Some(c),
                _ => latest.as_ref(),
            };
            checkpoint.filter(|(size, _)| f.idx < *size as u64).cloned()
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logkey::LogSeed;

    fn verified_here() -> usize {
        NOTES_VERIFIED.with(std::cell::Cell::get)
    }

    /// A checkpoint read for many receipts is verified once; a key the
    /// installation no longer lists, or a note it did not sign, is not
    /// taken from memory.
    #[test]
    fn a_checkpoint_is_verified_once() {
        let key = LogSeed::generate().named("receipts-test");
        let other = LogSeed::generate().named("receipts-test");
        let note = key.sign_checkpoint("tresor/receipts-test/server", 7, Hash([7; 32]));
        let vkeys = vec![other.vkey().to_owned(), key.vkey().to_owned()];
        let before = verified_here();
        assert_eq!(signer(&note, &vkeys), key.vkey());
        assert_eq!(signer(&note, &vkeys), key.vkey());
        assert_eq!(signer(&note, &vkeys[1..]), key.vkey());
        assert_eq!(verified_here() - before, 1, "verified once");
        assert_eq!(signer(&note, &vkeys[..1]), "", "not a listed key's");
        let forged = note.replacen("\n7\n", "\n8\n", 1);
        assert_ne!(forged, note);
        assert_eq!(signer(&forged, &vkeys), "", "an altered note is no one's");
    }
}
