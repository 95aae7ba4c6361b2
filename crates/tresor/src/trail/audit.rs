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

use super::leaf::hash_hex;
use super::log::MapReader;
use super::{COLUMNS, PAGE, Record, Verdict, verify_v1};
use crate::error::Error;
use signed_note::{Note, StandardVerifier, Verifier, VerifierList};
use sqlx::{AnyPool, Row};
use std::collections::{BTreeMap, HashMap};
use tlog_tiles::{Checkpoint, Hash};

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

/// A signed checkpoint: which key signed it, its tree, where it came from.
#[derive(Debug, Clone)]
struct Signed {
    size: u64,
    root: Hash,
    key: usize,
    from: String,
}

/// A log as the database lists it.
struct Log {
    id: i64,
    writer: String,
    origin: String,
    size: u64,
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
    let logs: Vec<Log> = sqlx::query("SELECT id, writer, origin, size FROM logs ORDER BY id")
        .fetch_all(pool)
        .await?
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
    // Which keys are trusted: the first; then each one whose rotation
    // record is covered by a checkpoint signed with the key before.
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
        if rotations.get(&(log_id, idx)) != Some(&key.vkey) {
            return broken(
                seq_of(pool, log_id, idx).await?,
                format!(
                    "the key {} is not the one the rotation record (log {log_id}, leaf {idx}) \
                     announces",
                    key.vkey
                ),
            );
        }
        let covered = sizes.get(&log_id).is_some_and(|(_, checkpoints)| {
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
        // The key rotated out signs nothing after its rotation in the log
        // that announced it: its first checkpoint covering the rotation
        // record is the rotation's own, any later one of it is refused.
        if let Some(late) = signed_after_rotation(&sizes, log_id, idx, k) {
            let writer = logs
                .iter()
                .find(|l| l.id == log_id)
                .map(|l| l.writer.as_str());
            return broken(
                seq_of(pool, log_id, late.size.saturating_sub(1)).await?,
                format!(
                    "log {}: the checkpoint at size {} ({}) is signed with the key {}, which \
                     the record at leaf {idx} rotated out: a key rotated out signs nothing \
                     after its rotation",
                    writer.unwrap_or("?"),
                    late.size,
                    late.from,
                    keys[late.key].vkey
                ),
            );
        }
    }
    // Every record is covered by a checkpoint signed with a trusted key.
    for log in &logs {
        let (size, checkpoints) = &sizes[&log.id];
        if let Some(c) = checkpoints.iter().find(|c| !trusted[c.key]) {
            return broken(
                0,
                format!(
                    "log {}: the checkpoint at size {} ({}) is signed with the key {}, which no \
                     covered rotation record announces",
                    log.writer, c.size, c.from, keys[c.key].vkey
                ),
            );
        }
        let covered = checkpoints.iter().map(|c| c.size).max().unwrap_or(0);
        if covered < *size {
            return broken(
                seq_of(pool, log.id, covered).await?,
                format!(
                    "log {}: leaves {covered}..{} are covered by no signed checkpoint (the \
                     first uncovered record is leaf {covered}): records added, or the \
                     checkpoints after them removed",
                    log.writer,
                    size - 1
                ),
            );
        }
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

/// The trail number of a log's leaf, 0 when there is none.
async fn seq_of(pool: &AnyPool, log_id: i64, idx: u64) -> Result<i64, Error> {
    Ok(
        sqlx::query_scalar("SELECT seq FROM trail WHERE log_id = $1 AND idx = $2")
            .bind(log_id)
            .bind(idx as i64)
            .fetch_optional(pool)
            .await?
            .unwrap_or(0),
    )
}

/// Recomputes one log from its records and checks it against its
/// checkpoints. `Ok(size)`, or the verdict that names what does not hold.
async fn replay(
    pool: &AnyPool,
    log: &Log,
    checkpoints: &[Signed],
    rotations: &mut HashMap<(i64, u64), String>,
    progress: &mut impl FnMut(u64),
) -> Result<Result<u64, Verdict>, Error> {
    let fail = |seq: i64, reason: String| Ok(Err(Verdict::Broken { seq, reason }));
    let mut hashes: BTreeMap<u64, Hash> = BTreeMap::new();
    let mut n: u64 = 0;
    let mut next_checkpoint = 0;
    // The last size a checkpoint held at, and one given from outside.
    let mut good: u64 = 0;
    let mut good_outside: u64 = 0;
    loop {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM trail WHERE log_id = $1 AND idx >= $2 ORDER BY idx, seq LIMIT $3"
        ))
        .bind(log.id)
        .bind(n as i64)
        .bind(PAGE)
        .fetch_all(pool)
        .await?;
        if rows.is_empty() {
            break;
        }
        let records: Vec<Record> = rows
            .iter()
            .map(Record::from_row)
            .collect::<Result<_, _>>()?;
        let first_index = tlog_tiles::stored_hash_index(0, n);
        let mut computed: Vec<(u64, Hash, i64)> = Vec::new();
        for record in &records {
            let idx = record.idx.unwrap_or(-1);
            if idx != n as i64 {
                return fail(
                    record.seq,
                    if idx > n as i64 {
                        format!(
                            "log {}: leaf {n} is missing (the next record is leaf {idx}): a record \
                             removed",
                            log.writer
                        )
                    } else {
                        format!(
                            "log {}: two records are leaf {idx}: a record inserted",
                            log.writer
                        )
                    },
                );
            }
            let leaf = record.leaf(&log.origin).hash();
            if record.hash != hash_hex(&leaf) {
                return fail(
                    record.seq,
                    format!(
                        "log {}: leaf {n}: its hash does not match its contents",
                        log.writer
                    ),
                );
            }
            if record.action == "log_key_rotated"
                && let Some(vkey) = serde_json::from_str::<serde_json::Value>(&record.request)
                    .ok()
                    .and_then(|r| r.get("vkey")?.as_str().map(str::to_owned))
            {
                rotations.insert((log.id, n), vkey);
            }
            let stored = tlog_tiles::stored_hashes_for_record_hash(n, leaf, &MapReader(&hashes))
                .map_err(|_| Error::Unavailable("the log's tree cannot be recomputed"))?;
            let at = tlog_tiles::stored_hash_index(0, n);
            for (offset, hash) in (0u64..).zip(stored) {
                hashes.insert(at + offset, hash);
                computed.push((at + offset, hash, record.seq));
            }
            n += 1;
            while let Some(c) = checkpoints.get(next_checkpoint).filter(|c| c.size <= n) {
                if c.size == n {
                    let root = tlog_tiles::tree_hash(n, &MapReader(&hashes))
                        .map_err(|_| Error::Unavailable("the log's tree cannot be recomputed"))?;
                    if root != c.root {
                        // Stored checkpoints may have been signed again
                        // over a rewrite: one given from outside is
                        // narrowed only by those given from outside.
                        let outside = c.from.starts_with("given");
                        let from = if outside { good_outside } else { good };
                        let (reason, seq) = bad_range(pool, log, from, n, c).await?;
                        return fail(seq, reason);
                    }
                    if c.from.starts_with("given") {
                        good_outside = n;
                    }
                    good = n;
                }
                next_checkpoint += 1;
            }
        }
        // The stored hashes (served as tiles) must be the recomputed ones.
        let stored = stored_between(
            pool,
            log.id,
            first_index,
            tlog_tiles::stored_hash_index(0, n),
        )
        .await?;
        for (index, hash, seq) in &computed {
            if stored.get(index) != Some(hash) {
                return fail(
                    *seq,
                    format!(
                        "log {}: the stored hashes (the published tiles) of this record's leaf \
                         do not match the records",
                        log.writer
                    ),
                );
            }
        }
        let keep = if n == 0 {
            Vec::new()
        } else {
            tlog_tiles::sub_tree_index(0, n, Vec::new())
        };
        hashes.retain(|i, _| keep.contains(i));
        progress(records.len() as u64);
    }
    if let Some(c) = checkpoints.iter().find(|c| c.size > n) {
        return fail(
            0,
            format!(
                "log {}: a checkpoint was signed at size {} ({}), the log has only {n} records: \
                 leaves {n}..{} removed (the log shrank)",
                log.writer,
                c.size,
                c.from,
                c.size - 1
            ),
        );
    }
    if log.size != n {
        return fail(
            0,
            format!(
                "log {}: its size says {} leaves, {n} records are there",
                log.writer, log.size
            ),
        );
    }
    Ok(Ok(n))
}

/// What a checkpoint signed at size `n` that the recomputed tree does not
/// match says, the last one that held being at size `from`: the first
/// leaf that differs, or the leaves it is among (never an empty range);
/// and the trail number of the first of them.
async fn bad_range(
    pool: &AnyPool,
    log: &Log,
    from: u64,
    n: u64,
    c: &Signed,
) -> Result<(String, i64), Error> {
    let last = n - 1;
    if from >= n {
        // Two checkpoints of one size, one held: a fork.
        return Ok((
            format!(
                "log {}: the checkpoint signed at size {n} ({}) is not the one the records \
                 give, though another of that size holds: two histories of {n} records were \
                 signed (a fork); the first leaf that differs is at or before leaf {last}; \
                 give older checkpoints from outside (a monitor's <writer>.<size>.checkpoint) \
                 to name it",
                log.writer, c.from
            ),
            seq_of(pool, log.id, last).await?,
        ));
    }
    let first_seq = seq_of(pool, log.id, from).await?;
    if from == last {
        return Ok((
            format!(
                "log {}: leaf {last} does not match the checkpoint signed at size {n} ({}): the \
                 record was changed, inserted or reordered",
                log.writer, c.from
            ),
            first_seq,
        ));
    }
    let held = if from == 0 {
        "no checkpoint before it holds".to_owned()
    } else {
        format!("the checkpoint at size {from} holds")
    };
    Ok((
        format!(
            "log {}: the first leaf that differs is among leaves {from}..{last} (records \
             {first_seq}..{}): {held}, the one signed at size {n} ({}) does not; no checkpoint \
             in between narrows it (give older ones: a monitor's <writer>.<size>.checkpoint)",
            log.writer,
            seq_of(pool, log.id, last).await?,
            c.from
        ),
        first_seq,
    ))
}

/// The stored hashes of a log with index in `from..to`, as served.
async fn stored_between(
    pool: &AnyPool,
    log_id: i64,
    from: u64,
    to: u64,
) -> Result<HashMap<u64, Hash>, Error> {
    Ok(super::tiles::read_between(pool, log_id, from, to)
        .await?
        .into_iter()
        .collect())
}
