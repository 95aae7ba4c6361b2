//! The report's arithmetic: a block's figures from what its plays and
//! transfers sum to, figures added up (blocks into a stake, stakes into an
//! emission, emissions into a game), and the payout as exact text.

use serde::Serialize;
use std::collections::HashMap;
use tresor_game::{Game, PrizeTable};

/// The figures of a block, or the sum over several blocks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Figures {
    pub blocks: i64,
    pub units: i64,
    pub units_sold: i64,
    pub units_left: i64,
    /// Stakes transferred from players for the units sold.
    pub stakes_taken_cents: i64,
    /// The prizes of the units sold, credited or not.
    pub wins_won_cents: i64,
    /// Prizes transferred to players.
    pub wins_credited_cents: i64,
    /// Prizes of plays still in progress, to be credited when they settle.
    pub wins_pending_cents: i64,
    /// The prizes of the units not sold yet: the operator's liability.
    pub prizes_left_cents: i64,
    /// Wins won per hundred of stakes taken, to two decimals (as text, so no
    /// float rounding creeps into the figures).
    pub payout_percent: Option<String>,
    /// Levels 1 to 9, the prize table row by row.
    pub levels: Vec<LevelFigures>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LevelFigures {
    pub level: u8,
    pub prize_cents: i64,
    pub units_in_table: i64,
    pub units_sold: i64,
    pub units_left: i64,
    pub prizes_left_cents: i64,
}

/// What the plays and transfers of one block sum to.
#[derive(Debug, Default)]
pub(super) struct BlockSums {
    pub(super) sold_per_level: HashMap<u8, i64>,
    pub(super) stakes_taken_cents: i64,
    pub(super) wins_won_cents: i64,
    pub(super) wins_credited_cents: i64,
    pub(super) wins_pending_cents: i64,
}

impl Figures {
    /// The figures of one block of `table`'s stake (of `units` units) from
    /// what its plays and transfers sum to.
    pub(super) fn block(
        table: &PrizeTable,
        units: i64,
        units_sold: i64,
        sums: &BlockSums,
    ) -> Figures {
        let levels: Vec<LevelFigures> = table
            .levels()
            .iter()
            .map(|spec| {
                let level = spec.level.get();
                let units_in_table = i64::from(spec.units_per_block);
                let sold = sums.sold_per_level.get(&level).copied().unwrap_or(0);
                LevelFigures {
                    level,
                    prize_cents: spec.prize_cents,
                    units_in_table,
                    units_sold: sold,
                    units_left: units_in_table - sold,
                    prizes_left_cents: (units_in_table - sold) * spec.prize_cents,
                }
            })
            .collect();
        let mut figures = Figures {
            blocks: 1,
            units,
            units_sold,
            units_left: units - units_sold,
            stakes_taken_cents: sums.stakes_taken_cents,
            wins_won_cents: sums.wins_won_cents,
            wins_credited_cents: sums.wins_credited_cents,
            wins_pending_cents: sums.wins_pending_cents,
            prizes_left_cents: levels.iter().map(|l| l.prizes_left_cents).sum(),
            payout_percent: None,
            levels,
        };
        figures.payout_percent = figures.payout();
        figures
    }

    /// Adds `other`'s figures to these (blocks of the same stake, or sums).
    pub(super) fn add(&mut self, other: &Figures) {
        self.blocks += other.blocks;
        self.units += other.units;
        self.units_sold += other.units_sold;
        self.units_left += other.units_left;
        self.stakes_taken_cents += other.stakes_taken_cents;
        self.wins_won_cents += other.wins_won_cents;
        self.wins_credited_cents += other.wins_credited_cents;
        self.wins_pending_cents += other.wins_pending_cents;
        self.prizes_left_cents += other.prizes_left_cents;
        if self.levels.is_empty() {
            self.levels.clone_from(&other.levels);
        } else if self.levels.len() == other.levels.len() {
            for (mine, theirs) in self.levels.iter_mut().zip(&other.levels) {
                // Prize amounts differ between stakes: sum the amounts and
                // counts; the per-unit prize stays only where it is one stake's.
                if mine.prize_cents != theirs.prize_cents {
                    mine.prize_cents = 0;
                }
                mine.units_in_table += theirs.units_in_table;
                mine.units_sold += theirs.units_sold;
                mine.units_left += theirs.units_left;
                mine.prizes_left_cents += theirs.prizes_left_cents;
            }
        }
        self.payout_percent = self.payout();
    }

    /// The sum of `figures`.
    pub(super) fn sum<'f>(figures: impl IntoIterator<Item = &'f Figures>) -> Figures {
        let mut sum = Figures::default();
        for figures in figures {
            sum.add(figures);
        }
        sum
    }

    fn payout(&self) -> Option<String> {
        if self.stakes_taken_cents <= 0 {
            return None;
        }
        // Basis points, rounded half up, in integers.
        let bp = (i128::from(self.wins_won_cents) * 10_000 * 2
            + i128::from(self.stakes_taken_cents))
            / (i128::from(self.stakes_taken_cents) * 2);
        Some(format!("{}.{:02}", bp / 100, bp % 100))
    }
}

/// A table's payout rate as "70.00".
pub(super) fn payout_text(game: &Game, table: &PrizeTable) -> String {
    let bp = game.payout(table).basis_points();
    format!("{}.{:02}", bp / 100, bp % 100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_with_nothing_sold_owes_its_whole_table() {
        let island = tresor_game::ile_au_tresor();
        let table = island.table(50).expect("the island sells 50 cents");
        let figures = Figures::block(table, 450_000, 0, &BlockSums::default());
        assert_eq!(figures.prizes_left_cents, table.block_prizes_cents());
        assert_eq!(figures.units_left, 450_000);
        assert_eq!(figures.payout_percent, None);
    }

    #[test]
    fn the_payout_is_rounded_to_two_decimals() {
        let figures = Figures {
            stakes_taken_cents: 3,
            wins_won_cents: 2,
            ..Figures::default()
        };
        assert_eq!(figures.payout().as_deref(), Some("66.67"));
    }
}
