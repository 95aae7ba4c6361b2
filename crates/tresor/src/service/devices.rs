//! The player's open sessions: each with the device (from its User-Agent),
//! the address it was opened from and its last use; the player ends any of
//! the others, or all of them at once.

use super::{Service, rfc3339, sha256_hex};
use crate::account::device;
use crate::error::Error;
use crate::model::Player;
use crate::store::sql;
use crate::trail::{self, Actor};
use serde::Serialize;
use serde_json::json;

/// Where a session was opened from (none known: a session opened by a test
/// or a command).
#[derive(Debug, Clone, Default)]
pub struct SessionOrigin {
    pub user_agent: Option<String>,
    pub address: Option<String>,
}

/// One open session, as the player sees it.
#[derive(Debug, Clone, Serialize)]
pub struct SessionView {
    /// The first 16 hex digits of the hash of its token (never the token).
    pub id: String,
    pub device: String,
    /// The browser and the system of `device`, each null when not
    /// recognised: the page words them in its language.
    pub browser: Option<&'static str>,
    pub system: Option<&'static str>,
    pub user_agent: Option<String>,
    pub address: Option<String>,
    pub opened_at: String,
    pub last_used_at: String,
    /// The session of this request.
    pub current: bool,
}

/// A session's id: the start of its token's hash.
fn id_of(token_hash: &str) -> String {
    token_hash[..16].to_owned()
}

impl Service {
    /// The player's sessions still open (not ended, idle or past their
    /// length), the most recently used first.
    pub async fn open_sessions(
        &self,
        player: &Player,
        current_token: &str,
    ) -> Result<Vec<SessionView>, Error> {
        let now_ms = self.now_ms();
        let current = sha256_hex(current_token.as_bytes());
        let rows = sql::query(
            "SELECT token_hash, user_agent, address, created_at_ms, last_seen_at_ms FROM sessions \
             WHERE player_id = $1 AND ended_at_ms IS NULL AND created_at_ms > $2 \
             AND last_seen_at_ms > $3 ORDER BY last_seen_at_ms DESC, created_at_ms DESC",
        )
        .bind(player.id)
        .bind(now_ms - self.settings.session_max_s * 1000)
        .bind(now_ms - self.settings.session_idle_s * 1000)
        .fetch_all(&mut *self.db.conn().await?)
        .await?;
        rows.into_iter()
            .map(|row| {
                let hash: String = row.try_get("token_hash")?;
                let user_agent: Option<String> = row.try_get("user_agent")?;
                let (browser, system) = device::parts(user_agent.as_deref());
                Ok(SessionView {
                    id: id_of(&hash),
                    device: device::describe(user_agent.as_deref()),
                    browser,
                    system,
                    user_agent,
                    address: row.try_get("address")?,
                    opened_at: rfc3339(row.try_get("created_at_ms")?),
                    last_used_at: rfc3339(row.try_get("last_seen_at_ms")?),
                    current: hash == current,
                })
            })
            .collect()
    }

    /// Ends the player's session `id` (one of theirs, not this request's:
    /// that one is a logout), or with `None` every session but this
    /// request's. Returns how many ended; an unknown id is `not_found`.
    pub async fn end_sessions_of(
        &self,
        player: &Player,
        current_token: &str,
        id: Option<&str>,
    ) -> Result<u64, Error> {
        let current = sha256_hex(current_token.as_bytes());
        if let Some(id) = id
            && (id.len() != 16 || !id.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            return Err(Error::NotFound);
        }
        if id.is_some_and(|id| current.starts_with(id)) {
            return Err(Error::Validation(
                "id: this is the session you are using: log out instead".to_owned(),
            ));
        }
        let pattern = id.map(|id| format!("{}%", id.to_ascii_lowercase()));
        let now_ms = self.now_ms();
        let player = player.clone();
        self.write(move |conn| {
            let (player, current, pattern) = (player.clone(), current.clone(), pattern.clone());
            Box::pin(async move {
                let ended = sql::query(
                    "UPDATE sessions SET ended_at_ms = $1 WHERE player_id = $2 \
                     AND ended_at_ms IS NULL AND token_hash <> $3 \
                     AND ($4 = '' OR token_hash LIKE $4)",
                )
                .bind(now_ms)
                .bind(player.id)
                .bind(current)
                .bind(pattern.clone().unwrap_or_default())
                .execute(&mut *conn)
                .await?;
                if pattern.is_some() && ended == 0 {
                    return Err(Error::NotFound);
                }
                trail::append(
                    conn,
                    now_ms,
                    &Actor::player(player.id, &player.username),
                    "sessions_ended",
                    json!({"which": if pattern.is_some() { "one" } else { "all_others" }}),
                    json!({"sessions_ended": ended}),
                )
                .await?;
                Ok(ended)
            })
        })
        .await
    }
}
