//! `tresor log keygen|rotate-key`: the log's signing keys (docs/AUDIT.md,
//! "Keys"); the flags naming the key and the writer, `LogArgs`, are in
//! `db.rs` with the rest of what opens a database.

use super::Usage;
use super::db::DbArgs;
use crate::logkey::{LogKeySource, LogSeed, write_key_file};
use crate::service::{Service, Settings, SystemClock};
use crate::trail::Actor;
use clap::Subcommand;
use std::path::PathBuf;
use std::sync::Arc;

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
