//! `tresor restore`: a backup into a new data folder, refused (with nothing
//! written) when anything is wrong, verified before it is moved into place.
//!
//! The order is the point: the destination (new or empty, not in use), the
//! manifest, the installation, the compressed file's size and SHA-256, are
//! all checked before a byte is written; the copy is then unpacked into a
//! hidden folder beside the destination (removed on any refusal), its own
//! SHA-256, the installation inside it and the secrets key are checked, it
//! is migrated and verified (`super::consistency`), the restore is recorded
//! in its trail, sales are held if it is behind what was published, and
//! only then is the folder renamed to the destination.

use super::checkpoint::{self, Published};
use super::consistency::{self, Consistent};
use super::{Hashing, Manifest, Scratch, file_facts, private_dir, private_file};
use crate::seal::KeySource;
use crate::service::{Service, Settings, SystemClock};
use crate::store::Db;
use anyhow::Context;
use serde_json::json;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A restore refused: the operator's input does not fit (exit 2), and
/// nothing was written.
#[derive(Debug, thiserror::Error)]
#[error("restore refused, nothing written: {0}")]
pub struct Refused(pub String);

fn refuse<T>(why: impl Into<String>) -> anyhow::Result<T> {
    Err(Refused(why.into()).into())
}

/// What to restore, where, with which key, compared with what.
#[derive(Debug, Clone)]
pub struct Request {
    /// The backup's folder (or its manifest).
    pub from: PathBuf,
    /// The new data folder (missing, or empty).
    pub data: PathBuf,
    pub key: KeySource,
    /// The log's signing key: the restore is recorded in the signed log.
    pub log_key: crate::logkey::LogKeySource,
    /// The writer the restore's record is appended as (`cli`).
    pub writer: String,
    /// The signed checkpoints kept outside the database (a monitor's,
    /// `tresor audit checkpoint --out`): the restored trail is compared
    /// with them.
    pub published: Option<Published>,
    /// The installation the operator expects the backup to be of.
    pub installation: Option<String>,
}

/// A restore done.
#[derive(Debug)]
pub struct Restored {
    pub manifest: Manifest,
    pub consistent: Consistent,
    /// Why sales are held closed, if they are.
    pub held: Option<String>,
}

/// Refuses a destination that exists and is not empty, saying so more
/// precisely when a server holds it.
fn check_destination(data: &Path) -> anyhow::Result<()> {
    let lock = data.join("tresor.lock");
    if lock.exists()
        && let Ok(file) = std::fs::File::open(&lock)
        && let Err(std::fs::TryLockError::WouldBlock) = file.try_lock()
    {
        let pid = std::fs::read_to_string(&lock).unwrap_or_default();
        return refuse(format!(
            "the folder {} is in use by a tresor server (pid {}): restore into a new folder",
            data.display(),
            pid.trim()
        ));
    }
    match std::fs::read_dir(data) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return refuse(format!(
                    "the folder {} is not empty: restore into a new folder, never over data",
                    data.display()
                ));
            }
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => {
            return refuse(format!(
                "cannot read the folder {}: {error}",
                data.display()
            ));
        }
    }
    let parent = std::path::absolute(data)?
        .parent()
        .map(Path::to_owned)
        .unwrap_or_default();
    if !parent.is_dir() {
        return refuse(format!(
            "the folder {} does not exist: create it first",
            parent.display()
        ));
    }
    Ok(())
}

/// The SHA-256 and size of the file at `path`.
fn digest(path: &Path) -> anyhow::Result<(String, u64)> {
    let mut hashing = Hashing::new(std::io::sink());
    let mut file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    std::io::copy(&mut file, &mut hashing)?;
    let (_, sha, bytes) = hashing.finish();
    Ok((sha, bytes))
}

/// The backup's manifest read and checked against what the operator
/// expects (installation, published checkpoint), and its packed file's
/// checksum: the manifest and that file.
fn checked_backup(request: &Request) -> anyhow::Result<(Manifest, PathBuf)> {
    let (dir, manifest) = Manifest::read(&request.from).map_err(|e| Refused(format!("{e:#}")))?;
    if let Some(expected) = &request.installation
        && expected != &manifest.installation
    {
        return refuse(format!(
            "the backup is of another installation ({}), not {expected}",
            manifest.installation
        ));
    }
    if let Some(published) = &request.published
        && published.installation() != manifest.installation
    {
        return refuse(format!(
            "the backup is of another installation ({}) than the published checkpoint ({})",
            manifest.installation,
            published.installation()
        ));
    }
    let packed = dir.join(&manifest.file);
    if manifest.file.contains('/') || manifest.file.contains("..") {
        return refuse(format!(
            "the manifest names a file outside the backup: {}",
            manifest.file
        ));
    }
    let (sha, bytes) = digest(&packed).map_err(|e| Refused(format!("{e:#}")))?;
    if bytes != manifest.compressed_bytes || sha != manifest.compressed_sha256 {
        return refuse(format!(
            "the backup's checksum fails: {} has {bytes} bytes and SHA-256 {sha}, its manifest \
             says {} bytes and {} (truncated or altered)",
            packed.display(),
            manifest.compressed_bytes,
            manifest.compressed_sha256
        ));
    }

    Ok((manifest, packed))
}

