//! The hot batch's writes, one statement a table whatever the batch's size:
//! the rows the batch made (plays, transfers, account and block updates,
//! hours of stakes) and [`SetWrite`], the one shape every such statement
//! has.

use crate::error::Error;
use crate::store::plays::PlayState;
use crate::store::sql::{self, ColumnType, ColumnType::Int, ColumnType::Text, Conn};
use serde::Serialize;

/// A play the batch creates.
#[derive(Debug, Serialize)]
pub struct NewPlayRow(
    i64,          // id
    i64,          // player_id
    i64,          // block_id
    i64,          // unit_index
    i64,          // stake_cents
    i64,          // level
    i64,          // prize_cents
    i64,          // throws_made
    &'static str, // state
    String,       // idempotency_key
    String,       // request_hash
    i64,          // created_at_ms
    Option<i64>,  // finished_at_ms
    Option<i64>,  // buy_log_id
    Option<i64>,  // buy_idx
);

impl NewPlayRow {
    /// `leaf`: the purchase's record in the trail (log, index), which
    /// finds the play's receipt (migration 0021).
    pub fn from_state(
        play: &PlayState,
        idempotency_key: String,
        request_hash: String,
        leaf: Option<(i64, i64)>,
    ) -> Self {
        NewPlayRow(
            play.id,
            play.player_id,
            play.block_id,
            play.unit_index,
            play.stake_cents,
            play.level,
            play.prize_cents,
            play.throws_made,
            state_text(play.finished),
            idempotency_key,
            request_hash,
            play.created_at_ms,
            play.finished_at_ms,
            leaf.map(|(log_id, _)| log_id),
            leaf.map(|(_, idx)| idx),
        )
    }
}

impl NewPlayRow {
    /// Its purchase key's row: (play, player, idempotency key, created at).
    pub(super) fn key(&self) -> (i64, i64, &str, i64) {
        (self.0, self.1, &self.9, self.11)
    }
}

/// A play read from the database that the batch changed; the update checks
/// that it still has `throws_before` throws and is in progress.
#[derive(Debug)]
pub struct PlayUpdate {
    pub id: i64,
    pub throws_before: i64,
    pub throws_made: i64,
    pub state: &'static str,
    pub finished_at_ms: Option<i64>,
}

impl PlayUpdate {
    pub fn from_state(play: &PlayState, throws_before: i64) -> Self {
        PlayUpdate {
            id: play.id,
            throws_before,
            throws_made: play.throws_made,
            state: state_text(play.finished),
            finished_at_ms: play.finished_at_ms,
        }
    }
}

fn state_text(finished: bool) -> &'static str {
    if finished { "finished" } else { "in_progress" }
}

/// A transfer of the ledger.
#[derive(Debug)]
pub struct TransferRow {
    pub debit_account_id: i64,
    pub credit_account_id: i64,
    pub amount_cents: i64,
    pub kind: &'static str,
    pub play_id: i64,
    pub created_at_ms: i64,
}

/// A block the batch sold from.
#[derive(Debug)]
pub struct BlockUpdate {
    pub id: i64,
    pub units_sold_before: i64,
    pub units_sold: i64,
    pub sold_out_at_ms: Option<i64>,
}

/// Stakes to add to a player's hour.
#[derive(Debug)]
pub struct HourCount {
    pub player_id: i64,
    pub hour_ms: i64,
    pub amount_cents: i64,
}

/// What the batch changes of an account: its balance, and for a buyer the
/// hour of stakes its row holds (`crate::protect`, migration 0022).
#[derive(Debug)]
pub struct AccountUpdate {
    pub id: i64,
    pub delta_cents: i64,
    /// (hour, stakes in it), or `None` to leave it as it is.
    pub stake_hour: Option<(i64, i64)>,
}

