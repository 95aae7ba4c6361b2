//! The console's dashboard (`docs/CONSOLE.md`): purchases per minute over
//! the last hour, sales per stake, per game and per block, stakes against
//! prizes won and the prizes the tables expect, and prizes left per level on
//! the blocks still on sale. Kept up to date incrementally — a tally of the
//! plays moved on by those inserted since the last answer — so that a poll
//! every 2 s costs two small queries.

use super::games::{GameRef, percent};
use super::{Service, rfc3339};
use crate::error::Error;
use crate::games::Catalog;
use crate::store::{Conn, sql};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use tokio::sync::Mutex;
use tresor_game::{Game, Level};

/// A dashboard younger than this is answered again as it is.
const DASHBOARD_FRESH_MS: i64 = 1_000;
const MINUTE_MS: i64 = 60_000;

/// The dashboard of one server's console: shared by every open console, so
/// that each poll reads only what changed.
#[derive(Debug, Default)]
pub struct Dashboard {
    tally: Mutex<Tally>,
}

/// The plays counted so far, moved on by the plays inserted since (play ids
/// grow in commit order: every writer holds the trail's head lock).
#[derive(Debug, Default)]
struct Tally {
    /// The last play id counted; `None` before the first count.
    last_play_id: Option<i64>,
    /// Purchases per minute (its first millisecond / 60 000), last hour only.
    per_minute: BTreeMap<i64, i64>,
    /// Units sold and prizes won per (block, level).
    per_block_level: HashMap<(i64, i64), (i64, i64)>,
    /// The last answer and when it was made.
    last: Option<(i64, Value)>,
}

/// Units sold, prizes won and prizes expected by the tables, summed.
#[derive(Debug, Default, Clone, Copy)]
struct Sums {
    sold: i64,
    won: i64,
    expected: i64,
}

/// A game by its place in the catalogue (those it no longer has last),
/// then its id.
type GameKey = (usize, &'static str);

/// What the blocks add up to, per stake, per game and stake, and per game,
/// stake and level on the blocks still on sale.
#[derive(Default)]
struct Sales {
    /// Per stake: units sold (each one stake taken), prizes won, and the
    /// prizes the tables give for the units sold (the expected payout).
    per_stake: BTreeMap<i64, Sums>,
    /// The same per game and stake.
    per_game_stake: BTreeMap<(GameKey, i64), Sums>,
    /// Per game, stake and level: units left on the blocks still on sale,
    /// and the level's prize.
    left: BTreeMap<(GameKey, i64, u8), (i64, i64)>,
    /// The games of the blocks, in the catalogue's order.
    games: BTreeMap<GameKey, &'static Game>,
    /// Each block as the dashboard lists it.
    blocks: Vec<Value>,
}

impl Service {
    /// The dashboard (`docs/CONSOLE.md`): the HTTP edge adds the writer's
    /// queue and batch times. Answered from memory when younger than a
    /// second; otherwise one read of the blocks and one of the plays
    /// inserted since the last answer.
    pub async fn dashboard(&self, board: &Dashboard) -> Result<Value, Error> {
        let now_ms = self.now_ms();
        let mut tally = board.tally.lock().await;
        if let Some(answer) = tally.fresh(now_ms) {
            return Ok(answer);
        }
        let mut conn = self.db.conn().await?;
        let plays = new_plays(&mut conn, tally.last_play_id, now_ms - 60 * MINUTE_MS).await?;
        tally.count(&plays)?;
        tally.keep_last_hour(now_ms);
        let blocks = blocks(&mut conn).await?;
        let game_of = self.pinned_games(&mut conn).await?;
        drop(conn);
        let mut sales = Sales::default();
        for block in &blocks {
            let game = game_of[&block.try_get::<i64, _>("emission_id")?];
            sales.add(block, game, game_key(&self.settings.games, game), &tally)?;
        }
        let answer = json!({
            "at": rfc3339(now_ms),
            "purchases_per_minute": tally.per_minute_view(now_ms),
            "per_stake": sales.per_stake_view(),
            "per_game": sales.per_game_view(),
            "blocks": sales.blocks,
            "liability": sales.liability_view(),
            "totals": sales.totals_view(),
        });
        tally.last = Some((now_ms, answer.clone()));
        Ok(answer)
    }

    /// Each emission's game, as it pinned it, by emission id.
    async fn pinned_games(&self, conn: &mut Conn) -> Result<HashMap<i64, &'static Game>, Error> {
        let emissions: Vec<(i64, String, Option<String>)> =
            sql::query_as("SELECT id, game_sha256, definition FROM emissions")
                .fetch_all(&mut *conn)
                .await?;
        let mut game_of = HashMap::new();
        for (id, sha, definition) in emissions {
            let game = self
                .settings
                .games
                .pinned(&sha, definition.as_deref())
                .map_err(|e| Error::Definition(format!("emission {id}: {e}")))?;
            game_of.insert(id, game);
        }
        Ok(game_of)
    }
}

