//! Game definitions (SPEC §7, docs/GAMES.md): a game is data — its id and
//! names, the units per block, a prize table per stake and a scene kind with
//! its parameters — read from a TOML file and checked before any use. A
//! checked `Game` deals blocks, stages scenes and evaluates them; nothing in
//! it is specific to one game.

mod check;
mod grammar;
mod island;
mod rate;
mod rule;
mod stageable;

#[cfg(test)]
pub(crate) use island::ile_au_tresor_rules;
pub use island::{ISLAND_DEFINITION, generate_scenario, ile_au_tresor, island};
pub use rule::{DefinitionError, Rule};
pub use stageable::Unstaged;

use crate::block::{BlockSecret, Commitment, shuffle};
use crate::math::{Level, Outcome};
use crate::scenario::{IslandRules, Scenario};
use crate::scratch::{Card, ScratchRules};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::fmt;

/// The id of « L'Ile au Trésor », the game the catalogue started from: its
/// block commitments are `sha256(secret)`, as before there was a catalogue.
pub const ISLAND_ID: &str = "ile-au-tresor";

/// The most units a block of any game may hold: the island's, the most
/// the database takes (`plays.unit_index` is at most 449,999).
pub const MAX_UNITS_PER_BLOCK: u32 = 450_000;

/// A checked game definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Game {
    id: String,
    name_fr: String,
    name_en: String,
    units_per_block: u32,
    tables: Vec<PrizeTable>,
    scene: SceneRules,
    /// The line of the scene's parameters a refusal of `scene` names.
    scene_line: usize,
    sha256: [u8; 32],
}

/// The prize table of the blocks of one stake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrizeTable {
    stake_cents: i64,
    losing_units_per_block: u32,
    levels: Vec<Prize>,
    /// The amounts of `levels`, level 1 first (the scratch card's alphabet).
    amounts: Vec<i64>,
    /// Where the table starts in its file, for the payout cap's refusal.
    line: usize,
}

/// One winning level of a prize table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Prize {
    pub level: Level,
    pub units_per_block: u32,
    pub prize_cents: i64,
}

/// A scene kind and its parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SceneRules {
    Island(IslandRules),
    Scratch(ScratchRules),
}

impl SceneRules {
    /// The kind's name in a definition file and in the API.
    pub fn kind(&self) -> &'static str {
        match self {
            SceneRules::Island(_) => "island",
            SceneRules::Scratch(_) => "scratch",
        }
    }
}

/// One unit's staged scene.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scene {
    Island(Scenario),
    Scratch(Card),
}

impl Scene {
    pub fn outcome(&self) -> Outcome {
        match self {
            Scene::Island(scenario) => scenario.outcome,
            Scene::Scratch(card) => card.outcome,
        }
    }
}

/// What a stake's blocks pay back: the prizes of one block against its
/// sales, both in cents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Payout {
    pub stake_cents: i64,
    pub prizes_cents: i64,
    pub sales_cents: i64,
}

impl Payout {
    /// The rate in hundredths of a percent, rounded half up (7000 is 70 %);
    /// `beyond` shows as many digits as comparing it with a cap needs.
    pub fn basis_points(&self) -> i64 {
        let scaled = i128::from(self.prizes_cents) * 10_000;
        let sales = i128::from(self.sales_cents);
        ((2 * scaled + sales) / (2 * sales)) as i64
    }

    /// Whether the rate is above `max_basis_points`, compared exactly.
    pub fn exceeds(&self, max_basis_points: u32) -> bool {
        i128::from(self.prizes_cents) * 10_000
            > i128::from(max_basis_points) * i128::from(self.sales_cents)
    }
}

impl fmt::Display for Payout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bp = self.basis_points();
        write!(f, "{}.{:02} %", bp / 100, bp % 100)
    }
}

impl Game {
    /// Reads and checks a definition: its grammar and every rule but two
    /// (docs/GAMES.md, "Rules"). `Game::check` then applies the operator's
    /// payout cap and proves that every unit can be staged.
    pub fn parse(text: &str) -> Result<Game, DefinitionError> {
        let mut game = check::parse(text)?;
        game.sha256 = Sha256::digest(text.as_bytes()).into();
        Ok(game)
    }

