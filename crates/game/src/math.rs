//! The game mathematics (SPEC §1, rules Articles 2, 3 and 4.4): stakes, the nine
//! prize levels of a block and the evaluator of revealed symbols.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The price of one game unit. Only the three prices of Article 2 exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "i64", into = "i64")]
pub struct Stake(i64);

/// A stake that is not one of 50, 100 or 200 cents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StakeError(pub i64);

impl fmt::Display for StakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown stake {} cents: the stakes are 50, 100 and 200 cents",
            self.0
        )
    }
}

impl std::error::Error for StakeError {}

impl Stake {
    /// All stakes, cheapest first.
    pub const ALL: [Stake; 3] = [Stake(50), Stake(100), Stake(200)];

    /// The stake in euro cents.
    pub const fn cents(self) -> i64 {
        self.0
    }

    /// How many times the 50-cent prize table a block of this stake pays.
    const fn multiplier(self) -> i64 {
        self.0 / 50
    }

    /// The prize in cents of `level` at this stake (0 for a losing unit).
    pub fn prize_cents(self, level: Level) -> i64 {
        match level.spec() {
            Some(spec) => spec.prize_cents_at_50 * self.multiplier(),
            None => 0,
        }
    }

    /// The sum of every prize of one block of this stake.
    pub fn block_prizes_cents(self) -> i64 {
        LEVELS
            .iter()
            .map(|spec| {
                i64::from(spec.units_per_block) * spec.prize_cents_at_50 * self.multiplier()
            })
            .sum()
    }
}

impl TryFrom<i64> for Stake {
    type Error = StakeError;

    fn try_from(cents: i64) -> Result<Self, Self::Error> {
        match cents {
            50 | 100 | 200 => Ok(Stake(cents)),
            other => Err(StakeError(other)),
        }
    }
}

impl From<Stake> for i64 {
    fn from(stake: Stake) -> i64 {
        stake.0
    }
}

impl fmt::Display for Stake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},{:02} €", self.0 / 100, self.0 % 100)
    }
}

/// A symbol a chest may reveal (Article 4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Symbol {
    Candlestick,
    Monkey,
    Sapphire,
    Skull,
}

impl Symbol {
    pub const ALL: [Symbol; 4] = [
        Symbol::Candlestick,
        Symbol::Monkey,
        Symbol::Sapphire,
        Symbol::Skull,
    ];

    pub(crate) const fn slot(self) -> usize {
        match self {
            Symbol::Candlestick => 0,
            Symbol::Monkey => 1,
            Symbol::Sapphire => 2,
            Symbol::Skull => 3,
        }
    }
}

/// An outcome level: 1 (jackpot) to 9 for a winning unit, 0 for a losing one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub struct Level(u8);

impl Level {
    /// The level of a losing unit.
    pub const LOSE: Level = Level(0);

    /// A level from its number, 0 to 9.
    pub const fn new(level: u8) -> Option<Level> {
        if level <= 9 { Some(Level(level)) } else { None }
    }

    pub const fn get(self) -> u8 {
        self.0
    }

    pub const fn is_win(self) -> bool {
        self.0 != 0
    }

    /// The table row of a winning level, `None` for a losing one.
    pub fn spec(self) -> Option<&'static LevelSpec> {
        if self.0 == 0 {
            None
        } else {
            Some(&LEVELS[usize::from(self.0) - 1])
        }
    }

    /// Every level, losing first.
    pub fn all() -> impl Iterator<Item = Level> {
        (0..=9).map(Level)
    }
}

impl TryFrom<u8> for Level {
    type Error = String;

    fn try_from(value: u8) -> Result<Self, Self::Error> {
        Level::new(value).ok_or_else(|| format!("level {value} is not between 0 and 9"))
    }
}

impl From<Level> for u8 {
    fn from(level: Level) -> u8 {
        level.0
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A unit's outcome as the player sees it, whatever the scene kind: its
/// level and what it pays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    pub level: Level,
    pub prize_cents: i64,
}

/// One row of the prize table of a block (Article 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LevelSpec {
    pub level: u8,
    /// How many units of a 450,000-unit block win this level.
    pub units_per_block: u32,
    /// The symbol of the combination.
    pub symbol: Symbol,
    /// How many times exactly the symbol must be revealed.
    pub count: u8,
    /// The prize at a 50-cent stake; ×2 at 1 €, ×4 at 2 €.
    pub prize_cents_at_50: i64,
}

/// The prize table of every block, level 1 first (Articles 3 and 4.4).
pub const LEVELS: [LevelSpec; 9] = [
    LevelSpec {
        level: 1,
        units_per_block: 1,
        symbol: Symbol::Candlestick,
        count: 3,
        prize_cents_at_50: 500_000,
    },
    LevelSpec {
        level: 2,
        units_per_block: 3,
        symbol: Symbol::Monkey,
        count: 3,
        prize_cents_at_50: 25_000,
    },
    LevelSpec {
        level: 3,
        units_per_block: 100,
        symbol: Symbol::Sapphire,
        count: 3,
        prize_cents_at_50: 7_500,
    },
    LevelSpec {
        level: 4,
        units_per_block: 1_000,
        symbol: Symbol::Skull,
        count: 3,
        prize_cents_at_50: 2_500,
    },
    LevelSpec {
        level: 5,
        units_per_block: 500,
        symbol: Symbol::Candlestick,
        count: 2,
        prize_cents_at_50: 1_250,
    },
    LevelSpec {
        level: 6,
        units_per_block: 2_000,
        symbol: Symbol::Monkey,
        count: 2,
        prize_cents_at_50: 500,
    },
    LevelSpec {
        level: 7,
        units_per_block: 26_000,
        symbol: Symbol::Sapphire,
        count: 2,
        prize_cents_at_50: 150,
    },
    LevelSpec {
        level: 8,
        units_per_block: 38_000,
        symbol: Symbol::Skull,
        count: 2,
        prize_cents_at_50: 100,
    },
    LevelSpec {
        level: 9,
        units_per_block: 52_000,
        symbol: Symbol::Candlestick,
        count: 1,
        prize_cents_at_50: 50,
    },
];

