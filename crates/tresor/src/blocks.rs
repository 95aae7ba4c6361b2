//! The shuffled blocks the server keeps in memory: each block's game (the
//! version its emission pinned), its outcomes and the keyed HMAC that
//! derives its scenario seeds, recomputed from its secret (a shuffle takes a
//! few milliseconds, so it is done once); and their loading from the
//! database, for the service and the batch alike.

use crate::error::Error;
use crate::games::{self, Catalog};
use crate::seal::SecretsKey;
use crate::store::sql::{self, ColumnType::Int, Conn};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tresor_game::{BlockSecret, Game, Level, PrizeTable, ScenarioSeeder};

/// What the service keeps in memory of a block: its game, stake, outcomes
/// and the keyed HMAC that derives its scenario seeds. The last two are
/// recomputed from the secret.
pub struct BlockData {
    pub game: &'static Game,
    pub stake_cents: i64,
    pub outcomes: Vec<Level>,
    pub seeder: ScenarioSeeder,
    /// Each level's prize (index 0: a losing unit's, 0).
    prizes: [i64; 10],
}

impl BlockData {
    /// The prize table of the block's stake in its game's pinned version.
    pub fn table(&self) -> &'static PrizeTable {
        self.game
            .table(self.stake_cents)
            .expect("a block's stake is one of its game's")
    }

    pub fn prize_cents(&self, level: Level) -> i64 {
        self.prizes[usize::from(level.get())]
    }

    /// How many reveals a play of this block takes (`games::reveals`).
    pub fn reveals(&self) -> i64 {
        games::reveals(self.game)
    }
}

#[derive(Default)]
pub struct BlockCache {
    blocks: Mutex<HashMap<i64, Arc<BlockData>>>,
    /// When each (game, stake)'s next block was last looked up to be
    /// shuffled ahead of its sales: once a second is enough, not once per
    /// purchase.
    checked: Mutex<HashMap<(String, i64), std::time::Instant>>,
}

impl std::fmt::Debug for BlockData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockData")
            .field("game", &self.game.id())
            .field("stake_cents", &self.stake_cents)
            .finish_non_exhaustive()
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
    /// Whether the blocks of `game`'s `stake_cents` are due a look-up, and
    /// if so notes it.
    pub fn due_for_check(&self, game: &str, stake_cents: i64) -> bool {
        let mut checked = self.checked.lock().expect("block cache lock");
        let now = std::time::Instant::now();
        let key = (game.to_owned(), stake_cents);
        match checked.get(&key) {
            Some(at) if now.duration_since(*at) < std::time::Duration::from_secs(1) => false,
            _ => {
                checked.insert(key, now);
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

    /// Shuffles a block of `game`'s `stake_cents` and keeps it.
    pub fn insert(
        &self,
        block_id: i64,
        game: &'static Game,
        stake_cents: i64,
        secret: &BlockSecret,
    ) -> Result<Arc<BlockData>, Error> {
        let table = game.table(stake_cents).ok_or_else(|| {
            Error::Definition(format!(
                "block {block_id}: {} sells no stake of {stake_cents} cents",
                game.id()
            ))
        })?;
        let mut prizes = [0i64; 10];
        for prize in table.levels() {
            prizes[usize::from(prize.level.get())] = prize.prize_cents;
        }
        let data = Arc::new(BlockData {
            game,
            stake_cents,
            outcomes: game.outcomes(table, secret),
            seeder: ScenarioSeeder::new(secret),
            prizes,
        });
        self.blocks
            .lock()
            .expect("block cache lock")
            .insert(block_id, data.clone());
        Ok(data)
    }
}

/// Reads, opens and shuffles the blocks of `ids` not in `cache` yet, each
/// with the definition its emission pinned, in one statement.
pub async fn load(
    conn: &mut Conn,
    ids: &[i64],
    key: &SecretsKey,
    catalog: &Catalog,
    cache: &BlockCache,
) -> Result<(), Error> {
    let mut missing: Vec<i64> = ids
        .iter()
        .copied()
        .filter(|id| cache.get(*id).is_none())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    missing.sort_unstable();
    missing.dedup();
    let sqlite = conn.is_sqlite();
    let table = sql::json_rows(sqlite, 1, &[("id", Int)]);
    let rows = sql::query(&format!(
        "SELECT b.id, b.stake_cents, b.sealed_secret, e.game_sha256, e.definition \
         FROM blocks b JOIN emissions e ON e.id = b.emission_id \
         WHERE b.id IN (SELECT id FROM {table} AS d)"
    ))
    .bind(
        serde_json::to_string(&missing.iter().map(|id| [*id]).collect::<Vec<_>>())
            .expect("ids serialise"),
    )
    .fetch_all(conn)
    .await?;
    for row in rows {
        let id: i64 = row.try_get("id")?;
        let sealed: Option<Vec<u8>> = row.try_get("sealed_secret")?;
        let sha: String = row.try_get("game_sha256")?;
        let definition: Option<String> = row.try_get("definition")?;
        let game = catalog
            .pinned(&sha, definition.as_deref())
            .map_err(|e| Error::Definition(format!("block {id}: {e}")))?;
        let secret = key.open(id, sealed.as_deref().unwrap_or_default())?;
        cache.insert(id, game, row.try_get("stake_cents")?, &secret)?;
    }
    Ok(())
}
