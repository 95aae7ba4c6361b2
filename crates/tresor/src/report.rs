//! The operator's report: for each emission (and its game), stake and
//! block, and for each game of the catalogue against its table's rate, the units sold
//! and left, the stakes taken, the wins won, credited and pending, the prizes
//! still to win per level (the operator's liability) and the payout.
//!
//! Units and wins come from the plays; stakes taken and wins credited from
//! the ledger's transfers, so the report shows the money actually moved.
//! Its rooms: `read` (the rows and each block's sums), `figures` (a block's
//! figures and their sums), `group` (blocks by stake, emissions by game),
//! `money` (the ledger's side), and the two text formats `table` and `csv`
//! (the JSON is the types below, serialised).

use crate::error::Error;
use serde::Serialize;
use sqlx::AnyPool;
use tresor_game::Game;

mod csv;
mod figures;
mod group;
mod money;
pub mod paris;
pub mod period;
mod read;
mod table;

pub use csv::csv;
pub use figures::{Figures, LevelFigures};
pub use money::MoneyFigures;
pub use table::table;

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub emissions: Vec<EmissionReport>,
    /// The emissions' figures summed per game (first emission's order), each
    /// stake against its table's payout rate.
    pub games: Vec<GameReport>,
    /// Money in and out of the players' accounts (all emissions).
    pub money: MoneyFigures,
}

#[derive(Debug, Clone, Serialize)]
pub struct EmissionReport {
    pub id: i64,
    pub name: String,
    /// The game's id, as the emission pinned it.
    pub game: String,
    /// The SHA-256 of the definition it pinned.
    pub game_sha256: String,
    pub state: String,
    pub figures: Figures,
    pub stakes: Vec<StakeReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StakeReport {
    pub stake_cents: i64,
    /// The payout rate of the stake's prize table, "70.00".
    pub table_payout_percent: String,
    pub figures: Figures,
    pub blocks: Vec<BlockReport>,
}

/// A game as the reports name it: its id and its names.
#[derive(Debug, Clone, Serialize)]
pub struct GameName {
    pub game: String,
    pub name_fr: String,
    pub name_en: String,
}

impl GameName {
    pub fn of(game: &Game) -> GameName {
        GameName {
            game: game.id().to_owned(),
            name_fr: game.name_fr().to_owned(),
            name_en: game.name_en().to_owned(),
        }
    }
}

/// One game's emissions summed.
#[derive(Debug, Clone, Serialize)]
pub struct GameReport {
    /// Its id and names, at the top level of the game's JSON.
    #[serde(flatten)]
    pub name: GameName,
    pub kind: String,
    pub emissions: Vec<i64>,
    pub figures: Figures,
    /// Per stake, with its table's payout rate to compare `payout_percent` with.
    pub stakes: Vec<GameStakeReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GameStakeReport {
    pub stake_cents: i64,
    pub table_payout_percent: String,
    pub figures: Figures,
}

#[derive(Debug, Clone, Serialize)]
pub struct BlockReport {
    pub id: i64,
    pub state: String,
    pub figures: Figures,
}

/// Builds the report for every emission, or only `emission`.
pub async fn build(pool: &AnyPool, emission: Option<i64>) -> Result<Report, Error> {
    let emission_rows = read::emissions(pool).await?;
    let blocks = read::blocks(pool).await?;
    let sums = read::block_sums(pool).await?;
    // Each emission's game as it pinned it (no text: the built-in island).
    let pinned = crate::games::Catalog::default();
    let mut emissions = Vec::new();
    let mut games = group::Games::default();
    for row in emission_rows
        .into_iter()
        .filter(|row| emission.is_none_or(|wanted| wanted == row.id))
    {
        let game = pinned
            .pinned(&row.game_sha256, row.definition.as_deref())
            .map_err(|e| Error::Definition(format!("emission {}: {e}", row.id)))?;
        let of_emission = blocks.iter().filter(|b| b.emission_id == row.id);
        let stakes = group::stakes(game, of_emission, &sums)?;
        let report = EmissionReport {
            id: row.id,
            name: row.name,
            game: game.id().to_owned(),
            game_sha256: row.game_sha256,
            state: row.state,
            figures: Figures::sum(stakes.iter().map(|s| &s.figures)),
            stakes,
        };
        games.add(game, &report);
        emissions.push(report);
    }
    if let Some(wanted) = emission
        && emissions.is_empty()
    {
        return Err(Error::Validation(format!("no emission {wanted}")));
    }
    Ok(Report {
        emissions,
        games: games.into_reports(),
        money: money::money(pool).await?,
    })
}
