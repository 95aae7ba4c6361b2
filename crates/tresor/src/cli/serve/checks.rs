//! `tresor serve`'s first step: every setting checked before anything is
//! created or written (issue 42, finding 11). A start refused for its
//! configuration (no mail outside demo mode, a missing key, a folder of
//! another user's, an address taken…) leaves no database migrated, no
//! installation id stored, no key file made: the next start with the right
//! settings, and any key, begins from nothing. What the settings are
//! checked against is read from the database without writing (`probe.rs`).

use super::super::Usage;
use super::super::backup::read_published;
use super::super::db::DbArgs;
use super::ServeArgs;
use super::probe::{Found, probe};
use crate::backup::checkpoint::Published;
use crate::games::Catalog;
use crate::http::EdgeSettings;
use crate::seal::KeySource;
use crate::service::Settings;
use anyhow::Context;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// The settings, checked, and what was found of the database.
pub(super) struct Checked {
    pub edge: EdgeSettings,
    /// Every setting of the service but the mailer (made once all are checked).
    pub settings: Settings,
    pub games: Arc<Catalog>,
    /// Whether the server will run in demo mode (the database's, or the
    /// flag's for a new one).
    pub demo: bool,
    pub default_writer: String,
    pub writer: String,
    pub backups: Option<(PathBuf, PathBuf)>,
    pub replica: Option<(PathBuf, PathBuf)>,
    pub published: Option<Published>,
    pub listeners: Listeners,
}

/// Both listeners, bound: an address taken or not allowed is a setting.
pub(super) struct Listeners {
    pub players: TcpListener,
    pub address: SocketAddr,
    pub admin: TcpListener,
    pub admin_address: SocketAddr,
}

/// Checks every setting of `args`, reading the database without writing.
pub(super) async fn check(args: &ServeArgs, demo_if_created: bool) -> anyhow::Result<Checked> {
    check_durations(args)?;
    let edge = edge_settings(args)?;
    // Every definition checked: a refusal names its file, line and rule
    // (exit 2), as `tresor game check` does.
    let games = Arc::new(args.catalog.load().map_err(Usage)?);
    let settings = service_settings(args, games.clone())?;
    let backups = args.backups.check(&args.db)?;
    let replica = args.replicate.check(&args.db)?;
    let published = read_published(
        args.published_checkpoint.as_deref(),
        "--published-checkpoint",
    )?;
    check_folders(args)?;
    let found = probe(&args.db).await?;
    let demo = mode(args, &found, demo_if_created)?;
    check_keys(&args.db, &found, demo)?;
    if let Some(published) = &published {
        check_published(published, &found)?;
    }
    let listeners = listen(args, demo).await?;
    // Of the address bound, not the one asked: `--listen 127.0.0.1:0`
    // names the port the kernel gave (the writer's name, the site of links
    // sent by mail).
    let bound = listeners.address.to_string();
    let default_writer = super::super::writer_name::default_for(&bound);
    let writer = args.db.log.writer(&default_writer)?;
    args.mail.site(&bound)?;
    if !demo {
        args.payments.refuse_outside_demo()?;
        args.mail.refuse_outside_demo()?;
    }
    Ok(Checked {
        edge,
        settings,
        games,
        demo,
        default_writer,
        writer,
        backups,
        replica,
        published,
        listeners,
    })
}

/// A session that ends at once or a play settled before it is played are
/// no settings an operator means.
fn check_durations(args: &ServeArgs) -> Result<(), Usage> {
    for (flag, value) in [
        (
            "--session-idle-s (TRESOR_SESSION_IDLE_S)",
            args.session_idle_s,
        ),
        (
            "--auto-settle-after-s (TRESOR_AUTO_SETTLE_AFTER_S)",
            args.auto_settle_after_s,
        ),
    ] {
        if value < 1 {
            return Err(Usage(format!("{flag}: at least 1 second")));
        }
    }
    Ok(())
}

/// The connection limits, sized under the soft limit on open files (raised
/// to the hard one first: issue 32).
fn edge_settings(args: &ServeArgs) -> anyhow::Result<EdgeSettings> {
    let open_files = match crate::open_files::raise() {
        Ok(open_files) => open_files,
        Err(error) => {
            let now = crate::open_files::soft_limit();
            tracing::warn!(%error, limit = now, "cannot raise the soft limit on open files");
            crate::open_files::OpenFiles { before: now, now }
        }
    };
    if open_files.now > open_files.before {
        tracing::info!(
            from = open_files.before,
            to = open_files.now,
            "raised the soft limit on open files to the hard one"
        );
    }
    let (edge, lowered) =
        crate::open_files::size_caps(args.edge.to_settings()?, open_files.now).map_err(Usage)?;
    if let Some(lowered) = lowered {
        tracing::warn!("{lowered}");
    }
    Ok(edge)
}

