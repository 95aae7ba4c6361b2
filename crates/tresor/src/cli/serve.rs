//! `tresor serve`: its flags (`ServeArgs`, the connection limits
//! `EdgeArgs`, the throttles `RateLimitArgs`) and `run_serve`, which checks
//! them, opens the service and serves both listeners.

use super::db::{DbArgs, open_service_as};
use crate::http::{AppState, ConnectionCaps, EdgeSettings, serve};
use crate::metrics::Metrics;
use crate::protect::RateLimits;
use crate::service::{Service, Settings};
use crate::store::lock::lock_data_dir;
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tresor_game::{ISLAND_ID, Stake};

use super::Usage;

/// `tresor serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Address to listen on for players (the site and its API).
    #[arg(long, env = "TRESOR_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Address of the operator's listener (`/metrics`, `/healthz`), apart
    /// from the players'; port 0 picks a free one.
    #[arg(long, env = "TRESOR_ADMIN_LISTEN", default_value = "127.0.0.1:9090")]
    pub admin_listen: String,
    /// Allow the operator's listener on an address other than loopback
    /// (refused otherwise: its metrics tell when top prizes are paid).
    #[arg(long, env = "TRESOR_ADMIN_ALLOW_REMOTE")]
    pub admin_allow_remote: bool,
    /// Demo mode: create a new database in demo mode (a demo emission, demo
    /// deposits). A database created in demo mode stays in demo mode; one
    /// created without it never switches (refused).
    #[arg(long, env = "TRESOR_DEMO")]
    pub demo: bool,
    /// Settle a play its player never finishes after this many seconds.
    #[arg(long, env = "TRESOR_AUTO_SETTLE_AFTER_S", default_value_t = 24 * 3600)]
    pub auto_settle_after_s: i64,
    /// End a session unused for this many seconds.
    #[arg(long, env = "TRESOR_SESSION_IDLE_S", default_value_t = 30 * 60)]
    pub session_idle_s: i64,
    /// Mark cookies Secure (set when the site is served over https).
    #[arg(long, env = "TRESOR_SECURE_COOKIES")]
    pub secure_cookies: bool,
    /// Throttles on logins, registrations and purchases.
    #[command(flatten)]
    pub rate_limits: RateLimitArgs,
    /// The most jobs the writer commits in one transaction (1: each alone,
    /// the baseline `tresor-bench --baselines` measures group commit against).
    #[arg(long, env = "TRESOR_MAX_BATCH", default_value_t = crate::writer::DEFAULT_MAX_BATCH)]
    pub max_batch: usize,
    /// Sell first from the n-th open block of each stake (by id): give each
    /// server on a shared database its own, so that they sell from
    /// different blocks; the first open block is the fallback.
    #[arg(long, env = "TRESOR_BLOCK_OFFSET", default_value_t = 0)]
    pub block_offset: i64,
    /// The longest a request waits whatever happens behind it (a COMMIT in
    /// doubt, a failover): then it is answered 503 `unavailable` with
    /// `Retry-After: 1`, to be retried under its idempotency key. 100 to
    /// 600000 ms.
    #[arg(long, env = "TRESOR_OUTAGE_BUDGET_MS", default_value_t = crate::writer::DEFAULT_OUTAGE_BUDGET.as_millis() as u64)]
    pub outage_budget_ms: u64,
    /// Fault injection, for tests only: the writer panics in the N-th
    /// batch it begins (see `writer::Faults`).
    #[arg(long, env = "TRESOR_FAULT_WRITER_PANIC_AT_BATCH", hide = true)]
    pub fault_writer_panic_at_batch: Option<u64>,
    /// Fault injection, for tests only: and in this many batches from it.
    #[arg(
        long,
        env = "TRESOR_FAULT_WRITER_PANICS",
        hide = true,
        default_value_t = 1
    )]
    pub fault_writer_panics: u64,
    /// The payment provider and provisional accounts.
    #[command(flatten)]
    pub payments: super::accounts::PaymentArgs,
    /// Four eyes on money: a single operator, credit limits.
    #[command(flatten)]
    pub four_eyes: super::accounts::FourEyesArgs,
    /// Backups on a schedule (SQLite).
    #[command(flatten)]
    pub backups: super::backup::ScheduleArgs,
    /// The continuous copy of the WAL (SQLite, Litestream).
    #[command(flatten)]
    pub replicate: super::backup::ReplicateArgs,
    /// The signed checkpoints last published, kept outside the database: a
    /// monitor's file or state folder (`tresor audit watch --state`), or
    /// `tresor audit checkpoint --out FILE` (the JSON head of older versions
    /// is still read). A database behind them (restored from an older copy)
    /// starts with sales closed until `tresor sales open --after-restore`.
    #[arg(long, env = "TRESOR_PUBLISHED_CHECKPOINT")]
    pub published_checkpoint: Option<PathBuf>,
    /// Connection timeouts and caps of both listeners.
    #[command(flatten)]
    pub edge: EdgeArgs,
    /// Mail: SMTP or the outbox folder.
    #[command(flatten)]
    pub mail: super::mail::MailArgs,
    /// The games on sale (`--games DIR`, `--max-payout-percent`).
    #[command(flatten)]
    pub catalog: super::catalog::CatalogArgs,
    /// A witness whose cosignatures of the log's checkpoints the site takes
    /// (`POST /log/<writer>/cosignature`) and publishes: its verifier key
    /// (`<name>+<key id>+<base64>`, as `tresor audit witness-keygen`
    /// printed it). May be given more than once.
    #[arg(
        long = "witness",
        env = "TRESOR_WITNESSES",
        value_delimiter = ',',
        value_name = "VKEY"
    )]
    pub witnesses: Vec<String>,
}

