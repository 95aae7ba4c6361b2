//! The operator's report: for each emission (and its game), stake and
//! block, and for each game of the catalogue against its table's rate, the units sold
//! and left, the stakes taken, the wins won, credited and pending, the prizes
//! still to win per level (the operator's liability) and the payout.
//!
//! Units and wins come from the plays; stakes taken and wins credited from
//! the ledger's transfers, so the report shows the money actually moved.

use crate::error::Error;
use serde::Serialize;
use sqlx::{AnyPool, Row};
use std::collections::HashMap;
use tresor_game::{Game, PrizeTable};

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

/// The money side, from the ledger's system accounts and transfers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MoneyFigures {
    /// Deposits credited through the payment provider.
    pub provider_deposits_cents: i64,
    /// Demo deposits and operator credits.
    pub other_deposits_cents: i64,
    /// Confirmations received but never credited, owed back to the payer.
    pub to_refund_cents: i64,
    /// Withdrawals asked and not yet paid, rejected or cancelled.
    pub withdrawals_pending_cents: i64,
    /// Withdrawals paid out.
    pub withdrawals_paid_cents: i64,
    /// Balances of closed accounts kept in reserve (six years).
    pub reserves_cents: i64,
    /// Every stake taken: the sum of every stakes account (each writer's
    /// own, and account 2 of a database made before migration 0016).
    pub stakes_taken_cents: i64,
    /// Every win credited: what every prizes account paid out (each
    /// writer's own, and account 3).
    pub wins_credited_cents: i64,
    /// What the players' accounts hold.
    pub player_balances_cents: i64,
    /// The sum of every account's balance: zero, or the ledger is broken.
    pub ledger_sum_cents: i64,
}

async fn money(pool: &AnyPool) -> Result<MoneyFigures, Error> {
    let balance = |id: i64| async move {
        sqlx::query_scalar::<_, i64>("SELECT balance_cents FROM accounts WHERE id = $1")
            .bind(id)
            .fetch_optional(pool)
            .await
            .map(Option::unwrap_or_default)
    };
    let sum = |condition: &'static str| async move {
        sqlx::query_scalar::<_, i64>(&format!(
            "SELECT CAST(COALESCE(SUM(balance_cents), 0) AS BIGINT) FROM accounts WHERE {condition}"
        ))
        .fetch_one(pool)
        .await
    };
    // The partial index's predicate spelled out (`> -1000`, not a stake:
    // migrations 0021 and 0022), so that SQLite uses it.
    let provider_deposits_cents: i64 = sqlx::query_scalar(
        "SELECT CAST(COALESCE(SUM(amount_cents), 0) AS BIGINT) FROM transfers \
         WHERE kind = 'deposit' AND debit_account_id = $1 AND debit_account_id > -1000 AND kind <> 'stake'",
    )
    .bind(crate::model::PROVIDER_ACCOUNT)
    .fetch_one(pool)
    .await?;
    Ok(MoneyFigures {
        provider_deposits_cents,
        other_deposits_cents: -balance(crate::model::DEPOSITS_ACCOUNT).await?,
        to_refund_cents: balance(crate::model::TO_REFUND_ACCOUNT).await?,
        withdrawals_pending_cents: balance(crate::model::PENDING_WITHDRAWALS_ACCOUNT).await?,
        withdrawals_paid_cents: balance(crate::model::PAID_OUT_ACCOUNT).await?,
        reserves_cents: balance(crate::model::RESERVES_ACCOUNT).await?,
        stakes_taken_cents: sum("kind = 'stakes'").await?,
        wins_credited_cents: -sum("kind = 'prizes'").await?,
        player_balances_cents: sum("kind = 'player'").await?,
        ledger_sum_cents: sum("1 = 1").await?,
    })
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

