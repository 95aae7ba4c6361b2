//! Plays: their views, throws, settlement and the player's history.

use super::games::GameRef;
use super::{Service, rfc3339};
use crate::batch::{Command, Reply, ThrowCommand};
use crate::error::Error;
use crate::model::Player;
use crate::store::plays::{self, PlayState};
use serde::Serialize;
use tresor_game::{Card, Level, Outcome, Scenario, Scene, SceneRules};

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
    /// The game of the play, as its emission pinned it.
    pub game: GameRef,
    pub stake_cents: i64,
    pub unit: UnitRef,
    pub created_at: String,
    pub state: &'static str,
    pub outcome: Outcome,
    pub throws_left: i64,
    pub finished_at: Option<String>,
    pub scenario: RevealedScenario,
    /// The receipt of its purchase in the signed log (docs/AUDIT.md,
    /// "Receipts"): in a purchase's answer and the history's rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receipt: Option<crate::trail::Receipt>,
}

/// A play's scene as far as it is revealed: the island with only its
/// first `throws` throws, or a scratch card whose cells are hidden until
/// its one reveal; or none, for a unit whose scene cannot be staged (a
/// definition `tresor game check` refuses, pinned by an emission made before
/// it did): the play is still shown, with its outcome.
#[derive(Debug, Clone)]
pub enum RevealedScenario {
    Unavailable,
    Island {
        scenario: Scenario,
        throws: usize,
    },
    Scratch {
        card: Card,
        identical: u8,
        revealed: bool,
    },
}

impl RevealedScenario {
    /// A staged scene as the player sees it: an island after `throws`
    /// throws, a card scratched all over once `revealed`. `rules` are the
    /// scene's game's.
    pub(super) fn of(
        scene: Scene,
        rules: &SceneRules,
        throws: usize,
        revealed: bool,
    ) -> RevealedScenario {
        match (scene, rules) {
            (Scene::Island(scenario), _) => RevealedScenario::Island { scenario, throws },
            (Scene::Scratch(card), SceneRules::Scratch(rules)) => RevealedScenario::Scratch {
                card,
                identical: rules.identical(),
                revealed,
            },
            (Scene::Scratch(_), SceneRules::Island(_)) => {
                unreachable!("a game stages scenes of its own kind")
            }
        }
    }
}

impl Serialize for RevealedScenario {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            RevealedScenario::Unavailable => Unavailable {
                kind: "unavailable",
            }
            .serialize(serializer),
            // As before the catalogue: no `kind`, the page reads it as is.
            RevealedScenario::Island { scenario, throws } => {
                scenario.view(*throws).serialize(serializer)
            }
            RevealedScenario::Scratch {
                card,
                identical,
                revealed,
            } => ScratchView {
                kind: "scratch",
                rows: card.rows,
                columns: card.columns,
                identical: *identical,
                cells: revealed.then_some(&card.cells),
            }
            .serialize(serializer),
        }
    }
}

/// A scene that cannot be staged, as the API shows it: written straight
/// to the answer's bytes, no JSON value built first (issue 46).
#[derive(Serialize)]
struct Unavailable {
    kind: &'static str,
}

/// A scratch card as the API shows it, its cells once revealed (`null`
/// before), in this order of fields.
#[derive(Serialize)]
struct ScratchView<'a> {
    kind: &'static str,
    rows: u8,
    columns: u8,
    identical: u8,
    cells: Option<&'a Vec<i64>>,
}

/// One page of a player's history, newest first.
#[derive(Debug, Clone, Serialize)]
pub struct History {
    pub plays: Vec<PlayView>,
    pub next_cursor: Option<String>,
}

impl Service {
    /// Reveals the next throw of a play; the fourth finishes it and credits
    /// its win. Returns the play after the throw.
    pub async fn throw(&self, player: &Player, play_id: i64) -> Result<PlayView, Error> {
        let command = Command::Throw(ThrowCommand {
            player: player.clone(),
            play_id,
            now_ms: self.now_ms(),
        });
        match self.writer.hot(command).await? {
            Reply::Thrown(play) => self.play_view(&play).await,
            other => unreachable!("a throw is answered as one: {other:?}"),
        }
    }

