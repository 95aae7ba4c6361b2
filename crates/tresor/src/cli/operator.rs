//! The server and the operator's commands: `serve`, `emission`, `player`,
//! `block suspend|resume`, `sales`, `announce`, `secrets rotate`. Each opens
//! the same database as the server (`--data` or `--database-url`) with the
//! key of its block secrets (`DbArgs::open`, the one place it is resolved);
//! every change it makes is recorded in the game trail as the operator's.

use crate::error::Error;
use crate::http::{AppState, ConnectionCaps, EdgeSettings, serve};
use crate::metrics::Metrics;
use crate::protect::{ExclusionLength, RateLimits};
use crate::seal::{KeySource, SecretsKey};
use crate::service::{Service, Settings, SystemClock, parse_rfc3339, rfc3339};
use crate::store::lock::lock_data_dir;
use crate::store::{Db, sqlite_url};
use crate::trail::Actor;
use anyhow::Context;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tresor_game::Stake;

use super::Usage;

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
    pub log: super::log::LogArgs,
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
    /// database this call creates) makes one in the data folder; anything
    /// else is refused (exit 2).
    pub async fn open_as(&self, default_writer: &str, demo_if_created: bool) -> anyhow::Result<Db> {
        let writer = self.log.writer(default_writer)?;
        let db = self.open_read().await?;
        let demo: Option<String> =
            sqlx::query_scalar("SELECT value FROM settings WHERE key = 'demo'")
                .fetch_optional(&db.pool)
                .await?;
        let demo = demo.as_deref() == Some("1") || (demo_if_created && db.created);
        let seed = self.log.seed(demo.then_some(self.data.as_path()))?;
        let db = db.with_writer(&writer).with_log_seed(&seed).await?;
        let now = crate::clock::Clock::now_ms(&SystemClock);
        db.register_log_key(now).await.map_err(|e| {
            Usage(format!(
                "{e:#}: give the installation's log key with --log-key FILE                  (TRESOR_LOG_KEY_FILE) or TRESOR_LOG_KEY"
            ))
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
    /// the baseline `tresor bench --baselines` measures group commit against).
    #[arg(long, env = "TRESOR_MAX_BATCH", default_value_t = crate::writer::DEFAULT_MAX_BATCH)]
    pub max_batch: usize,
    /// Sell first from the n-th open block of each stake (by id): give each
    /// server on a shared database its own, so that they sell from
    /// different blocks; the first open block is the fallback.
    #[arg(long, env = "TRESOR_BLOCK_OFFSET", default_value_t = 0)]
    pub block_offset: i64,
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
    /// The trail checkpoint last published or kept outside the database
    /// (`tresor audit checkpoint --out FILE`): a database behind it (restored
    /// from an older copy) starts with sales closed until `tresor sales open
    /// --after-restore`.
    #[arg(long, env = "TRESOR_PUBLISHED_CHECKPOINT")]
    pub published_checkpoint: Option<PathBuf>,
    /// Connection timeouts and caps of both listeners.
    #[command(flatten)]
    pub edge: EdgeArgs,
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

/// Closes sales (recorded in the trail) when the database's trail is behind
/// the checkpoint `published`; refuses to start on a checkpoint of another
/// installation (a wrong file, or a wrong database).
async fn hold_if_behind(
    service: &Service,
    published: &crate::backup::checkpoint::Checkpoint,
) -> anyhow::Result<()> {
    use crate::backup::checkpoint::{Standing, standing};
    let standing = standing(&service.db.pool, published).await?;
    if let Standing::OtherInstallation { ours } = &standing {
        return Err(Usage(format!(
            "--published-checkpoint is of installation {}, this database of {ours}",
            published.installation
        ))
        .into());
    }
    if let Some(reason) = standing.hold_reason(published)
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
    let edge = args.edge.to_settings()?;
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
        .map(crate::backup::checkpoint::Checkpoint::read)
        .transpose()
        .map_err(|e| Usage(format!("--published-checkpoint: {e:#}")))?;
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
        writer_faults: crate::writer::Faults {
            panic_at_batch: args.fault_writer_panic_at_batch,
            panics: args.fault_writer_panics,
            ..crate::writer::Faults::default()
        },
        ..Settings::default()
    };
    let settings = args.payments.apply(settings)?;
    let settings = args.four_eyes.apply(settings)?;
    let service =
        open_service_as(&args.db, settings, "server", args.demo || demo_if_created).await?;
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
    }
    if let Some(published) = &published {
        hold_if_behind(&service, published).await?;
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
    tracing::info!(%address, database = ?service.db.backend, demo, "serving");
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

#[derive(Debug, Subcommand)]
pub enum EmissionCommand {
    /// Create an emission with blocks of the given stakes.
    Create {
        /// Stakes in cents, comma-separated: 50, 100, 200.
        #[arg(long, value_delimiter = ',', default_value = "50,100,200")]
        stakes: Vec<i64>,
        /// Blocks of 450,000 units per stake.
        #[arg(long, default_value_t = 1)]
        blocks: u32,
        /// A name for the emission.
        #[arg(long, default_value = "Emission")]
        name: String,
        #[command(flatten)]
        db: DbArgs,
    },
    /// List emissions and their blocks.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Close an emission: stop its sales and publish its block secrets.
    Close {
        /// The emission's id.
        id: i64,
        #[command(flatten)]
        db: DbArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum PlayerCommand {
    /// Credit a player's account (a deposit).
    Credit {
        /// The player's username.
        #[arg(long)]
        username: String,
        /// The amount in cents.
        #[arg(long)]
        cents: i64,
        /// The per-operator credit limits (the command line is one
        /// operator, `operator`).
        #[command(flatten)]
        four_eyes: super::accounts::FourEyesArgs,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Exclude a player from play (recorded in the game trail): every session
    /// ends, and play, deposits and login are refused until the end. An
    /// exclusion can be lengthened, never shortened.
    Exclude {
        /// The player's username.
        #[arg(long)]
        username: String,
        /// How many days, from now.
        #[arg(long, required_unless_present = "period", conflicts_with = "period")]
        days: Option<i64>,
        /// A period as players choose it: 7d, 1m, 3m, 6m or 1y.
        #[arg(long)]
        period: Option<String>,
        #[command(flatten)]
        db: DbArgs,
    },
}

/// Checks a list of stakes given on the command line.
pub fn parse_stakes(stakes: &[i64]) -> Result<Vec<Stake>, String> {
    let mut parsed = Vec::new();
    for &cents in stakes {
        let stake = Stake::try_from(cents).map_err(|e| e.to_string())?;
        if !parsed.contains(&stake) {
            parsed.push(stake);
        }
    }
    Ok(parsed)
}

pub async fn run_emission(command: EmissionCommand) -> anyhow::Result<()> {
    match command {
        EmissionCommand::Create {
            stakes,
            blocks,
            name,
            db,
        } => {
            let stakes = parse_stakes(&stakes).map_err(Usage)?;
            let service = open_service(&db, Settings::default()).await?;
            let id = service.create_emission(&name, &stakes, blocks).await?;
            let emission = service
                .emissions()
                .await?
                .into_iter()
                .find(|e| e.id == id)
                .expect("just created");
            println!(
                "created emission {id} with {} blocks",
                emission.blocks.len()
            );
            for block in &emission.blocks {
                println!(
                    "  block {:>4}  stake {:>3} c  commitment {}",
                    block.id, block.stake_cents, block.commitment
                );
            }
        }
        EmissionCommand::List { json, db } => {
            let service = open_service(&db, Settings::default()).await?;
            let emissions = service.emissions().await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&emissions)?);
            } else {
                println!(
                    "{:>4}  {:<8} {:<20} {:>6}  name",
                    "id", "state", "created", "blocks"
                );
                for e in &emissions {
                    println!(
                        "{:>4}  {:<8} {:<20} {:>6}  {}",
                        e.id,
                        e.state,
                        &e.created_at[..19],
                        e.blocks.len(),
                        e.name
                    );
                    for b in &e.blocks {
                        println!(
                            "        block {:>4}  {:>3} c  {:<9} {:>6}/450000 sold  {}",
                            b.id,
                            b.stake_cents,
                            b.state,
                            b.units_sold.unwrap_or_default(),
                            b.commitment
                        );
                    }
                }
            }
        }
        EmissionCommand::Close { id, db } => {
            let service = open_service(&db, Settings::default()).await?;
            service.close_emission(id).await.map_err(|e| match e {
                Error::NotFound => Usage(format!("no emission {id}")).into(),
                e => anyhow::anyhow!("cannot close emission {id}: {e}"),
            })?;
            println!("closed emission {id}; its block secrets are published");
        }
    }
    Ok(())
}

pub async fn run_player(command: PlayerCommand) -> anyhow::Result<()> {
    match command {
        PlayerCommand::Credit {
            username,
            cents,
            four_eyes,
            db,
        } => {
            let service = four_eyes.service(&db).await?;
            let player = service
                .player_by_username(&username)
                .await
                .map_err(|_| Usage(format!("no player named {username}")))?;
            let balance = service.credit(&player, cents).await.map_err(refusal)?;
            println!(
                "credited {cents} cents to {}; balance {balance} cents",
                player.username
            );
        }
        PlayerCommand::Exclude {
            username,
            days,
            period,
            db,
        } => {
            let length = match (days, period.as_deref()) {
                (Some(days), _) => ExclusionLength::days(days),
                (None, Some(period)) => ExclusionLength::parse_period(period),
                (None, None) => unreachable!("clap requires --days or --period"),
            }
            .map_err(refusal)?;
            let service = open_service(&db, Settings::default()).await?;
            let player = service
                .player_by_username(&username)
                .await
                .map_err(|_| Usage(format!("no player named {username}")))?;
            let until_ms = service
                .exclude(&player, Actor::Operator, length)
                .await
                .map_err(refusal)?;
            println!(
                "{} is excluded until {}; every session of theirs has ended",
                player.username,
                rfc3339(until_ms)
            );
        }
    }
    Ok(())
}

/// Maps a service refusal to the command line: bad input (a validation
/// error, an unknown id) exits 2, anything else 1.
fn refusal(error: Error) -> anyhow::Error {
    match error {
        Error::Validation(message) => Usage(message).into(),
        Error::NotFound => Usage("not found".to_owned()).into(),
        // A refusal of the rules (an exclusion it would shorten, a cap it
        // would pass) is a plain message, not a failure of the machinery.
        other @ (Error::ExclusionShorter { .. }
        | Error::LimitReached { .. }
        | Error::CreditLimit { .. }
        | Error::DuplicateAccount
        | Error::Excluded { .. }) => {
            anyhow::anyhow!("refused: {other}")
        }
        other => other.into(),
    }
}

/// `tresor block suspend|resume ID`.
#[derive(Debug, Clone, Args)]
pub struct BlockIdArgs {
    /// The block's id (see `tresor emission list`).
    pub id: i64,
    #[command(flatten)]
    pub db: DbArgs,
}

/// Takes a block out of sale (`suspend: true`) or puts it back.
pub async fn run_block_control(args: BlockIdArgs, suspend: bool) -> anyhow::Result<()> {
    let service = open_service(&args.db, Settings::default()).await?;
    let id = args.id;
    let done = if suspend {
        service.suspend_block(id).await
    } else {
        service.resume_block(id).await
    };
    done.map_err(|e| match e {
        Error::NotFound => Usage(format!("no block {id}")).into(),
        e => refusal(e),
    })?;
    if suspend {
        println!("block {id} is suspended: no unit of it is sold until it is resumed");
    } else {
        println!("block {id} is on sale again");
    }
    Ok(())
}

#[derive(Debug, Subcommand)]
pub enum SalesCommand {
    /// Set when sales open (Article 1): purchases before it are refused.
    OpenAt {
        /// The opening time, RFC 3339 (2026-03-01T09:00:00+01:00).
        #[arg(required_unless_present = "clear")]
        time: Option<String>,
        /// Remove the opening time: sales are open.
        #[arg(long, conflicts_with = "time")]
        clear: bool,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Reopen sales held closed after a restore (recorded in the trail):
    /// the operator has checked the restored service and takes on making
    /// good the purchases acknowledged after the backup.
    Open {
        /// Say that this lifts the hold of a restore (the only hold there is).
        #[arg(long, required = true)]
        after_restore: bool,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Show whether sales are open, when they open and the site message.
    Status {
        #[command(flatten)]
        db: DbArgs,
    },
}

pub async fn run_sales(command: SalesCommand) -> anyhow::Result<()> {
    match command {
        SalesCommand::OpenAt { time, clear, db } => {
            let opens_at_ms = match (&time, clear) {
                (Some(text), false) => Some(parse_rfc3339(text).map_err(|_| {
                    Usage(format!(
                        "not an RFC 3339 time (like 2026-03-01T09:00:00+01:00): {text}"
                    ))
                })?),
                _ => None,
            };
            let service = open_service(&db, Settings::default()).await?;
            service
                .set_sales_open_at(opens_at_ms)
                .await
                .map_err(refusal)?;
            match opens_at_ms {
                Some(t) => println!("sales open at {}", rfc3339(t)),
                None => println!("the sales opening time is cleared: sales are open"),
            }
        }
        SalesCommand::Open { after_restore, db } => {
            debug_assert!(after_restore);
            let service = open_service(&db, Settings::default()).await?;
            match service.open_sales_after_restore(Actor::Operator).await {
                Ok(reason) => println!("sales are open again (they were closed: {reason})"),
                Err(Error::NotFound) => {
                    return Err(Usage("sales are not closed after a restore".to_owned()).into());
                }
                Err(error) => return Err(refusal(error)),
            }
        }
        SalesCommand::Status { db } => {
            let service = open_service(&db, Settings::default()).await?;
            let status = service.status().await?;
            println!("{}", serde_json::to_string_pretty(&status)?);
        }
    }
    Ok(())
}

/// `tresor announce "TEXT"` or `tresor announce --clear`.
#[derive(Debug, Clone, Args)]
pub struct AnnounceArgs {
    /// The message shown on the site.
    #[arg(required_unless_present = "clear")]
    pub text: Option<String>,
    /// Remove the message.
    #[arg(long, conflicts_with = "text")]
    pub clear: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

pub async fn run_announce(args: AnnounceArgs) -> anyhow::Result<()> {
    let message = if args.clear { None } else { args.text };
    let service = open_service(&args.db, Settings::default()).await?;
    service
        .set_announcement(message.clone())
        .await
        .map_err(refusal)?;
    match message {
        Some(text) => println!("the site shows: {text}"),
        None => println!("the site message is cleared"),
    }
    Ok(())
}

#[derive(Debug, Subcommand)]
pub enum SecretsCommand {
    /// Re-seal every block secret under a new key, in one transaction
    /// (recorded in the game trail); from then on only the new key opens
    /// them. Stop the servers of this database first: each keeps the key it
    /// started with.
    Rotate {
        /// The new key's file: created (mode 0600) with a fresh key if it
        /// does not exist, else read.
        #[arg(long)]
        new_key_file: PathBuf,
        #[command(flatten)]
        db: DbArgs,
    },
}

pub async fn run_secrets(command: SecretsCommand) -> anyhow::Result<()> {
    let SecretsCommand::Rotate { new_key_file, db } = command;
    // On SQLite a running server holds the folder: rotating under it would
    // leave it with a key that no longer opens the secrets.
    let _lock = match &db.database_url {
        None => Some(lock_data_dir(&db.data)?),
        Some(_) => None,
    };
    let service = open_service(&db, Settings::default()).await?;
    // The new key is on disk before the commit that needs it.
    let new_key: SecretsKey = KeySource::File(new_key_file.clone()).load(true)?;
    let count = service.rotate_secrets(new_key).await?;
    println!(
        "re-sealed {count} block secrets under the key in {}: start tresor with \
         --secrets-key-file {} from now on",
        new_key_file.display(),
        new_key_file.display()
    );
    Ok(())
}
