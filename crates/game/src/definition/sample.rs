//! The last check of a definition: every level of every stake is staged for a
//! sample of seeds, and every scene must show exactly its level. A scene kind
//! whose parameters leave no room for a scene (too few amounts for a losing
//! card, an island too small for nine chests) is refused here.

use super::{DefinitionError, Game, Rule};
use crate::math::Level;
use sha2::{Digest, Sha256};

/// How many seeds each level of each stake is staged from.
pub const SAMPLE_SEEDS: u32 = 256;

/// Seed `i` of the sample: `sha256("tresor game check" || i as u32 LE)`, the
/// same for every definition, so that a refusal can be replayed.
fn sample_seed(i: u32) -> [u8; 32] {
    let mut hash = Sha256::new();
    hash.update(b"tresor game check");
    hash.update(i.to_le_bytes());
    hash.finalize().into()
}

pub(super) fn stage_every_level(game: &'static Game) -> Result<(), DefinitionError> {
    for table in game.tables() {
        let levels = std::iter::once(Level::LOSE).chain(table.levels().iter().map(|p| p.level));
        for level in levels {
            for i in 0..SAMPLE_SEEDS {
                let seed = sample_seed(i);
                let problem = match game.try_stage(table, level, &seed) {
                    None => Some("cannot be staged with these scene parameters".to_string()),
                    Some(scene) => game.check_scene(table, &scene, level).err(),
                };
                if let Some(problem) = problem {
                    let what = if level.is_win() {
                        format!("level {level}")
                    } else {
                        "a losing unit".to_string()
                    };
                    return Err(DefinitionError {
                        line: table.line,
                        rule: Rule::Scene,
                        message: format!(
                            "stake {} cents: the scene of {what} from sample seed {i} {problem}",
                            table.stake_cents()
                        ),
                    });
                }
            }
        }
    }
    Ok(())
}
