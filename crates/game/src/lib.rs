//! The rules of the catalogue's instant games as pure functions and plain
//! data: game definitions (`definition`), the block shuffle, and the scene
//! kinds — « L'Ile au Trésor »'s island and the scratch card.
//!
//! Dependencies go one way: the definition names the scene kinds (`scenario`,
//! `scratch`); a scene kind names only the mathematics (`math`: levels,
//! stakes, a unit's `Outcome`) and the scene's random draws (`rng`), never a
//! definition (the architecture test holds it).
//!
//! Nothing in this crate reads a clock, the OS random generator, a file or the
//! network: block secrets, seeds, times and definition texts come in as
//! arguments, so every result can be replayed and audited.

mod block;
mod definition;
mod math;
mod rng;
mod scenario;
mod scratch;
mod sheet;

pub use block::{
    BlockSecret, Commitment, ScenarioSeeder, SecretError, UNITS_PER_BLOCK, block_outcomes,
    scenario_seed,
};
pub use definition::{
    DefinitionError, Game, ISLAND_DEFINITION, ISLAND_ID, MAX_UNITS_PER_BLOCK, Payout, Prize,
    PrizeTable, Rule, Scene, SceneRules, Unstaged, commitment_form, generate_scenario,
    ile_au_tresor, island,
};
pub use math::{
    Evaluation, InvalidReveal, LEVELS, Level, LevelSpec, Outcome, Stake, StakeError, Symbol,
    evaluate,
};
pub use scenario::{
    Chest, Combination, Content, Direction, FallbackWalk, Island, IslandRules, Opened, Scenario,
    ScenarioView, Square, Throw,
};
pub use scratch::{Card, InvalidCard, ScratchRules};
pub use sheet::{
    BUYS, Buy, BuyView, Exact, FigureView, LevelOdds, LevelView, StakeSheet, StakeSheetView,
    binomial, buy, sheet, stake_sheet,
};