/// Unpacks `packed` into `file`, checked against the manifest.
fn unpack(
    packed: &Path,
    file: &Path,
    manifest: &Manifest,
    progress: &mut impl FnMut(&str, u64, u64),
) -> anyhow::Result<()> {
    let mut output = Hashing::new(std::io::BufWriter::new(private_file(file)?));
    let mut input = flate2::read::GzDecoder::new(std::fs::File::open(packed)?);
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = match input.read(&mut buffer) {
            Ok(n) => n,
            Err(error) => return refuse(format!("the backup does not unpack: {error}")),
        };
        if n == 0 {
            break;
        }
        output.write_all(&buffer[..n])?;
        progress("unpacking", output.bytes, manifest.database_bytes);
    }
    let (writer, sha, bytes) = output.finish();
    writer
        .into_inner()
        .map_err(|e| e.into_error())?
        .sync_all()?;
    if bytes != manifest.database_bytes || sha != manifest.database_sha256 {
        return refuse(format!(
            "the unpacked database has {bytes} bytes and SHA-256 {sha}, its manifest says {} \
             bytes and {} (altered)",
            manifest.database_bytes, manifest.database_sha256
        ));
    }

    Ok(())
}

/// The restored database opened: of the backup's installation, its key the
/// one its secrets were sealed with, the log key listed.
async fn open_restored(
    request: &Request,
    folder: &Path,
    file: &Path,
    manifest: &Manifest,
) -> anyhow::Result<Db> {
    let facts = file_facts(file).map_err(|e| Refused(format!("not a tresor database: {e:#}")))?;
    if facts.installation != manifest.installation {
        return refuse(format!(
            "the database inside is of installation {}, its manifest says {} (altered)",
            facts.installation, manifest.installation
        ));
    }
    let key = request
        .key
        .load(facts.key_check.is_none())
        .map_err(|e| Refused(e.to_string()))?;
    if let Some(check) = &facts.key_check {
        key.verify_check(check).map_err(|e| {
            Refused(format!(
                "{e}: this backup's secrets were sealed with another key"
            ))
        })?;
    }

    let log_seed = request.log_key.load().map_err(Refused)?.ok_or_else(|| {
        Refused(
            "no log key: the restore is recorded in the signed log; give the \
                 installation's key with --log-key FILE (TRESOR_LOG_KEY_FILE) or TRESOR_LOG_KEY"
                .to_owned(),
        )
    })?;
    let db = Db::open_data_dir(folder)
        .await
        .map_err(|e| Refused(format!("the restored database does not open: {e:#}")))?
        .with_secrets_key(key)
        .with_writer(&request.writer)
        .with_log_seed(&log_seed)
        .await?;
    db.register_log_key(crate::clock::Clock::now_ms(&SystemClock))
        .await
        .map_err(|e| Refused(format!("{e:#}")))?;
    Ok(db)
}

/// The restore recorded in the trail, compared with the published
/// checkpoint; sales held when it is behind or when none was given: why.
async fn record(
    service: &Service,
    request: &Request,
    manifest: &Manifest,
) -> anyhow::Result<Option<String>> {
    let (standing, held) = match &request.published {
        Some(published) => {
            let standing = checkpoint::standing(&service.db.pool, published).await?;
            let reason = standing.hold_reason();
            (standing.detail(published), reason)
        }
        None => (
            json!({"published": null, "standing": "unknown"}),
            Some(
                "restored from a backup with no published checkpoint to compare it with \
                 (--published): purchases acknowledged after the backup may be lost. Check, \
                 then reopen with `tresor sales open --after-restore`"
                    .to_owned(),
            ),
        ),
    };
    service
        .record_restore(json!({
            "backup": manifest.created_at,
            "checkpoint": manifest.published().map(|p| p.to_json()),
            "compared": standing,
        }))
        .await?;
    if let Some(reason) = &held {
        service
            .hold_sales_after_restore(
                reason.clone(),
                standing.clone(),
                request.published.as_ref().map(Published::key),
            )
            .await?;
    }
    Ok(held)
}

/// Restores `request.from` into `request.data`; `progress(done, total)` in
/// bytes while it unpacks, then in trail records while it verifies.
pub async fn restore(
    request: &Request,
    mut progress: impl FnMut(&str, u64, u64),
) -> anyhow::Result<Restored> {
    check_destination(&request.data)?;
    let (manifest, packed) = checked_backup(request)?;
    // From here on, writes go to a hidden folder beside the destination,
    // removed on any refusal.
    let data = std::path::absolute(&request.data)?;
    let name = data
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "data".to_owned());
    let mut scratch = Scratch {
        path: data.with_file_name(format!(".{name}.restoring-{}", std::process::id())),
        keep: false,
    };
    let _ = std::fs::remove_dir_all(&scratch.path);
    private_dir(&scratch.path)?;
    let file = scratch.path.join("tresor.db");
    unpack(&packed, &file, &manifest, &mut progress)?;
    let db = open_restored(request, &scratch.path, &file, &manifest).await?;
    let consistent = consistency::check(&db.pool, |n| progress("verifying", n, 0))
        .await
        .map_err(|e| Refused(format!("the restored database fails its checks: {e:#}")))?;
    let service = Service::new(db, Arc::new(SystemClock), Settings::default());
    service
        .open_secrets()
        .await
        .map_err(|e| Refused(format!("the block secrets do not open: {e:#}")))?;
    let held = record(&service, request, &manifest).await?;
    drop(service);
    std::fs::rename(&scratch.path, &data)
        .with_context(|| format!("cannot move the restored database into {}", data.display()))?;
    scratch.keep = true;
    Ok(Restored {
        manifest,
        consistent,
        held,
    })
}
