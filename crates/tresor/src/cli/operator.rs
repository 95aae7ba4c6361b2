//! The server and the operator's commands: `serve`, `emission`, `player`.
//! Each opens the same database as the server (`--data` or `--database-url`).

use crate::http::{AppState, serve};
use crate::metrics::Metrics;
use crate::service::{Service, Settings, SystemClock};
use crate::store::{Db, sqlite_url};
use anyhow::Context;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::sync::Arc;
use tresor_game::Stake;

/// Where the data lives.
#[derive(Debug, Clone, Args)]
pub struct DbArgs {
    /// Folder of the embedded SQLite database (created if missing).
    #[arg(long, env = "TRESOR_DATA", default_value = "data")]
    pub data: PathBuf,
    /// A PostgreSQL URL (postgres://user@host/db) to use instead of SQLite.
    #[arg(long, env = "TRESOR_DATABASE_URL")]
    pub database_url: Option<String>,
}

impl DbArgs {
    pub fn url(&self) -> String {
        match &self.database_url {
            Some(url) => url.clone(),
            None => sqlite_url(&self.data),
        }
    }

    pub async fn open(&self) -> anyhow::Result<Db> {
        match &self.database_url {
            Some(url) => Db::connect(url).await,
            None => Db::open_data_dir(&self.data).await,
        }
    }
}

/// `tresor serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Address to listen on.
    #[arg(long, env = "TRESOR_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Demo mode: on a new database, create a demo emission and allow demo
    /// deposits. A database created in demo mode stays in demo mode.
    #[arg(long)]
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
}

impl Default for ServeArgs {
    fn default() -> Self {
        ServeArgs {
            db: DbArgs {
                data: PathBuf::from("data"),
                database_url: None,
            },
            listen: "127.0.0.1:8080".to_owned(),
            demo: true,
            auto_settle_after_s: 24 * 3600,
            session_idle_s: 30 * 60,
            secure_cookies: false,
        }
    }
}

pub async fn open_service(db: &DbArgs, settings: Settings) -> anyhow::Result<Service> {
    let db = db.open().await?;
    Ok(Service::new(db, Arc::new(SystemClock), settings))
}

pub async fn run_serve(args: ServeArgs) -> anyhow::Result<()> {
    let settings = Settings {
        auto_settle_after_s: args.auto_settle_after_s,
        session_idle_s: args.session_idle_s,
        ..Settings::default()
    };
    let service = open_service(&args.db, settings).await?;
    if args.demo {
        let fresh = service.emissions().await?.is_empty();
        if fresh {
            service.set_demo().await?;
            let id = service.create_emission("Démo", &Stake::ALL, 2).await?;
            tracing::info!(emission = id, "demo mode: created a demo emission");
        }
    }
    service
        .warm_block_cache()
        .await
        .context("loading the blocks on sale")?;
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let address = listener.local_addr()?;
    let demo = service.is_demo().await?;
    tracing::info!(%address, database = ?service.db.backend, demo, "serving");
    println!(
        "L'Ile au Trésor is open at http://{address}/{}",
        if demo { "  (demo mode)" } else { "" }
    );
    let metrics = Arc::new(Metrics::new(&service.writer.stats));
    serve(
        listener,
        AppState {
            service,
            metrics,
            secure_cookies: args.secure_cookies,
        },
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
            let stakes = parse_stakes(&stakes).map_err(super::Usage)?;
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
                            b.id, b.stake_cents, b.state, b.units_sold, b.commitment
                        );
                    }
                }
            }
        }
        EmissionCommand::Close { id, db } => {
            let service = open_service(&db, Settings::default()).await?;
            service
                .close_emission(id)
                .await
                .map_err(|e| anyhow::anyhow!("cannot close emission {id}: {e}"))?;
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
            db,
        } => {
            let service = open_service(&db, Settings::default()).await?;
            let player = service
                .player_by_username(&username)
                .await
                .map_err(|_| super::Usage(format!("no player named {username}")))?;
            let balance = service
                .deposit(&player, cents)
                .await
                .map_err(anyhow::Error::msg)?;
            println!(
                "credited {cents} cents to {}; balance {balance} cents",
                player.username
            );
        }
    }
    Ok(())
}