/// `tresor serve`'s connection limits (see [`EdgeSettings`]).
#[derive(Debug, Clone, Args)]
pub struct EdgeArgs {
    /// Seconds a client has to send a request's headers, from when the
    /// server waits for them (a new connection, or a kept-alive one between
    /// requests); then the connection is closed.
    #[arg(long, env = "TRESOR_HEADER_READ_TIMEOUT_S", default_value_t = EdgeSettings::default().header_read_timeout.as_secs())]
    pub header_read_timeout_s: u64,
    /// Seconds with no byte read or written, and no request being
    /// answered, after which a connection is closed.
    #[arg(long, env = "TRESOR_IDLE_TIMEOUT_S", default_value_t = EdgeSettings::default().idle_timeout.as_secs())]
    pub idle_timeout_s: u64,
    /// Connections the players' listener holds in all (over it, a new one
    /// is closed at once); keep it under the open files limit (ulimit -n).
    #[arg(long, env = "TRESOR_MAX_CONNECTIONS", default_value_t = EdgeSettings::default().players.total)]
    pub max_connections: usize,
    /// Connections the players' listener holds from one client address
    /// (behind a reverse proxy: the proxy's, so raise it to --max-connections).
    #[arg(long, env = "TRESOR_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = EdgeSettings::default().players.per_address)]
    pub max_connections_per_address: usize,
    /// Connections the operator's listener holds in all: its own, so that
    /// the players' never reach it.
    #[arg(long, env = "TRESOR_ADMIN_MAX_CONNECTIONS", default_value_t = EdgeSettings::default().operator.total)]
    pub admin_max_connections: usize,
    /// Connections the operator's listener holds from one client address.
    #[arg(long, env = "TRESOR_ADMIN_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = EdgeSettings::default().operator.per_address)]
    pub admin_max_connections_per_address: usize,
}

