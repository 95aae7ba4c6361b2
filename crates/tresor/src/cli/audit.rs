//! The auditor's and accountant's commands: `audit verify|export` over the
//! game trail, and `report` over the plays and the ledger.

use super::db::DbArgs;
use super::{CheckFailed, Usage};
use crate::backup::checkpoint::{self, Published};
use crate::report;
use crate::service::parse_rfc3339;
use crate::trail::{self, Verdict};
use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::Write;

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Check the game trail: the v1 chain, then every writer's log
    /// recomputed from its records against every signed checkpoint (kept in
    /// the database, and given with --checkpoint); name the first bad record
    /// (exit 1) or say it is intact (exit 0).
    Verify {
        /// The installation's first log key (its verifier key, as `tresor
        /// log keygen` printed it), pinned: the database's own list of keys
        /// is then trusted only from it, through announced rotations.
        #[arg(long, value_name = "VKEY")]
        key: Option<String>,
        /// Signed checkpoints kept outside the database: a monitor's
        /// `<writer>.checkpoint` file or state folder, a file of `tresor
        /// audit checkpoint --out` (or the JSON head older versions wrote):
        /// the logs must still hold them. May be given more than once;
        /// a file that is none of these is bad input (exit 2).
        #[arg(long, value_name = "FILE")]
        checkpoint: Vec<std::path::PathBuf>,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Print every log's latest signed checkpoint (the notes the site
    /// publishes at /log/<writer>/checkpoint, one after the other), or write
    /// them to a file: keep it outside the database (another machine) to
    /// compare a restored database with; `audit verify --checkpoint`,
    /// `restore --published` and `serve --published-checkpoint` take it.
    Checkpoint {
        /// Write it to this file (replaced atomically) instead of stdout.
        #[arg(long)]
        out: Option<std::path::PathBuf>,
        #[command(flatten)]
        db: DbArgs,
    },
    /// The checks a restore runs, on this database: the trail's chain, the
    /// ledger summing to zero (each balance the sum of its transfers), the
    /// units sold of each block against its plays (exit 1 if one fails).
    Consistency {
        #[command(flatten)]
        db: DbArgs,
    },
    /// Write the trail as JSON lines to stdout, oldest first; each record of
    /// a log with its receipt (salt, inclusion proof, the log's latest
    /// checkpoint witnesses cosigned that covers it, else its latest:
    /// docs/AUDIT.md, "Receipts").
    Export {
        /// Only records at or after this time (RFC 3339).
        #[arg(long)]
        from: Option<String>,
        /// Only records before this time (RFC 3339).
        #[arg(long)]
        to: Option<String>,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Check one play's receipt offline against the installation's key:
    /// its record is in the log, within a checkpoint signed by that key.
    Receipt(super::receipt::ReceiptArgs),
    /// Monitor a site's transparency log from outside: fetch each log's
    /// checkpoint and the tiles it needs, check the signature and the
    /// consistency with the last checkpoint kept, keep the new one; exit 1
    /// on a rewrite, a fork, a shrink or another key.
    Watch(super::monitor::WatchArgs),
    /// Make a witness's key for `audit watch --witness-key` (a new file,
    /// 0600, never overwritten) and print its verifier key, for the site's
    /// `tresor serve --witness`.
    WitnessKeygen(super::monitor::WitnessKeygenArgs),
}

/// `tresor report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Only this emission.
    #[arg(long, conflicts_with = "by")]
    pub emission: Option<i64>,
    /// The figures by Europe/Paris day or month instead: per period and
    /// game, units, stakes, prizes and gross gaming yield; per period
    /// deposits, withdrawals paid and the balances at its end, reconciled
    /// with the ledger (docs/CONSOLE.md, "Rapports").
    #[arg(long, value_enum)]
    pub by: Option<By>,
    /// With --by: the first Paris day, YYYY-MM-DD (default: the ledger's first).
    #[arg(long, requires = "by")]
    pub from: Option<String>,
    /// With --by: the last Paris day, included, YYYY-MM-DD (default: the ledger's last).
    #[arg(long, requires = "by")]
    pub to: Option<String>,
    /// With --by: every play and transfer of the range read from the tables
    /// (minutes over millions of plays), the rollup of those already read
    /// neither used nor extended: what an auditor checks the rollup against.
    #[arg(long, requires = "by")]
    pub no_rollup: bool,
    /// How to print it.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum By {
    Day,
    Month,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
    Csv,
}

