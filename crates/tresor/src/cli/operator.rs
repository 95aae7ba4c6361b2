//! The operator's commands: `emission`, `player`, `block suspend|resume`,
//! `sales`, `announce`, `secrets rotate`. Each opens
//! the same database as the server (`--data` or `--database-url`) with the
//! key of its block secrets (`DbArgs::open`, the one place it is resolved);
//! every change it makes is recorded in the game trail as the operator's.

use super::db::{DbArgs, ListArgs, open_service};
use crate::backup::keeper::{Keeper, Kept};
use crate::error::Error;
use crate::protect::ExclusionLength;
use crate::seal::{KeySource, SecretsKey};
use crate::service::{Settings, parse_rfc3339, rfc3339};
use crate::store::lock::lock_data_dir;
use crate::trail::Actor;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use tresor_game::Stake;

use super::Usage;

#[derive(Debug, Subcommand)]
pub enum EmissionCommand {
    /// Create an emission of one game with blocks of the given stakes.
    Create {
        /// The game's id in the catalogue (`--games`): « L'Ile au Trésor »
        /// by default.
        #[arg(long, default_value = tresor_game::ISLAND_ID)]
        game: String,
        /// Stakes in cents, comma-separated (the island's: 50, 100, 200);
        /// by default every stake the game sells.
        #[arg(long, value_delimiter = ',')]
        stakes: Vec<i64>,
        /// Blocks per stake (the island's hold 450,000 units).
        #[arg(long, default_value_t = 1)]
        blocks: u32,
        /// A name for the emission.
        #[arg(long, default_value = "Emission")]
        name: String,
        #[command(flatten)]
        catalog: super::catalog::CatalogArgs,
        #[command(flatten)]
        db: DbArgs,
    },
    /// List emissions and their blocks.
    List {
        #[command(flatten)]
        list: ListArgs,
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
            game,
            stakes,
            blocks,
            name,
            catalog,
            db,
        } => create_emission(&game, stakes, blocks, &name, &catalog, &db).await,
        EmissionCommand::List {
            list: ListArgs { json, db },
        } => list_emissions(json, &db).await,
        EmissionCommand::Close { id, db } => close_emission(id, &db).await,
    }
}

/// `tresor emission create`: blocks of a game of the catalogue, its stakes or those given.
async fn create_emission(
    game: &str,
    stakes: Vec<i64>,
    blocks: u32,
    name: &str,
    catalog: &super::catalog::CatalogArgs,
    db: &DbArgs,
) -> anyhow::Result<()> {
    let games = std::sync::Arc::new(catalog.load().map_err(Usage)?);
    let Some(chosen) = games.get(game) else {
        return Err(Usage(format!(
            "--game {game}: not in the catalogue (--games), which has {}",
            games
                .entries()
                .iter()
                .map(|e| e.game.id())
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .into());
    };
    let mut stakes = if stakes.is_empty() {
        chosen.tables().iter().map(|t| t.stake_cents()).collect()
    } else if chosen.id() == tresor_game::ISLAND_ID {
        parse_stakes(&stakes)
            .map_err(Usage)?
            .iter()
            .map(|s| s.cents())
            .collect()
    } else {
        stakes
    };
    stakes.dedup();
    let settings = Settings {
        games,
        ..Settings::default()
    };
    let service = open_service(db, settings).await?;
    let id = service
        .create_game_emission(Actor::Operator, name, game, &stakes, blocks)
        .await
        .map_err(|e| match e {
            Error::StakeNotSold { .. } | Error::UnknownStake(_) => {
                anyhow::Error::from(Usage(e.to_string()))
            }
            other => other.into(),
        })?;
    let emission = service.emission(id).await?;
    println!(
        "created emission {id} with {} blocks",
        emission.blocks.len()
    );
    for block in &emission.blocks {
        println!(
            "  block {:>4}  {}  stake {:>3} c  commitment {}",
            block.id, block.game, block.stake_cents, block.commitment
        );
    }
    Ok(())
}

/// `tresor emission list [--json]`.
async fn list_emissions(json: bool, db: &DbArgs) -> anyhow::Result<()> {
    let service = open_service(db, Settings::default()).await?;
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
                    "        block {:>4}  {} {:>3} c  {:<9} {:>6}/{} sold  {}",
                    b.id,
                    b.game,
                    b.stake_cents,
                    b.state,
                    b.units_sold.unwrap_or_default(),
                    b.units_per_block,
                    b.commitment
                );
            }
        }
    }
    Ok(())
}

/// `tresor emission close ID`: its block secrets published.
async fn close_emission(id: i64, db: &DbArgs) -> anyhow::Result<()> {
    let service = open_service(db, Settings::default()).await?;
    service.close_emission(id).await.map_err(|e| match e {
        Error::NotFound => Usage(format!("no emission {id}")).into(),
        e => anyhow::anyhow!("cannot close emission {id}: {e}"),
    })?;
    println!("closed emission {id}; its block secrets are published");
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
    /// Show whether sales are open, when they open, the site message and,
    /// when they are closed, why (`closed_because`: held after a restore
    /// and its reason, an opening time to come, no block on sale).
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
                Ok(reason) => {
                    println!("sales are open again (they were closed: {reason})");
                    // What the server keeps of its published checkpoints is
                    // now this database's (the operator took the rest on),
                    // where a file is, or the database says one was.
                    let installation =
                        crate::backup::checkpoint::installation(&service.db.pool).await?;
                    let keeper = db.log.keeper(&installation);
                    if keeper.path.exists() || Keeper::recorded(&service).await? {
                        keeper.keep(&service, &mut Kept::default()).await?;
                    }
                }
                Err(Error::NotFound) => {
                    return Err(Usage("sales are not closed after a restore".to_owned()).into());
                }
                Err(error) => return Err(refusal(error)),
            }
        }
        SalesCommand::Status { db } => {
            let service = open_service(&db, Settings::default()).await?;
            let status = service.status().await?;
            // The operator is told why sales are closed (players are not:
            // `/api/status` has no reason).
            let why = if let Some(reason) = service.restore_hold().await? {
                Some(format!("held after a restore: {reason}"))
            } else if status.sales_open {
                None
            } else if let Some(at) = status
                .opens_at
                .as_deref()
                .filter(|_| !status.stakes.is_empty())
            {
                Some(format!("they open at {at} (tresor sales open-at)"))
            } else {
                Some("no block is on sale (tresor emission create)".to_owned())
            };
            let mut shown = serde_json::to_value(&status)?;
            shown["closed_because"] = why.into();
            println!("{}", serde_json::to_string_pretty(&shown)?);
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