/// The plays inserted after `last_play_id`, summed per minute, block and
/// level; the first count (`None`) reads every play once (the report's
/// sum), the minutes before `hour_ago_ms` as minute -1.
async fn new_plays(
    conn: &mut Conn,
    last_play_id: Option<i64>,
    hour_ago_ms: i64,
) -> Result<Vec<sql::Row>, Error> {
    match last_play_id {
        None => {
            sql::query(
                "SELECT CAST(CASE WHEN created_at_ms >= $1 THEN created_at_ms / 60000 ELSE -1 END AS BIGINT) AS minute, \
                 block_id, level, COUNT(*) AS units, CAST(SUM(prize_cents) AS BIGINT) AS won, \
                 MAX(id) AS last_id FROM plays GROUP BY 1, block_id, level",
            )
            .bind(hour_ago_ms)
            .fetch_all(conn)
            .await
        }
        Some(last) => {
            sql::query(
                "SELECT CAST(created_at_ms / 60000 AS BIGINT) AS minute, block_id, level, \
                 COUNT(*) AS units, CAST(SUM(prize_cents) AS BIGINT) AS won, MAX(id) AS last_id \
                 FROM plays WHERE id > $1 GROUP BY 1, block_id, level",
            )
            .bind(last)
            .fetch_all(conn)
            .await
        }
    }
}

/// Every block, by id.
async fn blocks(conn: &mut Conn) -> Result<Vec<sql::Row>, Error> {
    sql::query(
        "SELECT id, emission_id, stake_cents, state, units_sold, units_per_block FROM blocks \
         ORDER BY id",
    )
    .fetch_all(conn)
    .await
}

/// Where `game` stands in the catalogue (last when it no longer has it).
fn game_key(catalog: &Catalog, game: &'static Game) -> GameKey {
    let order = catalog
        .entries()
        .iter()
        .position(|e| e.game.id() == game.id())
        .unwrap_or(usize::MAX);
    (order, game.id())
}

impl Tally {
    /// The last answer, when it is younger than [`DASHBOARD_FRESH_MS`].
    fn fresh(&self, now_ms: i64) -> Option<Value> {
        let (at_ms, answer) = self.last.as_ref()?;
        (0..DASHBOARD_FRESH_MS)
            .contains(&(now_ms - at_ms))
            .then(|| answer.clone())
    }

    /// Adds the plays read by [`new_plays`].
    fn count(&mut self, plays: &[sql::Row]) -> Result<(), Error> {
        let mut last_id = self.last_play_id.unwrap_or(0);
        for row in plays {
            let minute: i64 = row.try_get("minute")?;
            let block_id: i64 = row.try_get("block_id")?;
            let level: i64 = row.try_get("level")?;
            let units: i64 = row.try_get("units")?;
            let won: i64 = row.try_get("won")?;
            last_id = last_id.max(row.try_get("last_id")?);
            if minute >= 0 {
                *self.per_minute.entry(minute).or_default() += units;
            }
            let entry = self.per_block_level.entry((block_id, level)).or_default();
            entry.0 += units;
            entry.1 += won;
        }
        self.last_play_id = Some(last_id);
        Ok(())
    }

    /// Forgets the minutes before the last hour.
    fn keep_last_hour(&mut self, now_ms: i64) {
        let first_minute = now_ms.div_euclid(MINUTE_MS) - 59;
        self.per_minute.retain(|minute, _| *minute >= first_minute);
    }

    /// Purchases in each minute of the last hour, none missing.
    fn per_minute_view(&self, now_ms: i64) -> Vec<Value> {
        let this_minute = now_ms.div_euclid(MINUTE_MS);
        (this_minute - 59..=this_minute)
            .map(|minute| {
                json!({
                    "minute": rfc3339(minute * MINUTE_MS),
                    "count": self.per_minute.get(&minute).copied().unwrap_or(0),
                })
            })
            .collect()
    }

    /// The prizes won on block `id`, every level.
    fn won(&self, id: i64) -> i64 {
        (0..=9)
            .filter_map(|level| self.per_block_level.get(&(id, level)))
            .map(|(_, won)| won)
            .sum()
    }

    /// The units of block `id` sold at `level`.
    fn sold_at(&self, id: i64, level: u8) -> i64 {
        self.per_block_level
            .get(&(id, i64::from(level)))
            .map_or(0, |(units, _)| *units)
    }
}

