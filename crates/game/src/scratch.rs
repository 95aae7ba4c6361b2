//! The scratch card scene kind: a grid of cells, each showing a prize
//! amount, staged from a unit's outcome and seed. The player wins the amount
//! that appears exactly `identical` times (three on a 3 × 3 card); a card
//! never shows two such amounts, and a losing card shows none.
//!
//! The generator, in this order, every draw from ChaCha8 keyed by the unit's
//! seed (`docs/AUDIT.md`, "Scratch cards"):
//!
//! 1. a pool holding `identical - 1` copies of each of the stake's prize
//!    amounts, in level order, except the winning amount of a winning card;
//! 2. the cells left after the winning amounts (all of them on a losing card)
//!    are drawn from the pool by a partial Fisher–Yates: the k-th draw swaps
//!    pool[k] with pool[k + uniform(pool length − k)];
//! 3. the card is the winning amount `identical` times (on a winning card),
//!    then the drawn amounts, shuffled by Fisher–Yates from the end.
//!
//! No amount can then appear `identical` times except the winning one.

use crate::math::{Level, Outcome};
use crate::rng::SceneRng;
use serde::Serialize;
use std::fmt;

/// The most cells on a side of a card.
pub const MAX_SIDE: u8 = 5;

/// The scratch card scene kind's parameters, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScratchRules {
    rows: u8,
    columns: u8,
    identical: u8,
}

/// One unit's card, every cell an amount in cents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Card {
    pub outcome: Outcome,
    pub rows: u8,
    pub columns: u8,
    /// Row by row, north-west first.
    pub cells: Vec<i64>,
}

/// A card the rules cannot pay: the generator never makes one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvalidCard {
    /// The card is not rows × columns cells.
    Size { cells: usize },
    /// A cell shows an amount that is no prize of the stake.
    UnknownAmount(i64),
    /// An amount appears more often than the winning count.
    TooMany { amount_cents: i64, count: usize },
    /// Two amounts both win.
    TwoWins { first: i64, second: i64 },
}

impl fmt::Display for InvalidCard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidCard::Size { cells } => write!(f, "{cells} cells, not the card's size"),
            InvalidCard::UnknownAmount(cents) => {
                write!(f, "{cents} cents is not a prize of the stake")
            }
            InvalidCard::TooMany {
                amount_cents,
                count,
            } => write!(f, "{amount_cents} cents appears {count} times"),
            InvalidCard::TwoWins { first, second } => {
                write!(f, "{first} and {second} cents both win")
            }
        }
    }
}

impl std::error::Error for InvalidCard {}

impl ScratchRules {
    /// A card of `rows` × `columns` cells (1 to 5 each) won by `identical`
    /// equal amounts (2 or more, and no more than the cells).
    pub fn new(rows: u8, columns: u8, identical: u8) -> Result<ScratchRules, String> {
        if !(1..=MAX_SIDE).contains(&rows) || !(1..=MAX_SIDE).contains(&columns) {
            return Err(format!(
                "a card has 1 to {MAX_SIDE} rows and 1 to {MAX_SIDE} columns"
            ));
        }
        if identical < 2 || identical > rows * columns {
            return Err(format!(
                "`identical` is 2 to {} (the card's cells): one amount alone would always win",
                rows * columns
            ));
        }
        Ok(ScratchRules {
            rows,
            columns,
            identical,
        })
    }

    pub fn rows(&self) -> u8 {
        self.rows
    }

    pub fn columns(&self) -> u8 {
        self.columns
    }

    /// How many equal amounts win.
    pub fn identical(&self) -> u8 {
        self.identical
    }

    fn cells(&self) -> usize {
        usize::from(self.rows) * usize::from(self.columns)
    }

