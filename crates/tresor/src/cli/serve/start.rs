//! `run_serve` as named steps: check every setting (`checks.rs`, nothing
//! written), make the folders and take the data folder's lock, open the
//! database (migrated, its keys loaded or made), hold sales where the
//! database is behind what was published, then serve.

use super::super::Usage;
use super::super::db::open_service_as;
use super::ServeArgs;
use super::checks::{Checked, check};
use crate::backup::checkpoint::Published;
use crate::backup::keeper::Keeper;
use crate::http::{AppState, serve};
use crate::mail::Mailer;
use crate::metrics::Metrics;
use crate::service::Service;
use crate::store::lock::{DataDirLock, lock_data_dir};
use anyhow::Context;
use std::sync::Arc;
use tresor_game::{ISLAND_ID, Stake};

/// Runs the server. `demo_if_created` (plain `tresor` on the default
/// folder) creates a new database in demo mode even without `--demo`, so
/// that the README's first command gives a playable game.
pub async fn run_serve(args: ServeArgs, demo_if_created: bool) -> anyhow::Result<()> {
    let checked = check(&args, demo_if_created).await?;
    let (_lock, mailer) = prepare(&args, &checked)?;
    let service = open(&args, &checked, mailer, demo_if_created).await?;
    let keeper = hold(&args, &service, checked.published.as_ref()).await?;
    start(args, checked, service, keeper).await
}

/// Once every setting is checked: the folders the server writes in made
/// (the kept checkpoints', the replica's, the mail outbox), and one server
/// per SQLite folder (the lock, taken before the database is touched).
fn prepare(args: &ServeArgs, checked: &Checked) -> anyhow::Result<(Option<DataDirLock>, Mailer)> {
    args.db.log.check_kept_folder()?;
    if let Some((_, dir)) = &checked.replica {
        args.replicate.prepare(dir)?;
    }
    let lock = match &args.db.database_url {
        None => Some(lock_data_dir(&args.db.data)?),
        Some(_) => None,
    };
    // Without SMTP nor an outbox named: the data folder's `outbox`, or a new
    // private folder (PostgreSQL) — in demo mode only (checked).
    let default_outbox = match &args.db.database_url {
        None => Some(args.db.data.join("outbox")),
        Some(_) => None,
    };
    let bound = checked.listeners.address.to_string();
    let mailer = args.mail.mailer(default_outbox.as_deref(), &bound)?;
    if checked.demo
        && !args.mail.named()
        && let Some(dir) = mailer.outbox_dir()
    {
        println!("mail (password resets) is written to {}", dir.display());
    }
    Ok((lock, mailer))
}

/// The service on the database, migrated, its keys loaded (or made, for a
/// new one), older rows brought up to date, a new demo's emissions made (a
/// new database: none, or one nothing was written into yet, `Db::fresh`;
/// the check at start (`probe.rs`) took it for new by the same rule).
async fn open(
    args: &ServeArgs,
    checked: &Checked,
    mailer: Mailer,
    demo_if_created: bool,
) -> anyhow::Result<Service> {
    let settings = crate::service::Settings {
        mail: Some(mailer),
        ..checked.settings.clone()
    };
    let service = open_service_as(
        &args.db,
        settings,
        &checked.default_writer,
        args.demo || demo_if_created,
    )
    .await?;
    if let Some(url) = &args.db.database_url {
        super::super::writer_name::guard(url, &checked.writer).await;
    }
    bring_up_to_date(&service).await?;
    if service.db.fresh && checked.demo {
        create_demo_emissions(&service, checked).await?;
    }
    if service.is_demo().await? != checked.demo {
        // Another process changed the database between the check and now.
        return Err(
            Usage("the database's demo mode changed while the server started".to_owned()).into(),
        );
    }
    Ok(service)
}

/// Usernames' skeletons and identities' keys computed by older versions'
/// rules, computed again.
async fn bring_up_to_date(service: &Service) -> anyhow::Result<()> {
    let filled = service.backfill_username_skeletons().await?;
    if filled > 0 {
        tracing::info!(filled, "filled the skeletons of older usernames");
    }
    let rekeyed = service.rematch_identities().await?;
    if rekeyed.identities + rekeyed.ban_entries > 0 {
        tracing::info!(
            identities = rekeyed.identities,
            ban_entries = rekeyed.ban_entries,
            second_accounts = rekeyed.duplicates.len(),
            "matched the identities against the ban list again"
        );
    }
    for (account, first) in &rekeyed.duplicates {
        tracing::warn!(
            player = account,
            first,
            "a second account of one person: it takes no money in and no stake"
        );
    }
    Ok(())
}

