//! The catalogue as the players' API shows it (`GET /api/games`), and a
//! game named in a request found in it.

use super::Service;
use crate::error::Error;
use crate::store::sql;
use serde::Serialize;
use std::collections::HashSet;
use tresor_game::{Game, ISLAND_ID, SceneRules, StakeError, ile_au_tresor};

/// A game's names, French and English.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct GameName {
    pub fr: &'static str,
    pub en: &'static str,
}

/// The game of a play, an emission, a statement line.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct GameRef {
    pub id: &'static str,
    pub name: GameName,
    pub kind: &'static str,
}

impl GameRef {
    pub fn of(game: &'static Game) -> GameRef {
        GameRef {
            id: game.id(),
            name: GameName {
                fr: game.name_fr(),
                en: game.name_en(),
            },
            kind: game.scene().kind(),
        }
    }
}

/// One stake of a game in the lobby.
#[derive(Debug, Clone, Serialize)]
pub struct StakeView {
    pub cents: i64,
    /// The table's payout rate, "70.00".
    pub payout_percent: String,
    /// Whether an open block of it has units left.
    pub on_sale: bool,
}

/// A game of the catalogue, as `GET /api/games` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct GameView {
    #[serde(flatten)]
    pub game: GameRef,
    /// The scene kind's parameters: a scratch card's rows, columns and
    /// identical amounts that win; nothing for the island.
    pub scene: serde_json::Value,
    pub stakes: Vec<StakeView>,
}

/// A payout rate in hundredths of a percent as "70.00".
pub fn percent(basis_points: i64) -> String {
    format!("{}.{:02}", basis_points / 100, basis_points % 100)
}

/// A scene kind's parameters, as the API gives them.
pub fn scene_params(game: &Game) -> serde_json::Value {
    match game.scene() {
        SceneRules::Island(_) => serde_json::json!({}),
        SceneRules::Scratch(rules) => serde_json::json!({
            "rows": rules.rows(),
            "columns": rules.columns(),
            "identical": rules.identical(),
        }),
    }
}

impl Service {
    /// The game `id` of the catalogue (`None`: the island), refused when
    /// the catalogue has no such game.
    pub fn game(&self, id: Option<&str>) -> Result<&'static Game, Error> {
        let id = id.unwrap_or(ISLAND_ID);
        self.settings
            .games
            .get(id)
            .ok_or_else(|| Error::UnknownGame(id.to_owned()))
    }

    /// `game`'s stake of `stake_cents`, refused when the game does not sell
    /// it (the island's refusal as before the catalogue).
    pub fn sold_stake(&self, game: &'static Game, stake_cents: i64) -> Result<i64, Error> {
        if game.table(stake_cents).is_some() {
            return Ok(stake_cents);
        }
        if game.id() == ISLAND_ID {
            return Err(Error::UnknownStake(StakeError(stake_cents)));
        }
        let stakes: Vec<String> = game
            .tables()
            .iter()
            .map(|t| format!("{} cents", t.stake_cents()))
            .collect();
        Err(Error::StakeNotSold {
            game: game.id().to_owned(),
            stake_cents,
            stakes: stakes.join(", "),
        })
    }

    /// The catalogue, island first, each stake with its payout rate and
    /// whether it is on sale now (one read for all games).
    pub async fn games(&self) -> Result<Vec<GameView>, Error> {
        let on_sale: Vec<(String, i64)> = sql::query_as(
            "SELECT DISTINCT b.game_id, b.stake_cents FROM blocks b \
             JOIN emissions e ON e.id = b.emission_id \
             WHERE b.state = 'open' AND e.state = 'open' AND b.units_sold < b.units_per_block",
        )
        .fetch_all(&mut *self.db.conn().await?)
        .await?;
        let on_sale: HashSet<(String, i64)> = on_sale.into_iter().collect();
        Ok(self
            .settings
            .games
            .entries()
            .iter()
            .map(|entry| {
                let game = entry.game;
                GameView {
                    game: GameRef::of(game),
                    scene: scene_params(game),
                    stakes: game
                        .tables()
                        .iter()
                        .map(|table| StakeView {
                            cents: table.stake_cents(),
                            payout_percent: percent(game.payout(table).basis_points()),
                            on_sale: on_sale.contains(&(game.id().to_owned(), table.stake_cents())),
                        })
                        .collect(),
                }
            })
            .collect())
    }
}

impl Service {
    /// What the server says at start of the open emissions whose game's
    /// file is not the version they pinned (each keeps selling from its
    /// pinned text: a new version is for new emissions only), whose game
    /// the catalogue no longer has, or of the island pinned to a file other
    /// than the built-in one. Refused: a pinned text that does not read
    /// back under its SHA-256.
    pub async fn pinned_versions(&self) -> Result<Vec<String>, Error> {
        let rows = sql::query(
            "SELECT id, game_id, game_sha256, definition FROM emissions \
             WHERE state = 'open' ORDER BY id",
        )
        .fetch_all(&mut *self.db.conn().await?)
        .await?;
        let mut lines = Vec::new();
        for row in rows {
            let id: i64 = row.try_get("id")?;
            let game_id: String = row.try_get("game_id")?;
            let sha: String = row.try_get("game_sha256")?;
            let definition: Option<String> = row.try_get("definition")?;
            self.settings
                .games
                .pinned(&sha, definition.as_deref())
                .map_err(|e| Error::Definition(format!("emission {id}: {e}")))?;
            match self.settings.games.get(&game_id) {
                // Made before a catalogue refused such a file (issue 42).
                Some(_) if game_id == ISLAND_ID && sha != ile_au_tresor().sha256_hex() => lines
                    .push(format!(
                        "emission {id} of {game_id} pinned an island file that is not the \
                         built-in island (sha256 {sha}): its blocks' commitments are \
                         sha256(secret) and do not cover that file, so a published block of it \
                         verifies under the built-in table too; it sells on from the file it \
                         pinned until closed (tresor emission close {id})"
                    )),
                None => lines.push(format!(
                    "emission {id} sells {game_id}, which the catalogue (--games) does not \
                     have: its units are not sold until the game is back"
                )),
                Some(game) if game.sha256_hex() != sha => lines.push(format!(
                    "emission {id} of {game_id} sells from the definition it pinned (sha256 \
                     {sha}); the catalogue's file is a new version (sha256 {}), for new \
                     emissions only",
                    game.sha256_hex()
                )),
                Some(_) => {}
            }
        }
        Ok(lines)
    }
}
