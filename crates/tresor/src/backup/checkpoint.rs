//! What was published of the trail, and whether a database is behind it.
//!
//! A [`Checkpoint`] is the trail's head as of some moment: how many records
//! it had and the hash of the last inserted, with the installation it
//! belongs to. (The signed log checkpoints of `crate::trail::log` are what
//! monitors keep; this one is what backups and restores compare, through
//! [`standing`].)
//!
//! "Published" is what the operator keeps outside the database: the
//! checkpoint file `tresor audit checkpoint` writes (a monitor or a cron job
//! on another machine keeps the latest), and the one in each backup's
//! manifest. A database whose trail is shorter than a kept checkpoint lost
//! records players may have been told of.

use crate::error::Error;
use crate::trail::GENESIS_HASH;
use serde::{Deserialize, Serialize};
use sqlx::AnyPool;
use std::path::Path;

/// The trail's head at one moment, of one installation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// The installation's id (`settings.installation_id`, migration 0012).
    pub installation: String,
    /// How many records the trail had.
    pub records: i64,
    /// The hash of the last of them (the genesis hash for none).
    pub head: String,
    /// When it was taken (RFC 3339), for people; not compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

/// How a database stands against a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Its trail holds the checkpoint's records (and maybe more).
    Holds,
    /// Its trail is shorter: `missing` records published are not in it.
    Behind { records: i64, missing: i64 },
    /// Its trail has as many records but another record where the
    /// checkpoint's head is: another history.
    Diverged { records: i64 },
    /// The checkpoint is of another installation.
    OtherInstallation { ours: String },
}

impl Checkpoint {
    /// Reads a checkpoint file (JSON, as [`Checkpoint::to_json`] writes it).
    pub fn read(path: &Path) -> anyhow::Result<Checkpoint> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read the checkpoint {}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| {
            anyhow::anyhow!(
                "{} is not a checkpoint (tresor audit checkpoint writes one): {e}",
                path.display()
            )
        })
    }

    /// What identifies it (its time left out), as a hold remembers it.
    pub fn key(&self) -> String {
        format!("{}:{}:{}", self.installation, self.records, self.head)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a checkpoint is JSON")
    }
}

/// The installation's id, if it has one (every database migrated to 0012).
pub async fn installation(pool: &AnyPool) -> Result<String, Error> {
    let id: Option<String> =
        sqlx::query_scalar("SELECT value FROM settings WHERE key = 'installation_id'")
            .fetch_optional(pool)
            .await?;
    Ok(id.unwrap_or_default())
}

/// The database's checkpoint now.
pub async fn current(pool: &AnyPool, at: Option<String>) -> Result<Checkpoint, Error> {
    let records: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM trail")
        .fetch_one(pool)
        .await?;
    let head: Option<String> =
        sqlx::query_scalar("SELECT hash FROM trail ORDER BY seq DESC LIMIT 1")
            .fetch_optional(pool)
            .await?;
    let head = head.unwrap_or_else(|| GENESIS_HASH.to_owned());
    Ok(Checkpoint {
        installation: installation(pool).await?,
        records,
        head,
        at,
    })
}

/// How the database on `pool` stands against `published`.
pub async fn standing(pool: &AnyPool, published: &Checkpoint) -> Result<Standing, Error> {
    let ours = current(pool, None).await?;
    if ours.installation != published.installation {
        return Ok(Standing::OtherInstallation {
            ours: ours.installation,
        });
    }
    if ours.records < published.records {
        return Ok(Standing::Behind {
            records: ours.records,
            missing: published.records - ours.records,
        });
    }
    // Record hashes are unique (v1: chained; v2: salted leaves): the
    // published head is held when a record of that hash is there.
    let held = published.records == 0 || published.head == GENESIS_HASH || {
        let found: Option<i64> = sqlx::query_scalar("SELECT seq FROM trail WHERE hash = $1")
            .bind(&published.head)
            .fetch_optional(pool)
            .await?;
        found.is_some()
    };
    Ok(if held {
        Standing::Holds
    } else {
        Standing::Diverged {
            records: ours.records,
        }
    })
}

impl Standing {
    /// Why sales must stay closed, for the operator, or `None` when the
    /// database holds what was published.
    pub fn hold_reason(&self, published: &Checkpoint) -> Option<String> {
        match self {
            Standing::Holds => None,
            Standing::Behind { records, missing } => Some(format!(
                "restored behind what was published: the trail has {records} records, the \
                 published checkpoint {} ({missing} missing); purchases acknowledged after the \
                 backup are lost and are the operator's to make good. Check, then reopen with \
                 `tresor sales open --after-restore`",
                published.records
            )),
            Standing::Diverged { records } => Some(format!(
                "the trail ({records} records) does not hold the published checkpoint's record \
                 {} (head {}): another history. Check, then reopen with \
                 `tresor sales open --after-restore`",
                published.records, published.head
            )),
            Standing::OtherInstallation { ours } => Some(format!(
                "the published checkpoint is of installation {}, this database of {ours}",
                published.installation
            )),
        }
    }

    /// The standing as JSON, for the trail.
    pub fn detail(&self, published: &Checkpoint) -> serde_json::Value {
        let standing = match self {
            Standing::Holds => "holds",
            Standing::Behind { .. } => "behind",
            Standing::Diverged { .. } => "diverged",
            Standing::OtherInstallation { .. } => "other_installation",
        };
        serde_json::json!({"published": published, "standing": standing})
    }
}
