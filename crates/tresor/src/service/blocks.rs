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
        let sealed: Option<Vec<u8>> =
            sql::query_scalar("SELECT sealed_secret FROM blocks WHERE id = $1")
                .bind(block_id)
                .fetch_one(&mut *self.db.conn().await?)
                .await?;
        let secret = self
            .secrets_key()?
            .open(block_id, sealed.as_deref().unwrap_or_default())?;
        let cache = self.blocks.clone();
        Ok(
            tokio::task::spawn_blocking(move || cache.insert(block_id, &secret))
                .await
                .expect("shuffle task"),
        )
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
