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
//!
//! The database knows that its checkpoints are kept, and where (issue 42):
//! before its first write, each server records the file, its host and the
//! logs' sizes in the `kept_checkpoints` setting. A database that says so
//! and finds no file at start — a copy put back after the file was deleted,
//! or the folder moved — holds sales until the operator has checked
//! ([`Keeper::check`]). The folder must be private (`crate::private`: no
//! symbolic link, the server's user's, written by nobody else), and the
//! file is made new under a random name, then renamed: never written
//! through a link.

use super::checkpoint::{self, Published, Standing};
use crate::private::{self, Loose};
use crate::service::Service;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;
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
    /// The machine's name, recorded with the file's (empty if unknown).
    pub host: String,
}

/// What a keeper wrote last, and whether it recorded its place yet.
#[derive(Debug, Default)]
pub struct Kept {
    last: String,
    recorded: bool,
}

/// Where a server kept the checkpoints, as the database records it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Place {
    pub file: String,
    pub host: String,
    /// When it was recorded (RFC 3339).
    pub at: String,
    /// Each log's size then (origin → records).
    pub sizes: BTreeMap<String, u64>,
}

impl Place {
    fn describe(&self) -> String {
        let sizes: Vec<String> = self
            .sizes
            .iter()
            .map(|(origin, size)| format!("{origin} at {size} records"))
            .collect();
        let host = if self.host.is_empty() {
            "a machine of no name"
        } else {
            &self.host
        };
        format!(
            "{} on {host} ({}, recorded {})",
            self.file,
            sizes.join(", "),
            self.at
        )
    }
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
        Keeper {
            path,
            host: String::new(),
        }
    }

    /// The same, on the machine `host`.
    pub fn on_host(self, host: Option<String>) -> Keeper {
        Keeper {
            host: host.unwrap_or_default(),
            ..self
        }
    }

    /// The folder of the file `given` names ([`Keeper::new`]).
    pub fn folder_of(given: &Path) -> PathBuf {
        let folder = if given.is_dir() {
            Some(given)
        } else {
            given.parent()
        };
        match folder {
            Some(folder) if !folder.as_os_str().is_empty() => folder.to_owned(),
            _ => PathBuf::from("."),
        }
    }

    /// Makes sure the folder of `given` is private: made 0700 if missing;
    /// a symbolic link, another user's folder or one its group or others
    /// may write in is refused (`crate::private`).
    pub fn private_folder(given: &Path) -> anyhow::Result<()> {
        let folder = Keeper::folder_of(given);
        private::folder(&folder, Loose::Refuse)
            .map_err(|e| anyhow::anyhow!("the folder {}: {e}", folder.display()))
    }

    /// [`Keeper::private_folder`]'s check alone, on a folder that is
    /// there: one missing passes (nothing is made).
    pub fn check_private_folder(given: &Path) -> anyhow::Result<()> {
        let folder = Keeper::folder_of(given);
        if std::fs::symlink_metadata(&folder).is_err() {
            return Ok(());
        }
        private::check(&folder, Loose::Refuse)
            .map_err(|e| anyhow::anyhow!("the folder {}: {e}", folder.display()))
    }

    /// What the file holds, `None` when there is none; an error when it
    /// cannot be read or is not a checkpoint file.
    pub fn read(&self) -> anyhow::Result<Option<Published>> {
        match std::fs::metadata(&self.path) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => anyhow::bail!("cannot read {}: {error}", self.path.display()),
            Ok(_) => {}
        }
        Published::read(&self.path)
            .map(Some)
            .map_err(|e| anyhow::anyhow!("the kept checkpoints: {e}"))
    }

    /// At start: how the database stands against the checkpoints kept, or,
    /// when there are none, whether the database says they were kept;
    /// sales are held (recorded in the trail) when it does not hold them or
    /// they are missing. The reason, when they are held now.
    pub async fn check(&self, service: &Service) -> anyhow::Result<Option<String>> {
        // The database's record first, then the file: another server of the
        // installation records where it keeps them just before it writes
        // the file, so a record read first with no file after it is a file
        // missing, not one about to be written (given a moment to appear).
        let recorded = service.kept_checkpoints().await?;
        let kept = match (self.read()?, recorded) {
            (Some(kept), _) => kept,
            (None, None) => return Ok(None),
            (None, Some(recorded)) => match self.appearing().await? {
                Some(kept) => kept,
                None => return self.hold_missing(service, recorded).await,
            },
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

    /// The file, if it appears within 2 s (another server of the
    /// installation writing it just after recording it).
    async fn appearing(&self) -> anyhow::Result<Option<Published>> {
        for _ in 0..20 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if let Some(kept) = self.read()? {
                return Ok(Some(kept));
            }
        }
        Ok(None)
    }

    /// No file where the database says its checkpoints were kept (`recorded`):
    /// sales are held (it may be a copy put back behind them, the file deleted).
    async fn hold_missing(
        &self,
        service: &Service,
        recorded: String,
    ) -> anyhow::Result<Option<String>> {
        let place = serde_json::from_str::<Place>(&recorded)
            .map(|place| place.describe())
            .unwrap_or_else(|_| recorded.clone());
        let reason = format!(
            "the checkpoints this server published are missing: the database says they were \
             kept in {place}, and {} holds none. A copy of the database put back without them \
             may be behind what was published; or the file was deleted or moved (name where \
             it is with --kept-checkpoints). Compare the database with a monitor's checkpoints \
             (`tresor audit verify --checkpoint FILE`), then reopen with `tresor sales open \
             --after-restore`",
            self.path.display()
        );
        let detail = json!({
            "kept": serde_json::from_str::<serde_json::Value>(&recorded).unwrap_or(recorded.into()),
            "file": self.path.display().to_string(),
            "standing": "missing",
        });
        service
            .hold_sales_after_restore(reason.clone(), detail, None)
            .await?;
        Ok(Some(reason))
    }

    /// Whether the database says its checkpoints are kept (by this server
    /// or another of the installation).
    pub async fn recorded(service: &Service) -> anyhow::Result<bool> {
        Ok(service.kept_checkpoints().await?.is_some())
    }

    /// Writes the database's latest checkpoints if they are not the ones
    /// kept (a new file, synced, renamed over the old one); records where
    /// they are kept first, once per process. Whether it wrote.
    pub async fn keep(&self, service: &Service, kept: &mut Kept) -> anyhow::Result<bool> {
        let current = match checkpoint::current(&service.db.pool).await {
            Ok(current) => current,
            Err(crate::error::Error::Validation(_)) => return Ok(false),
            Err(error) => return Err(error.into()),
        };
        if !kept.recorded {
            service
                .record_kept_checkpoints(serde_json::to_string(&self.place(service, &current))?)
                .await?;
            kept.recorded = true;
        }
        let text = current.to_text();
        if text == kept.last {
            return Ok(false);
        }
        self.write(text.as_bytes())?;
        kept.last = text;
        Ok(true)
    }

    fn place(&self, service: &Service, current: &Published) -> Place {
        let sizes = match current {
            Published::Signed(signed) => {
                signed.iter().map(|s| (s.origin.clone(), s.size)).collect()
            }
            Published::Head(head) => [("trail".to_owned(), head.records as u64)].into(),
        };
        Place {
            file: std::path::absolute(&self.path)
                .unwrap_or_else(|_| self.path.clone())
                .display()
                .to_string(),
            host: self.host.clone(),
            at: crate::clock::rfc3339(service.now_ms()),
            sizes,
        }
    }

    /// Writes the file, in a private folder only.
    fn write(&self, bytes: &[u8]) -> anyhow::Result<()> {
        let folder = Keeper::folder_of(&self.path);
        private::check(&folder, Loose::Refuse).map_err(|e| {
            anyhow::anyhow!("--kept-checkpoints: the folder {}: {e}", folder.display())
        })?;
        let name = self.path.file_name().unwrap_or_default();
        private::write_whole(&folder, name, bytes, true)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", self.path.display()))
    }

    /// Keeps the latest checkpoints for as long as the server runs (not
    /// while sales are held after a restore).
    pub fn spawn(self, service: Service) {
        tracing::info!(file = %self.path.display(), "keeping the checkpoints published");
        tokio::spawn(async move {
            let mut kept = Kept {
                last: std::fs::read_to_string(&self.path).unwrap_or_default(),
                recorded: false,
            };
            let mut failing = false;
            loop {
                tokio::time::sleep(EVERY).await;
                let held = matches!(service.restore_hold().await, Ok(Some(_)));
                if held {
                    continue;
                }
                match self.keep(&service, &mut kept).await {
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

#[cfg(test)]
mod tests {
    use super::Keeper;

    #[test]
    fn two_writers_of_one_file_never_fail_each_other() {
        let folder = tempfile::tempdir().unwrap();
        let keeper = Keeper::new(folder.path(), "x");
        let writers: Vec<_> = ["first", "second"]
            .into_iter()
            .map(|text| {
                let keeper = keeper.clone();
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        keeper.write(text.as_bytes())?;
                    }
                    anyhow::Ok(())
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap().unwrap();
        }
        let kept = std::fs::read_to_string(&keeper.path).unwrap();
        assert!(kept == "first" || kept == "second", "{kept:?}");
        let left: Vec<_> = std::fs::read_dir(folder.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no partial file left: {left:?}");
    }

    #[test]
    fn the_folder_of_a_file_or_a_folder_given() {
        let folder = tempfile::tempdir().unwrap();
        assert_eq!(Keeper::folder_of(folder.path()), folder.path());
        let file = folder.path().join("kept.checkpoints");
        assert_eq!(Keeper::folder_of(&file), folder.path());
        assert_eq!(
            Keeper::folder_of("kept.checkpoints".as_ref()),
            std::path::Path::new(".")
        );
        assert_eq!(Keeper::folder_of("".as_ref()), std::path::Path::new("."));
    }
}
