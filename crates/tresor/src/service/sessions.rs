//! Sessions: opening, resolving and closing a player's session token.

use super::{Service, SessionOrigin, os_random_32, sha256_hex};
use crate::error::{Error, SessionEnd};
use crate::model::Player;
use crate::protect;
use crate::store::documents::username;
use crate::store::sql;
use crate::trail::{self, Actor};
use serde_json::json;

impl Service {
    /// Whether a session (a player's or a console's) still holds at
    /// `now_ms`: not ended, younger than the longest age, not idle too long.
    /// The reason lets the page say why one must log in again.
    pub(super) fn session_still_open(
        &self,
        ended: bool,
        created_at_ms: i64,
        last_seen_at_ms: i64,
        now_ms: i64,
    ) -> Result<(), Error> {
        if ended {
            return Err(Error::SessionEnded(SessionEnd::Ended));
        }
        if now_ms - created_at_ms > self.settings.session_max_s * 1000 {
            return Err(Error::SessionEnded(SessionEnd::MaxAge {
                after_s: self.settings.session_max_s,
            }));
        }
        if now_ms - last_seen_at_ms > self.settings.session_idle_s * 1000 {
            return Err(Error::SessionEnded(SessionEnd::Idle {
                after_s: self.settings.session_idle_s,
            }));
        }
        Ok(())
    }

    /// Opens a session and returns its token (only its hash is stored).
    pub async fn open_session(&self, player_id: i64) -> Result<String, Error> {
        self.open_session_from(player_id, SessionOrigin::default())
            .await
    }

    /// [`Service::open_session`], keeping where the session was opened from
    /// (the player's list of sessions shows it).
    pub async fn open_session_from(
        &self,
        player_id: i64,
        origin: SessionOrigin,
    ) -> Result<String, Error> {
        let token = hex::encode(os_random_32());
        let token_hash = sha256_hex(token.as_bytes());
        let now_ms = self.now_ms();
        self.write(move |conn| {
            let token_hash = token_hash.clone();
            let origin = origin.clone();
            Box::pin(async move {
                // Checked here, in the job that opens the session, so that a
                // login racing an exclusion cannot slip through. A suspended
                // account logs in (docs/ACCOUNT.md, "Suspension"): to read
                // its balance and statement and ask a withdrawal, held until
                // the suspension is lifted; its deposits and stakes are
                // refused where they are decided.
                protect::refuse_if_excluded(conn, player_id, now_ms).await?;
                sql::query(
                    "INSERT INTO sessions (token_hash, player_id, created_at_ms, last_seen_at_ms, \
                     user_agent, address) VALUES ($1, $2, $3, $3, $4, $5)",
                )
                .bind(token_hash)
                .bind(player_id)
                .bind(now_ms)
                .bind(origin.user_agent)
                .bind(origin.address)
                .execute(&mut *conn)
                .await?;
                // The trail records that a session opened, never its token.
                let username = username(conn, player_id).await?;
                trail::append(
                    conn,
                    now_ms,
                    &Actor::player(player_id, &username),
                    "login",
                    json!({"username": username}),
                    json!({"session": "opened"}),
                )
                .await?;
                Ok(())
            })
        })
        .await?;
        Ok(token)
    }

    /// The player of a live session; refreshes its idle timer now and then.
    pub async fn session_player(&self, token: &str) -> Result<Player, Error> {
        let token_hash = sha256_hex(token.as_bytes());
        let mut conn = self.db.conn().await?;
        let row = sql::query(
            "SELECT s.created_at_ms, s.last_seen_at_ms, s.ended_at_ms, p.id, p.username, p.account_id \
             FROM sessions s JOIN players p ON p.id = s.player_id \
             WHERE s.token_hash = $1",
        )
        .bind(&token_hash)
        .fetch_optional(&mut conn)
        .await?
        .ok_or(Error::Unauthorized)?;
        drop(conn);
        let now_ms = self.now_ms();
        let created_at_ms: i64 = row.try_get("created_at_ms")?;
        let last_seen_at_ms: i64 = row.try_get("last_seen_at_ms")?;
        let ended_at_ms: Option<i64> = row.try_get("ended_at_ms")?;
        self.session_still_open(
            ended_at_ms.is_some(),
            created_at_ms,
            last_seen_at_ms,
            now_ms,
        )?;
        let player = Player {
            id: row.try_get("id")?,
            username: row.try_get("username")?,
            account_id: row.try_get("account_id")?,
        };
        let seen_ms = if now_ms - last_seen_at_ms > 60_000 {
            now_ms
        } else {
            last_seen_at_ms
        };
        self.refresh_session(
            Sessions::Players,
            token_hash.clone(),
            last_seen_at_ms,
            now_ms,
        )
        .await?;
        // Kept for the purchases that follow (`session_cache.rs`), once the
        // idle timer is refreshed.
        self.sessions
            .keep(&token_hash, &player, created_at_ms, seen_ms);
        Ok(player)
    }

    /// Whether the session of `token` still holds, by a read only: unlike
    /// [`Service::session_player`] it never refreshes the idle timer, so
    /// that the page may ask every half minute whether its session was
    /// ended elsewhere without keeping an idle session alive.
    pub async fn session_check(&self, token: &str) -> Result<(), Error> {
        let token_hash = sha256_hex(token.as_bytes());
        let row = sql::query(
            "SELECT created_at_ms, last_seen_at_ms, ended_at_ms FROM sessions WHERE token_hash = $1",
        )
        .bind(&token_hash)
        .fetch_optional(&mut *self.db.conn().await?)
        .await?
        .ok_or(Error::Unauthorized)?;
        let ended_at_ms: Option<i64> = row.try_get("ended_at_ms")?;
        self.session_still_open(
            ended_at_ms.is_some(),
            row.try_get("created_at_ms")?,
            row.try_get("last_seen_at_ms")?,
            self.now_ms(),
        )
    }

