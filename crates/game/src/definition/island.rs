//! « L'Ile au Trésor », the game the catalogue started from, built into the
//! program from `games/ile-au-tresor.toml` so that a database made before the
//! catalogue keeps its game: its definition, its island and its scenes.
//!
//! These name the definition and the island scene kind both, so they live on
//! the definition's side: the scene kinds never name a definition.

use super::{Game, SceneRules};
use crate::math::{Level, Stake};
use crate::scenario::{Island, IslandRules, Scenario};

/// The text of `games/ile-au-tresor.toml`.
pub const ISLAND_DEFINITION: &str = include_str!("../../../../games/ile-au-tresor.toml");

/// « L'Ile au Trésor » as `games/ile-au-tresor.toml` defines it.
pub fn ile_au_tresor() -> &'static Game {
    static GAME: std::sync::OnceLock<&'static Game> = std::sync::OnceLock::new();
    GAME.get_or_init(|| {
        Game::parse(ISLAND_DEFINITION)
            .expect("games/ile-au-tresor.toml is a valid definition")
            .leak()
    })
}

/// The island scene of « L'Ile au Trésor ».
pub(crate) fn ile_au_tresor_rules() -> &'static IslandRules {
    match ile_au_tresor().scene() {
        SceneRules::Island(rules) => rules,
        SceneRules::Scratch(_) => unreachable!("the island's scene is an island"),
    }
}

/// The one island of « L'Ile au Trésor », read from its definition file.
pub fn island() -> &'static Island {
    ile_au_tresor_rules().map()
}

/// Stages `level` of « L'Ile au Trésor » as a game drawn from `seed`;
/// `stake` only sets the prize.
pub fn generate_scenario(stake: Stake, level: Level, seed: &[u8; 32]) -> Scenario {
    ile_au_tresor_rules()
        .stage(level, stake.prize_cents(level), seed)
        .expect("the island's 69 land squares leave room for every scene (`room.rs`)")
}
