//! Where a command's data lives and with which keys it is opened: the
//! database (`--data` or `--database-url`), the key of its block secrets,
//! the log's signing key and the writer's name (`DbArgs`, `KeyArgs`,
//! `LogArgs`), and the service on it (`open_service`). Every command that
//! opens a database uses this file, and it uses no other command's.

use crate::logkey::{LogKeySource, LogSeed, write_key_file};
use crate::seal::KeySource;
use crate::service::{Service, Settings, SystemClock};
use crate::store::{Db, sqlite_url};
use anyhow::Context;
use clap::Args;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{LogDoesNotHold, Usage};

/// A listing's arguments: the database, and JSON instead of a table.
#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

/// Where the data lives.
#[derive(Debug, Clone, Args)]
pub struct DbArgs {
    /// Folder of the embedded SQLite database (created if missing).
    #[arg(long, env = "TRESOR_DATA", default_value = "data")]
    pub data: PathBuf,
    /// A PostgreSQL URL (postgres://user@host/db) to use instead of SQLite.
    #[arg(long, env = "TRESOR_DATABASE_URL")]
    pub database_url: Option<String>,
    /// The key of the block secrets.
    #[command(flatten)]
    pub key: KeyArgs,
    /// The log's signing key and this process's writer name.
    #[command(flatten)]
    pub log: LogArgs,
}

/// Where the key that seals block secrets comes from (every command that
/// opens a database, and `tresor restore`).
#[derive(Debug, Clone, Args)]
pub struct KeyArgs {
    /// The file holding the key that seals block secrets (64 hex digits).
    /// Created, readable by its owner only, when a database with no sealed
    /// secret yet is opened; kept outside the data folder so that a copy of
    /// the folder (a backup) does not carry the key beside the secrets.
    #[arg(
        long,
        env = "TRESOR_SECRETS_KEY_FILE",
        default_value = "tresor-secrets.key"
    )]
    pub secrets_key_file: PathBuf,
    /// The key itself, 64 hex digits, instead of the file: give it by the
    /// environment, since a command line is visible to the machine's users.
    #[arg(long, env = "TRESOR_SECRETS_KEY", hide_env_values = true)]
    pub secrets_key: Option<String>,
}

impl KeyArgs {
    /// The key given by the environment, else the file.
    pub fn source(&self) -> KeySource {
        match &self.secrets_key {
            Some(hex) => KeySource::Hex(hex.clone()),
            None => KeySource::File(self.secrets_key_file.clone()),
        }
    }
}

impl DbArgs {
    pub fn url(&self) -> String {
        match &self.database_url {
            Some(url) => url.clone(),
            None => sqlite_url(&self.data),
        }
    }

    /// Where the key of the block secrets comes from.
    pub fn key_source(&self) -> KeySource {
        self.key.source()
    }

    /// The plain default: the SQLite folder `data`, as `cargo run` gives.
    pub fn is_default(&self) -> bool {
        self.database_url.is_none() && self.data == std::path::Path::new("data")
    }

    /// Opens the database to write as the command line (writer `cli`
    /// unless `--writer` says otherwise): [`DbArgs::open_as`].
    pub async fn open(&self) -> anyhow::Result<Db> {
        self.open_as("cli", false).await
    }

    /// Opens the database to write: as [`DbArgs::open_read`], with the
    /// writer's name and the log's signing key, which must be the
    /// installation's current one (the first key given is listed as the
    /// installation's). Without a key, demo mode (`demo_if_created` for a
    /// new database: none, or one nothing was written into yet, `Db::fresh`)
    /// makes one in the data folder; anything else is refused (exit 2).
    pub async fn open_as(&self, default_writer: &str, demo_if_created: bool) -> anyhow::Result<Db> {
        let writer = self.log.writer(default_writer)?;
        let db = self.open_read().await?;
        let demo: Option<String> =
            sqlx::query_scalar("SELECT value FROM settings WHERE key = 'demo'")
                .fetch_optional(&db.pool)
                .await?;
        let demo = demo.as_deref() == Some("1") || (demo_if_created && db.fresh);
        let seed = self
            .log
            .seed(demo.then_some((self.data.as_path(), self.key.secrets_key_file.as_path())))?;
        let db = db.with_writer(&writer).with_log_seed(&seed).await?;
        let now = crate::clock::Clock::now_ms(&SystemClock);
        db.register_log_key(now).await.map_err(|e| {
            Usage(format!(
                "{e:#}: give the installation's log key with --log-key FILE                  (TRESOR_LOG_KEY_FILE) or TRESOR_LOG_KEY"
            ))
        })?;
        let checked = match db.conn().await {
            Ok(mut conn) => crate::trail::log::check_all_signed(&mut conn).await,
            Err(error) => Err(error),
        };
        // A database rotated before retired keys' last sizes were recorded:
        // found once, before the writer starts.
        let checked = match checked {
            Ok(()) => crate::trail::retired::backfill(&db).await,
            Err(error) => Err(error),
        };
        checked.map_err(|e| match e {
            crate::error::Error::LogDoesNotHold(why) => anyhow::Error::new(LogDoesNotHold(why)),
            other => anyhow::Error::new(other),
        })?;
        Ok(db)
    }

