//! The replay of one log of the trail, for the audit (`audit.rs`): its
//! records read in order, each leaf's hash recomputed from its contents,
//! the tree rebuilt and its root checked at every size a checkpoint was
//! signed at, and the stored hashes (the published tiles) compared with the
//! recomputed ones. Where a checkpoint does not hold, the leaves it is
//! among are named as narrowly as the checkpoints that held allow.

use super::leaf::hash_hex;
use super::log::MapReader;
use super::{COLUMNS, PAGE, Record, Verdict};
use crate::error::Error;
use sqlx::AnyPool;
use std::collections::{BTreeMap, HashMap};
use tlog_tiles::Hash;

/// A signed checkpoint: which key signed it, its tree, where it came from.
#[derive(Debug, Clone)]
pub(super) struct Signed {
    pub(super) size: u64,
    pub(super) root: Hash,
    pub(super) key: usize,
    pub(super) from: String,
}

/// A log as the database lists it.
pub(super) struct Log {
    pub(super) id: i64,
    pub(super) writer: String,
    pub(super) origin: String,
    pub(super) size: u64,
}

/// The trail number of a log's leaf, 0 when there is none.
pub(super) async fn seq_of(pool: &AnyPool, log_id: i64, idx: u64) -> Result<i64, Error> {
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
pub(super) async fn replay(
    pool: &AnyPool,
    log: &Log,
    checkpoints: &[Signed],
    rotations: &mut HashMap<(i64, u64), String>,
    progress: &mut impl FnMut(u64),
) -> Result<Result<u64, Verdict>, Error> {
    let mut tree = Tree::default();
    loop {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM trail WHERE log_id = $1 AND idx >= $2 ORDER BY idx, seq LIMIT $3"
        ))
        .bind(log.id)
        .bind(tree.n as i64)
        .bind(PAGE)
        .fetch_all(pool)
        .await?;
        if rows.is_empty() {
            break;
        }
        let records = Record::from_rows(&rows)?;
        let first_index = tlog_tiles::stored_hash_index(0, tree.n);
        let mut computed: Vec<(u64, Hash, i64)> = Vec::new();
        for record in &records {
            if let Some(reason) = tree.add(log, record, rotations, &mut computed)? {
                return Ok(Err(Verdict::Broken {
                    seq: record.seq,
                    reason,
                }));
            }
            if let Some(verdict) = tree.check_signed(pool, log, checkpoints).await? {
                return Ok(Err(verdict));
            }
        }
        let to = tlog_tiles::stored_hash_index(0, tree.n);
        if let Some(verdict) = check_stored(pool, log, first_index, to, &computed).await? {
            return Ok(Err(verdict));
        }
        tree.forget_all_but_the_frontier();
        progress(records.len() as u64);
    }
    match size_problem(log, checkpoints, tree.n) {
        Some(reason) => Ok(Err(Verdict::Broken { seq: 0, reason })),
        None => Ok(Ok(tree.n)),
    }
}

/// A log's tree as its records recompute it, and how far its checkpoints
/// held.
#[derive(Default)]
struct Tree {
    /// The stored hashes the next leaves need (the frontier), and this
    /// page's.
    hashes: BTreeMap<u64, Hash>,
    /// The leaves recomputed.
    n: u64,
    /// The next checkpoint to check, by size.
    next_checkpoint: usize,
    /// The last size a checkpoint held at, and one given from outside.
    good: u64,
    good_outside: u64,
}

