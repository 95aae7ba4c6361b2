//! The rules of « L'Ile au Trésor » as pure functions and plain data.
//!
//! Nothing in this crate reads a clock, the OS random generator, a file or the
//! network: block secrets, seeds and times come in as arguments, so every
//! result can be replayed and audited.

mod block;
mod math;
mod scenario;

pub use block::{
    BlockSecret, Commitment, ScenarioSeeder, SecretError, UNITS_PER_BLOCK, block_outcomes,
    scenario_seed,
};
pub use math::{
    Evaluation, InvalidReveal, LEVELS, Level, LevelSpec, Stake, StakeError, Symbol, evaluate,
};
pub use scenario::{
    Chest, Content, Direction, Island, Opened, Outcome, Scenario, ScenarioView, Square, Throw,
    generate_scenario, island,
};
