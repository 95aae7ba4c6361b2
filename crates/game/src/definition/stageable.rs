//! The last check of a definition, a proof and not a sample: every unit of
//! every level (and the losing units) of every stake can be staged from every
//! seed. An island must leave room for the nine chests off any walk
//! (`IslandRules::room_for_every_scene`); a scratch card's amounts must fill
//! every level's card (`ScratchRules::room`). A unit that still cannot be
//! staged (a definition loaded without this check, as a pinned emission's
//! older version may be) is an `Unstaged` error, never a panic.

use super::{DefinitionError, Game, Rule, SceneRules};
use crate::math::Level;
use std::fmt;

/// Why a unit's scene could not be staged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unstaged {
    pub level: Level,
    pub reason: String,
}

impl fmt::Display for Unstaged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = if self.level.is_win() {
            format!("a unit of level {}", self.level)
        } else {
            "a losing unit".to_string()
        };
        write!(
            f,
            "the scene of {what} cannot be staged: {} (a definition `tresor game check` refuses)",
            self.reason
        )
    }
}

impl std::error::Error for Unstaged {}

/// Refuses the definition unless every unit of every stake stages from
/// every seed.
pub(super) fn every_unit_stages(game: &Game) -> Result<(), DefinitionError> {
    match game.scene() {
        SceneRules::Island(rules) => {
            rules
                .room_for_every_scene()
                .map_err(|problem| DefinitionError {
                    line: game.scene_line,
                    rule: Rule::Scene,
                    message: problem,
                })
        }
        SceneRules::Scratch(rules) => {
            for table in game.tables() {
                let levels =
                    std::iter::once(Level::LOSE).chain(table.levels().iter().map(|p| p.level));
                for level in levels {
                    rules
                        .room(&table.amounts, level)
                        .map_err(|problem| DefinitionError {
                            line: table.line,
                            rule: Rule::Scene,
                            message: format!("stake {} cents: {problem}", table.stake_cents()),
                        })?;
                }
            }
            Ok(())
        }
    }
}
