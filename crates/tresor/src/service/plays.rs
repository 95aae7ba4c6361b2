//! Plays: their views, throws, settlement and the player's history.

use super::money::{PRIZES_ACCOUNT, transfer};
use super::players::Player;
use super::{Service, rfc3339};
use crate::error::Error;
use crate::store::{Conn, sql};
use crate::trail::{self, Actor};
use serde::Serialize;
use serde_json::json;
use tresor_game::{Level, Outcome, Scenario, Stake, generate_scenario};

/// The unit a play bought: emission, block and index in the block.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct UnitRef {
    pub emission: i64,
    pub block: i64,
    pub index: i64,
}

/// A play as the API shows it.
#[derive(Debug, Clone, Serialize)]
pub struct PlayView {
    pub id: i64,
    pub stake_cents: i64,
    pub unit: UnitRef,
    pub created_at: String,
    pub state: &'static str,
    pub outcome: Outcome,
    pub throws_left: i64,
    pub finished_at: Option<String>,
    pub scenario: RevealedScenario,
}

/// A scenario with only its first `throws` throws revealed.
#[derive(Debug, Clone)]
pub struct RevealedScenario {
    pub scenario: Scenario,
    pub throws: usize,
}

impl Serialize for RevealedScenario {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.scenario.view(self.throws).serialize(serializer)
    }
}

/// One page of a player's history, newest first.
#[derive(Debug, Clone, Serialize)]
pub struct History {
    pub plays: Vec<PlayView>,
    pub next_cursor: Option<String>,
}

/// Finishes a play and credits its win, once: a play already finished is left
/// as it is. Returns whether this call settled it. The settlement goes into
/// the trail with `reason`: the fourth throw, the next purchase, or the play
/// being abandoned.
pub(super) async fn settle(
    conn: &mut Conn,
    play_id: i64,
    now_ms: i64,
    actor: &Actor,
    reason: &str,
) -> Result<bool, Error> {
    let row = sql::query(
        "UPDATE plays SET state = 'finished', throws_made = 4, finished_at_ms = $1 \
         WHERE id = $2 AND state = 'in_progress' \
         RETURNING player_id, prize_cents, \
         (SELECT account_id FROM players WHERE players.id = plays.player_id) AS account_id, \
         (SELECT a.balance_cents FROM accounts a JOIN players p ON a.id = p.account_id \
          WHERE p.id = plays.player_id) AS balance_cents",
    )
    .bind(now_ms)
    .bind(play_id)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else { return Ok(false) };
    let player_id: i64 = row.try_get("player_id")?;
    let prize_cents: i64 = row.try_get("prize_cents")?;
    let account_id: i64 = row.try_get("account_id")?;
    let mut balance_cents: i64 = row.try_get("balance_cents")?;
    if prize_cents > 0 {
        (_, balance_cents) = transfer(
            conn,
            PRIZES_ACCOUNT,
            account_id,
            prize_cents,
            "prize",
            Some(play_id),
            now_ms,
        )
        .await?;
    }
    trail::append(
        conn,
        now_ms,
        actor,
        "settle",
        json!({"play_id": play_id, "reason": reason}),
        json!({
            "player_id": player_id,
            "prize_cents": prize_cents,
            "credited_cents": prize_cents,
            "balance_cents": balance_cents,
        }),
    )
    .await?;
    Ok(true)
}

const PLAY_COLUMNS: &str = "p.id, p.player_id, p.block_id, b.emission_id, p.unit_index, p.stake_cents, p.level, \
     p.prize_cents, p.throws_made, p.state, p.created_at_ms, p.finished_at_ms";

#[derive(Debug, Clone)]
pub(super) struct PlayRow {
    pub(super) id: i64,
    pub(super) block_id: i64,
    pub(super) emission_id: i64,
    pub(super) unit_index: i64,
    pub(super) stake_cents: i64,
    pub(super) level: i64,
    pub(super) prize_cents: i64,
    pub(super) throws_made: i64,
    pub(super) state: String,
    pub(super) created_at_ms: i64,
    pub(super) finished_at_ms: Option<i64>,
}

impl PlayRow {
    fn from_row(row: &sql::Row) -> Result<Self, Error> {
        Ok(PlayRow {
            id: row.try_get("id")?,
            block_id: row.try_get("block_id")?,
            emission_id: row.try_get("emission_id")?,
            unit_index: row.try_get("unit_index")?,
            stake_cents: row.try_get("stake_cents")?,
            level: row.try_get("level")?,
            prize_cents: row.try_get("prize_cents")?,
            throws_made: row.try_get("throws_made")?,
            state: row.try_get("state")?,
            created_at_ms: row.try_get("created_at_ms")?,
            finished_at_ms: row.try_get("finished_at_ms")?,
        })
    }
}

