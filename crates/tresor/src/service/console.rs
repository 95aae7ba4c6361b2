//! What the operator's console reads that no other caller does: the
//! dashboard (kept up to date incrementally, so that a poll every 2 s costs
//! two small queries), the players' search and record, the trail's head and
//! its last verification, and the re-check of a published block.

use super::games::{GameRef, percent};
use super::{Service, rfc3339};
use crate::error::Error;
use crate::model::Player;
use crate::store::sql;
use crate::trail::{self, Actor, Verdict};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use tokio::sync::Mutex;
use tresor_game::{BlockSecret, Game, Level};

/// A dashboard younger than this is answered again as it is.
const DASHBOARD_FRESH_MS: i64 = 1_000;
const MINUTE_MS: i64 = 60_000;

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

/// The dashboard of one server's console: shared by every open console, so
/// that each poll reads only what changed.
#[derive(Debug, Default)]
pub struct Dashboard {
    tally: Mutex<Tally>,
}

/// A player as the console's search lists them.
#[derive(Debug, Clone, Serialize)]
pub struct PlayerListing {
    pub id: i64,
    pub username: String,
    pub status: Option<String>,
    pub balance_cents: i64,
    pub opened_at: String,
    pub banned: bool,
    /// Suspended by the operator (the list's marker).
    pub suspended: bool,
    pub excluded_until: Option<String>,
}

/// What re-shuffling a published block found.
#[derive(Debug, Clone, Serialize)]
pub struct Recheck {
    pub block_id: i64,
    pub ok: bool,
    /// SHA-256 of the published secret is the commitment published before sales.
    pub commitment_ok: bool,
    /// The shuffle holds exactly the prize table.
    pub table_ok: bool,
    pub units: u32,
    /// Every unit sold was sold at the level the shuffle gives its index.
    pub plays_ok: bool,
    pub plays_checked: i64,
}

