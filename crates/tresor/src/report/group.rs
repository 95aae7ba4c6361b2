//! How the blocks' figures are grouped: an emission's blocks by stake, and
//! the emissions by game and stake, each stake beside its table's payout.

use super::figures::{BlockSums, Figures, payout_text};
use super::read::BlockRow;
use super::{BlockReport, EmissionReport, GameName, GameReport, GameStakeReport, StakeReport};
use crate::error::Error;
use std::collections::HashMap;
use tresor_game::Game;

/// The stakes of one emission of `game`, by stake, each with its blocks:
/// `blocks` are the emission's.
pub(super) fn stakes<'b>(
    game: &Game,
    blocks: impl IntoIterator<Item = &'b BlockRow>,
    sums: &HashMap<i64, BlockSums>,
) -> Result<Vec<StakeReport>, Error> {
    let mut stakes: Vec<StakeReport> = Vec::new();
    for block in blocks {
        let table = game.table(block.stake_cents).ok_or_else(|| {
            Error::Definition(format!(
                "block {}: {} sells no stake of {} cents",
                block.id,
                game.id(),
                block.stake_cents
            ))
        })?;
        let figures = Figures::block(
            table,
            block.units_per_block,
            block.units_sold,
            sums.get(&block.id).unwrap_or(&BlockSums::default()),
        );
        let index = match stakes
            .iter()
            .position(|s| s.stake_cents == block.stake_cents)
        {
            Some(index) => index,
            None => {
                stakes.push(StakeReport {
                    stake_cents: block.stake_cents,
                    table_payout_percent: payout_text(game, table),
                    figures: Figures::default(),
                    blocks: Vec::new(),
                });
                stakes.len() - 1
            }
        };
        stakes[index].figures.add(&figures);
        stakes[index].blocks.push(BlockReport {
            id: block.id,
            state: block.state.clone(),
            figures,
        });
    }
    stakes.sort_by_key(|s| s.stake_cents);
    Ok(stakes)
}

/// The emissions summed per game, in the order their games first came.
#[derive(Default)]
pub(super) struct Games(Vec<GameReport>);

impl Games {
    /// Adds `emission`, of `game`, to its game's sums.
    pub(super) fn add(&mut self, game: &Game, emission: &EmissionReport) {
        let summed = self.of(game);
        summed.emissions.push(emission.id);
        summed.figures.add(&emission.figures);
        for stake in &emission.stakes {
            match summed
                .stakes
                .iter_mut()
                .find(|s| s.stake_cents == stake.stake_cents)
            {
                Some(mine) => mine.figures.add(&stake.figures),
                None => summed.stakes.push(GameStakeReport {
                    stake_cents: stake.stake_cents,
                    table_payout_percent: stake.table_payout_percent.clone(),
                    figures: stake.figures.clone(),
                }),
            }
        }
        summed.stakes.sort_by_key(|s| s.stake_cents);
    }

    /// The sums of `game`, empty the first time it comes.
    fn of(&mut self, game: &Game) -> &mut GameReport {
        let at = match self.0.iter().position(|g| g.name.game == game.id()) {
            Some(at) => at,
            None => {
                self.0.push(GameReport {
                    name: GameName::of(game),
                    kind: game.scene().kind().to_owned(),
                    emissions: Vec::new(),
                    figures: Figures::default(),
                    stakes: Vec::new(),
                });
                self.0.len() - 1
            }
        };
        &mut self.0[at]
    }

    pub(super) fn into_reports(self) -> Vec<GameReport> {
        self.0
    }
}
