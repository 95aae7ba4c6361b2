//! `tresor serve`: its flags (`ServeArgs`, the connection limits
//! `EdgeArgs`, the throttles `RateLimitArgs`); `run_serve` (`serve/start.rs`)
//! checks them all before anything is written (`serve/checks.rs`, the
//! database read by `serve/probe.rs`), opens the service and serves both
//! listeners.

mod checks;
mod probe;
mod start;

pub use start::run_serve;

use super::Usage;
use super::db::DbArgs;
use crate::http::{ConnectionCaps, EdgeSettings};
use crate::protect::RateLimits;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

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
    /// How often, in seconds, the server adds the plays and transfers older
    /// than an hour to the period report's sums (`tresor report --by`), so
    /// that a report reads only the rows since; 0: never (each report then
    /// adds them itself).
    #[arg(long, env = "TRESOR_REPORT_ROLLUP_EVERY_S", default_value_t = 300)]
    pub report_rollup_every_s: u64,
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

/// The flags of every throttle one address meets, per player, per address
/// and on its connections: what a load test from 127.0.0.1 (`tresor-bench`,
/// the integration tests) raises out of its way.
pub const LOAD_TEST_LIFTS: [&str; 11] = [
    "--purchases-per-minute-per-player",
    "--purchases-per-minute-per-address",
    "--registrations-per-hour-per-address",
    "--logins-per-minute-per-address",
    "--actions-per-minute-per-player",
    "--actions-per-minute-per-address",
    "--free-tries-per-minute-per-address",
    "--failed-logins-free-per-name-and-address",
    "--failed-logins-free-per-address",
    "--max-connections-per-address",
    "--max-connections",
];

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
    /// Free tries (POST /api/free/plays) per client address per minute, a
    /// budget apart from purchases and actions.
    #[arg(long, env = "TRESOR_FREE_TRIES_PER_MINUTE_PER_ADDRESS", default_value_t = RateLimits::default().free_tries_per_minute_per_address)]
    pub free_tries_per_minute_per_address: u32,
    /// Take the client address from the last X-Forwarded-For entry (only
    /// behind a reverse proxy that sets it).
    #[arg(long, env = "TRESOR_TRUST_FORWARDED_FOR")]
    pub trust_forwarded_for: bool,
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
            free_tries_per_minute_per_address: self.free_tries_per_minute_per_address,
            trust_forwarded_for: self.trust_forwarded_for,
        }
    }
}
