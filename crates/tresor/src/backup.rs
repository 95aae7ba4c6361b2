//! Backups of the SQLite database, and their restore into a new folder.
//!
//! A backup is a folder `tresor-{time}` in the destination holding
//! `tresor.db.gz` (a consistent copy made by SQLite's `VACUUM INTO` on the
//! live WAL database — a read transaction, so the writer goes on selling —
//! gzip-compressed) and `manifest.json` ([`Manifest`]: time, sizes, SHA-256
//! of both the copy and the compressed file, schema version, installation
//! and every log's signed checkpoint in the copy, [`checkpoint::Published`]).
//! It is written under a hidden
//! `.tresor-{time}.partial` name and renamed once complete, so a backup cut
//! short is never taken for one. Block secrets stay sealed as they are in
//! the database; the key is never written into a backup.
//!
//! `restore` ([`restore::restore`]) checks everything it can before the
//! destination is touched and verifies the copy (`consistency`) before it is
//! moved into place; `checkpoint` says whether the result is behind what
//! was published, in which case sales stay closed until the operator says
//! otherwise (`Service::open_sales_after_restore`).

pub mod checkpoint;
pub mod consistency;
pub mod keeper;
pub mod restore;

use anyhow::Context;
use checkpoint::{Head, Published};
use flate2::write::GzEncoder;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The manifest's `format`: what this code writes (and reads, with
/// [`FORMAT_1`]).
pub const FORMAT: &str = "tresor-backup/2";
/// The format before issue 35, read: the trail's head (JSON) where
/// [`FORMAT`] has the logs' signed checkpoints.
pub const FORMAT_1: &str = "tresor-backup/1";
/// The compressed copy's file name inside a backup.
pub const DATABASE_FILE: &str = "tresor.db.gz";
/// The manifest's file name inside a backup.
pub const MANIFEST_FILE: &str = "manifest.json";
/// Backups are folders named `tresor-{time}` (sortable by name).
const PREFIX: &str = "tresor-";

/// What a backup holds, written beside it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub format: String,
    /// When the copy was taken (RFC 3339).
    pub created_at: String,
    pub tresor_version: String,
    /// `sqlite`.
    pub database: String,
    /// The highest migration applied (`_sqlx_migrations`).
    pub schema_version: i64,
    pub installation: String,
    /// Every log's latest signed checkpoint in the copy, one signed note
    /// after the other, as `tresor audit checkpoint` writes them (format 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoints: Option<String>,
    /// The trail's head in the copy (format 1, read only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<Head>,
    pub file: String,
    pub database_bytes: u64,
    pub database_sha256: String,
    pub compressed_bytes: u64,
    pub compressed_sha256: String,
    /// How long the backup took, in seconds.
    pub seconds: f64,
}

impl Manifest {
    /// Reads the manifest of the backup at `from` (its folder, or the
    /// manifest itself).
    pub fn read(from: &Path) -> anyhow::Result<(PathBuf, Manifest)> {
        let (dir, file) = if from.is_dir() {
            (from.to_owned(), from.join(MANIFEST_FILE))
        } else {
            let dir = from.parent().unwrap_or(Path::new(".")).to_owned();
            (dir, from.to_owned())
        };
        let text = std::fs::read_to_string(&file).with_context(|| {
            format!(
                "no backup at {}: cannot read {}",
                from.display(),
                file.display()
            )
        })?;
        let manifest: Manifest = serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not a backup manifest (altered or truncated?)",
                file.display()
            )
        })?;
        if manifest.format != FORMAT && manifest.format != FORMAT_1 {
            anyhow::bail!(
                "{}: backup format {:?}, this tresor reads {FORMAT:?} and {FORMAT_1:?}",
                file.display(),
                manifest.format
            );
        }
        Ok((dir, manifest))
    }

    /// What the copy held of the trail: its signed checkpoints, or the head
    /// of a format 1 backup.
    pub fn published(&self) -> Option<Published> {
        match (&self.checkpoints, &self.checkpoint) {
            (Some(text), _) => Published::parse(text).ok(),
            (None, Some(head)) => Some(Published::Head(head.clone())),
            (None, None) => None,
        }
    }

    /// In words, for the operator.
    pub fn describe(&self) -> String {
        self.published()
            .map(|p| p.describe())
            .unwrap_or_else(|| "no checkpoint".to_owned())
    }
}

