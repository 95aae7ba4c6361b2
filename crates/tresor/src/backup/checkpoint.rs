//! What was published of the trail, and whether a database is behind it.
//!
//! What the site publishes of its trail is each log's signed checkpoint
//! (`/log/<writer>/checkpoint`: a C2SP checkpoint in a signed note), and a
//! monitor (`tresor audit watch`) keeps the latest of each log, one note a
//! file (`<state>/<writer>.checkpoint`). [`Published`] is that, read from one
//! file holding one or more such notes (a monitor's file, several of them
//! concatenated, or what `tresor audit checkpoint --out` writes) or from a
//! monitor's state folder; it is what `tresor audit verify --checkpoint`,
//! `tresor restore --published`, `tresor serve --published-checkpoint` take,
//! what a backup's manifest holds and what the server keeps outside its data
//! folder (`Keeper`). [`standing`] says whether a database holds it: each
//! log at least as long, its tree at the published size the published root.
//!
//! Before issue 35 these places took a JSON head instead (installation,
//! records, hash of the last record): [`Head`]. It is still read (a backup
//! made before, a file kept before), never written.

use crate::error::Error;
use crate::trail::GENESIS_HASH;
use serde::{Deserialize, Serialize};
use sqlx::{AnyPool, Row};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tlog_tiles::Hash;

/// The trail's head at one moment, of one installation: the JSON checkpoint
/// of versions before issue 35, still read (old backups and kept files).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Head {
    /// The installation's id (`settings.installation_id`, migration 0012).
    pub installation: String,
    /// How many records the trail had.
    pub records: i64,
    /// The hash of the last of them (the genesis hash for none).
    pub head: String,
    /// When it was taken (RFC 3339), for people; not compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

/// One log's signed checkpoint, as published and kept (not yet checked
/// against a key: [`standing`] checks it with the database's keys).
#[derive(Debug, Clone, PartialEq)]
pub struct Signed {
    /// `tresor/<installation>/<writer>`.
    pub origin: String,
    pub size: u64,
    pub root: Hash,
    /// The whole signed note.
    pub note: String,
}

/// What was published of the trail, as kept outside the database.
#[derive(Debug, Clone, PartialEq)]
pub enum Published {
    /// Signed checkpoints, one or more logs (the one format written).
    Signed(Vec<Signed>),
    /// The JSON head of older versions (read only).
    Head(Head),
}

/// How a database stands against what was published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// It holds every published checkpoint (and maybe more).
    Holds,
    /// `log` (a log's origin, or `the trail`) is shorter than published.
    Behind {
        log: String,
        records: u64,
        published: u64,
    },
    /// `log` is long enough but its tree at the published size is another
    /// one: another history.
    Diverged { log: String, size: u64 },
    /// A published checkpoint is signed by no key this database lists (a
    /// key rotated after this copy, or not this installation's note).
    Unsigned { log: String, why: String },
    /// What was published is of another installation.
    OtherInstallation { ours: String, theirs: String },
}

/// `tresor/<installation>/<writer>` → the installation.
fn installation_of(origin: &str) -> Option<&str> {
    let rest = origin.strip_prefix("tresor/")?;
    rest.split_once('/').map(|(id, _)| id)
}

/// Splits a text into its signed notes: a body (no blank line in a
/// checkpoint), a blank line, signature lines (`— …`); notes follow each
/// other with or without a blank line between them.
fn split_notes(text: &str) -> Result<Vec<String>, String> {
    let mut notes = Vec::new();
    let mut lines = text.lines().peekable();
    loop {
        while lines.peek().is_some_and(|l| l.trim().is_empty()) {
            lines.next();
        }
        if lines.peek().is_none() {
            break;
        }
        let mut note = String::new();
        for line in lines.by_ref() {
            if line.is_empty() {
                break;
            }
            note.push_str(line);
            note.push('\n');
        }
        note.push('\n');
        let mut signatures = 0;
        while let Some(line) = lines.peek().filter(|l| l.starts_with("— ")) {
            note.push_str(line);
            note.push('\n');
            signatures += 1;
            lines.next();
        }
        if signatures == 0 {
            return Err(format!(
                "not a signed note: no signature line after {:?}",
                note.lines().next().unwrap_or_default()
            ));
        }
        notes.push(note);
    }
    Ok(notes)
}