    /// Opens (and migrates) the database with the key of its secrets,
    /// refusing a key that is not the one they were sealed with; no log
    /// key (for reading: the audit's commands, reports).
    pub async fn open_read(&self) -> anyhow::Result<Db> {
        let db = match &self.database_url {
            Some(url) => Db::connect(url).await,
            None => Db::open_data_dir(&self.data).await,
        }?;
        let check = db.secrets_key_check().await?;
        let key = self.key_source().load(check.is_none())?;
        if let Some(check) = &check {
            key.verify_check(check)?;
        }
        Ok(db.with_secrets_key(key))
    }
}

/// Where the log's signing key comes from, and this process's writer name.
#[derive(Debug, Clone, Args)]
pub struct LogArgs {
    /// This process's name as a writer: it appends to its own log
    /// (`tresor/<installation>/<writer>`). Default: for `serve`, the host
    /// name and the players' port (`web1-8080`: unique to the server; give
    /// a stable name where the host name changes, a container); `cli` for
    /// every other command. Two processes of one name share a log and wait
    /// for each other (a server warns when another live one has its name).
    #[arg(long, env = "TRESOR_WRITER")]
    pub writer: Option<String>,
    /// The file holding the key that signs the log's checkpoints (64 hex
    /// digits, an Ed25519 seed; `tresor log keygen` makes one). Keep it
    /// outside the data folder and its backups.
    #[arg(
        long = "log-key",
        env = "TRESOR_LOG_KEY_FILE",
        default_value = DEFAULT_LOG_KEY_FILE
    )]
    pub log_key_file: PathBuf,
    /// The key itself (64 hex digits) instead of the file: give it by the
    /// environment, since a command line is visible to the machine's users.
    #[arg(long = "log-key-hex", env = "TRESOR_LOG_KEY", hide_env_values = true)]
    pub log_key_hex: Option<String>,
    /// Where `tresor serve` keeps the checkpoints it last published, outside
    /// the data folder, and compares a database with at start (a copy
    /// brought back by Litestream or a point-in-time recovery, behind them,
    /// starts with sales held): a file, or a folder where it is
    /// `tresor-<installation>.checkpoints`. Default: the log key's folder.
    #[arg(long, env = "TRESOR_KEPT_CHECKPOINTS", value_name = "PATH")]
    pub kept_checkpoints: Option<PathBuf>,
}

/// The key file demo mode made in the data folder before issue 35 (moved
/// out, beside the secrets key, when found).
pub const OLD_DEMO_KEY_FILE: &str = "log.key";
/// The default `--log-key`: also where demo mode makes its key, beside the
/// secrets key and outside the data folder.
pub const DEFAULT_LOG_KEY_FILE: &str = "tresor-log.key";

impl LogArgs {
    pub fn source(&self) -> LogKeySource {
        match &self.log_key_hex {
            Some(hex) => LogKeySource::Hex(hex.clone()),
            None => LogKeySource::File(self.log_key_file.clone()),
        }
    }

    /// Where the server keeps its published checkpoints (see
    /// `backup::keeper`), for the installation `installation`.
    pub fn keeper(&self, installation: &str) -> crate::backup::keeper::Keeper {
        crate::backup::keeper::Keeper::new(&self.kept_given(), installation)
            .on_host(super::writer_name::host_name())
    }

    fn kept_given(&self) -> PathBuf {
        match &self.kept_checkpoints {
            Some(path) => path.clone(),
            None => self
                .log_key_file
                .parent()
                .map(Path::to_owned)
                .unwrap_or_default(),
        }
    }