/// A backup just made: its folder and manifest.
#[derive(Debug, Clone)]
pub struct Made {
    pub dir: PathBuf,
    pub manifest: Manifest,
}

/// `path` made absolute with symbolic links resolved, for the part of it
/// that exists (the rest appended as given).
fn resolved(path: &Path) -> anyhow::Result<PathBuf> {
    let absolute =
        std::path::absolute(path).with_context(|| format!("cannot resolve {}", path.display()))?;
    let mut existing = absolute.clone();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut full = real;
            for part in rest.iter().rev() {
                full.push(part);
            }
            return Ok(full);
        }
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_owned());
                existing = parent.to_owned();
            }
            _ => return Ok(absolute),
        }
    }
}

/// Refuses a backup destination inside the data folder (or the data folder
/// inside it): a lost disk would take both.
pub fn check_destination(data_dir: &Path, destination: &Path) -> anyhow::Result<()> {
    let (data, destination_real) = (resolved(data_dir)?, resolved(destination)?);
    if destination_real.starts_with(&data) || data.starts_with(&destination_real) {
        anyhow::bail!(
            "the backup destination {} is inside the data folder {} (or holds it): a lost disk \
             would take the database and its backups together; give a folder on another disk",
            destination.display(),
            data_dir.display()
        );
    }
    Ok(())
}

/// A writer that hashes and counts what goes through it.
struct Hashing<W> {
    inner: W,
    hash: Sha256,
    bytes: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl<W> Hashing<W> {
    fn new(inner: W) -> Self {
        Hashing {
            inner,
            hash: Sha256::new(),
            bytes: 0,
        }
    }
    fn finish(self) -> (W, String, u64) {
        (self.inner, hex::encode(self.hash.finalize()), self.bytes)
    }
}

/// Creates `path` as a folder readable by its owner only.
pub(crate) fn private_dir(path: &Path) -> anyhow::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(path)
        .with_context(|| format!("cannot create {}", path.display()))
}

/// Creates a new file readable by its owner only.
fn private_file(path: &Path) -> anyhow::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))
}