/// A set of revealed symbols the rules cannot pay: the generator never makes
/// one, and the evaluator refuses it rather than choosing a prize.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvalidReveal {
    /// A symbol was revealed more than three times.
    TooMany { symbol: Symbol, count: usize },
    /// Two combinations match at once.
    TwoCombinations { first: u8, second: u8 },
}

impl fmt::Display for InvalidReveal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidReveal::TooMany { symbol, count } => {
                write!(f, "{symbol:?} revealed {count} times (at most 3)")
            }
            InvalidReveal::TwoCombinations { first, second } => {
                write!(f, "levels {first} and {second} both match")
            }
        }
    }
}

impl std::error::Error for InvalidReveal {}

/// What a set of revealed symbols is worth.
pub type Evaluation = Result<Level, InvalidReveal>;

/// Evaluates the symbols a game revealed: a combination "k × s" matches when
/// `s` was revealed exactly `k` times; the unit wins the level of the one
/// combination that matches, or loses when none does.
pub fn evaluate(revealed: &[Symbol]) -> Evaluation {
    let mut counts = [0usize; 4];
    for symbol in revealed {
        counts[symbol.slot()] += 1;
    }
    for symbol in Symbol::ALL {
        let count = counts[symbol.slot()];
        if count > 3 {
            return Err(InvalidReveal::TooMany { symbol, count });
        }
    }
    let mut matched: Option<u8> = None;
    for spec in &LEVELS {
        if counts[spec.symbol.slot()] == usize::from(spec.count) {
            if let Some(first) = matched {
                return Err(InvalidReveal::TwoCombinations {
                    first,
                    second: spec.level,
                });
            }
            matched = Some(spec.level);
        }
    }
    Ok(matched.map_or(Level::LOSE, Level))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Symbol::*;

    #[test]
    fn a_block_pays_seventy_percent_of_its_sales_at_every_stake() {
        for stake in Stake::ALL {
            let sales = stake.cents() * 450_000;
            assert_eq!(stake.block_prizes_cents() * 100, sales * 70);
        }
        assert_eq!(
            Stake::try_from(50).unwrap().block_prizes_cents(),
            15_750_000
        );
        let winners: u32 = LEVELS.iter().map(|l| l.units_per_block).sum();
        assert_eq!(winners, 119_604);
    }

    #[test]
    fn prizes_follow_article_three_for_each_stake() {
        let s100 = Stake::try_from(100).unwrap();
        let s200 = Stake::try_from(200).unwrap();
        assert_eq!(s100.prize_cents(Level(1)), 1_000_000);
        assert_eq!(s200.prize_cents(Level(5)), 5_000);
        assert_eq!(s200.prize_cents(Level(9)), 200);
        assert_eq!(s100.prize_cents(Level::LOSE), 0);
    }

    #[test]
    fn only_the_three_stakes_exist() {
        for bad in [0, 1, 49, 51, 150, 300, -50] {
            assert_eq!(Stake::try_from(bad), Err(StakeError(bad)));
        }
    }

    #[test]
    fn the_evaluator_matches_exact_counts() {
        let cases: &[(&[Symbol], u8)] = &[
            (&[], 0),
            (&[Monkey], 0),
            (&[Monkey, Sapphire, Skull], 0),
            (&[Candlestick, Candlestick, Candlestick], 1),
            (&[Monkey, Monkey, Monkey, Skull], 2),
            (&[Sapphire, Sapphire, Sapphire], 3),
            (&[Skull, Skull, Skull, Monkey, Sapphire], 4),
            (&[Candlestick, Candlestick], 5),
            (&[Monkey, Monkey, Skull], 6),
            (&[Sapphire, Sapphire], 7),
            (&[Skull, Skull, Monkey], 8),
            (&[Candlestick, Monkey, Sapphire, Skull], 9),
        ];
        for (revealed, level) in cases {
            assert_eq!(evaluate(revealed), Ok(Level(*level)), "{revealed:?}");
        }
    }

    #[test]
    fn the_evaluator_refuses_what_it_cannot_pay() {
        assert_eq!(
            evaluate(&[Skull, Skull, Skull, Skull]),
            Err(InvalidReveal::TooMany {
                symbol: Skull,
                count: 4
            })
        );
        assert_eq!(
            evaluate(&[Monkey, Monkey, Skull, Skull]),
            Err(InvalidReveal::TwoCombinations {
                first: 6,
                second: 8
            })
        );
        assert_eq!(
            evaluate(&[Candlestick, Sapphire, Sapphire]),
            Err(InvalidReveal::TwoCombinations {
                first: 7,
                second: 9
            })
        );
    }
}
