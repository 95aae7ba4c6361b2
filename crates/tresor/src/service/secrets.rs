//! Block secrets at rest (`crate::seal`): checking the operator's key at
//! start, sealing the clear secrets of an older database, and rotating the
//! key. Each is one writer job, recorded in the trail; a wrong key changes
//! nothing.

use super::Service;
use super::status::{put_setting, setting};
use crate::error::Error;
use crate::seal::{SealError, SecretsKey};
use crate::store::{Conn, sql};
use crate::trail::{self, Actor};
use serde_json::json;
use tresor_game::BlockSecret;

const KEY_CHECK: &str = "secrets_key_check";

impl Service {
    /// The key given for this database's block secrets.
    pub(super) fn secrets_key(&self) -> Result<&SecretsKey, Error> {
        self.db.secrets_key.as_ref().ok_or_else(|| {
            Error::Secrets(SealError::Key(
                "no secrets key was given: block secrets cannot be read".to_owned(),
            ))
        })
    }

    /// Run once at start, before serving or reading any secret: refuses a
    /// key that is not the database's (its key check), writes the key check
    /// of a database that has none, and seals every secret still in clear (a
    /// database from before sealing), emptying the clear column. Returns how
    /// many secrets it sealed.
    pub async fn open_secrets(&self) -> Result<usize, Error> {
        let key = self.secrets_key()?.clone();
        let now_ms = self.now_ms();
        let sealed = self
            .write(move |conn| {
                let key = key.clone();
                Box::pin(async move {
                    let check = setting(conn, KEY_CHECK).await?;
                    if let Some(check) = &check {
                        key.verify_check(check)?;
                    }
                    let clear: Vec<(i64, Vec<u8>)> = sql::query_as(
                        "SELECT id, secret FROM blocks WHERE sealed_secret IS NULL ORDER BY id",
                    )
                    .fetch_all(&mut *conn)
                    .await?;
                    if check.is_some() && clear.is_empty() {
                        return Ok(0);
                    }
                    put_setting(conn, KEY_CHECK, Some(&key.check_value())).await?;
                    let sqlite = conn.is_sqlite();
                    if sqlite {
                        // The clear secrets' bytes are zeroed where they lay
                        // in the file, not merely marked free.
                        conn.execute_raw("PRAGMA secure_delete = ON").await?;
                    }
                    let mut ids = Vec::with_capacity(clear.len());
                    for (id, secret) in &clear {
                        let secret = <[u8; 32]>::try_from(secret.as_slice()).map_err(|_| {
                            SealError::Key(format!(
                                "block {id} has neither a secret nor a sealed one"
                            ))
                        })?;
                        store_sealed(conn, *id, &key.seal(*id, &BlockSecret::from_bytes(secret)))
                            .await?;
                        ids.push(*id);
                    }
                    if sqlite {
                        conn.execute_raw("PRAGMA secure_delete = OFF").await?;
                    }
                    // A new database's key check is part of its setup, like
                    // its schema: only sealing secrets is a change to record.
                    if !ids.is_empty() {
                        trail::append(
                            conn,
                            now_ms,
                            &Actor::System,
                            "secrets_sealed",
                            json!({}),
                            json!({"blocks_sealed": ids, "key_check_written": check.is_none()}),
                        )
                        .await?;
                    }
                    Ok(ids.len())
                })
            })
            .await?;
        if sealed > 0 {
            self.drop_old_copies().await;
        }
        Ok(sealed)
    }

    /// Re-seals every block secret under `new_key` in one writer job (the
    /// console accounts' TOTP secrets and the identity documents too), and
    /// the key check with it; from its commit on only `new_key` opens them.
    /// Returns how many secrets were re-sealed.
    pub async fn rotate_secrets(&self, new_key: SecretsKey) -> Result<usize, Error> {
        let key = self.secrets_key()?.clone();
        let now_ms = self.now_ms();
        self.write(move |conn| {
            let (key, new_key) = (key.clone(), new_key.clone());
            Box::pin(async move {
                let check = setting(conn, KEY_CHECK).await?.ok_or(SealError::WrongKey)?;
                key.verify_check(&check)?;
                let rows: Vec<(i64, Option<Vec<u8>>)> =
                    sql::query_as("SELECT id, sealed_secret FROM blocks ORDER BY id")
                        .fetch_all(&mut *conn)
                        .await?;
                for (id, sealed) in &rows {
                    let secret = key.open(*id, sealed.as_deref().unwrap_or_default())?;
                    store_sealed(conn, *id, &new_key.seal(*id, &secret)).await?;
                }
                // The console accounts' TOTP secrets are sealed under it too.
                let staff: Vec<(i64, Vec<u8>)> = sql::query_as(
                    "SELECT id, totp_sealed FROM staff WHERE totp_sealed IS NOT NULL ORDER BY id",
                )
                .fetch_all(&mut *conn)
                .await?;
                for (id, sealed) in &staff {
                    let secret = key.open_for(super::TOTP_PURPOSE, *id, sealed)?;
                    sql::query("UPDATE staff SET totp_sealed = $1 WHERE id = $2")
                        .bind(new_key.seal_for(super::TOTP_PURPOSE, *id, &secret))
                        .bind(*id)
                        .execute(&mut *conn)
                        .await?;
                }
                // And the players' identity documents, one at a time (each
                // up to the documents' size limit).
                let documents: Vec<i64> =
                    sql::query_scalar("SELECT id FROM identity_documents ORDER BY id")
                        .fetch_all(&mut *conn)
                        .await?;
                for id in &documents {
                    super::documents::reseal(conn, *id, &key, &new_key).await?;
                }
                put_setting(conn, KEY_CHECK, Some(&new_key.check_value())).await?;
                trail::append(
                    conn,
                    now_ms,
                    &Actor::Operator,
                    "secrets_rotated",
                    json!({}),
                    json!({"blocks_resealed": rows.len(), "staff_totp_resealed": staff.len(),
                           "documents_resealed": documents.len()}),
                )
                .await?;
                Ok(rows.len())
            })
        })
        .await
    }

    /// Removes the copies of the clear secrets a sealing left behind, best
    /// effort (maintenance, no change of content): on SQLite, copies the WAL
    /// into the file and empties it; on PostgreSQL, rewrites the blocks table
    /// without its dead rows (`VACUUM FULL`; its WAL segments still hold them
    /// until recycled).
    async fn drop_old_copies(&self) {
        let done = match &self.db.sqlite_path {
            Some(path) => sql::open_lite(path)
                .and_then(|conn| conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())))
                .map_err(|e| e.to_string()),
            None => sqlx::query("VACUUM FULL blocks")
                .execute(&self.db.pool)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string()),
        };
        if let Err(error) = done {
            tracing::warn!(%error, "removing old copies after sealing the secrets");
        }
    }
}

async fn store_sealed(conn: &mut Conn, block_id: i64, sealed: &[u8]) -> Result<(), Error> {
    sql::query("UPDATE blocks SET sealed_secret = $1, secret = $2 WHERE id = $3")
        .bind(sealed.to_vec())
        .bind(Vec::<u8>::new())
        .bind(block_id)
        .execute(conn)
        .await?;
    Ok(())
}