fn progress_bar(total: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{what} [{{bar:40}}] {{pos}}/{{len}} records ({{eta}} left)"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

fn parse_time(flag: &str, text: Option<&str>) -> anyhow::Result<Option<i64>> {
    text.map(|t| {
        parse_rfc3339(t).map_err(|_| {
            anyhow::Error::new(Usage(format!(
                "--{flag}: not an RFC 3339 time (like 2026-01-31T12:00:00Z): {t}"
            )))
        })
    })
    .transpose()
}

pub async fn run_audit(command: AuditCommand) -> anyhow::Result<()> {
    match command {
        AuditCommand::Receipt(args) => super::receipt::run_receipt(args).await,
        AuditCommand::Watch(args) => super::monitor::run_watch(args).await,
        AuditCommand::WitnessKeygen(args) => super::monitor::run_witness_keygen(args),
        AuditCommand::Verify {
            key,
            checkpoint,
            db,
        } => verify(key, &checkpoint, &db).await,
        AuditCommand::Checkpoint { out, db } => write_checkpoint(out, &db).await,
        AuditCommand::Consistency { db } => consistency(&db).await,
        AuditCommand::Export { from, to, db } => export(from, to, &db).await,
    }
}

/// `tresor audit verify`: every log recomputed against every signed checkpoint (and the checkpoints given).
async fn verify(
    key: Option<String>,
    checkpoint: &[std::path::PathBuf],
    db: &DbArgs,
) -> anyhow::Result<()> {
    let mut trust = trail::Trust {
        key,
        checkpoints: Vec::new(),
    };
    let mut heads = Vec::new();
    for path in checkpoint {
        match Published::read_from(path, true).map_err(|e| Usage(format!("--checkpoint: {e}")))? {
            Published::Signed(signed) => {
                trust.checkpoints.extend(signed.into_iter().map(|s| s.note))
            }
            head @ Published::Head(_) => heads.push(head),
        }
    }
    let db = db.open_read().await?;
    let total = trail::count(&db.pool).await?;
    let bar = progress_bar(total.max(0) as u64, "verifying");
    let verdict = trail::verify_with(&db.pool, &trust, |done| bar.inc(done)).await;
    bar.finish_and_clear();
    match verdict.context("reading the trail")? {
        Verdict::Intact { records, head_hash } => {
            // An old JSON head: the trail must hold its record.
            for head in &heads {
                let standing = checkpoint::standing(&db.pool, head).await?;
                if let Some(reason) = standing.hold_reason() {
                    return Err(CheckFailed(format!(
                        "the trail does not hold the checkpoint given: {reason}"
                    ))
                    .into());
                }
            }
            println!("the trail is intact: {records} records, head hash {head_hash}");
            Ok(())
        }
        Verdict::Broken { seq, reason } => {
            Err(CheckFailed(format!("the trail is broken at record {seq}: {reason}")).into())
        }
    }
}

/// `tresor audit checkpoint [--out FILE]`: the latest signed checkpoints.
async fn write_checkpoint(out: Option<std::path::PathBuf>, db: &DbArgs) -> anyhow::Result<()> {
    let db = db.open_read().await?;
    let published = checkpoint::current(&db.pool).await.map_err(|e| match e {
        crate::error::Error::Validation(why) => anyhow::Error::new(CheckFailed(why)),
        other => anyhow::Error::new(other),
    })?;
    match out {
        None => print!("{}", published.to_text()),
        Some(path) => {
            let partial = path.with_extension("partial");
            std::fs::write(&partial, published.to_text())
                .with_context(|| format!("cannot write {}", partial.display()))?;
            std::fs::rename(&partial, &path)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    Ok(())
}

/// `tresor audit consistency`: the trail, the ledger and the units sold.
async fn consistency(db: &DbArgs) -> anyhow::Result<()> {
    let db = db.open_read().await?;
    let total = trail::count(&db.pool).await?;
    let bar = progress_bar(total.max(0) as u64, "verifying");
    let checked = crate::backup::consistency::check(&db.pool, |done| bar.inc(done)).await;
    bar.finish_and_clear();
    let c = checked.map_err(|e| CheckFailed(format!("{e:#}")))?;
    println!(
        "consistent: the trail verifies ({} records, head {}), the ledger sums to zero \
         ({} accounts, {} transfers), units sold match the plays ({} blocks, {} plays)",
        c.trail_records, c.trail_head, c.accounts, c.transfers, c.blocks, c.plays
    );
    Ok(())
}

/// `tresor audit export [--from T] [--to T]`: the records as JSON lines, each v2 one with its receipt.
async fn export(from: Option<String>, to: Option<String>, db: &DbArgs) -> anyhow::Result<()> {
    let from_ms = parse_time("from", from.as_deref())?;
    let to_ms = parse_time("to", to.as_deref())?;
    if let (Some(from), Some(to)) = (from_ms, to_ms)
        && from >= to
    {
        return Err(Usage("--from must be before --to".to_owned()).into());
    }
    let window = (from_ms.is_some() || to_ms.is_some())
        .then(|| (from_ms.unwrap_or(i64::MIN), to_ms.unwrap_or(i64::MAX)));
    let db = db.open_read().await?;
    let bar = ProgressBar::new_spinner();
    bar.set_message("exporting");
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut failed: Option<std::io::Error> = None;
    let mut conn = db.conn().await?;
    let mut after_seq = 0;
    loop {
        let records = trail::page(&db.pool, after_seq, window).await?;
        let Some(last) = records.last() else {
            break;
        };
        after_seq = last.seq;
        for record in &records {
            let mut line = serde_json::to_value(record).expect("a record is JSON");
            line["at"] = serde_json::Value::String(crate::service::rfc3339(record.at_ms));
            // A v2 record: its receipt (origin, salt, the inclusion
            // proof in its log's latest checkpoint), to check by hand.
            if let (Some(log_id), Some(idx)) = (record.log_id, record.idx) {
                let receipt = trail::receipt::of_leaf(&mut conn, log_id, idx as u64).await?;
                line["receipt"] = serde_json::to_value(receipt).expect("a receipt is JSON");
            }
            if let Err(error) = writeln!(out, "{line}") {
                failed.get_or_insert(error);
            }
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    if let Some(error) = failed {
        return Err(error).context("writing the export");
    }
    out.flush().context("writing the export")?;
    Ok(())
}

pub async fn run_report(args: ReportArgs) -> anyhow::Result<()> {
    if let Some(by) = args.by {
        return run_period_report(by, args).await;
    }
    let db = args.db.open_read().await?;
    let bar = ProgressBar::new_spinner();
    bar.set_message("summing plays and transfers");
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    let report = report::build(&db.pool, args.emission).await;
    bar.finish_and_clear();
    let report = report.map_err(|error| match error {
        crate::error::Error::Validation(message) => anyhow::Error::new(Usage(message)),
        other => anyhow::Error::new(other),
    })?;
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        Format::Csv => print!("{}", report::csv(&report)),
        Format::Table => print!("{}", report::table(&report)),
    }
    Ok(())
}

/// `tresor report --by day|month`: the dates read before anything is
/// opened, the report printed only once it reconciles.
async fn run_period_report(by: By, args: ReportArgs) -> anyhow::Result<()> {
    use report::paris;
    let date = |flag: &str, text: Option<&str>| {
        text.map(|t| {
            paris::parse_date(t)
                .map_err(|why| anyhow::Error::new(Usage(format!("--{flag}: {why}"))))
        })
        .transpose()
    };
    let ask = report::period::Ask {
        by: match by {
            By::Day => paris::By::Day,
            By::Month => paris::By::Month,
        },
        from: date("from", args.from.as_deref())?,
        to: date("to", args.to.as_deref())?,
        rollup: !args.no_rollup,
    };
    if let (Some(from), Some(to)) = (ask.from, ask.to)
        && from > to
    {
        return Err(Usage(format!(
            "--from {} is after --to {}",
            paris::format_date(from),
            paris::format_date(to)
        ))
        .into());
    }
    let db = args.db.open_read().await?;
    let built = report::period::build(&db.pool, ask).await;
    let built = built.map_err(|error| match error {
        report::period::ReportError::Store(crate::error::Error::Validation(message)) => {
            anyhow::Error::new(Usage(message))
        }
        other => anyhow::Error::new(other),
    })?;
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&built)?),
        Format::Csv => print!("{}", report::period::csv(&built)),
        Format::Table => print!("{}", report::period::table(&built)),
    }
    Ok(())
}