impl Service {
    /// The dashboard (`docs/CONSOLE.md`): purchases per minute over the last
    /// hour, sales per stake and block, stakes against prizes won and the 70 %
    /// expected, prizes left per level on the blocks still on sale (the
    /// HTTP edge adds the writer's queue and batch times). Answered from memory when younger than
    /// a second; otherwise one read of the blocks and one of the plays
    /// inserted since the last answer.
    pub async fn dashboard(&self, board: &Dashboard) -> Result<Value, Error> {
        let now_ms = self.now_ms();
        let mut tally = board.tally.lock().await;
        if let Some((at_ms, answer)) = &tally.last
            && (0..DASHBOARD_FRESH_MS).contains(&(now_ms - at_ms))
        {
            return Ok(answer.clone());
        }
        let hour_ago_ms = now_ms - 60 * MINUTE_MS;
        let mut conn = self.db.conn().await?;
        let rows = match tally.last_play_id {
            // The first count: every play once (the report's sum), and the
            // last hour's per minute.
            None => {
                sql::query(
                    "SELECT CAST(CASE WHEN created_at_ms >= $1 THEN created_at_ms / 60000 ELSE -1 END AS BIGINT) AS minute, \
                     block_id, level, COUNT(*) AS units, CAST(SUM(prize_cents) AS BIGINT) AS won, \
                     MAX(id) AS last_id FROM plays GROUP BY 1, block_id, level",
                )
                .bind(hour_ago_ms)
                .fetch_all(&mut conn)
                .await?
            }
            Some(last) => {
                sql::query(
                    "SELECT CAST(created_at_ms / 60000 AS BIGINT) AS minute, block_id, level, \
                     COUNT(*) AS units, CAST(SUM(prize_cents) AS BIGINT) AS won, MAX(id) AS last_id \
                     FROM plays WHERE id > $1 GROUP BY 1, block_id, level",
                )
                .bind(last)
                .fetch_all(&mut conn)
                .await?
            }
        };
        let mut last_id = tally.last_play_id.unwrap_or(0);
        for row in &rows {
            let minute: i64 = row.try_get("minute")?;
            let block_id: i64 = row.try_get("block_id")?;
            let level: i64 = row.try_get("level")?;
            let units: i64 = row.try_get("units")?;
            let won: i64 = row.try_get("won")?;
            last_id = last_id.max(row.try_get("last_id")?);
            if minute >= 0 {
                *tally.per_minute.entry(minute).or_default() += units;
            }
            let entry = tally.per_block_level.entry((block_id, level)).or_default();
            entry.0 += units;
            entry.1 += won;
        }
        tally.last_play_id = Some(last_id);
        let this_minute = now_ms.div_euclid(MINUTE_MS);
        let first_minute = this_minute - 59;
        tally.per_minute.retain(|minute, _| *minute >= first_minute);
        let blocks = sql::query(
            "SELECT id, emission_id, stake_cents, state, units_sold, units_per_block FROM blocks \
             ORDER BY id",
        )
        .fetch_all(&mut conn)
        .await?;
        // Each emission's game, as it pinned it.
        let emissions: Vec<(i64, String, Option<String>)> =
            sql::query_as("SELECT id, game_sha256, definition FROM emissions")
                .fetch_all(&mut conn)
                .await?;
        drop(conn);
        let mut game_of: HashMap<i64, &'static Game> = HashMap::new();
        for (id, sha, definition) in emissions {
            let game = self
                .settings
                .games
                .pinned(&sha, definition.as_deref())
                .map_err(|e| Error::Definition(format!("emission {id}: {e}")))?;
            game_of.insert(id, game);
        }

        let per_minute: Vec<Value> = (first_minute..=this_minute)
            .map(|minute| {
                json!({
                    "minute": rfc3339(minute * MINUTE_MS),
                    "count": tally.per_minute.get(&minute).copied().unwrap_or(0),
                })
            })
            .collect();
        // Per stake, and per game and stake: units sold (each one stake
        // taken), prizes won, and the prizes the tables give for the units
        // sold (the expected payout).
        let mut stakes: BTreeMap<i64, Sums> = BTreeMap::new();
        // Games by their place in the catalogue (those it no longer has
        // last), then id.
        type GameKey = (usize, &'static str);
        let mut per_game_stake: BTreeMap<(GameKey, i64), Sums> = BTreeMap::new();
        // Per game, stake and level: units left on the blocks still on sale.
        let mut left: BTreeMap<(GameKey, i64, u8), (i64, i64)> = BTreeMap::new();
        let game_key = |game: &'static Game| -> GameKey {
            let order = self
                .settings
                .games
                .entries()
                .iter()
                .position(|e| e.game.id() == game.id())
                .unwrap_or(usize::MAX);
            (order, game.id())
        };
        let mut games_seen: BTreeMap<GameKey, &'static Game> = BTreeMap::new();
        let mut block_views = Vec::with_capacity(blocks.len());
        for block in &blocks {
            let id: i64 = block.try_get("id")?;
            let emission_id: i64 = block.try_get("emission_id")?;
            let stake_cents: i64 = block.try_get("stake_cents")?;
            let state: String = block.try_get("state")?;
            let sold: i64 = block.try_get("units_sold")?;
            let size: i64 = block.try_get("units_per_block")?;
            let game = game_of[&emission_id];
            let order = game_key(game);
            games_seen.entry(order).or_insert(game);
            let mut won = 0;
            for level in 0..=9 {
                if let Some((_, w)) = tally.per_block_level.get(&(id, level)) {
                    won += w;
                }
            }
            let table = game.table(stake_cents);
            let expected = table.map_or(0, |table| {
                let prizes = i128::from(table.block_prizes_cents());
                (prizes * i128::from(sold) / i128::from(size.max(1))) as i64
            });
            for sums in [
                stakes.entry(stake_cents).or_default(),
                per_game_stake.entry((order, stake_cents)).or_default(),
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
                    let sold_at_level = tally
                        .per_block_level
                        .get(&(id, i64::from(level)))
                        .map_or(0, |(units, _)| *units);
                    let entry = left.entry((order, stake_cents, level)).or_default();
                    entry.0 += i64::from(prize.units_per_block) - sold_at_level;
                    entry.1 = prize.prize_cents;
                }
            }
            block_views.push(json!({
                "id": id,
                "emission_id": emission_id,
                "game": game.id(),
                "stake_cents": stake_cents,
                "state": state,
                "sold": sold,
                "size": size,
            }));
        }
        let (mut total_stakes, mut total_prizes, mut total_expected) = (0, 0, 0);
        let per_stake: Vec<Value> = stakes
            .iter()
            .map(|(stake_cents, sums)| {
                let stakes_cents = sums.sold * stake_cents;
                total_stakes += stakes_cents;
                total_prizes += sums.won;
                total_expected += sums.expected;
                json!({
                    "stake_cents": stake_cents,
                    "sold": sums.sold,
                    "stakes_cents": stakes_cents,
                    "prizes_cents": sums.won,
                    "expected_prizes_cents": sums.expected,
                })
            })
            .collect();
        let mut per_game: Vec<Value> = Vec::new();
        for (&order, &game) in games_seen.iter() {
            let (mut g_stakes, mut g_prizes, mut g_expected) = (0, 0, 0);
            let rows: Vec<Value> = per_game_stake
                .range((order, i64::MIN)..=(order, i64::MAX))
                .map(|(&(_, stake_cents), sums)| {
                    let stakes_cents = sums.sold * stake_cents;
                    g_stakes += stakes_cents;
                    g_prizes += sums.won;
                    g_expected += sums.expected;
                    json!({
                        "stake_cents": stake_cents,
                        "sold": sums.sold,
                        "stakes_cents": stakes_cents,
                        "prizes_cents": sums.won,
                        "expected_prizes_cents": sums.expected,
                        "table_payout_percent": game
                            .table(stake_cents)
                            .map(|t| percent(game.payout(t).basis_points())),
                    })
                })
                .collect();
            per_game.push(json!({
                "game": GameRef::of(game),
                "stakes_cents": g_stakes,
                "prizes_cents": g_prizes,
                "expected_prizes_cents": g_expected,
                "per_stake": rows,
            }));
        }
        let liability: Vec<Value> = left
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
            .collect();
        let answer = json!({
            "at": rfc3339(now_ms),
            "purchases_per_minute": per_minute,
            "per_stake": per_stake,
            "per_game": per_game,
            "blocks": block_views,
            "liability": liability,
            "totals": {
                "stakes_cents": total_stakes,
                "prizes_cents": total_prizes,
                "expected_prizes_cents": total_expected,
            },
        });
        tally.last = Some((now_ms, answer.clone()));
        Ok(answer)
    }

    /// Players whose name contains `query` (folded as logins fold it), or
    /// whose id it is; at most `limit`, by id.
    pub async fn search_players(
        &self,
        query: &str,
        limit: i64,
    ) -> Result<Vec<PlayerListing>, Error> {
        let query = query.trim();
        let key = crate::model::Username::normalise(query).key().to_owned();
        let pattern = format!(
            "%{}%",
            key.replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_")
        );
        let id: i64 = query.parse().unwrap_or(0);
        let rows = sql::query(
            "SELECT p.id, p.username, a.status, acc.balance_cents, p.created_at_ms, a.banned_at_ms, \
             a.suspended_at_ms, pr.excluded_until_ms FROM players p JOIN accounts acc ON acc.id = p.account_id \
             LEFT JOIN player_accounts a ON a.player_id = p.id \
             LEFT JOIN protections pr ON pr.player_id = p.id \
             WHERE $1 = '' OR p.id = $2 OR p.username_key LIKE $3 ESCAPE '\\' \
             ORDER BY p.id LIMIT $4",
        )
        .bind(query)
        .bind(id)
        .bind(pattern)
        .bind(limit)
        .fetch_all(&mut *self.db.conn().await?)
        .await?;
        let now_ms = self.now_ms();
        rows.iter()
            .map(|row| {
                let excluded_until: Option<i64> = row.try_get("excluded_until_ms")?;
                Ok(PlayerListing {
                    id: row.try_get("id")?,
                    username: row.try_get("username")?,
                    status: row.try_get("status")?,
                    balance_cents: row.try_get("balance_cents")?,
                    opened_at: rfc3339(row.try_get("created_at_ms")?),
                    banned: row.try_get::<Option<i64>, _>("banned_at_ms")?.is_some(),
                    suspended: row.try_get::<Option<i64>, _>("suspended_at_ms")?.is_some(),
                    excluded_until: excluded_until.filter(|t| *t > now_ms).map(rfc3339),
                })
            })
            .collect()
    }

    /// The site's settings as the console shows them.
    pub async fn site(&self) -> Result<Value, Error> {
        let status = self.status().await?;
        let rules_version =
            crate::store::accounts::rules_version(&mut *self.db.conn().await?).await?;
        let restore_hold = self.restore_hold().await?;
        Ok(json!({
            "sales_open_at": status.opens_at,
            "announcement": status.message,
            "restore_hold": restore_hold,
            "rules_version": rules_version,
        }))
    }

    /// The player of id `id`, or `NotFound`.
    pub async fn player_by_id(&self, id: i64) -> Result<Player, Error> {
        crate::store::accounts::player_by_id(&mut *self.db.conn().await?, id).await
    }

    /// The trail's head, and its last verification (a trail record itself).
    pub async fn trail_status(&self) -> Result<Value, Error> {
        let mut conn = self.db.conn().await?;
        let head = last_record(&mut conn).await?;
        let last = sql::query(
            "SELECT at_ms, actor, result FROM trail WHERE action = 'trail_verify' \
             ORDER BY seq DESC LIMIT 1",
        )
        .fetch_optional(&mut conn)
        .await?;
        let last_verification = match last {
            None => Value::Null,
            Some(row) => {
                let result: Value =
                    serde_json::from_str(&row.try_get::<String, _>("result")?).unwrap_or_default();
                let actor: String = row.try_get("actor")?;
                json!({
                    "at": rfc3339(row.try_get("at_ms")?),
                    "by": actor.strip_prefix("staff:").unwrap_or(&actor),
                    "ok": result["ok"],
                    "records": result["records"],
                })
            }
        };
        Ok(json!({
            "head": {"seq": head.0, "hash": head.1},
            "last_verification": last_verification,
        }))
    }

    /// Verifies the whole trail and records who did, when and what was
    /// found, as a trail record (`trail_verify`).
    pub async fn verify_trail_as(&self, actor: Actor) -> Result<Value, Error> {
        let verdict = trail::verify(&self.db.pool, |_| {}).await?;
        let (ok, records, broken) = match &verdict {
            Verdict::Intact { records, .. } => (true, *records, Value::Null),
            Verdict::Broken { seq, reason } => (
                false,
                (seq - 1).max(0),
                json!({"seq": seq, "reason": reason}),
            ),
        };
        let now_ms = self.now_ms();
        let result = json!({"ok": ok, "records": records, "broken": broken});
        let head = self
            .write(move |conn| {
                let (actor, result) = (actor.clone(), result.clone());
                Box::pin(async move {
                    let seq =
                        trail::append(conn, now_ms, &actor, "trail_verify", json!({}), result)
                            .await?;
                    Ok(seq)
                })
            })
            .await?;
        let _ = head;
        let head_row = last_record(&mut *self.db.conn().await?).await?;
        Ok(json!({
            "ok": ok,
            "records": records,
            "broken": broken,
            "head": {"seq": head_row.0, "hash": head_row.1},
            "at": rfc3339(now_ms),
        }))
    }

    /// Re-derives a published block from its secret, as `tresor block
    /// verify` does, and checks every unit sold against it.
    pub async fn recheck_block(&self, block_id: i64) -> Result<Recheck, Error> {
        let block = self
            .blocks()
            .await?
            .into_iter()
            .find(|b| b.id == block_id)
            .ok_or(Error::NotFound)?;
        let Some(secret_hex) = block.secret else {
            return Err(Error::Validation(format!(
                "block {block_id} is still on sale: its secret is published once it is sold out \
                 or its emission closed"
            )));
        };
        let secret = BlockSecret::parse_hex(&secret_hex)
            .map_err(|_| Error::Validation("the published secret does not parse".to_owned()))?;
        let sold: Vec<(i64, i64)> =
            sql::query_as("SELECT unit_index, level FROM plays WHERE block_id = $1")
                .bind(block_id)
                .fetch_all(&mut *self.db.conn().await?)
                .await?;
        let commitment = block.commitment.clone();
        // The block's game as its emission pinned it.
        let data = self.block_data(block_id).await?;
        let (game, table) = (data.game, data.table());
        let checked = tokio::task::spawn_blocking(move || {
            let commitment_ok = game.commitment(&secret).to_hex() == commitment;
            let outcomes = game.outcomes(table, &secret);
            let mut counts = [0u32; 10];
            for level in &outcomes {
                counts[usize::from(level.get())] += 1;
            }
            let table_ok = counts == table.counts();
            let plays_ok = sold.iter().all(|(index, level)| {
                outcomes
                    .get(*index as usize)
                    .is_some_and(|l| i64::from(l.get()) == *level)
            });
            (commitment_ok, table_ok, plays_ok, sold.len() as i64)
        })
        .await
        .map_err(|_| Error::Unavailable("the re-check did not finish"))?;
        let (commitment_ok, table_ok, plays_ok, plays_checked) = checked;
        Ok(Recheck {
            block_id,
            ok: commitment_ok && table_ok && plays_ok,
            commitment_ok,
            table_ok,
            units: game.units_per_block(),
            plays_ok,
            plays_checked,
        })
    }
}

/// The number and hash of the trail's last record (the v1 genesis for none).
async fn last_record(conn: &mut crate::store::Conn) -> Result<(i64, String), Error> {
    Ok(
        sql::query_as("SELECT seq, hash FROM trail ORDER BY seq DESC LIMIT 1")
            .fetch_optional(conn)
            .await?
            .unwrap_or_else(|| (0, trail::GENESIS_HASH.to_owned())),
    )
}