impl Service {
    /// Reveals the next throw of a play; the fourth finishes it and credits
    /// its win.
    pub async fn throw(&self, player: &Player, play_id: i64) -> Result<(), Error> {
        let player_id = player.id;
        let now_ms = self.now_ms();
        let player = player.clone();
        self.write(move |conn| {
            let player = player.clone();
            Box::pin(async move {
                let row: Option<(i64, String)> = sql::query_as(
                    "SELECT throws_made, state FROM plays WHERE id = $1 AND player_id = $2",
                )
                .bind(play_id)
                .bind(player_id)
                .fetch_optional(&mut *conn)
                .await?;
                let Some((throws_made, state)) = row else {
                    return Err(Error::NotFound);
                };
                if state != "in_progress" || throws_made >= 4 {
                    return Err(Error::PlayFinished);
                }
                let actor = Actor::player(player.id, &player.username);
                trail::append(
                    conn,
                    now_ms,
                    &actor,
                    "throw",
                    json!({"play_id": play_id}),
                    json!({"throw": throws_made + 1, "throws_left": 3 - throws_made}),
                )
                .await?;
                if throws_made == 3 {
                    settle(conn, play_id, now_ms, &actor, "fourth_throw").await?;
                } else {
                    sql::query("UPDATE plays SET throws_made = throws_made + 1 WHERE id = $1")
                        .bind(play_id)
                        .execute(&mut *conn)
                        .await?;
                }
                Ok(())
            })
        })
        .await
    }

    /// Settles every play left unfinished for longer than the configured
    /// delay. Returns how many were settled.
    pub async fn settle_abandoned(&self) -> Result<usize, Error> {
        let now_ms = self.now_ms();
        let before_ms = now_ms - self.settings.auto_settle_after_s * 1000;
        let ids: Vec<i64> = sql::query_scalar(
            "SELECT id FROM plays WHERE state = 'in_progress' AND created_at_ms <= $1 ORDER BY id LIMIT 1000",
        )
        .bind(before_ms)
        .fetch_all(&mut *self.db.conn().await?)
        .await?;
        let mut settled = 0;
        for chunk in ids.chunks(100) {
            let chunk = chunk.to_vec();
            settled += self
                .write(move |conn| {
                    let chunk = chunk.clone();
                    Box::pin(async move {
                        let mut settled = 0;
                        for id in chunk {
                            if settle(conn, id, now_ms, &Actor::System, "abandoned").await? {
                                settled += 1;
                            }
                        }
                        Ok(settled)
                    })
                })
                .await?;
        }
        Ok(settled)
    }

    pub(super) async fn play_view(&self, row: PlayRow) -> Result<PlayView, Error> {
        let data = self.block_data(row.block_id).await?;
        let stake = Stake::try_from(row.stake_cents).expect("a stored stake is valid");
        let level = Level::new(row.level as u8).expect("a stored level is valid");
        let seed = data.seeder.seed(row.unit_index as u32);
        let scenario = generate_scenario(stake, level, &seed);
        debug_assert_eq!(scenario.outcome.prize_cents, row.prize_cents);
        Ok(PlayView {
            id: row.id,
            stake_cents: row.stake_cents,
            unit: UnitRef {
                emission: row.emission_id,
                block: row.block_id,
                index: row.unit_index,
            },
            created_at: rfc3339(row.created_at_ms),
            state: if row.state == "finished" {
                "finished"
            } else {
                "in_progress"
            },
            outcome: Outcome {
                level,
                prize_cents: row.prize_cents,
            },
            throws_left: 4 - row.throws_made,
            finished_at: row.finished_at_ms.map(rfc3339),
            scenario: RevealedScenario {
                scenario,
                throws: row.throws_made as usize,
            },
        })
    }

    /// One of the player's plays; another player's play is "not found".
    pub async fn play(&self, player: &Player, play_id: i64) -> Result<PlayView, Error> {
        let row = sql::query(&format!(
            "SELECT {PLAY_COLUMNS} FROM plays p JOIN blocks b ON b.id = p.block_id WHERE p.id = $1 AND p.player_id = $2"
        ))
        .bind(play_id)
        .bind(player.id)
        .fetch_optional(&mut *self.db.conn().await?)
        .await?
        .ok_or(Error::NotFound)?;
        self.play_view(PlayRow::from_row(&row)?).await
    }

    /// The player's plays, newest first, `limit` at a time.
    pub async fn history(
        &self,
        player: &Player,
        limit: i64,
        cursor: Option<i64>,
    ) -> Result<History, Error> {
        let limit = limit.clamp(1, 100);
        let rows = sql::query(&format!(
            "SELECT {PLAY_COLUMNS} FROM plays p JOIN blocks b ON b.id = p.block_id \
             WHERE p.player_id = $1 AND p.id < $2 ORDER BY p.id DESC LIMIT $3"
        ))
        .bind(player.id)
        .bind(cursor.unwrap_or(i64::MAX))
        .bind(limit + 1)
        .fetch_all(&mut *self.db.conn().await?)
        .await?;
        let mut plays = Vec::with_capacity(rows.len());
        for row in rows.iter().take(limit as usize) {
            plays.push(self.play_view(PlayRow::from_row(row)?).await?);
        }
        let next_cursor = if rows.len() as i64 > limit {
            plays.last().map(|p| p.id.to_string())
        } else {
            None
        };
        Ok(History { plays, next_cursor })
    }
}