/// The checkpoint files of a monitor's state folder, sorted: each log's
/// latest (`<writer>.checkpoint`), and with `history` the older ones it
/// kept too (`<writer>.<size>.checkpoint`).
pub fn state_files(folder: &Path, history: bool) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(folder)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".checkpoint"))
                .is_some_and(|w| history || !w.contains('.'))
        })
        .collect();
    files.sort();
    Ok(files)
}

impl Published {
    /// Reads a checkpoint file — one or more signed checkpoints (a
    /// monitor's `<writer>.checkpoint`, several concatenated, `tresor audit
    /// checkpoint --out`), or the JSON head of older versions — or a
    /// monitor's state folder (`tresor audit watch --state`: each log's
    /// latest). An error (bad input) when it is none of these.
    pub fn read(path: &Path) -> Result<Published, String> {
        Published::read_from(path, false)
    }

    /// [`Published::read`]; from a monitor's state folder, with `history`,
    /// the older checkpoints it kept too (`<writer>.<size>.checkpoint`:
    /// `tresor audit verify` narrows a rewrite with them).
    pub fn read_from(path: &Path, history: bool) -> Result<Published, String> {
        let text = if path.is_dir() {
            let files = state_files(path, history)
                .map_err(|e| format!("cannot read the folder {}: {e}", path.display()))?;
            if files.is_empty() {
                return Err(format!(
                    "the folder {} holds no <writer>.checkpoint (a monitor's state folder \
                     does)",
                    path.display()
                ));
            }
            let mut text = String::new();
            for file in files {
                text.push_str(
                    &std::fs::read_to_string(&file)
                        .map_err(|e| format!("cannot read {}: {e}", file.display()))?,
                );
                text.push('\n');
            }
            text
        } else {
            std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read the checkpoint {}: {e}", path.display()))?
        };
        Published::parse(&text).map_err(|e| {
            format!(
                "{} is not a checkpoint file (signed checkpoints as /log/<writer>/checkpoint \
                 serves them and `tresor audit watch` keeps them): {e}",
                path.display()
            )
        })
    }

    /// Parses a checkpoint file's text (see [`Published::read`]).
    pub fn parse(text: &str) -> Result<Published, String> {
        if text.trim_start().starts_with('{') {
            let head: Head = serde_json::from_str(text).map_err(|e| e.to_string())?;
            return Ok(Published::Head(head));
        }
        let mut signed = Vec::new();
        for note in split_notes(text)? {
            let parsed = signed_note::Note::from_bytes(note.as_bytes())
                .map_err(|e| format!("not a signed note: {e}"))?;
            let checkpoint = tlog_tiles::Checkpoint::from_bytes(parsed.text())
                .map_err(|_| "a signed note that is not a checkpoint".to_owned())?;
            let origin = checkpoint.origin().to_owned();
            if installation_of(&origin).is_none() {
                return Err(format!("the checkpoint of {origin} is of no tresor log"));
            }
            signed.push(Signed {
                origin,
                size: checkpoint.size(),
                root: *checkpoint.hash(),
                note,
            });
        }
        let Some(first) = signed.first() else {
            return Err("no signed checkpoint in it".to_owned());
        };
        let installation = installation_of(&first.origin).unwrap_or_default();
        if let Some(other) = signed
            .iter()
            .find(|s| installation_of(&s.origin) != Some(installation))
        {
            return Err(format!(
                "checkpoints of two installations ({} and {})",
                first.origin, other.origin
            ));
        }
        Ok(Published::Signed(signed))
    }

    /// The installation it is of.
    pub fn installation(&self) -> String {
        match self {
            Published::Head(head) => head.installation.clone(),
            Published::Signed(signed) => signed
                .first()
                .and_then(|s| installation_of(&s.origin))
                .unwrap_or_default()
                .to_owned(),
        }
    }

