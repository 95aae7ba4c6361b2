//! Identity documents' storage (migration 0015): a row per file sent, its
//! bytes sealed (the service seals and opens them), its review. Also the
//! identities the verification queue shows beside them.

use super::record::record;
use super::sql::{self, Conn, FromRow};
use crate::error::Error;
use std::collections::HashMap;

record! {
    /// A document as listed: everything but its bytes.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct DocumentRow {
        pub id: i64,
        pub player_id: i64,
        pub kind: String,
        pub name: String,
        pub content_type: String,
        pub size_bytes: i64,
        pub sha256: String,
        pub uploaded_at_ms: i64,
        pub status: String,
        pub decided_at_ms: Option<i64>,
        pub decided_by: Option<String>,
        pub reason: Option<String>,
    }
}

const COLUMNS: &str = "id, player_id, kind, name, content_type, size_bytes, sha256, \
     uploaded_at_ms, status, decided_at_ms, decided_by, reason";

/// What a new document row holds before its seal.
#[derive(Debug)]
pub struct NewDocument<'a> {
    pub player_id: i64,
    pub kind: &'a str,
    pub name: &'a str,
    pub content_type: &'a str,
    pub size_bytes: i64,
    pub sha256: &'a str,
    pub uploaded_at_ms: i64,
}

/// Inserts a pending document with an empty seal; its id (the seal's
/// associated data), for [`set_sealed`] in the same job.
pub async fn insert(conn: &mut Conn, new: &NewDocument<'_>) -> Result<i64, Error> {
    sql::query_scalar(
        "INSERT INTO identity_documents (player_id, kind, name, content_type, size_bytes, \
         sha256, sealed, uploaded_at_ms, status) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending') RETURNING id",
    )
    .bind(new.player_id)
    .bind(new.kind)
    .bind(new.name)
    .bind(new.content_type)
    .bind(new.size_bytes)
    .bind(new.sha256)
    .bind(Vec::<u8>::new())
    .bind(new.uploaded_at_ms)
    .fetch_one(conn)
    .await
}

pub async fn set_sealed(conn: &mut Conn, id: i64, sealed: Vec<u8>) -> Result<(), Error> {
    sql::query("UPDATE identity_documents SET sealed = $1 WHERE id = $2")
        .bind(sealed)
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

/// The player's documents, newest first.
pub async fn of_player(conn: &mut Conn, player_id: i64) -> Result<Vec<DocumentRow>, Error> {
    sql::query_as(&format!(
        "SELECT {COLUMNS} FROM identity_documents WHERE player_id = $1 ORDER BY id DESC"
    ))
    .bind(player_id)
    .fetch_all(conn)
    .await
}

/// The latest document of `kind` the player sent, if any.
pub async fn latest(
    conn: &mut Conn,
    player_id: i64,
    kind: &str,
) -> Result<Option<DocumentRow>, Error> {
    sql::query_as(&format!(
        "SELECT {COLUMNS} FROM identity_documents WHERE player_id = $1 AND kind = $2 \
         ORDER BY id DESC LIMIT 1"
    ))
    .bind(player_id)
    .bind(kind)
    .fetch_optional(conn)
    .await
}

/// One document, without its bytes.
pub async fn of_id(conn: &mut Conn, id: i64) -> Result<Option<DocumentRow>, Error> {
    sql::query_as(&format!(
        "SELECT {COLUMNS} FROM identity_documents WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// A player's username, for a trail record.
pub async fn username(conn: &mut Conn, player_id: i64) -> Result<String, Error> {
    sql::query_scalar("SELECT username FROM players WHERE id = $1")
        .bind(player_id)
        .fetch_one(conn)
        .await
}

/// One document, and its sealed bytes.
pub async fn get(conn: &mut Conn, id: i64) -> Result<Option<(DocumentRow, Vec<u8>)>, Error> {
    let row = sql::query(&format!(
        "SELECT {COLUMNS}, sealed FROM identity_documents WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(conn)
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    Ok(Some((DocumentRow::from_row(&row)?, row.try_get("sealed")?)))
}

/// Puts the player's latest verified document of `kind` back to review
/// (pending, its decision cleared: the trail keeps it); its id, if one was.
pub async fn back_to_review(
    conn: &mut Conn,
    player_id: i64,
    kind: &str,
) -> Result<Option<i64>, Error> {
    sql::query_scalar(
        "UPDATE identity_documents SET status = 'pending', decided_at_ms = NULL, \
         decided_by = NULL, reason = NULL \
         WHERE id = (SELECT MAX(id) FROM identity_documents WHERE player_id = $1 AND kind = $2) \
         AND status = 'verified' RETURNING id",
    )
    .bind(player_id)
    .bind(kind)
    .fetch_optional(conn)
    .await
}

/// Records the review of a pending document; false when it is no longer
/// pending (someone decided first).
pub async fn decide(
    conn: &mut Conn,
    id: i64,
    status: &str,
    by: &str,
    reason: Option<&str>,
    now_ms: i64,
) -> Result<bool, Error> {
    let changed = sql::query(
        "UPDATE identity_documents SET status = $1, decided_at_ms = $2, decided_by = $3, \
         reason = $4 WHERE id = $5 AND status = 'pending'",
    )
    .bind(status)
    .bind(now_ms)
    .bind(by)
    .bind(reason)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(changed == 1)
}

record! {
    /// An identity as the verification queue shows it.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct IdentityRow {
        pub birth_name: String,
        pub first_names: String,
        pub birth_date: String,
        pub birth_place: String,
        pub address: String,
    }
}

/// The identities and the documents of the accounts of `status` (every
/// account for `""`), by player.
pub async fn queue_details(
    conn: &mut Conn,
    status: &str,
) -> Result<(HashMap<i64, IdentityRow>, HashMap<i64, Vec<DocumentRow>>), Error> {
    let rows = sql::query(
        "SELECT i.player_id, i.birth_name, i.first_names, i.birth_date, i.birth_place, \
         i.address FROM identities i JOIN player_accounts a ON a.player_id = i.player_id \
         WHERE $1 = '' OR a.status = $1",
    )
    .bind(status)
    .fetch_all(conn)
    .await?;
    let mut identities = HashMap::new();
    for row in &rows {
        identities.insert(
            row.try_get::<i64, _>("player_id")?,
            IdentityRow::from_row(row)?,
        );
    }
    let rows = sql::query_as::<DocumentRow>(&format!(
        "SELECT {COLUMNS} FROM identity_documents d WHERE EXISTS (SELECT 1 FROM player_accounts a \
         WHERE a.player_id = d.player_id AND ($1 = '' OR a.status = $1)) ORDER BY id DESC"
    ))
    .bind(status)
    .fetch_all(conn)
    .await?;
    let mut documents: HashMap<i64, Vec<DocumentRow>> = HashMap::new();
    for document in rows {
        documents
            .entry(document.player_id)
            .or_default()
            .push(document);
    }
    Ok((identities, documents))
}
