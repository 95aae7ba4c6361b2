//! What the players' listener publishes of the transparency log (never its
//! entries: they hold personal data): the keys, each writer's log with its
//! latest signed checkpoint, and the hash tiles (C2SP tlog-tiles) built from
//! `log_hashes` at that checkpoint's size; the witnesses' cosignatures
//! (C2SP tlog-cosignature): taken, checked, stored, published. Only a
//! witness's request writes, never a purchase; a line sent again writes
//! nothing, and an older one never replaces a newer.

use super::Service;
use crate::error::Error;
use crate::logcheck::{self, LastSigned, ListedKey, TILE_HEIGHT, VerifierKey, WitnessKey};
use crate::store::{Conn, sql};
use crate::trail::retired;
use serde::Serialize;
use std::collections::BTreeMap;
use tlog_tiles::stored_hash_index;

/// `GET /log/`: the installation's keys (each retired one with the last
/// size it signed of each log), its witnesses and its logs.
#[derive(Debug, Clone, Serialize)]
pub struct LogIndex {
    /// The key that signs checkpoints now.
    pub key: Option<String>,
    pub keys: Vec<ListedKey>,
    /// The witnesses whose cosignatures the site takes (verifier keys).
    pub witnesses: Vec<String>,
    pub logs: Vec<PublishedLog>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PublishedLog {
    pub writer: String,
    pub origin: String,
    pub checkpoint: String,
    /// The latest checkpoint with the witnesses' cosignatures.
    pub cosigned: String,
    pub tiles: String,
}

/// A tile's bytes, and whether it is full (then it never changes).
#[derive(Debug, Clone)]
pub struct PublishedTile {
    pub data: Vec<u8>,
    pub full: bool,
}

impl Service {
    /// The keys (oldest first) and every log with a checkpoint.
    pub async fn log_index(&self) -> Result<LogIndex, Error> {
        let mut conn = self.db.conn().await?;
        let keys: Vec<(String, i64)> =
            sql::query_as("SELECT vkey, since_ms FROM log_keys ORDER BY since_ms, id")
                .fetch_all(&mut conn)
                .await?;
        let logs: Vec<(String, String)> = sql::query_as(
            "SELECT writer, origin FROM logs \
             WHERE EXISTS (SELECT 1 FROM checkpoints c WHERE c.log_id = logs.id) ORDER BY id",
        )
        .fetch_all(&mut conn)
        .await?;
        let current = keys.last().map(|(vkey, _)| vkey.clone());
        let mut ends = self.retired_ends(&mut conn, &keys, &logs).await?;
        Ok(LogIndex {
            keys: keys
                .into_iter()
                .map(|(vkey, since_ms)| ListedKey {
                    last_signed: (Some(&vkey) != current.as_ref())
                        .then(|| ends.remove(&vkey).unwrap_or_default()),
                    vkey,
                    since_ms,
                })
                .collect(),
            key: current,
            witnesses: self
                .settings
                .witnesses
                .iter()
                .map(|w| w.as_str().to_owned())
                .collect(),
            logs: logs
                .into_iter()
                .map(|(writer, origin)| PublishedLog {
                    checkpoint: format!("/log/{writer}/checkpoint"),
                    cosigned: format!("/log/{writer}/cosigned"),
                    tiles: format!("/log/{writer}/tile/"),
                    writer,
                    origin,
                })
                .collect(),
        })
    }

    /// Each retired key's last size of each log it signed: the one recorded
    /// when the log's writer moved to a later key, or, for a log whose latest
    /// checkpoint that key signed (its server not started again yet), that
    /// checkpoint's size. The current key (the last of `keys`) has none.
    async fn retired_ends(
        &self,
        conn: &mut Conn,
        keys: &[(String, i64)],
        logs: &[(String, String)],
    ) -> Result<BTreeMap<String, Vec<LastSigned>>, Error> {
        let mut ends: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
        let Some(((current, _), retired_keys)) = keys.split_last() else {
            return Ok(BTreeMap::new());
        };
        if retired_keys.is_empty() {
            return Ok(BTreeMap::new());
        }
        let mut end = |vkey: &str, origin: &str, size: u64| {
            let size_then = ends
                .entry(vkey.to_owned())
                .or_default()
                .entry(origin.to_owned())
                .or_default();
            *size_then = (*size_then).max(size);
        };
        for (vkey, origin, size) in retired::recorded(conn).await? {
            end(&vkey, &origin, size);
        }
        let parsed: Vec<VerifierKey> = keys
            .iter()
            .filter_map(|(vkey, _)| VerifierKey::parse(vkey).ok())
            .collect();
        for (writer, origin) in logs {
            let Some((_, size, note)) = self.latest_checkpoint(conn, writer).await? else {
                continue;
            };
            if let Some(signer) = retired::named_signer(&note, &parsed)
                && signer.as_str() != current
            {
                end(signer.as_str(), origin, size.max(0) as u64);
            }
        }
        Ok(ends
            .into_iter()
            .map(|(vkey, logs)| {
                let last = logs
                    .into_iter()
                    .map(|(origin, size)| LastSigned { origin, size })
                    .collect();
                (vkey, last)
            })
            .collect())
    }