/// One set-oriented write: `sql`, in which `{rows}` stands for the batch's
/// rows as a table of `columns` (`sql::table`: typed arrays under `UNNEST`
/// on PostgreSQL, a list of `VALUES` on SQLite), held back until the
/// batch's end. With `changes`, the table whose rows it must change, one
/// per row, or the batch fails (`Query::defer_expecting`).
#[derive(Debug)]
pub struct SetWrite {
    pub sql: &'static str,
    pub columns: &'static [(&'static str, ColumnType)],
    pub changes: Option<&'static str>,
}

impl SetWrite {
    /// Writes `rows`, each as the tuple `columns` makes of it (in the
    /// order of [`SetWrite::columns`]); nothing when there are none.
    pub(super) async fn run<'r, T, U: Serialize + 'r>(
        &self,
        conn: &mut Conn,
        sqlite: bool,
        rows: &'r [T],
        columns: impl Fn(&'r T) -> U,
    ) -> Result<(), Error> {
        if rows.is_empty() {
            return Ok(());
        }
        let table = sql::table(sqlite, 1, self.columns);
        let query = sql::query_owned(self.sql.replace("{rows}", &table.to_string()))
            .bind_rows(&table, rows, columns);
        match self.changes {
            Some(changes) => query.defer_expecting(conn, changes, rows.len()).await,
            None => query.defer(conn).await,
        }
    }
}

/// A row the batch writes: the statement that writes rows of its kind and
/// the tuple of its values, in the order of that statement's columns.
pub trait SetRow {
    const WRITE: SetWrite;
    fn values(&self) -> impl Serialize + '_;
}

/// Writes the batch's `rows` of one kind, in one statement held back until
/// the batch's end (nothing when there are none).
pub async fn write<T: SetRow>(conn: &mut Conn, sqlite: bool, rows: &[T]) -> Result<(), Error> {
    T::WRITE.run(conn, sqlite, rows, T::values).await
}

impl SetRow for NewPlayRow {
    const WRITE: SetWrite = SetWrite {
        sql: "INSERT INTO plays (id, player_id, block_id, unit_index, stake_cents, level, \
              prize_cents, throws_made, state, idempotency_key, request_hash, created_at_ms, \
              finished_at_ms, buy_log_id, buy_idx) \
              SELECT id, player_id, block_id, unit_index, stake_cents, level, prize_cents, \
              throws_made, state, idempotency_key, request_hash, created_at_ms, finished_at_ms, \
              buy_log_id, buy_idx FROM {rows} AS d",
        columns: &[
            ("id", Int),
            ("player_id", Int),
            ("block_id", Int),
            ("unit_index", Int),
            ("stake_cents", Int),
            ("level", Int),
            ("prize_cents", Int),
            ("throws_made", Int),
            ("state", Text),
            ("idempotency_key", Text),
            ("request_hash", Text),
            ("created_at_ms", Int),
            ("finished_at_ms", Int),
            ("buy_log_id", Int),
            ("buy_idx", Int),
        ],
        changes: Some("plays"),
    };

    fn values(&self) -> impl Serialize + '_ {
        self
    }
}

/// A play's throws and state, checked against what the batch read.
impl SetRow for PlayUpdate {
    const WRITE: SetWrite = SetWrite {
        sql: "UPDATE plays SET throws_made = d.throws_made, state = d.state, \
              finished_at_ms = d.finished_at_ms FROM {rows} AS d \
              WHERE plays.id = d.id AND plays.throws_made = d.throws_before \
              AND plays.state = 'in_progress'",
        columns: &[
            ("id", Int),
            ("throws_before", Int),
            ("throws_made", Int),
            ("state", Text),
            ("finished_at_ms", Int),
        ],
        changes: Some("plays"),
    };

    fn values(&self) -> impl Serialize + '_ {
        let u = self;
        (
            u.id,
            u.throws_before,
            u.throws_made,
            u.state,
            u.finished_at_ms,
        )
    }
}

