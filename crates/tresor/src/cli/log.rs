//! The log's key and the writer's name (docs/AUDIT.md, "Keys"): `LogArgs`,
//! flattened into every command that opens a database, and `tresor log
//! keygen|rotate-key`.

use super::Usage;
use super::operator::DbArgs;
use crate::logkey::{LogKeySource, LogSeed, write_key_file};
use crate::service::{Service, Settings, SystemClock};
use crate::trail::Actor;
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the log's signing key comes from, and this process's writer name.
#[derive(Debug, Clone, Args)]
pub struct LogArgs {
    /// This process's name as a writer: it appends to its own log
    /// (`tresor/<installation>/<writer>`). Default: `server` for `serve`,
    /// `cli` for every other command. Two processes of one name share a log
    /// and wait for each other.
    #[arg(long, env = "TRESOR_WRITER")]
    pub writer: Option<String>,
    /// The file holding the key that signs the log's checkpoints (64 hex
    /// digits, an Ed25519 seed; `tresor log keygen` makes one). Keep it
    /// outside the data folder and its backups.
    #[arg(
        long = "log-key",
        env = "TRESOR_LOG_KEY_FILE",
        default_value = "tresor-log.key"
    )]
    pub log_key_file: PathBuf,
    /// The key itself (64 hex digits) instead of the file: give it by the
    /// environment, since a command line is visible to the machine's users.
    #[arg(long = "log-key-hex", env = "TRESOR_LOG_KEY", hide_env_values = true)]
    pub log_key_hex: Option<String>,
}

/// The key file demo mode makes in the data folder.
pub const DEMO_KEY_FILE: &str = "log.key";

impl LogArgs {
    pub fn source(&self) -> LogKeySource {
        match &self.log_key_hex {
            Some(hex) => LogKeySource::Hex(hex.clone()),
            None => LogKeySource::File(self.log_key_file.clone()),
        }
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

    /// The signing key. Without one, demo mode (`demo_dir`: the data
    /// folder) uses, and makes, `log.key` there; anything else is refused.
    pub fn seed(&self, demo_dir: Option<&Path>) -> anyhow::Result<LogSeed> {
        if let Some(seed) = self.source().load().map_err(Usage)? {
            return Ok(seed);
        }
        if let Some(dir) = demo_dir {
            let path = dir.join(DEMO_KEY_FILE);
            if let Some(seed) = LogKeySource::File(path.clone()).load().map_err(Usage)? {
                return Ok(seed);
            }
            let seed = LogSeed::generate();
            write_key_file(&path, &seed).map_err(Usage)?;
            tracing::warn!(path = %path.display(), "demo mode: created the log's signing key");
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

#[derive(Debug, Subcommand)]
pub enum LogCommand {
    /// Make a new signing key in FILE (readable by its owner only) and print
    /// its verifier key, the one monitors and players pin.
    Keygen {
        /// The new key's file (never overwritten).
        #[arg(long)]
        to: PathBuf,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Sign with a new key from now on: a `log_key_rotated` record naming
    /// it is appended and signed with the current key (given as usual);
    /// restart every server with the new key afterwards.
    RotateKey {
        /// The new key's file (`tresor log keygen` makes one).
        #[arg(long)]
        new: PathBuf,
        #[command(flatten)]
        db: DbArgs,
    },
}

pub async fn run_log(command: LogCommand) -> anyhow::Result<()> {
    match command {
        LogCommand::Keygen { to, db } => {
            let db = db.open_read().await?;
            let installation = crate::backup::checkpoint::installation(&db.pool).await?;
            let seed = LogSeed::generate();
            write_key_file(&to, &seed).map_err(Usage)?;
            println!("{}", seed.named(&installation).vkey());
            Ok(())
        }
        LogCommand::RotateKey { new, db } => {
            let new = LogKeySource::File(new.clone())
                .load()
                .map_err(Usage)?
                .ok_or_else(|| Usage(format!("--new: no key at {}", new.display())))?;
            let db = db.open().await?;
            let service = Service::new(db, Arc::new(SystemClock), Settings::default());
            let vkey = service.rotate_log_key(Actor::Operator, &new).await?;
            println!("{vkey}");
            Ok(())
        }
    }
}
