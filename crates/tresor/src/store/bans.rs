//! The ban list: a person on it, a new version of it, and the accounts it
//! bans or no longer bans.

use super::accounts::{end_sessions, players};
use super::sql::{self, ColumnType, Conn};
use crate::account::BanEntry;
use crate::error::Error;
use crate::model::Player;

/// Whether a person is on the ban list in force.
pub async fn is_banned(conn: &mut Conn, name_key: &str, birth_date: &str) -> Result<bool, Error> {
    let found: i64 = sql::query_scalar(
        "SELECT COUNT(*) FROM ban_entries WHERE name_key = $1 AND birth_date = $2",
    )
    .bind(name_key)
    .bind(birth_date)
    .fetch_one(conn)
    .await?;
    Ok(found > 0)
}

/// Replaces the ban list with `entries` as a new version; returns it.
pub async fn replace_ban_list(
    conn: &mut Conn,
    entries: &[BanEntry],
    sha256: &str,
    now_ms: i64,
) -> Result<i64, Error> {
    let version: i64 =
        sql::query_scalar("SELECT CAST(COALESCE(MAX(version), 0) + 1 AS BIGINT) FROM ban_imports")
            .fetch_one(conn)
            .await?;
    sql::query("DELETE FROM ban_entries").execute(conn).await?;
    let sqlite = conn.is_sqlite();
    for chunk in entries.chunks(1000) {
        let table = sql::json_rows(
            sqlite,
            1,
            &[
                ("name_key", ColumnType::Text),
                ("birth_date", ColumnType::Text),
                ("birth_name", ColumnType::Text),
                ("first_names", ColumnType::Text),
            ],
        );
        let rows: Vec<[&str; 4]> = chunk
            .iter()
            .map(|e| {
                [
                    e.name_key.as_str(),
                    e.birth_date.as_str(),
                    e.birth_name.as_str(),
                    e.first_names.as_str(),
                ]
            })
            .collect();
        // key_version 2: keyed by `account::name_key` as it is now.
        sql::query(&format!(
            "INSERT INTO ban_entries (name_key, birth_date, birth_name, first_names, key_version) \
             SELECT name_key, birth_date, birth_name, first_names, 2 FROM {table} AS d"
        ))
        .bind(serde_json::to_string(&rows).expect("rows as JSON"))
        .execute(conn)
        .await?;
    }
    sql::query("INSERT INTO ban_imports (version, entries, sha256, imported_at_ms) VALUES ($1, $2, $3, $4)")
        .bind(version)
        .bind(entries.len() as i64)
        .bind(sha256)
        .bind(now_ms)
        .execute(conn)
        .await?;
    Ok(version)
}

/// Marks banned every account whose identity is on the list and was not yet,
/// lifts the ban of those no longer on it; returns (banned, lifted) players.
pub async fn apply_ban_list(
    conn: &mut Conn,
    now_ms: i64,
) -> Result<(Vec<Player>, Vec<Player>), Error> {
    let on_list = "EXISTS (SELECT 1 FROM identities i JOIN ban_entries b \
                   ON b.name_key = i.name_key AND b.birth_date = i.birth_date WHERE i.player_id = a.player_id)";
    let banned_sql = format!(
        "SELECT p.id, p.username, p.account_id FROM player_accounts a JOIN players p ON p.id = a.player_id \
         WHERE a.banned_at_ms IS NULL AND {on_list} ORDER BY p.id"
    );
    let lifted_sql = format!(
        "SELECT p.id, p.username, p.account_id FROM player_accounts a JOIN players p ON p.id = a.player_id \
         WHERE a.banned_at_ms IS NOT NULL AND NOT {on_list} ORDER BY p.id"
    );
    let banned = players(conn, &banned_sql).await?;
    let lifted = players(conn, &lifted_sql).await?;
    for player in &banned {
        sql::query("UPDATE player_accounts SET banned_at_ms = $1 WHERE player_id = $2")
            .bind(now_ms)
            .bind(player.id)
            .execute(conn)
            .await?;
        end_sessions(conn, player.id, now_ms).await?;
    }
    for player in &lifted {
        sql::query("UPDATE player_accounts SET banned_at_ms = NULL WHERE player_id = $1")
            .bind(player.id)
            .execute(conn)
            .await?;
    }
    Ok((banned, lifted))
}