impl SetRow for TransferRow {
    const WRITE: SetWrite = SetWrite {
        sql: "INSERT INTO transfers (debit_account_id, credit_account_id, amount_cents, kind, \
              play_id, created_at_ms) SELECT debit_account_id, credit_account_id, \
              amount_cents, kind, play_id, created_at_ms FROM {rows} AS d",
        columns: &[
            ("debit_account_id", Int),
            ("credit_account_id", Int),
            ("amount_cents", Int),
            ("kind", Text),
            ("play_id", Int),
            ("created_at_ms", Int),
        ],
        changes: None,
    };

    fn values(&self) -> impl Serialize + '_ {
        let t = self;
        let (debit, credit) = (t.debit_account_id, t.credit_account_id);
        (
            debit,
            credit,
            t.amount_cents,
            t.kind,
            t.play_id,
            t.created_at_ms,
        )
    }
}

/// Adds each delta to its account's balance and sets the buyers' hours of
/// stakes, in one statement. A player's balance below zero is refused by
/// the `CHECK` (the batch checked it before).
impl SetRow for AccountUpdate {
    const WRITE: SetWrite = SetWrite {
        sql: "UPDATE accounts SET balance_cents = accounts.balance_cents + d.delta, \
              stake_hour_ms = COALESCE(d.hour_ms, accounts.stake_hour_ms), \
              stake_hour_cents = COALESCE(d.hour_cents, accounts.stake_hour_cents) \
              FROM {rows} AS d WHERE accounts.id = d.id",
        columns: &[
            ("id", Int),
            ("delta", Int),
            ("hour_ms", Int),
            ("hour_cents", Int),
        ],
        changes: Some("accounts"),
    };

    fn values(&self) -> impl Serialize + '_ {
        let hour = self.stake_hour;
        let (hour_ms, hour_cents) = (hour.map(|(h, _)| h), hour.map(|(_, c)| c));
        (self.id, self.delta_cents, hour_ms, hour_cents)
    }
}

/// Moves the blocks' counts of units sold; a block that sold its last unit
/// becomes sold out and its secret published.
impl SetRow for BlockUpdate {
    const WRITE: SetWrite = SetWrite {
        sql: "UPDATE blocks SET units_sold = d.units_sold, \
              state = CASE WHEN d.sold_out_at_ms IS NULL THEN blocks.state ELSE 'sold_out' END, \
              published_at_ms = COALESCE(d.sold_out_at_ms, blocks.published_at_ms) \
              FROM {rows} AS d WHERE blocks.id = d.id \
              AND blocks.units_sold = d.units_sold_before AND blocks.state = 'open'",
        columns: &[
            ("id", Int),
            ("units_sold_before", Int),
            ("units_sold", Int),
            ("sold_out_at_ms", Int),
        ],
        changes: Some("blocks"),
    };

    fn values(&self) -> impl Serialize + '_ {
        let b = self;
        (b.id, b.units_sold_before, b.units_sold, b.sold_out_at_ms)
    }
}

/// Counts stakes in the players' hours (the 7-day caps read them): the
/// hours a buyer's account row held before a stake of another hour.
/// `WHERE true` tells SQLite's parser that ON CONFLICT is not a join's.
impl SetRow for HourCount {
    const WRITE: SetWrite = SetWrite {
        sql: "INSERT INTO movement_hours (player_id, kind, hour_ms, amount_cents) \
              SELECT player_id, 'stake', hour_ms, amount_cents FROM {rows} AS d WHERE true \
              ON CONFLICT (player_id, kind, hour_ms) \
              DO UPDATE SET amount_cents = movement_hours.amount_cents + excluded.amount_cents",
        columns: &[("player_id", Int), ("hour_ms", Int), ("amount_cents", Int)],
        changes: None,
    };

    fn values(&self) -> impl Serialize + '_ {
        (self.player_id, self.hour_ms, self.amount_cents)
    }
}