impl EdgeArgs {
    /// The settings these flags give, refusing a zero (no timeout, or no
    /// connection at all, is no setting an operator means).
    pub fn to_settings(&self) -> Result<EdgeSettings, Usage> {
        for (flag, value) in [
            (
                "--header-read-timeout-s (TRESOR_HEADER_READ_TIMEOUT_S)",
                self.header_read_timeout_s,
            ),
            (
                "--idle-timeout-s (TRESOR_IDLE_TIMEOUT_S)",
                self.idle_timeout_s,
            ),
            (
                "--max-connections (TRESOR_MAX_CONNECTIONS)",
                self.max_connections as u64,
            ),
            (
                "--max-connections-per-address (TRESOR_MAX_CONNECTIONS_PER_ADDRESS)",
                self.max_connections_per_address as u64,
            ),
            (
                "--admin-max-connections (TRESOR_ADMIN_MAX_CONNECTIONS)",
                self.admin_max_connections as u64,
            ),
            (
                "--admin-max-connections-per-address (TRESOR_ADMIN_MAX_CONNECTIONS_PER_ADDRESS)",
                self.admin_max_connections_per_address as u64,
            ),
        ] {
            if value < 1 {
                return Err(Usage(format!("{flag}: at least 1")));
            }
        }
        Ok(EdgeSettings {
            header_read_timeout: Duration::from_secs(self.header_read_timeout_s),
            idle_timeout: Duration::from_secs(self.idle_timeout_s),
            players: ConnectionCaps {
                total: self.max_connections,
                per_address: self.max_connections_per_address,
            },
            operator: ConnectionCaps {
                total: self.admin_max_connections,
                per_address: self.admin_max_connections_per_address,
            },
        })
    }
}

/// `tresor serve`'s throttles (see [`RateLimits`] for what each counts).
#[derive(Debug, Clone, Args)]
pub struct RateLimitArgs {
    /// Failed logins per (username typed, address) before each further
    /// attempt of that pair waits longer (1 s, doubling, up to 15 minutes).
    #[arg(long, env = "TRESOR_FAILED_LOGINS_FREE_PER_NAME_AND_ADDRESS", default_value_t = RateLimits::default().failed_logins_free_per_name_and_address)]
    pub failed_logins_free_per_name_and_address: u32,
    /// Failed logins per address, whatever the names, before its attempts wait.
    #[arg(long, env = "TRESOR_FAILED_LOGINS_FREE_PER_ADDRESS", default_value_t = RateLimits::default().failed_logins_free_per_address)]
    pub failed_logins_free_per_address: u32,
    /// Login attempts per client address per minute.
    #[arg(long, env = "TRESOR_LOGINS_PER_MINUTE_PER_ADDRESS", default_value_t = RateLimits::default().logins_per_minute_per_address)]
    pub logins_per_minute_per_address: u32,
    /// Registrations per client address per hour.
    #[arg(long, env = "TRESOR_REGISTRATIONS_PER_HOUR_PER_ADDRESS", default_value_t = RateLimits::default().registrations_per_hour_per_address)]
    pub registrations_per_hour_per_address: u32,
    /// Purchases per player per minute.
    #[arg(long, env = "TRESOR_PURCHASES_PER_MINUTE_PER_PLAYER", default_value_t = RateLimits::default().purchases_per_minute_per_player)]
    pub purchases_per_minute_per_player: u32,
    /// Purchases per client address per minute.
    #[arg(long, env = "TRESOR_PURCHASES_PER_MINUTE_PER_ADDRESS", default_value_t = RateLimits::default().purchases_per_minute_per_address)]
    pub purchases_per_minute_per_address: u32,
    /// Throws, logouts, deposits, cap changes and exclusions per player per minute.
    #[arg(long, env = "TRESOR_ACTIONS_PER_MINUTE_PER_PLAYER", default_value_t = RateLimits::default().actions_per_minute_per_player)]
    pub actions_per_minute_per_player: u32,
    /// The same per client address per minute.
    #[arg(long, env = "TRESOR_ACTIONS_PER_MINUTE_PER_ADDRESS", default_value_t = RateLimits::default().actions_per_minute_per_address)]
    pub actions_per_minute_per_address: u32,
    /// Take the client address from the last X-Forwarded-For entry (only
    /// behind a reverse proxy that sets it).
    #[arg(long, env = "TRESOR_TRUST_FORWARDED_FOR")]
    pub trust_forwarded_for: bool,
}