    /// Refuses a kept checkpoints' folder that is a symbolic link, another
    /// user's, or writable by its group or others (made 0700 if missing).
    pub fn check_kept_folder(&self) -> anyhow::Result<()> {
        crate::backup::keeper::Keeper::private_folder(&self.kept_given()).map_err(|e| {
            Usage(format!(
                "--kept-checkpoints (TRESOR_KEPT_CHECKPOINTS): {e:#}"
            ))
            .into()
        })
    }

    /// [`LogArgs::check_kept_folder`] without making it: a folder that is
    /// not there yet passes (it is made once every setting is checked).
    pub fn check_kept_folder_if_there(&self) -> anyhow::Result<()> {
        crate::backup::keeper::Keeper::check_private_folder(&self.kept_given()).map_err(|e| {
            Usage(format!(
                "--kept-checkpoints (TRESOR_KEPT_CHECKPOINTS): {e:#}"
            ))
            .into()
        })
    }

    /// The writer's name, `default` unless given; checked.
    pub fn writer(&self, default: &str) -> anyhow::Result<String> {
        let name = self.writer.clone().unwrap_or_else(|| default.to_owned());
        let valid = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.');
        if !valid {
            return Err(Usage(format!(
                "--writer (TRESOR_WRITER): {name:?} is not a writer name (1 to 64 letters, \
                 digits, '-', '_' or '.')"
            ))
            .into());
        }
        Ok(name)
    }

    /// The signing key. Without one, demo mode (`demo`: the data folder
    /// and the secrets key's file) uses, and makes, a key file beside the
    /// secrets key (the `--log-key` file, by default `tresor-log.key` in the
    /// secrets key's folder), never in the data folder, lost with it; the
    /// `log.key` an older demo made in the data folder is moved there.
    /// Anything else is refused.
    pub fn seed(&self, demo: Option<(&Path, &Path)>) -> anyhow::Result<LogSeed> {
        if let Some(seed) = self.source().load().map_err(Usage)? {
            return Ok(seed);
        }
        if let Some((data, secrets_key_file)) = demo {
            let path = if self.log_key_file == Path::new(DEFAULT_LOG_KEY_FILE) {
                secrets_key_file
                    .parent()
                    .unwrap_or(Path::new(""))
                    .join(DEFAULT_LOG_KEY_FILE)
            } else {
                self.log_key_file.clone()
            };
            if let Some(seed) = LogKeySource::File(path.clone()).load().map_err(Usage)? {
                return Ok(seed);
            }
            let old = data.join(OLD_DEMO_KEY_FILE);
            if let Some(seed) = LogKeySource::File(old.clone()).load().map_err(Usage)? {
                write_key_file(&path, &seed).map_err(Usage)?;
                std::fs::remove_file(&old)
                    .with_context(|| format!("cannot remove {}", old.display()))?;
                tracing::warn!(
                    from = %old.display(),
                    to = %path.display(),
                    "demo mode: moved the log's signing key out of the data folder"
                );
                return Ok(seed);
            }
            let seed = LogSeed::generate();
            write_key_file(&path, &seed).map_err(Usage)?;
            tracing::warn!(
                path = %path.display(),
                "demo mode: created the log's signing key (keep it with the backups: a restore \
                 needs it)"
            );
            return Ok(seed);
        }
        Err(Usage(format!(
            "no log key at {}: the log's checkpoints are signed with a key kept outside the \
             database; give it with --log-key FILE (TRESOR_LOG_KEY_FILE) or TRESOR_LOG_KEY, or \
             make one with `tresor log keygen --to FILE`",
            self.log_key_file.display()
        ))
        .into())
    }
}

/// The service on the database of `db`, its key checked and every secret
/// sealed (see `Service::open_secrets`).
pub async fn open_service(db: &DbArgs, settings: Settings) -> anyhow::Result<Service> {
    open_service_as(db, settings, "cli", false).await
}

/// [`open_service`] as the writer `default_writer` (see [`DbArgs::open_as`]).
pub async fn open_service_as(
    db: &DbArgs,
    settings: Settings,
    default_writer: &str,
    demo_if_created: bool,
) -> anyhow::Result<Service> {
    let db = db.open_as(default_writer, demo_if_created).await?;
    let service = Service::new(db, Arc::new(SystemClock), settings);
    let sealed = service
        .open_secrets()
        .await
        .context("opening the block secrets")?;
    if sealed > 0 {
        tracing::info!(sealed, "sealed the block secrets found in clear");
    }
    Ok(service)
}