/// The service's settings from the flags (the mailer aside).
fn service_settings(args: &ServeArgs, games: Arc<Catalog>) -> anyhow::Result<Settings> {
    let witnesses = args
        .witnesses
        .iter()
        .map(|w| {
            crate::logcheck::WitnessKey::parse(w).map_err(|e| Usage(format!("--witness: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let settings = Settings {
        auto_settle_after_s: args.auto_settle_after_s,
        session_idle_s: args.session_idle_s,
        rate_limits: args.rate_limits.to_settings(),
        writer_max_batch: args.max_batch,
        block_offset: args.block_offset.max(0),
        outage_budget: outage_budget(args.outage_budget_ms)?,
        writer_faults: crate::writer::Faults {
            panic_at_batch: args.fault_writer_panic_at_batch,
            panics: args.fault_writer_panics,
            ..crate::writer::Faults::default()
        },
        games,
        witnesses,
        ..Settings::default()
    };
    let settings = args.payments.apply(settings)?;
    args.four_eyes.apply(settings)
}

/// The outage budget of `--outage-budget-ms`: under 100 ms a request on a
/// busy server would be refused as an outage; past 10 minutes it is no bound.
fn outage_budget(ms: u64) -> Result<Duration, Usage> {
    const ACCEPTED: std::ops::RangeInclusive<u64> = 100..=600_000;
    if !ACCEPTED.contains(&ms) {
        return Err(Usage(format!(
            "--outage-budget-ms (TRESOR_OUTAGE_BUDGET_MS): {ms} is out of range; give 100 to \
             600000 milliseconds (default 5000)"
        )));
    }
    Ok(Duration::from_millis(ms))
}

/// The folders the server writes in, when they are there already: the kept
/// checkpoints' (private, or refused) and a named mail outbox (a folder of
/// this user's). Missing, they are made once everything is checked.
fn check_folders(args: &ServeArgs) -> anyhow::Result<()> {
    args.db.log.check_kept_folder_if_there()?;
    if let Some(outbox) = args.mail.mail_outbox.as_deref().filter(|d| exists(d)) {
        ours(outbox).map_err(|e| Usage(format!("--mail-outbox {}: {e}", outbox.display())))?;
    }
    Ok(())
}

fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// A folder (no link) of this process's user.
fn ours(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let found = std::fs::symlink_metadata(dir).map_err(|e| e.to_string())?;
    if !found.file_type().is_dir() {
        return Err("not a folder (a symbolic link or a file is refused)".to_owned());
    }
    let mine = rustix::process::geteuid().as_raw();
    if found.uid() != mine {
        return Err(format!(
            "the folder belongs to another user (uid {}, this server runs as uid {mine})",
            found.uid()
        ));
    }
    Ok(())
}

/// Demo mode as the database will have it: a new one takes the flag's
/// (`demo_if_created`: plain `tresor` on the default folder), an existing
/// one keeps its own, and demo money is never switched on for it.
fn mode(args: &ServeArgs, found: &Found, demo_if_created: bool) -> Result<bool, Usage> {
    if found.fresh {
        return Ok(args.demo || demo_if_created);
    }
    if args.demo && !found.demo {
        return Err(Usage(
            "--demo: this database was created without demo mode, and demo money is never \
             switched on for an existing database"
                .to_owned(),
        ));
    }
    Ok(found.demo)
}

/// The keys, read (never made here): the secrets key must open the
/// database's sealed secrets (a missing file is made at open only for a
/// database that has none sealed); outside demo mode the log's signing key
/// must be given.
fn check_keys(db: &DbArgs, found: &Found, demo: bool) -> anyhow::Result<()> {
    let source = db.key_source();
    let missing = matches!(&source, KeySource::File(path) if !exists(path));
    if !(missing && found.key_check.is_none()) {
        let key = source.load(false)?;
        if let Some(check) = &found.key_check {
            key.verify_check(check)?;
        }
    }
    if demo {
        db.log.source().load().map_err(Usage)?;
    } else {
        db.log.seed(None)?;
    }
    Ok(())
}

/// A published checkpoint of another installation (or given to a new
/// database) is a wrong file, or a wrong database.
fn check_published(published: &Published, found: &Found) -> Result<(), Usage> {
    let theirs = published.installation();
    if found.fresh {
        return Err(Usage(format!(
            "--published-checkpoint is of installation {theirs}, and this database is new \
             (a copy is brought back with `tresor restore`)"
        )));
    }
    if !found.installation.is_empty() && found.installation != theirs {
        return Err(Usage(format!(
            "--published-checkpoint is of installation {theirs}, this database of {}",
            found.installation
        )));
    }
    Ok(())
}

/// Binds both listeners: the operator's on loopback unless allowed, the
/// players' off loopback only with secure cookies (or in demo mode).
async fn listen(args: &ServeArgs, demo: bool) -> anyhow::Result<Listeners> {
    let admin = TcpListener::bind(&args.admin_listen)
        .await
        .with_context(|| format!("cannot listen on {} (--admin-listen)", args.admin_listen))?;
    let admin_address = admin.local_addr()?;
    if !admin_address.ip().is_loopback() {
        if !args.admin_allow_remote {
            return Err(Usage(format!(
                "--admin-listen {admin_address} is not a loopback address: the operator's \
                 metrics would be public; pass --admin-allow-remote if a firewall guards it"
            ))
            .into());
        }
        tracing::warn!(%admin_address, "the operator's listener is not on loopback");
    }
    let players = TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let address = players.local_addr()?;
    if !address.ip().is_loopback() && !args.secure_cookies {
        if !demo {
            return Err(Usage(format!(
                "--listen {address} is not a loopback address and --secure-cookies \
                 (TRESOR_SECURE_COOKIES) is off: the players' session cookies would travel \
                 in clear; serve the site over https and pass --secure-cookies"
            ))
            .into());
        }
        tracing::warn!(%address, "demo mode off loopback without --secure-cookies");
    }
    Ok(Listeners {
        players,
        address,
        admin,
        admin_address,
    })
}
