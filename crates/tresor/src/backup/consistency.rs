//! The checks a restored database must pass before it serves (and that
//! `tresor audit consistency` runs on any database, a PostgreSQL recovered
//! to a point in time included): the trail's chain, the ledger, and the
//! units sold per block against the plays.

use crate::error::Error;
use crate::trail::{self, Verdict};
use serde::Serialize;
use sqlx::AnyPool;

/// What the checks found, when they all hold.
#[derive(Debug, Clone, Serialize)]
pub struct Consistent {
    pub trail_records: i64,
    pub trail_head: String,
    pub accounts: i64,
    pub transfers: i64,
    pub blocks: i64,
    pub plays: i64,
}

/// Runs every check; the first that fails is the error, in words.
pub async fn check(pool: &AnyPool, progress: impl FnMut(u64)) -> anyhow::Result<Consistent> {
    let (trail_records, trail_head) = match trail::verify(pool, progress).await? {
        Verdict::Intact { records, head_hash } => (records, head_hash),
        Verdict::Broken { seq, reason } => {
            anyhow::bail!("the trail is broken at record {seq}: {reason}")
        }
    };
    let sum: i64 = scalar(
        pool,
        "SELECT CAST(COALESCE(SUM(balance_cents), 0) AS BIGINT) FROM accounts",
    )
    .await?;
    if sum != 0 {
        anyhow::bail!("the ledger does not sum to zero: the balances sum to {sum} cents");
    }
    let off: Vec<(i64, i64, i64)> = sqlx::query_as(
        // One pass over the transfers, summed by account (the writers' own
        // accounts are not in the indexes by account: migration 0021).
        "WITH moved AS (SELECT account, SUM(delta) AS cents FROM ( \
             SELECT credit_account_id AS account, amount_cents AS delta FROM transfers \
             UNION ALL SELECT debit_account_id, -amount_cents FROM transfers) m GROUP BY account) \
         SELECT a.id, a.balance_cents, CAST(COALESCE(moved.cents, 0) AS BIGINT) AS moved \
         FROM accounts a LEFT JOIN moved ON moved.account = a.id",
    )
    .fetch_all(pool)
    .await?;
    if let Some((id, balance, moved)) = off.iter().find(|(_, balance, moved)| balance != moved) {
        anyhow::bail!(
            "account {id}: its balance ({balance} cents) is not the sum of its transfers ({moved} cents)"
        );
    }
    let blocks: Vec<(i64, i64, i64, i64)> = sqlx::query_as(
        "SELECT b.id, b.units_sold, \
           CAST((SELECT COUNT(*) FROM plays p WHERE p.block_id = b.id) AS BIGINT), \
           CAST(COALESCE((SELECT MAX(unit_index) + 1 FROM plays p WHERE p.block_id = b.id), 0) AS BIGINT) \
         FROM blocks b ORDER BY b.id",
    )
    .fetch_all(pool)
    .await?;
    for (id, units_sold, plays, next) in &blocks {
        if units_sold != plays || units_sold != next {
            anyhow::bail!(
                "block {id}: {units_sold} units sold, but {plays} plays on it reaching unit {next}"
            );
        }
    }
    Ok(Consistent {
        trail_records,
        trail_head,
        accounts: off.len() as i64,
        transfers: scalar(pool, "SELECT COUNT(*) FROM transfers").await?,
        blocks: blocks.len() as i64,
        plays: blocks.iter().map(|b| b.2).sum(),
    })
}

async fn scalar(pool: &AnyPool, sql: &str) -> Result<i64, Error> {
    Ok(sqlx::query_scalar(sql).fetch_one(pool).await?)
}