    /// Keeps the game for the life of the process: scenes refer to their
    /// game's rules, and a catalogue is read once.
    pub fn leak(self) -> &'static Game {
        Box::leak(Box::new(self))
    }

    /// Refuses a stake whose payout rate is above `max_basis_points`
    /// (hundredths of a percent), then a definition under which some unit of
    /// some level could not be staged from some seed (`stageable.rs`).
    /// Returns each stake's payout.
    pub fn check(&'static self, max_basis_points: u32) -> Result<Vec<Payout>, DefinitionError> {
        let payouts: Vec<Payout> = self.tables.iter().map(|t| self.payout(t)).collect();
        for (table, payout) in self.tables.iter().zip(&payouts) {
            if payout.exceeds(max_basis_points) {
                return Err(DefinitionError {
                    line: table.line,
                    rule: Rule::PayoutCap,
                    message: format!(
                        "stake {} cents pays back {} of its sales ({} cents of prizes for {} \
                         cents of sales), above the cap of {}.{:02} %",
                        table.stake_cents,
                        payout.beyond(max_basis_points),
                        payout.prizes_cents,
                        payout.sales_cents,
                        max_basis_points / 100,
                        max_basis_points % 100
                    ),
                });
            }
        }
        stageable::every_unit_stages(self)?;
        Ok(payouts)
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// The game's name in French, the site's first language.
    pub fn name_fr(&self) -> &str {
        &self.name_fr
    }

    pub fn name_en(&self) -> &str {
        &self.name_en
    }

    pub fn units_per_block(&self) -> u32 {
        self.units_per_block
    }

    /// The prize tables, in the file's order.
    pub fn tables(&self) -> &[PrizeTable] {
        &self.tables
    }

    /// The table of a stake, `None` for a stake the game does not sell.
    pub fn table(&self, stake_cents: i64) -> Option<&PrizeTable> {
        self.tables.iter().find(|t| t.stake_cents == stake_cents)
    }

    pub fn scene(&self) -> &SceneRules {
        &self.scene
    }

    /// The SHA-256 of the definition file's bytes, which an emission pins.
    pub fn sha256(&self) -> [u8; 32] {
        self.sha256
    }

    pub fn sha256_hex(&self) -> String {
        hex::encode(self.sha256)
    }

    /// Whether the block commitment covers the definition: every game but
    /// the island, whose commitments were `sha256(secret)` before the
    /// catalogue existed and stay so (SPEC §7). The island's commitment so
    /// binds no file: its definition can only be the built-in one, and a
    /// catalogue refuses any other file of its id (docs/GAMES.md).
    pub fn commitment_covers_definition(&self) -> bool {
        covers_definition(&self.id)
    }

    /// What a block commitment of the game is the hash of.
    pub fn commitment_form(&self) -> &'static str {
        commitment_form(&self.id)
    }

    /// A block's public commitment: `sha256(secret)` for the island,
    /// `sha256(secret || sha256(definition file))` for every other game
    /// (docs/AUDIT.md, "Games other than the island").
    pub fn commitment(&self, secret: &BlockSecret) -> Commitment {
        if self.commitment_covers_definition() {
            let mut hash = Sha256::new();
            hash.update(secret.as_bytes());
            hash.update(self.sha256);
            Commitment::from_bytes(hash.finalize().into())
        } else {
            secret.commitment()
        }
    }

    /// The outcome level of every unit of a block of `table`'s stake: the
    /// canonical list (level 1 first, then 2, …, then the losing units)
    /// shuffled by the secret, as for the island (SPEC §2).
    pub fn outcomes(&self, table: &PrizeTable, secret: &BlockSecret) -> Vec<Level> {
        shuffle(table.canonical(self.units_per_block), secret)
    }

    /// One block's prizes against its sales at `table`'s stake.
    pub fn payout(&self, table: &PrizeTable) -> Payout {
        Payout {
            stake_cents: table.stake_cents,
            prizes_cents: table.block_prizes_cents(),
            sales_cents: table.stake_cents * i64::from(self.units_per_block),
        }
    }

    /// Stages unit `level` of a block of `table`'s stake from its seed.
    /// Never an error under a definition `check` accepted; under one loaded
    /// without it, the reason a unit cannot be staged.
    pub fn stage(
        &'static self,
        table: &PrizeTable,
        level: Level,
        seed: &[u8; 32],
    ) -> Result<Scene, Unstaged> {
        let unstaged = |reason: String| Unstaged { level, reason };
        let prize_cents = table
            .prize_cents(level)
            .ok_or_else(|| unstaged(format!("level {level} is not in the stake's table")))?;
        match &self.scene {
            SceneRules::Island(rules) => rules
                .stage(level, prize_cents, seed)
                .map(Scene::Island)
                .ok_or_else(|| {
                    unstaged("its walk leaves too few land squares for the nine chests".into())
                }),
            SceneRules::Scratch(rules) => rules
                .stage(&table.amounts, level, seed)
                .map(Scene::Scratch)
                .ok_or_else(|| {
                    unstaged(rules.room(&table.amounts, level).err().unwrap_or_default())
                }),
        }
    }

    /// Checks one staged scene of `table`'s stake shows exactly `level`.
    pub fn check_scene(
        &self,
        table: &PrizeTable,
        scene: &Scene,
        level: Level,
    ) -> Result<(), String> {
        if Some(scene.outcome().prize_cents) != table.prize_cents(level) {
            return Err(format!("pays {} cents", scene.outcome().prize_cents));
        }
        match (&self.scene, scene) {
            (SceneRules::Island(rules), Scene::Island(scenario)) => {
                rules.check_scene(scenario, level)
            }
            (SceneRules::Scratch(rules), Scene::Scratch(card)) => {
                rules.check_card(&table.amounts, card, level)
            }
            _ => Err("is a scene of another kind".into()),
        }
    }
}

