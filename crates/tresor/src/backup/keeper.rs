//! The checkpoints a server last published, kept by the server itself in a
//! file outside its data folder (`--kept-checkpoints`, by default beside
//! the log key): so that a database brought back by other means than
//! `tresor restore` — a Litestream restore, a PostgreSQL point-in-time
//! recovery — and started without `--published-checkpoint` is still
//! compared with what its site published, and holds sales when it is
//! behind or beside it.
//!
//! The server writes every log's latest signed checkpoint there (the file
//! format of [`super::checkpoint::Published`]) within [`EVERY`] of its
//! signing, except while sales are held after a restore (the file then
//! keeps what was published before, the evidence); `tresor sales open
//! --after-restore` writes the database's own once the operator has
//! reopened. At start, [`Keeper::check`] compares.

use super::checkpoint::{self, Published, Standing};
use crate::service::Service;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often the server looks for a new checkpoint to keep.
pub const EVERY: Duration = Duration::from_millis(250);

/// The file name in a folder given (or the default one): one file per
/// installation, so that two installations never mix theirs.
pub fn file_name(installation: &str) -> String {
    format!("tresor-{installation}.checkpoints")
}

/// Where the server keeps its published checkpoints.
#[derive(Debug, Clone)]
pub struct Keeper {
    pub path: PathBuf,
}

impl Keeper {
    /// `given` is a file, or a folder that holds (or will hold) one named
    /// after the installation ([`file_name`]).
    pub fn new(given: &Path, installation: &str) -> Keeper {
        let path = if given.is_dir() || given.as_os_str().is_empty() {
            given.join(file_name(installation))
        } else {
            given.to_owned()
        };
        Keeper { path }
    }

    /// What the file holds, `None` when there is none yet.
    pub fn read(&self) -> anyhow::Result<Option<Published>> {
        if !self.path.exists() {
            return Ok(None);
        }
        Published::read(&self.path)
            .map(Some)
            .map_err(|e| anyhow::anyhow!("the kept checkpoints: {e}"))
    }

    /// At start: how the database stands against the checkpoints kept;
    /// sales are held (recorded in the trail) when it does not hold them.
    /// The reason, when they are held now.
    pub async fn check(&self, service: &Service) -> anyhow::Result<Option<String>> {
        let Some(kept) = self.read()? else {
            return Ok(None);
        };
        let standing = checkpoint::standing(&service.db.pool, &kept).await?;
        if let Standing::OtherInstallation { ours, theirs } = &standing {
            anyhow::bail!(
                "{} holds the checkpoints of installation {theirs}, this database is of {ours}: \
                 give this installation's file (--kept-checkpoints)",
                self.path.display()
            );
        }
        let Some(reason) = standing.hold_reason() else {
            return Ok(None);
        };
        let reason = format!(
            "the database does not hold the checkpoints this server last published (kept in \
             {}): {reason}",
            self.path.display()
        );
        service
            .hold_sales_after_restore(reason.clone(), standing.detail(&kept), Some(kept.key()))
            .await?;
        Ok(Some(reason))
    }

    /// Writes the database's latest checkpoints if they are not the ones
    /// kept (atomically: a file beside it, synced, renamed). Whether it
    /// wrote.
    pub async fn keep(&self, service: &Service, last: &mut String) -> anyhow::Result<bool> {
        let current = match checkpoint::current(&service.db.pool).await {
            Ok(current) => current.to_text(),
            Err(crate::error::Error::Validation(_)) => return Ok(false),
            Err(error) => return Err(error.into()),
        };
        if current == *last {
            return Ok(false);
        }
        write_atomic(&self.path, current.as_bytes())?;
        *last = current;
        Ok(true)
    }

    /// Keeps the latest checkpoints for as long as the server runs (not
    /// while sales are held after a restore).
    pub fn spawn(self, service: Service) {
        tracing::info!(file = %self.path.display(), "keeping the checkpoints published");
        tokio::spawn(async move {
            let mut last = std::fs::read_to_string(&self.path).unwrap_or_default();
            let mut failing = false;
            loop {
                tokio::time::sleep(EVERY).await;
                let held = matches!(service.restore_hold().await, Ok(Some(_)));
                if held {
                    continue;
                }
                match self.keep(&service, &mut last).await {
                    Ok(_) => failing = false,
                    Err(error) if !failing => {
                        failing = true;
                        tracing::error!(
                            error = %format!("{error:#}"),
                            file = %self.path.display(),
                            "cannot keep the checkpoints published"
                        );
                    }
                    Err(_) => {}
                }
            }
        });
    }
}

fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use anyhow::Context;
    use std::io::Write;
    // A name of this write's own: two servers of one installation on one
    // host keep one file (both write what the database holds), and a shared
    // partial file would be renamed away under the other's feet.
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let write = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let partial = path.with_extension(format!("partial.{}.{write}", std::process::id()));
    let mut file = std::fs::File::create(&partial)
        .with_context(|| format!("cannot write {}", partial.display()))?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&partial, path).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::write_atomic;

    #[test]
    fn two_writers_of_one_file_never_fail_each_other() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("tresor-x.checkpoints");
        let writers: Vec<_> = ["first", "second"]
            .into_iter()
            .map(|text| {
                let path = path.clone();
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        write_atomic(&path, text.as_bytes())?;
                    }
                    anyhow::Ok(())
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap().unwrap();
        }
        let kept = std::fs::read_to_string(&path).unwrap();
        assert!(kept == "first" || kept == "second", "{kept:?}");
        let left: Vec<_> = std::fs::read_dir(folder.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no partial file left: {left:?}");
    }
}