impl Tree {
    /// Adds the next record as leaf `n`: `Some(reason)` when it is not the
    /// next leaf or its hash is not its contents'. Notes a key rotation.
    fn add(
        &mut self,
        log: &Log,
        record: &Record,
        rotations: &mut HashMap<(i64, u64), String>,
        computed: &mut Vec<(u64, Hash, i64)>,
    ) -> Result<Option<String>, Error> {
        let n = self.n;
        let idx = record.idx.unwrap_or(-1);
        if idx > n as i64 {
            return Ok(Some(format!(
                "log {}: leaf {n} is missing (the next record is leaf {idx}): a record removed",
                log.writer
            )));
        }
        if idx != n as i64 {
            return Ok(Some(format!(
                "log {}: two records are leaf {idx}: a record inserted",
                log.writer
            )));
        }
        let leaf = record.leaf(&log.origin).hash();
        if record.hash != hash_hex(&leaf) {
            return Ok(Some(format!(
                "log {}: leaf {n}: its hash does not match its contents",
                log.writer
            )));
        }
        if record.action == "log_key_rotated"
            && let Some(vkey) = serde_json::from_str::<serde_json::Value>(&record.request)
                .ok()
                .and_then(|r| r.get("vkey")?.as_str().map(str::to_owned))
        {
            rotations.insert((log.id, n), vkey);
        }
        let stored = tlog_tiles::stored_hashes_for_record_hash(n, leaf, &MapReader(&self.hashes))
            .map_err(|_| Error::Unavailable("the log's tree cannot be recomputed"))?;
        let at = tlog_tiles::stored_hash_index(0, n);
        for (offset, hash) in (0u64..).zip(stored) {
            self.hashes.insert(at + offset, hash);
            computed.push((at + offset, hash, record.seq));
        }
        self.n += 1;
        Ok(None)
    }

    /// Checks the checkpoints signed at the tree's size against its root.
    async fn check_signed(
        &mut self,
        pool: &AnyPool,
        log: &Log,
        checkpoints: &[Signed],
    ) -> Result<Option<Verdict>, Error> {
        let n = self.n;
        while let Some(c) = checkpoints
            .get(self.next_checkpoint)
            .filter(|c| c.size <= n)
        {
            self.next_checkpoint += 1;
            if c.size != n {
                continue;
            }
            let root = tlog_tiles::tree_hash(n, &MapReader(&self.hashes))
                .map_err(|_| Error::Unavailable("the log's tree cannot be recomputed"))?;
            let outside = c.from.starts_with("given");
            if root != c.root {
                // Stored checkpoints may have been signed again over a
                // rewrite: one given from outside is narrowed only by
                // those given from outside.
                let from = if outside {
                    self.good_outside
                } else {
                    self.good
                };
                let (reason, seq) = bad_range(pool, log, from, n, c).await?;
                return Ok(Some(Verdict::Broken { seq, reason }));
            }
            if outside {
                self.good_outside = n;
            }
            self.good = n;
        }
        Ok(None)
    }

    /// Keeps only the stored hashes the next leaves need.
    fn forget_all_but_the_frontier(&mut self) {
        let keep = if self.n == 0 {
            Vec::new()
        } else {
            tlog_tiles::sub_tree_index(0, self.n, Vec::new())
        };
        self.hashes.retain(|i, _| keep.contains(i));
    }
}

/// The stored hashes (served as tiles) of a page must be the recomputed
/// ones.
async fn check_stored(
    pool: &AnyPool,
    log: &Log,
    from: u64,
    to: u64,
    computed: &[(u64, Hash, i64)],
) -> Result<Option<Verdict>, Error> {
    let stored = stored_between(pool, log.id, from, to).await?;
    Ok(computed
        .iter()
        .find(|(index, hash, _)| stored.get(index) != Some(hash))
        .map(|(_, _, seq)| Verdict::Broken {
            seq: *seq,
            reason: format!(
                "log {}: the stored hashes (the published tiles) of this record's leaf do not \
                 match the records",
                log.writer
            ),
        }))
}

/// Once every record is read: a checkpoint past the last, or a size that
/// is not the count of records.
fn size_problem(log: &Log, checkpoints: &[Signed], n: u64) -> Option<String> {
    if let Some(c) = checkpoints.iter().find(|c| c.size > n) {
        return Some(format!(
            "log {}: a checkpoint was signed at size {} ({}), the log has only {n} records: \
             leaves {n}..{} removed (the log shrank)",
            log.writer,
            c.size,
            c.from,
            c.size - 1
        ));
    }
    (log.size != n).then(|| {
        format!(
            "log {}: its size says {} leaves, {n} records are there",
            log.writer, log.size
        )
    })
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