    /// The latest signed checkpoint of `writer`'s log: its id, size and note.
    async fn latest_checkpoint(
        &self,
        conn: &mut Conn,
        writer: &str,
    ) -> Result<Option<(i64, i64, String)>, Error> {
        sql::query_as(
            "SELECT c.log_id, c.size, c.note FROM checkpoints c JOIN logs l ON l.id = c.log_id \
             WHERE l.writer = $1 ORDER BY c.size DESC LIMIT 1",
        )
        .bind(writer)
        .fetch_optional(conn)
        .await
    }

    /// `GET /log/<writer>/checkpoint`: the latest note, or `None`.
    pub async fn log_checkpoint(&self, writer: &str) -> Result<Option<String>, Error> {
        let mut conn = self.db.conn().await?;
        Ok(self
            .latest_checkpoint(&mut conn, writer)
            .await?
            .map(|(_, _, note)| note))
    }

    /// `GET /log/<writer>/cosigned`: the latest checkpoint that witnesses
    /// cosigned, its note with their cosignature lines, or `None`.
    pub async fn log_cosigned(&self, writer: &str) -> Result<Option<String>, Error> {
        let mut conn = self.db.conn().await?;
        let log_id: Option<i64> = sql::query_scalar("SELECT id FROM logs WHERE writer = $1")
            .bind(writer)
            .fetch_optional(&mut conn)
            .await?;
        let Some(log_id) = log_id else {
            return Ok(None);
        };
        Ok(crate::trail::receipt::latest_cosigned(&mut conn, log_id, 0)
            .await?
            .map(|(_, note)| note))
    }

    /// `POST /log/<writer>/cosignature`: a witness's cosignature `line` of
    /// the checkpoint of `size` records, stored when the witness is one the
    /// site was told of and the line verifies over the checkpoint kept at
    /// that size; refused with nothing stored otherwise. The line kept
    /// already is nothing to do (nothing written); a line no newer than the
    /// one kept is refused (`cosignature_not_newer`).
    pub async fn log_cosign(&self, writer: &str, size: u64, line: &str) -> Result<(), Error> {
        let line = line.trim_end_matches('\n');
        let witness = self
            .settings
            .witnesses
            .iter()
            .find(|w| w.names(line))
            .ok_or_else(|| {
                Error::Validation(format!(
                    "unknown_witness: the cosignature is not of a witness this site takes \
                     (tresor serve --witness): {}",
                    line.chars().take(120).collect::<String>()
                ))
            })?
            .clone();
        let mut conn = self.db.conn().await?;
        let found: Option<(i64, String)> = sql::query_as(
            "SELECT c.log_id, c.note FROM checkpoints c JOIN logs l ON l.id = c.log_id \
             WHERE l.writer = $1 AND c.size = $2",
        )
        .bind(writer)
        .bind(i64::try_from(size).unwrap_or(i64::MAX))
        .fetch_optional(&mut conn)
        .await?;
        let Some((log_id, note)) = found else {
            return Err(Error::Validation(format!(
                "no_checkpoint: the log {writer} has no signed checkpoint of {size} records"
            )));
        };
        let (body, _) = logcheck::split_note(&note)
            .map_err(|e| Error::Validation(format!("the stored checkpoint: {e}")))?;
        let time = witness
            .verify(&body, line)
            .map_err(|e| Error::Validation(format!("bad_cosignature: {e}")))?;
        // The same line again, or an older one: decided on a read, without
        // the writer; decided again inside its job (two may race).
        let kept = kept_cosignature(&mut conn, log_id, size, &witness).await?;
        drop(conn);
        if !replaces(kept.as_deref(), line, time, &body, &witness)? {
            return Ok(());
        }
        self.store_cosignature(log_id, size, witness, line.to_owned(), time, body)
            .await
    }

