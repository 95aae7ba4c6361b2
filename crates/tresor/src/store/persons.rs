//! People behind the accounts: one account per person (`identities.person_key`,
//! unique for every account but those opened before the rule), the other
//! accounts of a person (an exclusion reaches them all), and keying older
//! identities and ban entries again with `account::name_key` as it is now.

use super::sql::{self, Conn};
use crate::account::{name_key, person_key};
use crate::error::Error;
use crate::model::Player;

/// The first account of the person `person_key`, if one was opened.
pub async fn account_of_person(conn: &mut Conn, person_key: &str) -> Result<Option<i64>, Error> {
    sql::query_scalar(
        "SELECT player_id FROM identities WHERE person_key = $1 ORDER BY player_id LIMIT 1",
    )
    .bind(person_key)
    .fetch_optional(conn)
    .await
}

/// The other accounts of the person whose account is `player_id`.
pub async fn other_accounts(conn: &mut Conn, player_id: i64) -> Result<Vec<Player>, Error> {
    sql::query_as(
        "SELECT p.id, p.username, p.account_id FROM identities i \
         JOIN identities o ON o.person_key = i.person_key AND o.player_id <> i.player_id \
         JOIN players p ON p.id = o.player_id WHERE i.player_id = $1 ORDER BY p.id",
    )
    .bind(player_id)
    .fetch_all(conn)
    .await
}

/// Whether `error` is the unique index of one account per person refusing
/// a row (two openings of one person that both passed the check).
pub fn is_second_account(error: &Error) -> bool {
    let message = match error {
        Error::Database(sqlx::Error::Database(db)) => db.message().to_owned(),
        Error::Sqlite(rusqlite::Error::SqliteFailure(_, Some(message))) => message.clone(),
        _ => return false,
    };
    message.contains("identities_one_per_person") || message.contains("identities.person_key")
}

/// What keying again changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rekeyed {
    /// Identities keyed (those written before person keys existed).
    pub identities: u64,
    /// Ban entries keyed again from their older key.
    pub ban_entries: u64,
    /// Accounts found to be a second account of a person: (account, first).
    pub duplicates: Vec<(i64, i64)>,
}

/// Keys the identities that have no person key yet, and the ban entries
/// keyed by an older normalisation, with `account::name_key` as it is now
/// (inside a writer job). An identity whose person already has an account
/// is marked a duplicate of it, and every account of that person gets the
/// longest exclusion any of them has (and loses its sessions while it runs).
pub async fn rekey(conn: &mut Conn, now_ms: i64) -> Result<Rekeyed, Error> {
    let mut done = Rekeyed::default();
    let missing = sql::query(
        "SELECT player_id, birth_name, first_names, birth_date FROM identities \
         WHERE person_key IS NULL ORDER BY player_id",
    )
    .fetch_all(&mut *conn)
    .await?;
    for row in missing {
        let player_id: i64 = row.try_get("player_id")?;
        let names = name_key(
            &row.try_get::<String, _>("birth_name")?,
            &row.try_get::<String, _>("first_names")?,
        );
        let person = person_key(&names, &row.try_get::<String, _>("birth_date")?);
        let first: Option<i64> = sql::query_scalar(
            "SELECT player_id FROM identities WHERE person_key = $1 AND duplicate_of IS NULL",
        )
        .bind(&person)
        .fetch_optional(&mut *conn)
        .await?;
        sql::query(
            "UPDATE identities SET name_key = $1, person_key = $2, duplicate_of = $3 WHERE player_id = $4",
        )
        .bind(&names)
        .bind(&person)
        .bind(first)
        .bind(player_id)
        .execute(&mut *conn)
        .await?;
        done.identities += 1;
        if let Some(first) = first {
            done.duplicates.push((player_id, first));
            spread_exclusion(conn, &person, now_ms).await?;
        }
    }
    // Entries imported before: only their folded key is left, whose two
    // halves are keyed again (folding lost nothing the key keeps).
    let old: Vec<(String, String)> =
        sql::query_as("SELECT name_key, birth_date FROM ban_entries WHERE key_version = 1")
            .fetch_all(&mut *conn)
            .await?;
    for (old_key, birth_date) in old {
        let (birth_name, first_names) = old_key.split_once('|').unwrap_or((&old_key, ""));
        let key = name_key(birth_name, first_names);
        sql::query("DELETE FROM ban_entries WHERE name_key = $1 AND birth_date = $2")
            .bind(&old_key)
            .bind(&birth_date)
            .execute(&mut *conn)
            .await?;
        sql::query(
            "INSERT INTO ban_entries (name_key, birth_date, key_version) VALUES ($1, $2, 2) \
             ON CONFLICT (name_key, birth_date) DO NOTHING",
        )
        .bind(&key)
        .bind(&birth_date)
        .execute(&mut *conn)
        .await?;
        done.ban_entries += 1;
    }
    Ok(done)
}

/// Gives every account of the person the longest exclusion any of them
/// has, and ends their sessions while it runs.
async fn spread_exclusion(conn: &mut Conn, person: &str, now_ms: i64) -> Result<(), Error> {
    let until: Option<i64> = sql::query_scalar(
        "SELECT MAX(p.excluded_until_ms) FROM protections p \
         JOIN identities i ON i.player_id = p.player_id WHERE i.person_key = $1",
    )
    .bind(person)
    .fetch_one(&mut *conn)
    .await?;
    let Some(until_ms) = until else {
        return Ok(());
    };
    sql::query(
        "UPDATE protections SET excluded_until_ms = $1, updated_at_ms = $2 \
         WHERE player_id IN (SELECT player_id FROM identities WHERE person_key = $3)",
    )
    .bind(until_ms)
    .bind(now_ms)
    .bind(person)
    .execute(&mut *conn)
    .await?;
    if until_ms > now_ms {
        sql::query(
            "UPDATE sessions SET ended_at_ms = $1 WHERE ended_at_ms IS NULL \
             AND player_id IN (SELECT player_id FROM identities WHERE person_key = $2)",
        )
        .bind(now_ms)
        .bind(person)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}