    /// When the session of `token` opened (ms), for the page's "time played
    /// this session"; `None` for an unknown token.
    pub async fn session_started_ms(&self, token: &str) -> Result<Option<i64>, Error> {
        let token_hash = sha256_hex(token.as_bytes());
        sql::query_scalar("SELECT created_at_ms FROM sessions WHERE token_hash = $1")
            .bind(token_hash)
            .fetch_optional(&mut *self.db.conn().await?)
            .await
    }

    /// The player of a session that has not ended (expired or not), by a
    /// read only: what decides whether a logout needs the writer at all.
    pub async fn live_session(&self, token: &str) -> Result<Option<i64>, Error> {
        let token_hash = sha256_hex(token.as_bytes());
        sql::query_scalar(Sessions::Players.live_sql())
            .bind(token_hash)
            .fetch_optional(&mut *self.db.conn().await?)
            .await
    }

    /// Ends a session. An unknown or ended one is found by a read and costs
    /// no writer job: nothing unauthenticated reaches the writer.
    pub async fn close_session(&self, token: &str) -> Result<(), Error> {
        self.end_session(Sessions::Players, token).await
    }

    /// Refreshes the idle timer of the session of `token_hash`, last seen
    /// at `last_seen_at_ms`: a write, so once a minute at most. Done or not,
    /// it is the same to the next refresh: abandoned at the outage budget
    /// even once the writer took it.
    pub(super) async fn refresh_session(
        &self,
        sessions: Sessions,
        token_hash: String,
        last_seen_at_ms: i64,
        now_ms: i64,
    ) -> Result<(), Error> {
        if now_ms - last_seen_at_ms <= 60_000 {
            return Ok(());
        }
        self.writer
            .run_idempotent(move |conn| {
                let token_hash = token_hash.clone();
                Box::pin(async move {
                    sql::query(sessions.refresh_sql())
                        .bind(now_ms)
                        .bind(token_hash)
                        .execute(&mut *conn)
                        .await?;
                    Ok(())
                })
            })
            .await
    }

    /// Ends the session of `token`, in the trail as its owner's logout. An
    /// unknown or ended one is found by a read and costs no writer job.
    pub(super) async fn end_session(&self, sessions: Sessions, token: &str) -> Result<(), Error> {
        let token_hash = sha256_hex(token.as_bytes());
        let live: Option<i64> = sql::query_scalar(sessions.live_sql())
            .bind(&token_hash)
            .fetch_optional(&mut *self.db.conn().await?)
            .await?;
        if let Sessions::Players = sessions {
            self.sessions.forget(&token_hash);
        }
        if live.is_none() {
            return Ok(());
        }
        let now_ms = self.now_ms();
        self.write(move |conn| {
            let token_hash = token_hash.clone();
            Box::pin(async move {
                let closed: Option<(i64, String)> = sql::query_as(sessions.end_sql())
                    .bind(now_ms)
                    .bind(token_hash)
                    .fetch_optional(&mut *conn)
                    .await?;
                if let Some((id, username)) = closed {
                    let (actor, action) = sessions.logout(id, &username);
                    trail::append(
                        conn,
                        now_ms,
                        &actor,
                        action,
                        json!({}),
                        json!({"session": "closed"}),
                    )
                    .await?;
                }
                Ok(())
            })
        })
        .await
    }
}

/// Whose sessions: a player's (`sessions`) or a console account's
/// (`staff_sessions`) — the same life, opened, refreshed and ended, in two
/// tables.
#[derive(Debug, Clone, Copy)]
pub(super) enum Sessions {
    Players,
    Staff,
}

impl Sessions {
    /// The owner of a session not ended, by its token's hash.
    fn live_sql(self) -> &'static str {
        match self {
            Sessions::Players => {
                "SELECT player_id FROM sessions WHERE token_hash = $1 AND ended_at_ms IS NULL"
            }
            Sessions::Staff => {
                "SELECT staff_id FROM staff_sessions WHERE token_hash = $1 AND ended_at_ms IS NULL"
            }
        }
    }

    fn refresh_sql(self) -> &'static str {
        match self {
            Sessions::Players => "UPDATE sessions SET last_seen_at_ms = $1 WHERE token_hash = $2",
            Sessions::Staff => {
                "UPDATE staff_sessions SET last_seen_at_ms = $1 WHERE token_hash = $2"
            }
        }
    }

    /// Ends a live session, returning its owner's id and name.
    fn end_sql(self) -> &'static str {
        match self {
            Sessions::Players => {
                "UPDATE sessions SET ended_at_ms = $1 WHERE token_hash = $2 AND ended_at_ms IS NULL \
                 RETURNING player_id, (SELECT username FROM players WHERE players.id = sessions.player_id)"
            }
            Sessions::Staff => {
                "UPDATE staff_sessions SET ended_at_ms = $1 WHERE token_hash = $2 AND ended_at_ms IS NULL \
                 RETURNING staff_id, (SELECT username FROM staff WHERE staff.id = staff_sessions.staff_id)"
            }
        }
    }

    /// Who logged out, and the trail's word for it.
    fn logout(self, id: i64, username: &str) -> (Actor, &'static str) {
        match self {
            Sessions::Players => (Actor::player(id, username), "logout"),
            Sessions::Staff => (Actor::staff(username), "console_logout"),
        }
    }
}