    /// The writer's job storing a checked cosignature, unless the line kept
    /// meanwhile is the same or newer.
    async fn store_cosignature(
        &self,
        log_id: i64,
        size: u64,
        witness: WitnessKey,
        line: String,
        time: u64,
        body: String,
    ) -> Result<(), Error> {
        let now_ms = self.now_ms();
        self.write(move |conn| {
            let (line, body, witness) = (line.clone(), body.clone(), witness.clone());
            Box::pin(async move {
                let kept = kept_cosignature(conn, log_id, size, &witness).await?;
                if !replaces(kept.as_deref(), &line, time, &body, &witness)? {
                    return Ok(());
                }
                sql::query(
                    "INSERT INTO cosignatures (log_id, size, witness_vkey, line, at_ms) \
                     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (log_id, size, witness_vkey) \
                     DO UPDATE SET line = excluded.line, at_ms = excluded.at_ms",
                )
                .bind(log_id)
                .bind(size as i64)
                .bind(witness.as_str())
                .bind(line)
                .bind(now_ms)
                .execute(&mut *conn)
                .await?;
                Ok(())
            })
        })
        .await
    }

    /// `GET /log/<writer>/tile/<path>`: a hash tile of the tree at the
    /// latest checkpoint's size, or `None` (no such log, a bad path, a tile
    /// past the end of the tree).
    pub async fn log_tile(&self, writer: &str, path: &str) -> Result<Option<PublishedTile>, Error> {
        let Some(tile) = logcheck::parse_tile_path(path) else {
            return Ok(None);
        };
        let mut conn = self.db.conn().await?;
        let Some((log_id, size, _)) = self.latest_checkpoint(&mut conn, writer).await? else {
            return Ok(None);
        };
        let Some(full) = logcheck::tile_in_tree(&tile, size.max(0) as u64) else {
            return Ok(None);
        };
        let level = tile.level() * TILE_HEIGHT;
        let start = tile.level_index() << TILE_HEIGHT;
        let indexes: Vec<u64> = (0..u64::from(tile.width()))
            .map(|i| stored_hash_index(level, start + i))
            .collect();
        let found = crate::trail::tiles::read(&mut conn, log_id, &indexes).await?;
        let mut data = Vec::with_capacity(indexes.len() * 32);
        for index in &indexes {
            match found.get(index) {
                Some(hash) => data.extend_from_slice(&hash.0),
                _ => {
                    return Err(Error::Database(sqlx::Error::Protocol(format!(
                        "the log of {writer} lacks its stored hash {index} below its checkpoint"
                    ))));
                }
            }
        }
        Ok(Some(PublishedTile { data, full }))
    }
}

/// The cosignature line kept of `witness` for the checkpoint of `size`
/// records of the log `log_id`, if any.
async fn kept_cosignature(
    conn: &mut Conn,
    log_id: i64,
    size: u64,
    witness: &WitnessKey,
) -> Result<Option<String>, Error> {
    sql::query_scalar(
        "SELECT line FROM cosignatures WHERE log_id = $1 AND size = $2 AND witness_vkey = $3",
    )
    .bind(log_id)
    .bind(size as i64)
    .bind(witness.as_str())
    .fetch_optional(conn)
    .await
}

/// Whether `line` (checked, of `time`) is to be stored over the `kept` one
/// of the same witness and checkpoint: nothing kept, or a newer time. The
/// same line is nothing to do; an older or equal time is refused. A kept
/// line that no longer verifies over `body` is replaced.
fn replaces(
    kept: Option<&str>,
    line: &str,
    time: u64,
    body: &str,
    witness: &WitnessKey,
) -> Result<bool, Error> {
    let Some(kept) = kept else {
        return Ok(true);
    };
    if kept == line {
        return Ok(false);
    }
    match witness.verify(body, kept) {
        Ok(kept) if time <= kept => Err(Error::CosignatureNotNewer { time, kept }),
        _ => Ok(true),
    }
}
