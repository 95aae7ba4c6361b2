//! Plays as every layer reads them: [`PlayState`], all that a view of a
//! play needs, and the reads of one play and of a player's history. The
//! batch (`store::batch`) reads its plays with the same columns.

use crate::error::Error;
use crate::store::record::record;
use crate::store::sql::{self, Conn};

record! {
    /// A play: its unit, outcome, progress and its player's account.
    #[derive(Debug, Clone)]
    pub struct PlayState {
        pub id: i64,
        pub player_id: i64,
        pub account_id: i64,
        pub block_id: i64,
        pub emission_id: i64,
        pub unit_index: i64,
        pub stake_cents: i64,
        pub level: i64,
        pub prize_cents: i64,
        pub throws_made: i64,
        pub finished: bool => |row| row.try_get::<String, _>("state")? == "finished",
        pub created_at_ms: i64,
        pub finished_at_ms: Option<i64>,
    }
}

/// The columns [`PlayState::from_row`] reads, from [`FROM`].
pub const COLUMNS: &str = "p.id, p.player_id, pl.account_id, p.block_id, b.emission_id, \
    p.unit_index, p.stake_cents, p.level, p.prize_cents, p.throws_made, p.state, \
    p.created_at_ms, p.finished_at_ms";

/// The tables [`COLUMNS`] come from.
pub const FROM: &str =
    "plays p JOIN players pl ON pl.id = p.player_id JOIN blocks b ON b.id = p.block_id";

impl PlayState {
    /// The play of a row of [`COLUMNS`], without naming [`sql::FromRow`].
    pub fn from_row(row: &sql::Row) -> Result<PlayState, Error> {
        <PlayState as sql::FromRow>::from_row(row)
    }
}

/// One of the player's plays, if it is theirs.
pub async fn of_player(
    conn: &mut Conn,
    player_id: i64,
    play_id: i64,
) -> Result<Option<PlayState>, Error> {
    sql::query_as(&format!(
        "SELECT {COLUMNS} FROM {FROM} WHERE p.id = $1 AND p.player_id = $2"
    ))
    .bind(play_id)
    .bind(player_id)
    .fetch_optional(conn)
    .await
}

/// The player's plays before `before_id`, newest first, at most `limit`.
pub async fn history(
    conn: &mut Conn,
    player_id: i64,
    before_id: i64,
    limit: i64,
) -> Result<Vec<PlayState>, Error> {
    sql::query_as(&format!(
        "SELECT {COLUMNS} FROM {FROM} WHERE p.player_id = $1 AND p.id < $2 ORDER BY p.id DESC LIMIT $3"
    ))
    .bind(player_id)
    .bind(before_id)
    .bind(limit)
    .fetch_all(conn)
    .await
}

record! {
    /// A play as the settler of abandoned plays walks them: id, whether it is
    /// in progress, when it was bought.
    #[derive(Debug, Clone, Copy)]
    pub struct Walked {
        pub id: i64,
        pub in_progress: bool => |row| row.try_get::<String, _>("state")? == "in_progress",
        pub created_at_ms: i64,
    }
}

/// Where the settler's walk starts when it knows nothing yet: the first
/// play still in progress or bought after `recent_ms` (one may still be
/// committing, see `service::settler`), or past the last play. It reads the
/// whole table, once per process: no index finds plays in progress
/// (migration 0022 dropped `plays_in_progress`, which every purchase wrote
/// twice, in and out).
pub async fn walk_start(conn: &mut Conn, recent_ms: i64) -> Result<i64, Error> {
    sql::query_scalar(
        "SELECT COALESCE( \
           (SELECT MIN(id) FROM plays WHERE state = 'in_progress' OR created_at_ms > $1), \
           (SELECT MAX(id) + 1 FROM plays), 0)",
    )
    .bind(recent_ms)
    .fetch_one(conn)
    .await
}

/// Up to `limit` plays from `from_id` on, in id order (the primary key).
pub async fn walk(conn: &mut Conn, from_id: i64, limit: i64) -> Result<Vec<Walked>, Error> {
    sql::query_as("SELECT id, state, created_at_ms FROM plays WHERE id >= $1 ORDER BY id LIMIT $2")
        .bind(from_id)
        .bind(limit)
        .fetch_all(conn)
        .await
}