impl PrizeTable {
    pub fn stake_cents(&self) -> i64 {
        self.stake_cents
    }

    pub fn losing_units_per_block(&self) -> u32 {
        self.losing_units_per_block
    }

    /// The winning levels, level 1 first.
    pub fn levels(&self) -> &[Prize] {
        &self.levels
    }

    /// The prize of `level` (0 for a losing unit), `None` for a level the
    /// table does not have.
    pub fn prize_cents(&self, level: Level) -> Option<i64> {
        match level.get() {
            0 => Some(0),
            l => self.levels.get(usize::from(l) - 1).map(|p| p.prize_cents),
        }
    }

    /// How many units of each level (losing first, index = level) a block
    /// holds.
    pub fn counts(&self) -> [u32; 10] {
        let mut counts = [0u32; 10];
        counts[0] = self.losing_units_per_block;
        for prize in &self.levels {
            counts[usize::from(prize.level.get())] = prize.units_per_block;
        }
        counts
    }

    /// The sum of every prize of one block.
    pub fn block_prizes_cents(&self) -> i64 {
        self.levels
            .iter()
            .map(|p| i64::from(p.units_per_block) * p.prize_cents)
            .sum()
    }

    /// The canonical outcome list of a block: level 1's units first, then
    /// level 2's, …, then the losing units.
    fn canonical(&self, units_per_block: u32) -> Vec<Level> {
        let mut outcomes = Vec::with_capacity(units_per_block as usize);
        for prize in &self.levels {
            outcomes.extend(std::iter::repeat_n(
                prize.level,
                prize.units_per_block as usize,
            ));
        }
        outcomes.resize(units_per_block as usize, Level::LOSE);
        outcomes
    }
}

/// Whether the block commitments of the game `id` cover its definition.
fn covers_definition(id: &str) -> bool {
    id != ISLAND_ID
}

/// What a block commitment of the game `id` is the hash of, as `tresor
/// block verify` and `GET /api/blocks` say it: `sha256(secret)` for the
/// island, `sha256(secret || sha256(definition))` for every other game.
pub fn commitment_form(id: &str) -> &'static str {
    if covers_definition(id) {
        "sha256(secret || sha256(definition))"
    } else {
        "sha256(secret)"
    }
}

#[cfg(test)]
mod tests;
