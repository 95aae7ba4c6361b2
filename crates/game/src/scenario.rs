//! The treasure-island scene (SPEC §3, rules Articles 4.1–4.3): the island map
//! and the scenario generator that stages a unit's fixed outcome as four throws.
//!
//! PLACEHOLDER: the generator below is a stand-in until the real one lands.

use crate::math::{Level, Stake, Symbol};
use serde::{Deserialize, Serialize};

/// A square `[x, y]` of the map: x to the east, y to the south.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Square(pub i16, pub i16);

/// The island: a rectangular grid of `width` × `height` squares, of which
/// `land` are the island's and the rest is sea.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Island {
    pub width: i16,
    pub height: i16,
    pub land: Vec<Square>,
}

/// The one island every game is played on.
pub fn island() -> &'static Island {
    static ISLAND: std::sync::OnceLock<Island> = std::sync::OnceLock::new();
    ISLAND.get_or_init(|| {
        let (width, height) = (12, 9);
        let mut land = Vec::new();
        for y in 1..height - 1 {
            for x in 1..width - 1 {
                land.push(Square(x, y));
            }
        }
        Island {
            width,
            height,
            land,
        }
    })
}

/// The eight compass directions a throw can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Direction {
    N,
    NE,
    E,
    SE,
    S,
    SW,
    W,
    NW,
}

/// What an opened chest shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Content {
    Empty,
    Candlestick,
    Monkey,
    Sapphire,
    Skull,
}

impl Content {
    pub fn symbol(self) -> Option<Symbol> {
        match self {
            Content::Empty => None,
            Content::Candlestick => Some(Symbol::Candlestick),
            Content::Monkey => Some(Symbol::Monkey),
            Content::Sapphire => Some(Symbol::Sapphire),
            Content::Skull => Some(Symbol::Skull),
        }
    }
}

/// A chest the totem opened during a throw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Opened {
    /// Index of the chest in `Scenario::chests`.
    pub chest: u8,
    pub square: Square,
    pub content: Content,
}

/// Alias kept for readers of the JSON: a chest is a square.
pub type Chest = Square;

/// One press of "Lancer".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Throw {
    pub direction: Direction,
    pub steps: u8,
    /// The squares entered, in order.
    pub path: Vec<Square>,
    pub opened: Vec<Opened>,
}

/// A unit's outcome as the player sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    pub level: Level,
    pub prize_cents: i64,
}

/// The whole staging of one unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scenario {
    pub outcome: Outcome,
    pub start: Square,
    pub chests: [Square; 9],
    pub throws: [Throw; 4],
}

/// The JSON shape of a scenario, with only the first `throws` throws revealed.
#[derive(Debug, Serialize)]
pub struct ScenarioView<'a> {
    pub outcome: Outcome,
    pub map: &'a Island,
    pub start: Square,
    pub chests: &'a [Square; 9],
    pub throws: &'a [Throw],
}

impl Scenario {
    /// The scenario as JSON data, revealing only the first `throws` throws.
    pub fn view(&self, throws: usize) -> ScenarioView<'_> {
        ScenarioView {
            outcome: self.outcome,
            map: island(),
            start: self.start,
            chests: &self.chests,
            throws: &self.throws[..throws.min(4)],
        }
    }

    /// Every symbol the four throws reveal, in order.
    pub fn revealed_symbols(&self) -> Vec<Symbol> {
        self.throws
            .iter()
            .flat_map(|t| t.opened.iter().filter_map(|o| o.content.symbol()))
            .collect()
    }
}

/// Stages `level` as a game from `seed` (PLACEHOLDER implementation).
pub fn generate_scenario(stake: Stake, level: Level, seed: &[u8; 32]) -> Scenario {
    let _ = seed;
    let throw = |x: i16| Throw {
        direction: Direction::E,
        steps: 1,
        path: vec![Square(x, 4)],
        opened: vec![],
    };
    Scenario {
        outcome: Outcome {
            level,
            prize_cents: stake.prize_cents(level),
        },
        start: Square(1, 4),
        chests: [
            Square(1, 1),
            Square(2, 1),
            Square(3, 1),
            Square(4, 1),
            Square(5, 1),
            Square(6, 1),
            Square(7, 1),
            Square(8, 1),
            Square(9, 1),
        ],
        throws: [throw(2), throw(3), throw(4), throw(5)],
    }
}
