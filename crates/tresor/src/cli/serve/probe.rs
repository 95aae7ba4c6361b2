//! What `tresor serve` finds of its database before it opens it, read
//! without writing a byte (issue 42, finding 11): whether it is new, in
//! demo mode, sealed with a key, and of which installation. The settings
//! are checked against it (mail outside demo mode, the key, a published
//! checkpoint) before the database is migrated or a key file made.

use super::super::db::DbArgs;
use anyhow::Context;
use sqlx::{AnyConnection, ConnectOptions, Connection};
use std::path::Path;
use std::time::{Duration, Instant};

/// A database as found, untouched.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    /// New: no schema yet (no file, an empty one, no settings table), or
    /// a schema nothing was written into (`store::written`, the rule
    /// `Db::fresh` follows): opening it will make it the installation's.
    pub fresh: bool,
    pub demo: bool,
    /// The key check its block secrets were sealed under (`crate::seal`).
    pub key_check: Option<String>,
    /// The installation's id (empty when new).
    pub installation: String,
}

/// Looks at the database of `db` without writing: SQLite's file read as it
/// is (none, or an empty one, is a new database), PostgreSQL's first
/// primary host asked (a server starting is waited for, 10 s at most).
pub async fn probe(db: &DbArgs) -> anyhow::Result<Found> {
    sqlx::any::install_default_drivers();
    let options = match &db.database_url {
        Some(url) => primary_options(url).await?,
        None => {
            let file = db.data.join("tresor.db");
            if !has_bytes(&file)? {
                return Ok(Found {
                    fresh: true,
                    ..Found::default()
                });
            }
            // Never `mode=rwc`: a file that went meanwhile is not made.
            format!("sqlite://{}?mode=ro", file.display())
                .parse::<sqlx::any::AnyConnectOptions>()
                .context("invalid database path")?
        }
    };
    let mut conn = options
        .connect()
        .await
        .context("cannot open the database to read its settings")?;
    let found = read(&mut conn, db.database_url.is_some()).await;
    let _ = conn.close().await;
    found
}

/// Whether `file` exists with something in it.
fn has_bytes(file: &Path) -> anyhow::Result<bool> {
    match std::fs::metadata(file) {
        Ok(meta) => Ok(meta.len() > 0),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(error).with_context(|| format!("cannot read {}", file.display())),
    }
}

/// The connection options of the first primary host of a PostgreSQL URL.
async fn primary_options(url: &str) -> anyhow::Result<sqlx::any::AnyConnectOptions> {
    let hosts = crate::store::primary::Hosts::parse(url).map_err(anyhow::Error::msg)?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match hosts.find().await {
            Ok((_, options)) => return Ok(options),
            Err(why) if Instant::now() > deadline => {
                anyhow::bail!("cannot open the Postgres database: {why}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

async fn read(conn: &mut AnyConnection, postgres: bool) -> anyhow::Result<Found> {
    let schema = if postgres {
        "SELECT CAST(COUNT(*) AS BIGINT) FROM information_schema.tables \
         WHERE table_schema = current_schema() AND table_name = 'settings'"
    } else {
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'settings'"
    };
    let tables: i64 = sqlx::query_scalar(schema)
        .fetch_one(&mut *conn)
        .await
        .context("cannot read the database's schema")?;
    if tables == 0 {
        return Ok(Found {
            fresh: true,
            ..Found::default()
        });
    }
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT key, value FROM settings \
         WHERE key IN ('demo', 'secrets_key_check', 'installation_id')",
    )
    .fetch_all(&mut *conn)
    .await
    .context("cannot read the database's settings")?;
    let value = |key: &str| rows.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    // A schema older than today's lacks a table the rule reads: written.
    let written = crate::store::written(conn).await.unwrap_or(true);
    Ok(Found {
        fresh: !written,
        demo: value("demo").as_deref() == Some("1"),
        key_check: value("secrets_key_check"),
        installation: value("installation_id").unwrap_or_default(),
    })
}
