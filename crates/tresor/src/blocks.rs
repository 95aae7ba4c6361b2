//! The shuffled blocks the server keeps in memory: each block's outcomes and
//! the keyed HMAC that derives its scenario seeds, both recomputed from its
//! secret (a shuffle takes a few milliseconds, so it is done once).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tresor_game::{BlockSecret, Level, ScenarioSeeder, block_outcomes};

/// What the service keeps in memory of a block: its outcomes and the keyed
/// HMAC that derives its scenario seeds. Both are recomputed from the secret.
pub struct BlockData {
    pub outcomes: Vec<Level>,
    pub seeder: ScenarioSeeder,
}

#[derive(Default)]
pub struct BlockCache {
    blocks: Mutex<HashMap<i64, Arc<BlockData>>>,
    /// When each stake's next block was last looked up to be shuffled ahead
    /// of its sales: once a second is enough, not once per purchase.
    checked: Mutex<HashMap<i64, std::time::Instant>>,
}

impl std::fmt::Debug for BlockData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockData").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let blocks = self.blocks.lock().map(|b| b.len()).unwrap_or(0);
        f.debug_struct("BlockCache")
            .field("blocks", &blocks)
            .finish()
    }
}

impl BlockCache {
    /// Whether the blocks of `stake_cents` are due a look-up, and if so notes it.
    pub fn due_for_check(&self, stake_cents: i64) -> bool {
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

    pub fn get(&self, block_id: i64) -> Option<Arc<BlockData>> {
        self.blocks
            .lock()
            .expect("block cache lock")
            .get(&block_id)
            .cloned()
    }

    pub fn insert(&self, block_id: i64, secret: &BlockSecret) -> Arc<BlockData> {
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