/// A folder removed when dropped, unless kept.
struct Scratch {
    path: PathBuf,
    keep: bool,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// The copy's installation, signed checkpoints, schema version and key
/// check, read from the SQLite file at `path` (a copy nobody else has open).
pub(crate) struct FileFacts {
    pub installation: String,
    /// Every log's latest signed checkpoint (their notes, one after the
    /// other), `None` when it has none.
    pub checkpoints: Option<String>,
    pub schema_version: i64,
    pub key_check: Option<String>,
}

pub(crate) fn file_facts(path: &Path) -> anyhow::Result<FileFacts> {
    use rusqlite::OptionalExtension;
    let conn = rusqlite::Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    let setting = |key: &str| -> rusqlite::Result<Option<String>> {
        conn.query_row("SELECT value FROM settings WHERE key = ?1", [key], |row| {
            row.get(0)
        })
        .optional()
    };
    conn.query_row("SELECT COUNT(*) FROM trail", [], |row| row.get::<_, i64>(0))
        .context("the copy has no trail")?;
    let mut notes = String::new();
    {
        let mut statement = conn.prepare(checkpoint::LATEST_CHECKPOINTS)?;
        let mut rows = statement.query([])?;
        while let Some(row) = rows.next()? {
            notes.push_str(&row.get::<_, String>(1)?);
            notes.push('\n');
        }
    }
    Ok(FileFacts {
        installation: setting("installation_id")?.unwrap_or_default(),
        checkpoints: (!notes.is_empty()).then_some(notes),
        schema_version: conn.query_row(
            "SELECT COALESCE(MAX(version), 0) FROM _sqlx_migrations WHERE success",
            [],
            |row| row.get(0),
        )?,
        key_check: setting("secrets_key_check")?,
    })
}

/// Backs up the live SQLite database `database` (its file) into a new
/// folder under `destination`, calling `progress(done, total)` in bytes
/// while it compresses. `now_ms` names the backup.
pub fn create(
    database: &Path,
    destination: &Path,
    now_ms: i64,
    mut progress: impl FnMut(u64, u64),
) -> anyhow::Result<Made> {
    let started = Instant::now();
    private_dir(destination)?;
    let created_at = crate::clock::rfc3339(now_ms);
    let stamp: String = created_at
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '.')
        .collect();
    let name = format!("{PREFIX}{stamp}");
    let scratch = Scratch {
        path: destination.join(format!(".{name}.partial")),
        keep: false,
    };
    private_dir(&scratch.path)?;
    // A consistent copy: VACUUM INTO reads one snapshot in a read
    // transaction, which in WAL mode neither blocks nor waits for the writer.
    let copy = scratch.path.join("tresor.db");
    {
        let conn = rusqlite::Connection::open_with_flags(
            database,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .with_context(|| format!("cannot open {}", database.display()))?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.execute("VACUUM INTO ?1", [copy.display().to_string()])
            .context("cannot copy the database (VACUUM INTO)")?;
    }
    let facts = file_facts(&copy)?;
    let total = std::fs::metadata(&copy)?.len();
    let file = private_file(&scratch.path.join(DATABASE_FILE))?;
    let compressed = Hashing::new(std::io::BufWriter::new(file));
    let mut encoder = Hashing::new(GzEncoder::new(compressed, flate2::Compression::new(3)));
    let mut input = std::fs::File::open(&copy)?;
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = input.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        encoder.write_all(&buffer[..n])?;
        progress(encoder.bytes, total);
    }
    let (gz, database_sha256, database_bytes) = encoder.finish();
    let (writer, compressed_sha256, compressed_bytes) = gz.finish()?.finish();
    writer
        .into_inner()
        .map_err(|e| e.into_error())?
        .sync_all()?;
    std::fs::remove_file(&copy)?;
    let manifest = Manifest {
        format: FORMAT.to_owned(),
        created_at: created_at.clone(),
        tresor_version: env!("CARGO_PKG_VERSION").to_owned(),
        database: "sqlite".to_owned(),
        schema_version: facts.schema_version,
        installation: facts.installation.clone(),
        checkpoints: facts.checkpoints.clone(),
        checkpoint: None,
        file: DATABASE_FILE.to_owned(),
        database_bytes,
        database_sha256,
        compressed_bytes,
        compressed_sha256,
        seconds: started.elapsed().as_secs_f64(),
    };
    let mut file = private_file(&scratch.path.join(MANIFEST_FILE))?;
    file.write_all(serde_json::to_string_pretty(&manifest)?.as_bytes())?;
    file.sync_all()?;
    let dir = destination.join(&name);
    std::fs::rename(&scratch.path, &dir)
        .with_context(|| format!("cannot move the backup into {}", dir.display()))?;
    let mut scratch = scratch;
    scratch.keep = true;
    if let Ok(folder) = std::fs::File::open(destination) {
        let _ = folder.sync_all();
    }
    Ok(Made { dir, manifest })
}

/// The backups in `destination`, oldest first.
pub fn list(destination: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(destination)
        .with_context(|| format!("cannot read {}", destination.display()))?
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(PREFIX))
                && path.join(MANIFEST_FILE).is_file()
        })
        .collect();
    found.sort();
    Ok(found)
}

/// Removes all but the newest `keep` backups of `destination`; returns how
/// many went.
pub fn prune(destination: &Path, keep: usize) -> anyhow::Result<usize> {
    let backups = list(destination)?;
    let excess = backups.len().saturating_sub(keep);
    for old in &backups[..excess] {
        std::fs::remove_dir_all(old)
            .with_context(|| format!("cannot remove the old backup {}", old.display()))?;
    }
    Ok(excess)
}
