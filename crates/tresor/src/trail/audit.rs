//! The audit of the trail (`tresor audit verify`, docs/AUDIT.md): the v1
//! chain as before, then every writer's log recomputed from its records —
//! leaf hashes, stored hashes, the tree at every size a signed checkpoint
//! names — and checked against every checkpoint kept in the database and
//! every one given from outside (a monitor's copy). Signatures are checked
//! with the installation's keys: the first one pinned by the verifier when
//! given, each later one only once a rotation record that announces it is
//! covered by a checkpoint signed with the key before (and a key rotated out
//! signs nothing later in the log that announced its rotation). Nothing the
//! database says of itself (sizes, stored hashes, a head) is trusted alone.

use super::replay::{Log, Signed, replay, seq_of};
use super::{Verdict, verify_v1};
use crate::error::Error;
use signed_note::{Note, StandardVerifier, Verifier, VerifierList};
use sqlx::{AnyPool, Row};
use std::collections::HashMap;
use tlog_tiles::Checkpoint;

/// What the verifier brings from outside the database.
#[derive(Debug, Clone, Default)]
pub struct Trust {
    /// The installation's first key (vkey), pinned (`--key`).
    pub key: Option<String>,
    /// Signed checkpoints kept outside (`--checkpoint FILE`), as note texts.
    pub checkpoints: Vec<String>,
}

/// A key the installation lists.
struct Key {
    vkey: String,
    /// The rotation record that announced it (none for the first).
    announced: Option<(i64, u64)>,
}

fn broken(seq: i64, reason: String) -> Result<Verdict, Error> {
    Ok(Verdict::Broken { seq, reason })
}

/// Verifies the v1 chain, then every log (see the module's text).
pub async fn verify_with(
    pool: &AnyPool,
    trust: &Trust,
    mut progress: impl FnMut(u64),
) -> Result<Verdict, Error> {
    let v1_records = match verify_v1(pool, &mut progress).await? {
        Verdict::Intact { records, head_hash } => {
            if let Some(broken) = check_v1_seal(pool, records, &head_hash).await? {
                return Ok(broken);
            }
            records
        }
        broken => return Ok(broken),
    };
    let keys = match keys(pool, trust).await? {
        Ok(keys) => keys,
        Err(reason) => return broken(0, reason),
    };
    let logs = read_logs(pool).await?;
    let mut signed = match signed_checkpoints(pool, trust, &keys, &logs).await? {
        Ok(signed) => signed,
        Err(reason) => return broken(0, reason),
    };
    // Each log, recomputed, against its checkpoints.
    let mut rotations: HashMap<(i64, u64), String> = HashMap::new();
    let mut sizes = HashMap::new();
    let mut records = v1_records;
    for log in &logs {
        let checkpoints = signed.remove(&log.id).unwrap_or_default();
        match replay(pool, log, &checkpoints, &mut rotations, &mut progress).await? {
            Ok(size) => {
                sizes.insert(log.id, (size, checkpoints));
                records += size as i64;
            }
            Err(verdict) => return Ok(verdict),
        }
    }
    let found = Found {
        keys: &keys,
        logs: &logs,
        sizes: &sizes,
        rotations: &rotations,
    };
    let trusted = match found.trusted_keys(pool).await? {
        Ok(trusted) => trusted,
        Err(verdict) => return Ok(verdict),
    };
    if let Some(verdict) = found.uncovered(pool, &trusted).await? {
        return Ok(verdict);
    }
    let head_hash: Option<String> =
        sqlx::query_scalar("SELECT hash FROM trail ORDER BY seq DESC LIMIT 1")
            .fetch_optional(pool)
            .await?;
    Ok(Verdict::Intact {
        records,
        head_hash: head_hash.unwrap_or_else(|| super::GENESIS_HASH.to_owned()),
    })
}

