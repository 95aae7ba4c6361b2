//! Free tries (issue 45): any game played at a stake with play money, its
//! outcome drawn at the stake's table odds (each level with probability
//! units ÷ units per block) from the server's own generator, never from a
//! real block, and its scene staged by the same generator as a real unit's.
//! Nothing here reads or writes the database but the logged-in player's
//! protections (read-only): no writer, no ledger, no trail.

use super::plays::RevealedScenario;
use super::{Service, sha256_hex};
use crate::error::Error;
use crate::games::reveals;
use crate::model::LimitKind;
use crate::store::sql;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use tresor_game::{Game, Level, Outcome, PrizeTable};

use super::games::GameRef;

/// The server's generator of free tries: a key drawn once from the
/// operating system when the first free try is asked, and a counter; each
/// draw is SHA-256(key ‖ counter ‖ purpose). It never sees a block's secret
/// or seed, so a free try tells nothing of any real unit.
struct FreeGenerator {
    key: [u8; 32],
    counter: AtomicU64,
}

impl FreeGenerator {
    fn global() -> &'static FreeGenerator {
        static GENERATOR: OnceLock<FreeGenerator> = OnceLock::new();
        GENERATOR.get_or_init(|| {
            let mut key = [0u8; 32];
            getrandom::fill(&mut key).expect("the operating system's random source");
            FreeGenerator {
                key,
                counter: AtomicU64::new(0),
            }
        })
    }

    fn block(&self, purpose: &[u8]) -> [u8; 32] {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let mut hash = Sha256::new();
        hash.update(self.key);
        hash.update(n.to_le_bytes());
        hash.update(purpose);
        hash.finalize().into()
    }

    /// A uniform integer in `0..n` (rejection: no modulo bias).
    fn below(&self, n: u32) -> u32 {
        let n = u64::from(n.max(1));
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let bytes = self.block(b"level");
            let r = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
            if r < zone {
                return (r % n) as u32;
            }
        }
    }
}

/// The level of a unit numbered `index` (`0..units_per_block`) of a block of
/// `table`: losing units first, then level 1's, level 2's, … (any fixed
/// order gives each level its units ÷ units per block).
fn level_at(table: &PrizeTable, index: u32) -> Level {
    let mut below = 0u32;
    for (level, count) in table.counts().iter().enumerate() {
        below += count;
        if index < below {
            return Level::new(level as u8).expect("a table's level is 0 to 9");
        }
    }
    Level::LOSE
}

/// One free draw of `table`'s stake of `game`: each level with probability
/// its units per block ÷ the game's units per block.
pub fn free_level(game: &Game, table: &PrizeTable) -> Level {
    level_at(table, FreeGenerator::global().below(game.units_per_block()))
}

/// A free try as the API answers it: the shape of a real play's view
/// (`PlayView`) without a play, a unit or a receipt, marked `free`, its
/// scene wholly revealed (the page plays it out itself).
#[derive(Debug, Clone, Serialize)]
pub struct FreeTry {
    pub free: bool,
    pub game: GameRef,
    pub stake_cents: i64,
    pub state: &'static str,
    /// The real game's prize for this outcome: fictitious here.
    pub outcome: Outcome,
    pub throws_left: i64,
    pub reveals: i64,
    pub scenario: RevealedScenario,
}

/// Draws and stages one free try of `game` at `table`'s stake.
pub fn free_try(game: &'static Game, table: &PrizeTable) -> Result<FreeTry, Error> {
    let level = free_level(game, table);
    let seed = FreeGenerator::global().block(b"scene");
    let reveals = reveals(game);
    let scene = game.stage(table, level, &seed).map_err(|unstaged| {
        Error::Definition(format!(
            "{}: a free try cannot be staged: {unstaged}",
            game.id()
        ))
    })?;
    let scenario = RevealedScenario::of(scene, game.scene(), reveals as usize, true);
    Ok(FreeTry {
        free: true,
        game: GameRef::of(game),
        stake_cents: table.stake_cents(),
        state: "finished",
        outcome: Outcome {
            level,
            prize_cents: table.prize_cents(level).unwrap_or(0),
        },
        throws_left: 0,
        reveals,
        scenario,
    })
}

impl Service {
    /// The player a session token names, its session live or ended (an
    /// exclusion ends every session of the player, and a page still holding
    /// the cookie is the player's): by a read only, to refuse a free try,
    /// never to grant anything.
    pub async fn free_try_player(&self, token: &str) -> Result<Option<i64>, Error> {
        sql::query_scalar("SELECT player_id FROM sessions WHERE token_hash = $1")
            .bind(sha256_hex(token.as_bytes()))
            .fetch_optional(&mut *self.db.conn().await?)
            .await
    }

    /// A free try of `game` at `stake_cents`. For a logged-in player
    /// (`player_id`), refused while excluded or when the stake would pass
    /// the 7-day cap, as a real purchase would be: read-only, nothing
    /// counted.
    pub async fn free_play(
        &self,
        player_id: Option<i64>,
        game: Option<&str>,
        stake_cents: i64,
    ) -> Result<FreeTry, Error> {
        let game = self.game(game)?;
        let stake_cents = self.sold_stake(game, stake_cents)?;
        if let Some(player_id) = player_id {
            let mut conn = self.db.conn().await?;
            crate::protect::refuse_past_cap(
                &mut conn,
                LimitKind::Stake,
                player_id,
                stake_cents,
                self.now_ms(),
            )
            .await?;
        }
        let table = game.table(stake_cents).expect("a sold stake has its table");
        free_try(game, table)
    }
}
