//! What the operator's console reads that no other caller does (beside the
//! dashboard, `dashboard.rs`): the players' search and record, the trail's
//! head and its last verification, and the re-check of a published block.

use super::{Service, rfc3339};
use crate::error::Error;
use crate::model::Player;
use crate::store::sql;
use crate::trail::{self, Actor, Verdict};
use serde::Serialize;
use serde_json::{Value, json};
use tresor_game::BlockSecret;

/// A player as the console's search lists them.
#[derive(Debug, Clone, Serialize)]
pub struct PlayerListing {
    pub id: i64,
    pub username: String,
    pub status: Option<String>,
    pub balance_cents: i64,
    pub opened_at: String,
    pub banned: bool,
    /// Suspended by the operator (the list's marker).
    pub suspended: bool,
    pub excluded_until: Option<String>,
}

/// What re-shuffling a published block found.
#[derive(Debug, Clone, Serialize)]
pub struct Recheck {
    pub block_id: i64,
    pub ok: bool,
    /// SHA-256 of the published secret is the commitment published before sales.
    pub commitment_ok: bool,
    /// The shuffle holds exactly the prize table.
    pub table_ok: bool,
    pub units: u32,
    /// Every unit sold was sold at the level the shuffle gives its index.
    pub plays_ok: bool,
    pub plays_checked: i64,
}

impl Service {
    /// Players whose name contains `query` (folded as logins fold it), or
    /// whose id it is; at most `limit`, by id.
    pub async fn search_players(
        &self,
        query: &str,
        limit: i64,
    ) -> Result<Vec<PlayerListing>, Error> {
        let query = query.trim();
        let key = crate::model::Username::normalise(query).key().to_owned();
        let pattern = format!(
            "%{}%",
            key.replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_")
        );
        let id: i64 = query.parse().unwrap_or(0);
        let rows = sql::query(
            "SELECT p.id, p.username, a.status, acc.balance_cents, p.created_at_ms, a.banned_at_ms, \
             a.suspended_at_ms, pr.excluded_until_ms FROM players p JOIN accounts acc ON acc.id = p.account_id \
             LEFT JOIN player_accounts a ON a.player_id = p.id \
             LEFT JOIN protections pr ON pr.player_id = p.id \
             WHERE $1 = '' OR p.id = $2 OR p.username_key LIKE $3 ESCAPE '\\' \
             ORDER BY p.id LIMIT $4",
        )
        .bind(query)
        .bind(id)
        .bind(pattern)
        .bind(limit)
        .fetch_all(&mut *self.db.conn().await?)
        .await?;
        let now_ms = self.now_ms();
        rows.iter()
            .map(|row| {
                let excluded_until: Option<i64> = row.try_get("excluded_until_ms")?;
                Ok(PlayerListing {
                    id: row.try_get("id")?,
                    username: row.try_get("username")?,
                    status: row.try_get("status")?,
                    balance_cents: row.try_get("balance_cents")?,
                    opened_at: rfc3339(row.try_get("created_at_ms")?),
                    banned: row.try_get::<Option<i64>, _>("banned_at_ms")?.is_some(),
                    suspended: row.try_get::<Option<i64>, _>("suspended_at_ms")?.is_some(),
                    excluded_until: excluded_until.filter(|t| *t > now_ms).map(rfc3339),
                })
            })
            .collect()
    }

    /// The site's settings as the console shows them.
    pub async fn site(&self) -> Result<Value, Error> {
        let status = self.status().await?;
        let rules_version =
            crate::store::accounts::rules_version(&mut *self.db.conn().await?).await?;
        let restore_hold = self.restore_hold().await?;
        Ok(json!({
            "sales_open_at": status.opens_at,
            "announcement": status.message,
            "restore_hold": restore_hold,
            "rules_version": rules_version,
        }))
    }

    /// The player of id `id`, or `NotFound`.
    pub async fn player_by_id(&self, id: i64) -> Result<Player, Error> {
        crate::store::accounts::player_by_id(&mut *self.db.conn().await?, id).await
    }