impl Default for RateLimitArgs {
    fn default() -> Self {
        let limits = RateLimits::default();
        RateLimitArgs {
            failed_logins_free_per_name_and_address: limits.failed_logins_free_per_name_and_address,
            failed_logins_free_per_address: limits.failed_logins_free_per_address,
            logins_per_minute_per_address: limits.logins_per_minute_per_address,
            registrations_per_hour_per_address: limits.registrations_per_hour_per_address,
            purchases_per_minute_per_player: limits.purchases_per_minute_per_player,
            purchases_per_minute_per_address: limits.purchases_per_minute_per_address,
            actions_per_minute_per_player: limits.actions_per_minute_per_player,
            actions_per_minute_per_address: limits.actions_per_minute_per_address,
            trust_forwarded_for: limits.trust_forwarded_for,
        }
    }
}

impl RateLimitArgs {
    pub fn to_settings(&self) -> RateLimits {
        RateLimits {
            failed_logins_free_per_name_and_address: self.failed_logins_free_per_name_and_address,
            failed_logins_free_per_address: self.failed_logins_free_per_address,
            logins_per_minute_per_address: self.logins_per_minute_per_address,
            registrations_per_hour_per_address: self.registrations_per_hour_per_address,
            purchases_per_minute_per_player: self.purchases_per_minute_per_player,
            purchases_per_minute_per_address: self.purchases_per_minute_per_address,
            actions_per_minute_per_player: self.actions_per_minute_per_player,
            actions_per_minute_per_address: self.actions_per_minute_per_address,
            trust_forwarded_for: self.trust_forwarded_for,
        }
    }
}