/// A new demo database: a demo emission of the island, and one of each
/// other game of the catalogue, every stake.
async fn create_demo_emissions(service: &Service, checked: &Checked) -> anyhow::Result<()> {
    service.set_demo().await?;
    let id = service
        .create_emission_as(crate::trail::Actor::System, "Démo", &Stake::ALL, 2)
        .await?;
    tracing::info!(emission = id, "demo mode: created a demo emission");
    for entry in checked
        .games
        .entries()
        .iter()
        .filter(|e| e.game.id() != ISLAND_ID)
    {
        let stakes: Vec<i64> = entry
            .game
            .tables()
            .iter()
            .map(|t| t.stake_cents())
            .collect();
        let id = service
            .create_game_emission(
                crate::trail::Actor::System,
                &format!("Démo {}", entry.game.name_fr()),
                entry.game.id(),
                &stakes,
                2,
            )
            .await?;
        tracing::info!(
            emission = id,
            game = entry.game.id(),
            "demo mode: created a demo emission"
        );
    }
    Ok(())
}

/// Sales held where the database is behind a checkpoint published (the
/// one given, the ones kept outside the data folder) or after a restore;
/// the keeper of this installation's checkpoints.
async fn hold(
    args: &ServeArgs,
    service: &Service,
    published: Option<&Published>,
) -> anyhow::Result<Keeper> {
    if let Some(published) = published {
        hold_if_behind(service, published).await?;
    }
    // The checkpoints this server (or another of the installation) last
    // published, kept outside the data folder: a database behind them holds
    // sales, however it was brought back.
    let installation = crate::backup::checkpoint::installation(&service.db.pool).await?;
    let keeper = args.db.log.keeper(&installation);
    if let Some(reason) = keeper
        .check(service)
        .await
        .map_err(|e| Usage(format!("--kept-checkpoints: {e:#}")))?
    {
        tracing::warn!(%reason, "the database is behind the checkpoints published");
    }
    if let Some(reason) = service.restore_hold().await? {
        tracing::warn!(%reason, "sales are closed after a restore");
        println!("sales are closed after a restore: {reason}");
    }
    Ok(keeper)
}

/// Closes sales (recorded in the trail) when the database's trail is behind
/// the checkpoint `published`; refuses to start on a checkpoint of another
/// installation (a wrong file, or a wrong database).
async fn hold_if_behind(service: &Service, published: &Published) -> anyhow::Result<()> {
    use crate::backup::checkpoint::{Standing, standing};
    let standing = standing(&service.db.pool, published).await?;
    if let Standing::OtherInstallation { ours, theirs } = &standing {
        return Err(Usage(format!(
            "--published-checkpoint is of installation {theirs}, this database of {ours}"
        ))
        .into());
    }
    if let Some(reason) = standing.hold_reason()
        && service
            .hold_sales_after_restore(
                reason.clone(),
                standing.detail(published),
                Some(published.key()),
            )
            .await?
    {
        tracing::warn!(%reason, "the database is behind the published checkpoint");
    }
    Ok(())
}

/// The blocks on sale loaded, the background tasks started, both
/// listeners served until Ctrl-C or SIGTERM.
async fn start(
    args: ServeArgs,
    checked: Checked,
    service: Service,
    keeper: Keeper,
) -> anyhow::Result<()> {
    for line in service
        .pinned_versions()
        .await
        .context("reading the definitions the emissions pinned")?
    {
        tracing::warn!("{line}");
        println!("{line}");
    }
    service
        .warm_block_cache()
        .await
        .context("loading the blocks on sale")?;
    if let Some((database, dir)) = checked.backups {
        args.backups.spawn(database, dir);
    }
    if let Some((database, dir)) = checked.replica {
        args.replicate.spawn(database, dir);
    }
    keeper.spawn(service.clone());
    if args.report_rollup_every_s > 0 {
        let every = std::time::Duration::from_secs(args.report_rollup_every_s);
        crate::report::period::keep_extended(service.db.pool.clone(), every);
    }
    let (demo, listeners) = (checked.demo, checked.listeners);
    let (address, admin_address) = (listeners.address, listeners.admin_address);
    let writer = &checked.writer;
    tracing::info!(%address, database = ?service.db.backend, demo, %writer, "serving");
    println!(
        "L'Ile au Trésor is open at http://{address}/{}",
        if demo { "  (demo mode)" } else { "" }
    );
    println!(
        "operator's console at http://{admin_address}/console (accounts: tresor operator add), metrics at http://{admin_address}/metrics"
    );
    let metrics = Arc::new(Metrics::new(&service.writer.stats));
    let state = AppState {
        service,
        metrics,
        secure_cookies: args.secure_cookies,
    };
    serve(listeners.players, listeners.admin, state, checked.edge).await
}