    /// The file's text: the signed notes one after the other, a blank line
    /// between two (the JSON of an old head).
    pub fn to_text(&self) -> String {
        match self {
            Published::Head(head) => serde_json::to_string_pretty(head).expect("a head is JSON"),
            Published::Signed(signed) => signed
                .iter()
                .map(|s| s.note.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    /// What identifies it, as a hold remembers it.
    pub fn key(&self) -> String {
        match self {
            Published::Head(h) => format!("{}:{}:{}", h.installation, h.records, h.head),
            Published::Signed(signed) => {
                let mut parts: Vec<String> = signed
                    .iter()
                    .map(|s| format!("{}:{}:{}", s.origin, s.size, hex::encode(s.root.0)))
                    .collect();
                parts.sort();
                parts.join(";")
            }
        }
    }

    /// As JSON, for the trail: the notes, or the old head.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Published::Head(head) => serde_json::to_value(head).expect("a head is JSON"),
            Published::Signed(signed) => signed.iter().map(|s| s.note.clone()).collect(),
        }
    }

    /// In words: each log's size.
    pub fn describe(&self) -> String {
        match self {
            Published::Head(h) => format!("the trail's head at {} records (old format)", h.records),
            Published::Signed(signed) => signed
                .iter()
                .map(|s| format!("{} at {} records", s.origin, s.size))
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}

/// The installation's id, if it has one (every database migrated to 0012).
pub async fn installation(pool: &AnyPool) -> Result<String, Error> {
    let id: Option<String> =
        sqlx::query_scalar("SELECT value FROM settings WHERE key = 'installation_id'")
            .fetch_optional(pool)
            .await?;
    Ok(id.unwrap_or_default())
}

/// The query of every log's latest signed checkpoint (SQLite and
/// PostgreSQL alike).
/// Driven by `logs` (a few rows), each log's latest found through the
/// primary key `(log_id, size)`: no scan of `checkpoints`, one row per
/// batch ever committed (the server runs it every [`super::keeper::EVERY`]).
pub const LATEST_CHECKPOINTS: &str = "SELECT l.origin, c.note FROM logs l \
     JOIN checkpoints c ON c.log_id = l.id \
     WHERE c.size = (SELECT MAX(m.size) FROM checkpoints m WHERE m.log_id = l.id) \
     ORDER BY l.origin";

/// Every log's latest signed checkpoint, as the site publishes them; an
/// error when the trail has none signed yet.
pub async fn current(pool: &AnyPool) -> Result<Published, Error> {
    let rows = sqlx::query(LATEST_CHECKPOINTS).fetch_all(pool).await?;
    let mut text = String::new();
    for row in &rows {
        let note: String = row.try_get("note")?;
        text.push_str(&note);
        text.push('\n');
    }
    if rows.is_empty() {
        return Err(Error::Validation(
            "the trail has no signed checkpoint yet".to_owned(),
        ));
    }
    Published::parse(&text).map_err(|e| Error::Validation(format!("a stored checkpoint: {e}")))
}

/// The old head of the database now (for a [`Head`] compared).
async fn current_head(pool: &AnyPool) -> Result<Head, Error> {
    let records: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM trail")
        .fetch_one(pool)
        .await?;
    let head: Option<String> =
        sqlx::query_scalar("SELECT hash FROM trail ORDER BY seq DESC LIMIT 1")
            .fetch_optional(pool)
            .await?;
    Ok(Head {
        installation: installation(pool).await?,
        records,
        head: head.unwrap_or_else(|| GENESIS_HASH.to_owned()),
        at: None,
    })
}

/// How the database on `pool` stands against `published`: the first log
/// that does not hold it, else [`Standing::Holds`].
pub async fn standing(pool: &AnyPool, published: &Published) -> Result<Standing, Error> {
    let ours = installation(pool).await?;
    let theirs = published.installation();
    if ours != theirs {
        return Ok(Standing::OtherInstallation { ours, theirs });
    }
    match published {
        Published::Head(head) => head_standing(pool, head).await,
        Published::Signed(signed) => {
            let vkeys: Vec<String> = sqlx::query_scalar("SELECT vkey FROM log_keys ORDER BY id")
                .fetch_all(pool)
                .await?;
            let vkeys: Vec<&str> = vkeys.iter().map(String::as_str).collect();
            for s in signed {
                let standing = log_standing(pool, s, &vkeys).await?;
                if standing != Standing::Holds {
                    return Ok(standing);
                }
            }
            Ok(Standing::Holds)
        }
    }
}

async fn head_standing(pool: &AnyPool, published: &Head) -> Result<Standing, Error> {
    let ours = current_head(pool).await?;
    if ours.records < published.records {
        return Ok(Standing::Behind {
            log: "the trail".to_owned(),
            records: ours.records as u64,
            published: published.records as u64,
        });
    }
    // Record hashes are unique (v1: chained; v2: salted leaves): the
    // published head is held when a record of that hash is there.
    let held = published.records == 0 || published.head == GENESIS_HASH || {
        let found: Option<i64> = sqlx::query_scalar("SELECT seq FROM trail WHERE hash = $1")
            .bind(&published.head)
            .fetch_optional(pool)
            .await?;
        found.is_some()
    };
    Ok(if held {
        Standing::Holds
    } else {
        Standing::Diverged {
            log: "the trail".to_owned(),
            size: published.records as u64,
        }
    })
}

async fn log_standing(pool: &AnyPool, s: &Signed, vkeys: &[&str]) -> Result<Standing, Error> {
    if let Err(why) = crate::trail::audit::open_note(&s.note, vkeys) {
        return Ok(Standing::Unsigned {
            log: s.origin.clone(),
            why,
        });
    }
    let row = sqlx::query("SELECT id, size FROM logs WHERE origin = $1")
        .bind(&s.origin)
        .fetch_optional(pool)
        .await?;
    let (id, size) = match row {
        Some(row) => (
            row.try_get::<i64, _>("id")?,
            row.try_get::<i64, _>("size")? as u64,
        ),
        None => (0, 0),
    };
    if size < s.size {
        return Ok(Standing::Behind {
            log: s.origin.clone(),
            records: size,
            published: s.size,
        });
    }
    if s.size == 0 {
        return Ok(Standing::Holds);
    }
    let indexes = tlog_tiles::sub_tree_index(0, s.size, Vec::new());
    let hashes = stored_hashes(pool, id, &indexes).await?;
    let root = tlog_tiles::tree_hash(s.size, &crate::trail::log::MapReader(&hashes)).ok();
    Ok(if root == Some(s.root) {
        Standing::Holds
    } else {
        Standing::Diverged {
            log: s.origin.clone(),
            size: s.size,
        }
    })
}

/// The stored hashes of a log at `indexes` (those found), as served
/// (`crate::trail::tiles`).
async fn stored_hashes(
    pool: &AnyPool,
    log_id: i64,
    indexes: &[u64],
) -> Result<BTreeMap<u64, Hash>, Error> {
    let mut conn = crate::store::Conn::Pooled(pool.acquire().await?);
    crate::trail::tiles::read(&mut conn, log_id, indexes).await
}

impl Standing {
    /// Why sales must stay closed, for the operator, or `None` when the
    /// database holds what was published.
    pub fn hold_reason(&self) -> Option<String> {
        match self {
            Standing::Holds => None,
            Standing::Behind {
                log,
                records,
                published,
            } => Some(format!(
                "restored behind what was published: {log} has {records} records, its \
                 published checkpoint {published} ({} missing); purchases acknowledged after the \
                 copy are lost and are the operator's to make good. Check, then reopen with \
                 `tresor sales open --after-restore`",
                published - records
            )),
            Standing::Diverged { log, size } => Some(format!(
                "{log} does not hold its published checkpoint at {size} records: another \
                 history. Check, then reopen with `tresor sales open --after-restore`"
            )),
            Standing::Unsigned { log, why } => Some(format!(
                "the published checkpoint of {log} cannot be checked with this database's keys \
                 ({why}): a copy older than a key rotation, or not this installation's. Check, \
                 then reopen with `tresor sales open --after-restore`"
            )),
            Standing::OtherInstallation { ours, theirs } => Some(format!(
                "the published checkpoint is of installation {theirs}, this database of {ours}"
            )),
        }
    }

    /// The standing as JSON, for the trail.
    pub fn detail(&self, published: &Published) -> serde_json::Value {
        let standing = match self {
            Standing::Holds => "holds",
            Standing::Behind { .. } => "behind",
            Standing::Diverged { .. } => "diverged",
            Standing::Unsigned { .. } => "unsigned",
            Standing::OtherInstallation { .. } => "other_installation",
        };
        serde_json::json!({"published": published.to_json(), "standing": standing})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOTE: &str = "tresor/abc/server\n3\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n— tresor/abc AAAAAbbb\n";

    #[test]
    fn notes_are_split_with_or_without_a_blank_line_between() {
        let two = format!("{NOTE}{}", NOTE.replace("server", "cli"));
        assert_eq!(split_notes(&two).unwrap().len(), 2);
        let spaced = format!("{NOTE}\n\n{}", NOTE.replace("server", "cli"));
        assert_eq!(split_notes(&spaced).unwrap(), split_notes(&two).unwrap());
        assert!(split_notes("tresor/abc/server\n3\nxx\n").is_err());
        assert!(Published::parse("").is_err());
        assert!(Published::parse("not a note at all\n").is_err());
        assert!(Published::parse("{\"installation\": 3}").is_err());
    }
}