/// One game's emissions summed.
#[derive(Debug, Clone, Serialize)]
pub struct GameReport {
    pub game: String,
    pub name_fr: String,
    pub name_en: String,
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

impl Figures {
    /// The figures of one block of `table`'s stake (of `units` units) from
    /// what its plays and transfers sum to.
    fn block(table: &PrizeTable, units: i64, units_sold: i64, sums: &BlockSums) -> Figures {
        let levels: Vec<LevelFigures> = table
            .levels()
            .iter()
            .map(|spec| {
                let level = spec.level.get();
                let prize_cents = spec.prize_cents;
                let units_in_table = i64::from(spec.units_per_block);
                let sold = sums.sold_per_level.get(&level).copied().unwrap_or(0);
                LevelFigures {
                    level,
                    prize_cents,
                    units_in_table,
                    units_sold: sold,
                    units_left: units_in_table - sold,
                    prizes_left_cents: (units_in_table - sold) * prize_cents,
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
    fn add(&mut self, other: &Figures) {
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
fn payout_text(game: &Game, table: &PrizeTable) -> String {
    let bp = game.payout(table).basis_points();
    format!("{}.{:02}", bp / 100, bp % 100)
}

/// What the plays and transfers of one block sum to.
#[derive(Debug, Default)]
struct BlockSums {
    sold_per_level: HashMap<u8, i64>,
    stakes_taken_cents: i64,
    wins_won_cents: i64,
    wins_credited_cents: i64,
    wins_pending_cents: i64,
}

/// Builds the report for every emission, or only `emission`.
pub async fn build(pool: &AnyPool, emission: Option<i64>) -> Result<Report, Error> {
    let emission_rows =
        sqlx::query("SELECT id, name, state, game_sha256, definition FROM emissions ORDER BY id")
            .fetch_all(pool)
            .await?;
    let block_rows = sqlx::query(
        "SELECT id, emission_id, stake_cents, state, units_sold, units_per_block FROM blocks \
         ORDER BY id",
    )
    .fetch_all(pool)
    .await?;

    let mut sums: HashMap<i64, BlockSums> = HashMap::new();
    let plays = sqlx::query(
        "SELECT block_id, level, COUNT(*) AS units, CAST(SUM(prize_cents) AS BIGINT) AS won, \
         CAST(SUM(CASE WHEN state = 'in_progress' THEN prize_cents ELSE 0 END) AS BIGINT) AS pending \
         FROM plays GROUP BY block_id, level",
    )
    .fetch_all(pool)
    .await?;
    for row in &plays {
        let block_id: i64 = row.try_get("block_id")?;
        let level: i64 = row.try_get("level")?;
        let units: i64 = row.try_get("units")?;
        let block = sums.entry(block_id).or_default();
        if level > 0 {
            *block.sold_per_level.entry(level as u8).or_default() += units;
        }
        block.wins_won_cents += row.try_get::<i64, _>("won")?;
        block.wins_pending_cents += row.try_get::<i64, _>("pending")?;
    }
    let transfers = sqlx::query(
        "SELECT p.block_id, t.kind, CAST(SUM(t.amount_cents) AS BIGINT) AS amount \
         FROM transfers t JOIN plays p ON p.id = t.play_id \
         WHERE t.kind IN ('stake', 'prize') GROUP BY p.block_id, t.kind",
    )
    .fetch_all(pool)
    .await?;
    for row in &transfers {
        let block_id: i64 = row.try_get("block_id")?;
        let kind: String = row.try_get("kind")?;
        let amount: i64 = row.try_get("amount")?;
        let block = sums.entry(block_id).or_default();
        if kind == "stake" {
            block.stakes_taken_cents += amount;
        } else {
            block.wins_credited_cents += amount;
        }
    }

    // Each emission's game as it pinned it (no text: the built-in island).
    let pinned = crate::games::Catalog::default();
    let mut emissions = Vec::new();
    let mut games: Vec<(&'static Game, GameReport)> = Vec::new();
    for row in &emission_rows {
        let id: i64 = row.try_get("id")?;
        if emission.is_some_and(|wanted| wanted != id) {
            continue;
        }
        let sha: String = row.try_get("game_sha256")?;
        let definition: Option<String> = row.try_get("definition")?;
        let game = pinned
            .pinned(&sha, definition.as_deref())
            .map_err(|e| Error::Definition(format!("emission {id}: {e}")))?;
        let mut stakes: Vec<StakeReport> = Vec::new();
        for block in &block_rows {
            if block.try_get::<i64, _>("emission_id")? != id {
                continue;
            }
            let block_id: i64 = block.try_get("id")?;
            let stake_cents: i64 = block.try_get("stake_cents")?;
            let table = game.table(stake_cents).ok_or_else(|| {
                Error::Definition(format!(
                    "block {block_id}: {} sells no stake of {stake_cents} cents",
                    game.id()
                ))
            })?;
            let figures = Figures::block(
                table,
                block.try_get("units_per_block")?,
                block.try_get("units_sold")?,
                sums.get(&block_id).unwrap_or(&BlockSums::default()),
            );
            let index = match stakes.iter().position(|s| s.stake_cents == stake_cents) {
                Some(index) => index,
                None => {
                    stakes.push(StakeReport {
                        stake_cents,
                        table_payout_percent: payout_text(game, table),
                        figures: Figures::default(),
                        blocks: Vec::new(),
                    });
                    stakes.len() - 1
                }
            };
            stakes[index].figures.add(&figures);
            stakes[index].blocks.push(BlockReport {
                id: block_id,
                state: block.try_get("state")?,
                figures,
            });
        }
        stakes.sort_by_key(|s| s.stake_cents);
        let mut figures = Figures::default();
        for stake in &stakes {
            figures.add(&stake.figures);
        }
        let at = match games.iter().position(|(g, _)| g.id() == game.id()) {
            Some(at) => at,
            None => {
                games.push((
                    game,
                    GameReport {
                        game: game.id().to_owned(),
                        name_fr: game.name_fr().to_owned(),
                        name_en: game.name_en().to_owned(),
                        kind: game.scene().kind().to_owned(),
                        emissions: Vec::new(),
                        figures: Figures::default(),
                        stakes: Vec::new(),
                    },
                ));
                games.len() - 1
            }
        };
        let (_, summed) = &mut games[at];
        summed.emissions.push(id);
        summed.figures.add(&figures);
        for stake in &stakes {
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
        emissions.push(EmissionReport {
            id,
            name: row.try_get("name")?,
            game: game.id().to_owned(),
            game_sha256: sha,
            state: row.try_get("state")?,
            figures,
            stakes,
        });
    }
    if let Some(wanted) = emission
        && emissions.is_empty()
    {
        return Err(Error::Validation(format!("no emission {wanted}")));
    }
    Ok(Report {
        emissions,
        games: games.into_iter().map(|(_, g)| g).collect(),
        money: money(pool).await?,
    })
}

/// One line per emission, stake and block, for `--format csv`.
pub fn csv(report: &Report) -> String {
    let mut out = String::from(
        "emission,stake_cents,block,scope,state,units,units_sold,units_left,stakes_taken_cents,\
         wins_won_cents,wins_credited_cents,wins_pending_cents,prizes_left_cents,payout_percent",
    );
    // Nine levels at most (docs/GAMES.md): a table with fewer leaves the
    // rest empty.
    for level in 1..=9 {
        out.push_str(&format!(",level{level}_left"));
    }
    out.push('\n');
    let mut line =
        |emission: i64, stake: String, block: String, scope: &str, state: &str, f: &Figures| {
            out.push_str(&format!(
                "{emission},{stake},{block},{scope},{state},{},{},{},{},{},{},{},{},{}",
                f.units,
                f.units_sold,
                f.units_left,
                f.stakes_taken_cents,
                f.wins_won_cents,
                f.wins_credited_cents,
                f.wins_pending_cents,
                f.prizes_left_cents,
                f.payout_percent.as_deref().unwrap_or(""),
            ));
            for level in 0..9 {
                match f.levels.get(level) {
                    Some(level) => out.push_str(&format!(",{}", level.units_left)),
                    None => out.push(','),
                }
            }
            out.push('\n');
        };
    for e in &report.emissions {
        for s in &e.stakes {
            for b in &s.blocks {
                line(
                    e.id,
                    s.stake_cents.to_string(),
                    b.id.to_string(),
                    "block",
                    &b.state,
                    &b.figures,
                );
            }
            line(
                e.id,
                s.stake_cents.to_string(),
                String::new(),
                "stake",
                "",
                &s.figures,
            );
        }
        line(
            e.id,
            String::new(),
            String::new(),
            "emission",
            &e.state,
            &e.figures,
        );
    }
    out
}

/// Euros with two decimals and thin grouping, for the table.
fn euros(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let cents = cents.unsigned_abs();
    let whole = (cents / 100).to_string();
    let groups: Vec<&str> = whole
        .as_bytes()
        .rchunks(3)
        .rev()
        .map(|g| std::str::from_utf8(g).expect("ASCII digits"))
        .collect();
    let grouped = groups.join(" ");
    format!("{sign}{grouped}.{:02}", cents % 100)
}

/// A human-readable table, for `--format table`.
pub fn table(report: &Report) -> String {
    let mut out = String::new();
    let header = format!(
        "  {:<16} {:>9} {:>8} {:>8} {:>15} {:>15} {:>15} {:>12} {:>15} {:>7}\n",
        "",
        "state",
        "sold",
        "left",
        "stakes €",
        "wins won €",
        "credited €",
        "pending €",
        "prizes left €",
        "payout"
    );
    let row = |label: String, state: &str, f: &Figures| {
        format!(
            "  {:<16} {:>9} {:>8} {:>8} {:>15} {:>15} {:>15} {:>12} {:>15} {:>7}\n",
            label,
            state,
            f.units_sold,
            f.units_left,
            euros(f.stakes_taken_cents),
            euros(f.wins_won_cents),
            euros(f.wins_credited_cents),
            euros(f.wins_pending_cents),
            euros(f.prizes_left_cents),
            f.payout_percent
                .as_deref()
                .map(|p| format!("{p}%"))
                .unwrap_or_else(|| "-".to_owned()),
        )
    };
    if report.emissions.is_empty() {
        out.push_str("no emission yet\n");
    }
    for g in &report.games {
        // Each game's emissions summed; the state column gives the table's
        // payout rate, to compare the payout column with.
        out.push_str(&format!(
            "game {} « {} » (emissions {:?}; state: the table's payout)\n",
            g.game, g.name_fr, g.emissions
        ));
        out.push_str(&header);
        for s in &g.stakes {
            out.push_str(&row(
                format!("game stake {} c", s.stake_cents),
                &format!("{}%", s.table_payout_percent),
                &s.figures,
            ));
        }
        out.push_str(&row("game total".to_owned(), "", &g.figures));
    }
    for e in &report.emissions {
        out.push_str(&format!("emission {} « {} » ({})\n", e.id, e.name, e.state));
        out.push_str(&header);
        for s in &e.stakes {
            for b in &s.blocks {
                out.push_str(&row(format!("block {}", b.id), &b.state, &b.figures));
            }
            out.push_str(&row(
                format!("stake {} c", s.stake_cents),
                &format!("{} blk", s.figures.blocks),
                &s.figures,
            ));
        }
        out.push_str(&row("emission".to_owned(), "", &e.figures));
        for s in &e.stakes {
            out.push_str(&format!(
                "  prizes left at stake {} c (level: units left × prize = liability €)\n",
                s.stake_cents
            ));
            for level in &s.figures.levels {
                out.push_str(&format!(
                    "    level {}: {:>7} / {:>7} × {:>12} = {:>15}\n",
                    level.level,
                    level.units_left,
                    level.units_in_table,
                    euros(level.prize_cents),
                    euros(level.prizes_left_cents),
                ));
            }
        }
        out.push('\n');
    }
    let m = &report.money;
    out.push_str("Money\n");
    for (label, cents) in [
        ("deposits through the provider", m.provider_deposits_cents),
        ("demo deposits and operator credits", m.other_deposits_cents),
        ("received, to refund", m.to_refund_cents),
        ("withdrawals pending", m.withdrawals_pending_cents),
        ("withdrawals paid", m.withdrawals_paid_cents),
        ("kept in reserve", m.reserves_cents),
        ("stakes taken (every writer)", m.stakes_taken_cents),
        ("wins credited (every writer)", m.wins_credited_cents),
        ("players' balances", m.player_balances_cents),
        ("ledger sum (always 0)", m.ledger_sum_cents),
    ] {
        out.push_str(&format!("  {label:<36} {:>15}\n", euros(cents)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn euros_group_thousands_and_keep_cents() {
        assert_eq!(euros(0), "0.00");
        assert_eq!(euros(5), "0.05");
        assert_eq!(euros(15_750_000), "157 500.00");
        assert_eq!(euros(-123_456), "-1 234.56");
    }

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