    /// `Ok` when a card of `level` can be staged from every seed at a stake
    /// whose prizes are `prizes` (level 1 first): the pool of step 1 holds at
    /// least as many amounts as step 2 draws. That is the only way staging
    /// can fail, and no draw comes before it, so it holds for every seed or
    /// for none (docs/GAMES.md, rule `scene`).
    pub fn room(&self, prizes: &[i64], level: Level) -> Result<(), String> {
        let winning = match level.get() {
            0 => None,
            l => Some(
                *prizes
                    .get(usize::from(l) - 1)
                    .ok_or_else(|| format!("level {l} is not in the stake's table"))?,
            ),
        };
        let copies = usize::from(self.identical) - 1;
        let amounts = prizes.iter().filter(|&&a| Some(a) != winning).count();
        let shown = usize::from(self.identical) * usize::from(winning.is_some());
        let drawn = self.cells() - shown;
        if copies * amounts >= drawn {
            return Ok(());
        }
        let (card, other) = match level.get() {
            0 => ("a losing card".to_string(), ""),
            l => (format!("a card of level {l}"), " other"),
        };
        Err(format!(
            "{card} draws its {drawn}{other} cells from {copies} copies of each of its \
             {amounts}{other} amounts, {} cells: it cannot be filled without {} alike",
            copies * amounts,
            self.identical
        ))
    }

    /// Stages `level` as a card drawn from `seed`. `prizes` are the stake's
    /// prize amounts by level, level 1 first; `None` when they are too few
    /// different amounts to fill the card without a second win (`room`
    /// says why; a definition like that is refused when checked).
    pub fn stage(&self, prizes: &[i64], level: Level, seed: &[u8; 32]) -> Option<Card> {
        self.room(prizes, level).ok()?;
        let winning = match level.get() {
            0 => None,
            l => Some(*prizes.get(usize::from(l) - 1)?),
        };
        let copies = usize::from(self.identical) - 1;
        let mut pool: Vec<i64> = prizes
            .iter()
            .filter(|&&amount| Some(amount) != winning)
            .flat_map(|&amount| std::iter::repeat_n(amount, copies))
            .collect();
        let shown = usize::from(self.identical) * usize::from(winning.is_some());
        let drawn = self.cells() - shown;
        let mut rng = SceneRng::new(seed);
        for k in 0..drawn {
            let j = k + rng.below((pool.len() - k) as u32) as usize;
            pool.swap(k, j);
        }
        let mut cells = Vec::with_capacity(self.cells());
        if let Some(amount) = winning {
            cells.extend(std::iter::repeat_n(amount, shown));
        }
        cells.extend_from_slice(&pool[..drawn]);
        for i in (1..cells.len()).rev() {
            let j = rng.below(i as u32 + 1) as usize;
            cells.swap(i, j);
        }
        Some(Card {
            outcome: Outcome {
                level,
                prize_cents: winning.unwrap_or(0),
            },
            rows: self.rows,
            columns: self.columns,
            cells,
        })
    }

    /// What a card is worth at a stake whose prizes are `prizes` (level 1
    /// first): the level of the one amount that appears exactly `identical`
    /// times, or a loss when none does.
    pub fn evaluate(&self, prizes: &[i64], cells: &[i64]) -> Result<Level, InvalidCard> {
        if cells.len() != self.cells() {
            return Err(InvalidCard::Size { cells: cells.len() });
        }
        let mut counts = vec![0usize; prizes.len()];
        for &cell in cells {
            let i = prizes
                .iter()
                .position(|&p| p == cell)
                .ok_or(InvalidCard::UnknownAmount(cell))?;
            counts[i] += 1;
        }
        let identical = usize::from(self.identical);
        let mut won: Option<usize> = None;
        for (i, &count) in counts.iter().enumerate() {
            if count > identical {
                return Err(InvalidCard::TooMany {
                    amount_cents: prizes[i],
                    count,
                });
            }
            if count == identical {
                if let Some(first) = won {
                    return Err(InvalidCard::TwoWins {
                        first: prizes[first],
                        second: prizes[i],
                    });
                }
                won = Some(i);
            }
        }
        Ok(won.map_or(Level::LOSE, |i| {
            Level::new(i as u8 + 1).expect("a table has at most nine levels")
        }))
    }

    /// Checks one staged card: its size, its outcome and that its cells
    /// evaluate to exactly `level`.
    pub fn check_card(&self, prizes: &[i64], card: &Card, level: Level) -> Result<(), String> {
        if card.outcome.level != level {
            return Err(format!("stages level {}", card.outcome.level));
        }
        match self.evaluate(prizes, &card.cells) {
            Ok(evaluated) if evaluated == level => Ok(()),
            Ok(evaluated) => Err(format!("shows amounts worth level {evaluated}")),
            Err(invalid) => Err(format!("shows a card the rules cannot pay: {invalid}")),
        }
    }
}