    pub(super) async fn play_view(&self, row: &PlayState) -> Result<PlayView, Error> {
        let data = self.block_data(row.block_id).await?;
        let level = Level::new(row.level as u8).expect("a stored level is valid");
        let seed = data.seeder.seed(row.unit_index as u32);
        let reveals = data.reveals();
        let throws_made = row.throws_made.min(reveals);
        let scenario = match data.game.stage(data.table(), level, &seed) {
            Err(unstaged) => {
                tracing::error!(
                    play = row.id,
                    block = row.block_id,
                    unit = row.unit_index,
                    game = data.game.id(),
                    %unstaged,
                    "a play's scene cannot be staged: the play is shown with its outcome alone"
                );
                RevealedScenario::Unavailable
            }
            Ok(scene) => RevealedScenario::of(
                scene,
                data.game.scene(),
                throws_made as usize,
                row.finished || throws_made >= reveals,
            ),
        };
        Ok(PlayView {
            id: row.id,
            game: GameRef::of(data.game),
            stake_cents: row.stake_cents,
            unit: UnitRef {
                emission: row.emission_id,
                block: row.block_id,
                index: row.unit_index,
            },
            created_at: rfc3339(row.created_at_ms),
            state: if row.finished {
                "finished"
            } else {
                "in_progress"
            },
            outcome: Outcome {
                level,
                prize_cents: row.prize_cents,
            },
            throws_left: reveals - throws_made,
            finished_at: row.finished_at_ms.map(rfc3339),
            scenario,
            receipt: None,
        })
    }

    /// One of the player's plays; another player's play is "not found".
    pub async fn play(&self, player: &Player, play_id: i64) -> Result<PlayView, Error> {
        let mut conn = self.db.conn().await?;
        let play = plays::of_player(&mut conn, player.id, play_id)
            .await?
            .ok_or(Error::NotFound)?;
        drop(conn);
        self.play_view(&play).await
    }

    /// The receipt of a play's purchase against its log's latest cosigned
    /// checkpoint covering it, else its latest (`NotFound`: not the
    /// player's play).
    pub async fn play_receipt(
        &self,
        player: &Player,
        play_id: i64,
    ) -> Result<Option<crate::trail::Receipt>, Error> {
        let play = plays::of_player(&mut *self.db.conn().await?, player.id, play_id)
            .await?
            .ok_or(Error::NotFound)?;
        self.receipt_of(player, play.id, play.created_at_ms).await
    }

    async fn receipt_of(
        &self,
        player: &Player,
        play_id: i64,
        created_at_ms: i64,
    ) -> Result<Option<crate::trail::Receipt>, Error> {
        let actor = crate::trail::Actor::player(player.id, player.username.as_str()).label();
        crate::trail::receipt::of_play(&mut *self.db.conn().await?, &actor, play_id, created_at_ms)
            .await
    }

    /// The player's plays, newest first, `limit` at a time.
    pub async fn history(
        &self,
        player: &Player,
        limit: i64,
        cursor: Option<i64>,
    ) -> Result<History, Error> {
        let limit = limit.clamp(1, 100);
        let rows = plays::history(
            &mut *self.db.conn().await?,
            player.id,
            cursor.unwrap_or(i64::MAX),
            limit + 1,
        )
        .await?;
        let page: Vec<(i64, i64)> = rows
            .iter()
            .take(limit as usize)
            .map(|row| (row.id, row.created_at_ms))
            .collect();
        let actor = crate::trail::Actor::player(player.id, player.username.as_str()).label();
        let mut receipts =
            crate::trail::receipt::of_plays(&mut *self.db.conn().await?, &actor, &page).await?;
        let mut views = Vec::with_capacity(rows.len());
        for row in rows.iter().take(limit as usize) {
            let mut view = self.play_view(row).await?;
            view.receipt = receipts.remove(&row.id);
            views.push(view);
        }
        let next_cursor = if rows.len() as i64 > limit {
            views.last().map(|p| p.id.to_string())
        } else {
            None
        };
        Ok(History {
            plays: views,
            next_cursor,
        })
    }
}