impl Sales {
    /// Adds `block`, of `game` (at `key` in the catalogue).
    fn add(
        &mut self,
        block: &sql::Row,
        game: &'static Game,
        key: GameKey,
        tally: &Tally,
    ) -> Result<(), Error> {
        let id: i64 = block.try_get("id")?;
        let stake_cents: i64 = block.try_get("stake_cents")?;
        let state: String = block.try_get("state")?;
        let sold: i64 = block.try_get("units_sold")?;
        let size: i64 = block.try_get("units_per_block")?;
        self.games.entry(key).or_insert(game);
        let won = tally.won(id);
        let table = game.table(stake_cents);
        let expected = table.map_or(0, |table| {
            let prizes = i128::from(table.block_prizes_cents());
            (prizes * i128::from(sold) / i128::from(size.max(1))) as i64
        });
        for sums in [
            self.per_stake.entry(stake_cents).or_default(),
            self.per_game_stake.entry((key, stake_cents)).or_default(),
        ] {
            sums.sold += sold;
            sums.won += won;
            sums.expected += expected;
        }
        if matches!(state.as_str(), "open" | "suspended")
            && let Some(table) = table
        {
            for prize in table.levels() {
                let level = prize.level.get();
                let entry = self.left.entry((key, stake_cents, level)).or_default();
                entry.0 += i64::from(prize.units_per_block) - tally.sold_at(id, level);
                entry.1 = prize.prize_cents;
            }
        }
        self.blocks.push(json!({
            "id": id,
            "emission_id": block.try_get::<i64, _>("emission_id")?,
            "game": game.id(),
            "stake_cents": stake_cents,
            "state": state,
            "sold": sold,
            "size": size,
        }));
        Ok(())
    }

    fn per_stake_view(&self) -> Vec<Value> {
        self.per_stake
            .iter()
            .map(|(&stake_cents, sums)| stake_view(stake_cents, sums))
            .collect()
    }

    /// Stakes, prizes won and prizes expected, every stake together.
    fn totals_view(&self) -> Value {
        let (stakes, prizes, expected) = totals(&self.per_stake);
        json!({
            "stakes_cents": stakes,
            "prizes_cents": prizes,
            "expected_prizes_cents": expected,
        })
    }

    /// Each game's stakes, each beside its table's payout rate, and their
    /// sum.
    fn per_game_view(&self) -> Vec<Value> {
        let mut per_game = Vec::new();
        for (&key, &game) in &self.games {
            let of_game: BTreeMap<i64, Sums> = self
                .per_game_stake
                .range((key, i64::MIN)..=(key, i64::MAX))
                .map(|(&(_, stake_cents), &sums)| (stake_cents, sums))
                .collect();
            let rows: Vec<Value> = of_game
                .iter()
                .map(|(&stake_cents, sums)| {
                    let mut row = stake_view(stake_cents, sums);
                    row["table_payout_percent"] = json!(
                        game.table(stake_cents)
                            .map(|t| percent(game.payout(t).basis_points()))
                    );
                    row
                })
                .collect();
            let (stakes, prizes, expected) = totals(&of_game);
            per_game.push(json!({
                "game": GameRef::of(game),
                "stakes_cents": stakes,
                "prizes_cents": prizes,
                "expected_prizes_cents": expected,
                "per_stake": rows,
            }));
        }
        per_game
    }

    /// What the units left on sale would pay, per game, stake and level.
    fn liability_view(&self) -> Vec<Value> {
        self.left
            .iter()
            .filter_map(
                |(((_, game_id), stake_cents, level), (units_left, prize_cents))| {
                    Level::new(*level)?;
                    Some(json!({
                        "game": game_id,
                        "stake_cents": stake_cents,
                        "level": level,
                        "prize_cents": prize_cents,
                        "left": units_left,
                        "left_cents": units_left * prize_cents,
                    }))
                },
            )
            .collect()
    }
}

/// One stake's sales.
fn stake_view(stake_cents: i64, sums: &Sums) -> Value {
    json!({
        "stake_cents": stake_cents,
        "sold": sums.sold,
        "stakes_cents": sums.sold * stake_cents,
        "prizes_cents": sums.won,
        "expected_prizes_cents": sums.expected,
    })
}

/// Stakes taken, prizes won and prizes expected over `per_stake`.
fn totals(per_stake: &BTreeMap<i64, Sums>) -> (i64, i64, i64) {
    per_stake.iter().fold(
        (0, 0, 0),
        |(stakes, prizes, expected), (stake_cents, sums)| {
            (
                stakes + sums.sold * stake_cents,
                prizes + sums.won,
                expected + sums.expected,
            )
        },
    )
}