    /// The trail's head, and its last verification (a trail record itself).
    pub async fn trail_status(&self) -> Result<Value, Error> {
        let mut conn = self.db.conn().await?;
        let head = last_record(&mut conn).await?;
        let last = sql::query(
            "SELECT at_ms, actor, result FROM trail WHERE action = 'trail_verify' \
             ORDER BY seq DESC LIMIT 1",
        )
        .fetch_optional(&mut conn)
        .await?;
        let last_verification = match last {
            None => Value::Null,
            Some(row) => {
                let result: Value =
                    serde_json::from_str(&row.try_get::<String, _>("result")?).unwrap_or_default();
                let actor: String = row.try_get("actor")?;
                json!({
                    "at": rfc3339(row.try_get("at_ms")?),
                    "by": actor.strip_prefix("staff:").unwrap_or(&actor),
                    "ok": result["ok"],
                    "records": result["records"],
                })
            }
        };
        Ok(json!({
            "head": {"seq": head.0, "hash": head.1},
            "last_verification": last_verification,
        }))
    }

    /// Verifies the whole trail and records who did, when and what was
    /// found, as a trail record (`trail_verify`).
    pub async fn verify_trail_as(&self, actor: Actor) -> Result<Value, Error> {
        let verdict = trail::verify(&self.db.pool, |_| {}).await?;
        let (ok, records, broken) = match &verdict {
            Verdict::Intact { records, .. } => (true, *records, Value::Null),
            Verdict::Broken { seq, reason } => (
                false,
                (seq - 1).max(0),
                json!({"seq": seq, "reason": reason}),
            ),
        };
        let now_ms = self.now_ms();
        let result = json!({"ok": ok, "records": records, "broken": broken});
        let head = self
            .write(move |conn| {
                let (actor, result) = (actor.clone(), result.clone());
                Box::pin(async move {
                    let seq =
                        trail::append(conn, now_ms, &actor, "trail_verify", json!({}), result)
                            .await?;
                    Ok(seq)
                })
            })
            .await?;
        let _ = head;
        let head_row = last_record(&mut *self.db.conn().await?).await?;
        Ok(json!({
            "ok": ok,
            "records": records,
            "broken": broken,
            "head": {"seq": head_row.0, "hash": head_row.1},
            "at": rfc3339(now_ms),
        }))
    }

    /// Re-derives a published block from its secret, as `tresor block
    /// verify` does, and checks every unit sold against it.
    pub async fn recheck_block(&self, block_id: i64) -> Result<Recheck, Error> {
        let block = self.block(block_id).await?;
        let Some(secret_hex) = block.secret else {
            return Err(Error::Validation(format!(
                "block {block_id} is still on sale: its secret is published once it is sold out \
                 or its emission closed"
            )));
        };
        let secret = BlockSecret::parse_hex(&secret_hex)
            .map_err(|_| Error::Validation("the published secret does not parse".to_owned()))?;
        let sold: Vec<(i64, i64)> =
            sql::query_as("SELECT unit_index, level FROM plays WHERE block_id = $1")
                .bind(block_id)
                .fetch_all(&mut *self.db.conn().await?)
                .await?;
        let commitment = block.commitment.clone();
        // The block's game as its emission pinned it.
        let data = self.block_data(block_id).await?;
        let (game, table) = (data.game, data.table());
        let checked = tokio::task::spawn_blocking(move || {
            let commitment_ok = game.commitment(&secret).to_hex() == commitment;
            let outcomes = game.outcomes(table, &secret);
            let mut counts = [0u32; 10];
            for level in &outcomes {
                counts[usize::from(level.get())] += 1;
            }
            let table_ok = counts == table.counts();
            let plays_ok = sold.iter().all(|(index, level)| {
                outcomes
                    .get(*index as usize)
                    .is_some_and(|l| i64::from(l.get()) == *level)
            });
            (commitment_ok, table_ok, plays_ok, sold.len() as i64)
        })
        .await
        .map_err(|_| Error::Unavailable("the re-check did not finish"))?;
        let (commitment_ok, table_ok, plays_ok, plays_checked) = checked;
        Ok(Recheck {
            block_id,
            ok: commitment_ok && table_ok && plays_ok,
            commitment_ok,
            table_ok,
            units: game.units_per_block(),
            plays_ok,
            plays_checked,
        })
    }
}

/// The number and hash of the trail's last record (the v1 genesis for none).
async fn last_record(conn: &mut crate::store::Conn) -> Result<(i64, String), Error> {
    Ok(
        sql::query_as("SELECT seq, hash FROM trail ORDER BY seq DESC LIMIT 1")
            .fetch_optional(conn)
            .await?
            .unwrap_or_else(|| (0, trail::GENESIS_HASH.to_owned())),
    )
}
