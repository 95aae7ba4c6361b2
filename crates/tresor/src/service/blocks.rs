//! The in-memory block cache: each block's outcomes and scenario seeder.

use super::Service;
use crate::error::Error;
use crate::store::sql;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tresor_game::{BlockSecret, Level, ScenarioSeeder, block_outcomes};

/// What the service keeps in memory of a block: its outcomes and the keyed
/// HMAC that derives its scenario seeds. Both are recomputed from the secret.
pub(super) struct BlockData {
    pub(super) outcomes: Vec<Level>,
    pub(super) seeder: ScenarioSeeder,
}

#[derive(Default)]
pub(super) struct BlockCache {
    blocks: Mutex<HashMap<i64, Arc<BlockData>>>,
    /// When each stake's next block was last looked up to be shuffled ahead
    /// of its sales: once a second is enough, not once per purchase.
    checked: Mutex<HashMap<i64, std::time::Instant>>,
}

impl BlockCache {
    /// Whether the blocks of `stake_cents` are due a look-up, and if so notes it.
    pub(super) fn due_for_check(&self, stake_cents: i64) -> bool {
        let mut checked = self.checked.lock().expect("block cache lock");
        let now = std::time::Instant::now();
        match checked.get(&stake_cents) {
            Some(at) if now.duration_since(*at) < std::time::Duration::from_secs(1) => false,
            _ => {
                checked.insert(stake_cents, now);
                true
            }
        }
    }

    pub(super) fn get(&self, block_id: i64) -> Option<Arc<BlockData>> {
        self.blocks
            .lock()
            .expect("block cache lock")
            .get(&block_id)
            .cloned()
    }

    pub(super) fn insert(&self, block_id: i64, secret: &BlockSecret) -> Arc<BlockData> {
        let data = Arc::new(BlockData {
            outcomes: block_outcomes(secret),
            seeder: ScenarioSeeder::new(secret),
        });
        self.blocks
            .lock()
            .expect("block cache lock")
            .insert(block_id, data.clone());
        data
    }
}

impl Service {
    pub(super) async fn block_data(&self, block_id: i64) -> Result<Arc<BlockData>, Error> {
        if let Some(data) = self.blocks.get(block_id) {
            return Ok(data);
        }
        let secret: Vec<u8> = sql::query_scalar("SELECT secret FROM blocks WHERE id = $1")
            .bind(block_id)
            .fetch_one(&mut *self.db.conn().await?)
            .await?;
        let secret =
            BlockSecret::from_bytes(secret.try_into().expect("a stored secret is 32 bytes"));
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
