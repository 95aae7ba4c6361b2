//! Filling the in-memory block cache (`crate::blocks`) from the database.

use super::Service;
use crate::blocks::BlockData;
use crate::error::Error;
use crate::store::sql;
use std::sync::Arc;

impl Service {
    pub(super) async fn block_data(&self, block_id: i64) -> Result<Arc<BlockData>, Error> {
        if let Some(data) = self.blocks.get(block_id) {
            return Ok(data);
        }
        let row = sql::query(
            "SELECT b.stake_cents, b.sealed_secret, e.game_sha256, e.definition \
             FROM blocks b JOIN emissions e ON e.id = b.emission_id WHERE b.id = $1",
        )
        .bind(block_id)
        .fetch_one(&mut *self.db.conn().await?)
        .await?;
        let sealed: Option<Vec<u8>> = row.try_get("sealed_secret")?;
        let stake_cents: i64 = row.try_get("stake_cents")?;
        let sha: String = row.try_get("game_sha256")?;
        let definition: Option<String> = row.try_get("definition")?;
        // The version the emission pinned, not the catalogue's file as it is.
        let game = self
            .settings
            .games
            .pinned(&sha, definition.as_deref())
            .map_err(|e| Error::Definition(format!("block {block_id}: {e}")))?;
        // A version pinned before `tresor game check` proved that every
        // unit stages may hold units that do not: each is shown with its
        // outcome alone (`plays.rs`). Said once, as the block is loaded.
        if let Err(refused) = game.check(u32::MAX) {
            tracing::warn!(
                block = block_id,
                game = game.id(),
                %refused,
                "this block's pinned definition fails `tresor game check`: \
                 a unit whose scene cannot be staged is shown without one"
            );
        }
        let secret = self
            .secrets_key()?
            .open(block_id, sealed.as_deref().unwrap_or_default())?;
        let cache = self.blocks.clone();
        tokio::task::spawn_blocking(move || cache.insert(block_id, game, stake_cents, &secret))
            .await
            .expect("shuffle task")
    }

    /// Computes the outcomes of every block on sale, so that no purchase waits
    /// for a shuffle.
    pub async fn warm_block_cache(&self) -> Result<(), Error> {
        let ids: Vec<i64> =
            sql::query_scalar("SELECT id FROM blocks WHERE state IN ('open', 'suspended')")
                .fetch_all(&mut *self.db.conn().await?)
                .await?;
        for id in ids {
            self.block_data(id).await?;
        }
        Ok(())
    }
}