/// The logs as the database lists them.
async fn read_logs(pool: &AnyPool) -> Result<Vec<Log>, Error> {
    let rows = sqlx::query("SELECT id, writer, origin, size FROM logs ORDER BY id")
        .fetch_all(pool)
        .await?;
    let logs = rows
        .iter()
        .map(|row| -> Result<Log, sqlx::Error> {
            Ok(Log {
                id: row.try_get("id")?,
                writer: row.try_get("writer")?,
                origin: row.try_get("origin")?,
                size: row.try_get::<i64, _>("size")? as u64,
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(logs)
}

/// What the replay of every log found: the keys listed, each log's size
/// and checkpoints, and the keys the rotation records announce.
struct Found<'a> {
    keys: &'a [Key],
    logs: &'a [Log],
    sizes: &'a HashMap<i64, (u64, Vec<Signed>)>,
    rotations: &'a HashMap<(i64, u64), String>,
}

impl Found<'_> {
    /// Which keys are trusted: the first; then each one whose rotation
    /// record is covered by a checkpoint signed with the key before.
    async fn trusted_keys(&self, pool: &AnyPool) -> Result<Result<Vec<bool>, Verdict>, Error> {
        let keys = self.keys;
        let broken = |seq: i64, reason: String| Ok(Err(Verdict::Broken { seq, reason }));
        let mut trusted = vec![false; keys.len()];
        if !keys.is_empty() {
            trusted[0] = true;
        }
        for k in 1..keys.len() {
            let key = &keys[k];
            let Some((log_id, idx)) = key.announced else {
                return broken(
                    0,
                    format!("the key {} was announced by no record", key.vkey),
                );
            };
            if self.rotations.get(&(log_id, idx)) != Some(&key.vkey) {
                return broken(
                    seq_of(pool, log_id, idx).await?,
                    format!(
                        "the key {} is not the one the rotation record (log {log_id}, leaf \
                         {idx}) announces",
                        key.vkey
                    ),
                );
            }
            let covered = self.sizes.get(&log_id).is_some_and(|(_, checkpoints)| {
                checkpoints
                    .iter()
                    .any(|c| c.size > idx && c.key == k - 1 && trusted[k - 1])
            });
            if !covered {
                return broken(
                    seq_of(pool, log_id, idx).await?,
                    format!(
                        "the key {} is announced by a record (log {log_id}, leaf {idx}) that no \
                         checkpoint signed with the key before it covers",
                        key.vkey
                    ),
                );
            }
            trusted[k] = true;
            if let Some(verdict) = self.rotated_out_signs_late(pool, log_id, idx, k).await? {
                return Ok(Err(verdict));
            }
        }
        Ok(Ok(trusted))
    }

    /// The key rotated out signs nothing after its rotation in the log
    /// that announced it: its first checkpoint covering the rotation record
    /// is the rotation's own, any later one of it is refused.
    async fn rotated_out_signs_late(
        &self,
        pool: &AnyPool,
        log_id: i64,
        idx: u64,
        k: usize,
    ) -> Result<Option<Verdict>, Error> {
        let Some(late) = signed_after_rotation(self.sizes, log_id, idx, k) else {
            return Ok(None);
        };
        let writer = self
            .logs
            .iter()
            .find(|l| l.id == log_id)
            .map(|l| l.writer.as_str());
        Ok(Some(Verdict::Broken {
            seq: seq_of(pool, log_id, late.size.saturating_sub(1)).await?,
            reason: format!(
                "log {}: the checkpoint at size {} ({}) is signed with the key {}, which the \
                 record at leaf {idx} rotated out: a key rotated out signs nothing after its \
                 rotation",
                writer.unwrap_or("?"),
                late.size,
                late.from,
                self.keys[late.key].vkey
            ),
        }))
    }

    /// Whether some record is covered by no checkpoint signed with a
    /// trusted key.
    async fn uncovered(&self, pool: &AnyPool, trusted: &[bool]) -> Result<Option<Verdict>, Error> {
        for log in self.logs {
            let (size, checkpoints) = &self.sizes[&log.id];
            if let Some(c) = checkpoints.iter().find(|c| !trusted[c.key]) {
                return Ok(Some(Verdict::Broken {
                    seq: 0,
                    reason: format!(
                        "log {}: the checkpoint at size {} ({}) is signed with the key {}, \
                         which no covered rotation record announces",
                        log.writer, c.size, c.from, self.keys[c.key].vkey
                    ),
                }));
            }
            let covered = checkpoints.iter().map(|c| c.size).max().unwrap_or(0);
            if covered < *size {
                return Ok(Some(Verdict::Broken {
                    seq: seq_of(pool, log.id, covered).await?,
                    reason: format!(
                        "log {}: leaves {covered}..{} are covered by no signed checkpoint (the \
                         first uncovered record is leaf {covered}): records added, or the \
                         checkpoints after them removed",
                        log.writer,
                        size - 1
                    ),
                }));
            }
        }
        Ok(None)
    }
}

/// In the log `log_id` whose leaf `idx` announced key `k`, a checkpoint
/// signed with a key before `k` that is later than the first such checkpoint
/// covering the announcement (the rotation's own).
fn signed_after_rotation(
    sizes: &HashMap<i64, (u64, Vec<Signed>)>,
    log_id: i64,
    idx: u64,
    k: usize,
) -> Option<&Signed> {
    let (_, checkpoints) = sizes.get(&log_id)?;
    let mut old: Vec<&Signed> = checkpoints.iter().filter(|c| c.key < k).collect();
    old.sort_by_key(|c| c.size);
    let rotation = old.iter().find(|c| c.size > idx)?.size;
    old.into_iter().find(|c| c.size > rotation)
}

/// A v1 chain must be sealed by the first leaf of a log
/// (`trail_v1_sealed`), whose signed request names its length and final
/// hash: a v1 chain recomputed after the seal no longer matches it.
async fn check_v1_seal(
    pool: &AnyPool,
    records: i64,
    head_hash: &str,
) -> Result<Option<Verdict>, Error> {
    if records == 0 {
        return Ok(None);
    }
    let sealed = sqlx::query(
        "SELECT seq, request FROM trail WHERE action = 'trail_v1_sealed' AND log_id IS NOT NULL \
         ORDER BY seq LIMIT 1",
    )
    .fetch_optional(pool)
    .await?;
    let Some(sealed) = sealed else {
        let logs: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM logs WHERE size > 0")
            .fetch_one(pool)
            .await?;
        return Ok((logs > 0).then(|| Verdict::Broken {
            seq: records,
            reason: format!(
                "the v1 chain ({records} records) is sealed by no leaf of a log \
                 (trail_v1_sealed removed)"
            ),
        }));
    };
    let seq: i64 = sealed.try_get("seq")?;
    let request: serde_json::Value =
        serde_json::from_str(&sealed.try_get::<String, _>("request")?).unwrap_or_default();
    if request["records"].as_i64() != Some(records)
        || request["head_hash"].as_str() != Some(head_hash)
    {
        return Ok(Some(Verdict::Broken {
            seq,
            reason: format!(
                "the v1 chain ({records} records, head {head_hash}) is not the one its seal \
                 names ({request}): the v1 records were rewritten after the seal"
            ),
        }));
    }
    Ok(None)
}

/// The installation's keys, in order; the first one must be the pinned one.
async fn keys(pool: &AnyPool, trust: &Trust) -> Result<Result<Vec<Key>, String>, Error> {
    let rows = sqlx::query("SELECT vkey, log_id, idx FROM log_keys ORDER BY id")
        .fetch_all(pool)
        .await?;
    let mut keys = Vec::with_capacity(rows.len());
    for row in &rows {
        let vkey: String = row.try_get("vkey")?;
        let log_id: Option<i64> = row.try_get("log_id")?;
        let idx: Option<i64> = row.try_get("idx")?;
        if StandardVerifier::new(&vkey).is_err() {
            return Ok(Err(format!(
                "the installation lists a malformed key: {vkey}"
            )));
        }
        keys.push(Key {
            vkey,
            announced: log_id.zip(idx).map(|(l, i)| (l, i as u64)),
        });
    }
    if let Some(pinned) = &trust.key {
        match keys.first() {
            Some(first) if first.vkey == pinned.trim() => {}
            Some(first) => {
                return Ok(Err(format!(
                    "the installation's first key is {}, not the key given ({})",
                    first.vkey,
                    pinned.trim()
                )));
            }
            None => {
                if StandardVerifier::new(pinned.trim()).is_err() {
                    return Ok(Err(format!("the key given is malformed: {pinned}")));
                }
                keys.push(Key {
                    vkey: pinned.trim().to_owned(),
                    announced: None,
                });
            }
        }
    }
    Ok(Ok(keys))
}

/// Which key signed `note` and the checkpoint it carries.
pub fn open_note(note: &str, vkeys: &[&str]) -> Result<(usize, Checkpoint), String> {
    let parsed =
        Note::from_bytes(note.as_bytes()).map_err(|e| format!("not a signed note: {e}"))?;
    let checkpoint = Checkpoint::from_bytes(parsed.text())
        .map_err(|_| "not a checkpoint (origin, size, root)".to_owned())?;
    for (k, vkey) in vkeys.iter().enumerate() {
        let Ok(verifier) = StandardVerifier::new(vkey) else {
            continue;
        };
        let list = VerifierList::new(vec![Box::new(verifier) as Box<dyn Verifier>]);
        if parsed.verify(&list).is_ok() {
            return Ok((k, checkpoint));
        }
    }
    Err("its signature is by no key of the installation".to_owned())
}

/// Every signed checkpoint of every log, kept and given, by log.
async fn signed_checkpoints(
    pool: &AnyPool,
    trust: &Trust,
    keys: &[Key],
    logs: &[Log],
) -> Result<Result<HashMap<i64, Vec<Signed>>, String>, Error> {
    let vkeys: Vec<&str> = keys.iter().map(|k| k.vkey.as_str()).collect();
    let mut signed: HashMap<i64, Vec<Signed>> = HashMap::new();
    let rows = sqlx::query("SELECT log_id, size, note FROM checkpoints ORDER BY log_id, size")
        .fetch_all(pool)
        .await?;
    for row in &rows {
        let log_id: i64 = row.try_get("log_id")?;
        let size: i64 = row.try_get("size")?;
        let note: String = row.try_get("note")?;
        let Some(log) = logs.iter().find(|l| l.id == log_id) else {
            return Ok(Err(format!(
                "a checkpoint of log {log_id}, which is not listed"
            )));
        };
        let from = format!("stored at size {size}");
        let (key, checkpoint) = match open_note(&note, &vkeys) {
            Ok(opened) => opened,
            Err(why) => {
                return Ok(Err(format!(
                    "log {}: the checkpoint {from}: {why}",
                    log.writer
                )));
            }
        };
        if checkpoint.origin() != log.origin || checkpoint.size() != size as u64 {
            return Ok(Err(format!(
                "log {}: the checkpoint {from} is of {} at size {}",
                log.writer,
                checkpoint.origin(),
                checkpoint.size()
            )));
        }
        signed.entry(log_id).or_default().push(Signed {
            size: checkpoint.size(),
            root: *checkpoint.hash(),
            key,
            from,
        });
    }
    for (n, note) in trust.checkpoints.iter().enumerate() {
        let from = format!("given checkpoint #{}", n + 1);
        let (key, checkpoint) = match open_note(note, &vkeys) {
            Ok(opened) => opened,
            Err(why) => return Ok(Err(format!("the {from}: {why}"))),
        };
        let Some(log) = logs.iter().find(|l| l.origin == checkpoint.origin()) else {
            return Ok(Err(format!(
                "the {from} is of the log {}, which the database does not hold (removed?)",
                checkpoint.origin()
            )));
        };
        signed.entry(log.id).or_default().push(Signed {
            size: checkpoint.size(),
            root: *checkpoint.hash(),
            key,
            from,
        });
    }
    for list in signed.values_mut() {
        list.sort_by_key(|c| c.size);
    }
    Ok(Ok(signed))
}
