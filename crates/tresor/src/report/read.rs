//! What the report reads: the emissions and their blocks, and per block
//! what its plays (units sold per level, prizes won and pending) and its
//! transfers (stakes taken, prizes credited) sum to — each table read once,
//! grouped by the database.

use super::figures::BlockSums;
use crate::error::Error;
use crate::store::record::record;
use sqlx::{AnyPool, Row};
use std::collections::HashMap;

/// An emission as stored, with the definition it pinned.
pub(super) struct EmissionRow {
    pub(super) id: i64,
    pub(super) name: String,
    pub(super) state: String,
    pub(super) game_sha256: String,
    pub(super) definition: Option<String>,
}

/// A block as stored.
pub(super) struct BlockRow {
    pub(super) id: i64,
    pub(super) emission_id: i64,
    pub(super) stake_cents: i64,
    pub(super) state: String,
    pub(super) units_sold: i64,
    pub(super) units_per_block: i64,
}

record! {
    impl sqlx for EmissionRow { id, name, state, game_sha256, definition }
}

record! {
    impl sqlx for BlockRow { id, emission_id, stake_cents, state, units_sold, units_per_block }
}

/// Every emission, by id.
pub(super) async fn emissions(pool: &AnyPool) -> Result<Vec<EmissionRow>, Error> {
    Ok(
        sqlx::query_as(
            "SELECT id, name, state, game_sha256, definition FROM emissions ORDER BY id",
        )
        .fetch_all(pool)
        .await?,
    )
}

/// Every block, by id.
pub(super) async fn blocks(pool: &AnyPool) -> Result<Vec<BlockRow>, Error> {
    Ok(sqlx::query_as(
        "SELECT id, emission_id, stake_cents, state, units_sold, units_per_block FROM blocks \
         ORDER BY id",
    )
    .fetch_all(pool)
    .await?)
}

/// What the plays and transfers of each block sum to, by block id.
pub(super) async fn block_sums(pool: &AnyPool) -> Result<HashMap<i64, BlockSums>, Error> {
    let mut sums: HashMap<i64, BlockSums> = HashMap::new();
    add_plays(pool, &mut sums).await?;
    add_transfers(pool, &mut sums).await?;
    Ok(sums)
}

/// Units sold per level, prizes won and prizes pending, from the plays.
async fn add_plays(pool: &AnyPool, sums: &mut HashMap<i64, BlockSums>) -> Result<(), Error> {
    let plays = sqlx::query(
        "SELECT block_id, level, COUNT(*) AS units, CAST(SUM(prize_cents) AS BIGINT) AS won, \
         CAST(SUM(CASE WHEN state = 'in_progress' THEN prize_cents ELSE 0 END) AS BIGINT) AS pending \
         FROM plays GROUP BY block_id, level",
    )
    .fetch_all(pool)
    .await?;
    for row in &plays {
        let block_id: i64 = row.try_get("block_id")?;
        let level: i64 = row.try_get("level")?;
        let units: i64 = row.try_get("units")?;
        let block = sums.entry(block_id).or_default();
        if level > 0 {
            *block.sold_per_level.entry(level as u8).or_default() += units;
        }
        block.wins_won_cents += row.try_get::<i64, _>("won")?;
        block.wins_pending_cents += row.try_get::<i64, _>("pending")?;
    }
    Ok(())
}

/// Stakes taken and prizes credited, from the ledger's transfers.
async fn add_transfers(pool: &AnyPool, sums: &mut HashMap<i64, BlockSums>) -> Result<(), Error> {
    let transfers = sqlx::query(
        "SELECT p.block_id, t.kind, CAST(SUM(t.amount_cents) AS BIGINT) AS amount \
         FROM transfers t JOIN plays p ON p.id = t.play_id \
         WHERE t.kind IN ('stake', 'prize') GROUP BY p.block_id, t.kind",
    )
    .fetch_all(pool)
    .await?;
    for row in &transfers {
        let block_id: i64 = row.try_get("block_id")?;
        let kind: String = row.try_get("kind")?;
        let amount: i64 = row.try_get("amount")?;
        let block = sums.entry(block_id).or_default();
        if kind == "stake" {
            block.stakes_taken_cents += amount;
        } else {
            block.wins_credited_cents += amount;
        }
    }
    Ok(())
}
