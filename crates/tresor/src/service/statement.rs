//! The statement: every movement of a player's account — deposit, operator
//! credit, stake, win, withdrawal requested, paid, rejected or cancelled,
//! balance kept in reserve — with the balance after it, newest first and
//! paged, or whole as CSV.

use super::games::GameRef;
use super::{Service, rfc3339};
use crate::error::Error;
use crate::model::Player;
use crate::store::accounts::{self as store, StatementRow};
use crate::store::sql;
use serde::Serialize;

/// One movement as the player reads it.
#[derive(Debug, Clone, Serialize)]
pub struct Movement {
    /// The transfer's id (also the paging cursor).
    pub id: i64,
    pub at: String,
    /// `deposit`, `operator_credit`, `stake`, `win`, `withdrawal_requested`,
    /// `withdrawal_paid`, `withdrawal_rejected`, `withdrawal_cancelled`,
    /// `kept_in_reserve`.
    pub movement: &'static str,
    pub amount_cents: i64,
    /// What it changed on the balance (signed; 0 for a withdrawal paid,
    /// which had left the balance when it was asked).
    pub delta_cents: i64,
    pub balance_cents: i64,
    pub play_id: Option<i64>,
    /// The game of a stake's or a win's play.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub game: Option<GameRef>,
    pub deposit_id: Option<i64>,
    pub withdrawal_id: Option<i64>,
}

/// One page of the statement.
#[derive(Debug, Clone, Serialize)]
pub struct Statement {
    pub movements: Vec<Movement>,
    /// Pass as `cursor` for the next (older) page; `None` at the end.
    pub next_cursor: Option<String>,
    pub balance_cents: i64,
}

fn movement_name(kind: &str) -> &'static str {
    match kind {
        "deposit" => "deposit",
        "credit" => "operator_credit",
        "stake" => "stake",
        "prize" => "win",
        "withdrawal" => "withdrawal_requested",
        "withdrawal_paid" => "withdrawal_paid",
        "withdrawal_rejected" => "withdrawal_rejected",
        "withdrawal_cancelled" => "withdrawal_cancelled",
        "reserve" => "kept_in_reserve",
        _ => "other",
    }
}

impl From<StatementRow> for Movement {
    fn from(row: StatementRow) -> Self {
        Movement {
            id: row.transfer_id,
            at: rfc3339(row.at_ms),
            movement: movement_name(&row.kind),
            amount_cents: row.amount_cents,
            delta_cents: row.delta_cents,
            balance_cents: row.balance_cents,
            play_id: row.play_id,
            game: None,
            deposit_id: row.deposit_id,
            withdrawal_id: row.withdrawal_id,
        }
    }
}

impl Service {
    /// A page of at most `limit` movements older than the transfer `cursor`.
    pub async fn statement(
        &self,
        player: &Player,
        limit: i64,
        cursor: Option<i64>,
    ) -> Result<Statement, Error> {
        let mut conn = self.db.conn().await?;
        let rows = store::statement(&mut conn, player, cursor, limit + 1).await?;
        let balance_cents = store::balance(&mut conn, player.account_id).await?;
        let more = rows.len() as i64 > limit;
        let mut movements: Vec<Movement> = rows
            .into_iter()
            .take(limit as usize)
            .map(Movement::from)
            .collect();
        self.name_games(&mut conn, &mut movements).await?;
        Ok(Statement {
            next_cursor: more
                .then(|| movements.last().map(|m| m.id.to_string()))
                .flatten(),
            movements,
            balance_cents,
        })
    }

    /// The whole statement as CSV, oldest first.
    pub async fn statement_csv(&self, player: &Player) -> Result<String, Error> {
        let mut conn = self.db.conn().await?;
        let rows = store::statement(&mut conn, player, None, i64::MAX).await?;
        let mut movements: Vec<Movement> = rows.into_iter().rev().map(Movement::from).collect();
        self.name_games(&mut conn, &mut movements).await?;
        let mut csv = String::from(
            "id,at,movement,amount_cents,delta_cents,balance_cents,play_id,deposit_id,withdrawal_id,game\n",
        );
        let cell = |v: Option<i64>| v.map(|v| v.to_string()).unwrap_or_default();
        for m in movements {
            csv.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{}\n",
                m.id,
                m.at,
                m.movement,
                m.amount_cents,
                m.delta_cents,
                m.balance_cents,
                cell(m.play_id),
                cell(m.deposit_id),
                cell(m.withdrawal_id),
                m.game.map(|g| g.id).unwrap_or_default()
            ));
        }
        Ok(csv)
    }

    /// Names the game of every movement that has a play (one read for all).
    pub(super) async fn name_games(
        &self,
        conn: &mut crate::store::Conn,
        movements: &mut [Movement],
    ) -> Result<(), Error> {
        let ids: Vec<[i64; 1]> = movements
            .iter()
            .filter_map(|m| m.play_id.map(|id| [id]))
            .collect();
        if ids.is_empty() {
            return Ok(());
        }
        let sqlite = conn.is_sqlite();
        let table = sql::json_rows(sqlite, 1, &[("id", sql::ColumnType::Int)]);
        let rows: Vec<(i64, String)> = sql::query_as(&format!(
            "SELECT p.id, b.game_id FROM plays p JOIN blocks b ON b.id = p.block_id \
             WHERE p.id IN (SELECT id FROM {table} AS d)"
        ))
        .bind(serde_json::to_string(&ids).expect("play ids"))
        .fetch_all(conn)
        .await?;
        let games: std::collections::HashMap<i64, String> = rows.into_iter().collect();
        for movement in movements {
            movement.game = movement
                .play_id
                .and_then(|id| games.get(&id))
                .and_then(|id| self.settings.games.get(id))
                .map(GameRef::of);
        }
        Ok(())
    }
}