/// Closes sales (recorded in the trail) when the database's trail is behind
/// the checkpoint `published`; refuses to start on a checkpoint of another
/// installation (a wrong file, or a wrong database).
async fn hold_if_behind(
    service: &Service,
    published: &crate::backup::checkpoint::Published,
) -> anyhow::Result<()> {
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

/// Runs the server. `demo_if_created` (plain `tresor` on the default
/// folder) creates a new database in demo mode even without `--demo`, so
/// that the README's first command gives a playable game.
pub async fn run_serve(args: ServeArgs, demo_if_created: bool) -> anyhow::Result<()> {
    // A session that ends at once or a play settled before it is played
    // are no settings an operator means.
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
            return Err(Usage(format!("{flag}: at least 1 second")).into());
        }
    }
    // Before anything is opened: the soft limit on open files raised to the
    // hard one, and the connection caps sized under it (issue 32).
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
    let outage_budget = outage_budget(args.outage_budget_ms)?;
    // Every definition checked before anything is opened: a refusal names
    // its file, line and rule (exit 2), as `tresor game check` does.
    let games = Arc::new(args.catalog.load().map_err(Usage)?);
    // One server per SQLite folder: taken before the database is touched.
    let _lock = match &args.db.database_url {
        None => Some(lock_data_dir(&args.db.data)?),
        Some(_) => None,
    };
    let backups = args.backups.check(&args.db)?;
    let replica = args.replicate.check(&args.db)?;
    let published = args
        .published_checkpoint
        .as_deref()
        .map(crate::backup::checkpoint::Published::read)
        .transpose()
        .map_err(|e| Usage(format!("--published-checkpoint: {e}")))?;
    args.db.log.check_kept_folder()?;
    let admin = tokio::net::TcpListener::bind(&args.admin_listen)
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
    let settings = Settings {
        auto_settle_after_s: args.auto_settle_after_s,
        session_idle_s: args.session_idle_s,
        rate_limits: args.rate_limits.to_settings(),
        writer_max_batch: args.max_batch,
        block_offset: args.block_offset.max(0),
        outage_budget,
        writer_faults: crate::writer::Faults {
            panic_at_batch: args.fault_writer_panic_at_batch,
            panics: args.fault_writer_panics,
            ..crate::writer::Faults::default()
        },
        games: games.clone(),
        ..Settings::default()
    };
    let settings = args.payments.apply(settings)?;
    let settings = args.four_eyes.apply(settings)?;
    // Without SMTP nor an outbox named: the data folder's `outbox`, or a new
    // private folder (PostgreSQL) — in demo mode only (checked below).
    let default_outbox = match &args.db.database_url {
        None => Some(args.db.data.join("outbox")),
        Some(_) => None,
    };
    let mailer = args.mail.mailer(default_outbox.as_deref(), &args.listen)?;
    let witnesses = args
        .witnesses
        .iter()
        .map(|w| {
            crate::logcheck::WitnessKey::parse(w).map_err(|e| Usage(format!("--witness: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let settings = Settings {
        mail: Some(mailer.clone()),
        witnesses,
        ..settings
    };
    // Unique to this server unless named (see `writer_name`).
    let default_writer = super::writer_name::default_for(&args.listen);
    let writer = args.db.log.writer(&default_writer)?;
    let service = open_service_as(
        &args.db,
        settings,
        &default_writer,
        args.demo || demo_if_created,
    )
    .await?;
    if let Some(url) = &args.db.database_url {
        super::writer_name::guard(url, &writer).await;
    }
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
    let created = service.db.created;
    if created && (args.demo || demo_if_created) {
        service.set_demo().await?;
        let id = service
            .create_emission_as(crate::trail::Actor::System, "Démo", &Stake::ALL, 2)
            .await?;
        tracing::info!(emission = id, "demo mode: created a demo emission");
        // And one for each other game of the catalogue, every stake.
        for entry in games.entries().iter().filter(|e| e.game.id() != ISLAND_ID) {
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
    } else if args.demo && !service.is_demo().await? {
        return Err(Usage(
            "--demo: this database was created without demo mode, and demo money is never \
             switched on for an existing database"
                .to_owned(),
        )
        .into());
    }
    let demo = service.is_demo().await?;
    if !demo {
        args.payments.refuse_outside_demo()?;
        if let Err(refusal) = args.mail.refuse_outside_demo() {
            // The folder made for the demo's mail goes if empty.
            if let Some(dir) = mailer.outbox_dir() {
                let _ = std::fs::remove_dir(dir);
            }
            return Err(refusal.into());
        }
    } else if !args.mail.named()
        && let Some(dir) = mailer.outbox_dir()
    {
        println!("mail (password resets) is written to {}", dir.display());
    }
    if let Some(published) = &published {
        hold_if_behind(&service, published).await?;
    }
    // The checkpoints this server (or another of the installation) last
    // published, kept outside the data folder: a database behind them holds
    // sales, however it was brought back.
    let installation = crate::backup::checkpoint::installation(&service.db.pool).await?;
    let keeper = args.db.log.keeper(&installation);
    if let Some(reason) = keeper
        .check(&service)
        .await
        .map_err(|e| Usage(format!("--kept-checkpoints: {e:#}")))?
    {
        tracing::warn!(%reason, "the database is behind the checkpoints published");
    }
    if let Some(reason) = service.restore_hold().await? {
        tracing::warn!(%reason, "sales are closed after a restore");
        println!("sales are closed after a restore: {reason}");
    }
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let address = listener.local_addr()?;
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
    if let Some((database, dir)) = backups {
        args.backups.spawn(database, dir);
    }
    if let Some((database, dir)) = replica {
        args.replicate.spawn(database, dir);
    }
    keeper.spawn(service.clone());
    tracing::info!(%address, database = ?service.db.backend, demo, %writer, "serving");
    println!(
        "L'Ile au Trésor is open at http://{address}/{}",
        if demo { "  (demo mode)" } else { "" }
    );
    println!(
        "operator's console at http://{admin_address}/console (accounts: tresor operator add), metrics at http://{admin_address}/metrics"
    );
    let metrics = Arc::new(Metrics::new(&service.writer.stats));
    serve(
        listener,
        admin,
        AppState {
            service,
            metrics,
            secure_cookies: args.secure_cookies,
        },
        edge,
    )
    .await
}
