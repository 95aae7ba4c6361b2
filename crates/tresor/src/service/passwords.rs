//! Players' passwords and e-mail: a change (the current password asked, the
//! other sessions ended), a reset by mail with a single-use token that
//! expires (only its SHA-256 is stored; an unknown address is answered as
//! a known one), and the confirmation of an address. Tokens are in
//! `mail_tokens` (migration 0014).

use super::hashing::{hash_password, password_rule, with_hashing_permit};
use super::notify::Notice;
use super::reauth::{PasswordConfirmed, PasswordOf};
use super::{Service, os_random_32, rfc3339, sha256_hex};
use crate::error::Error;
use crate::model::Player;
use crate::store::Conn;
use crate::store::accounts::end_sessions;
use crate::store::documents::username;
use crate::store::sql;
use crate::trail::{self, Actor};
use serde_json::json;

/// A reset link is valid this long.
pub const RESET_TTL_MS: i64 = 3600 * 1000;
/// A confirmation link is valid this long.
pub const CONFIRM_TTL_MS: i64 = 7 * 24 * 3600 * 1000;

/// A fresh token: what goes in the link, and its hash (what is stored).
pub(super) fn new_token() -> (String, String) {
    let token = hex::encode(os_random_32());
    let hash = sha256_hex(token.as_bytes());
    (token, hash)
}

/// An address as compared: trimmed, lower case.
pub(super) fn address_key(email: &str) -> String {
    email.trim().to_lowercase()
}

/// Stores a token sent to `email` for `player_id`.
pub(super) async fn insert_token(
    conn: &mut Conn,
    hash: &str,
    purpose: &str,
    player_id: i64,
    email: &str,
    now_ms: i64,
    ttl_ms: i64,
) -> Result<(), Error> {
    sql::query(
        "INSERT INTO mail_tokens (token_hash, purpose, player_id, email, created_at_ms, expires_at_ms) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(hash)
    .bind(purpose)
    .bind(player_id)
    .bind(email)
    .bind(now_ms)
    .bind(now_ms + ttl_ms)
    .execute(conn)
    .await?;
    Ok(())
}

/// Takes the token `token` of `purpose`: its player and address, and marks
/// it used; unknown, used or expired is [`Error::InvalidToken`].
async fn take_token(
    conn: &mut Conn,
    token: &str,
    purpose: &str,
    now_ms: i64,
) -> Result<(i64, String), Error> {
    let row = sql::query(
        "SELECT player_id, email FROM mail_tokens WHERE token_hash = $1 AND purpose = $2 \
         AND used_at_ms IS NULL AND expires_at_ms > $3",
    )
    .bind(sha256_hex(token.trim().as_bytes()))
    .bind(purpose)
    .bind(now_ms)
    .fetch_optional(&mut *conn)
    .await?
    .ok_or(Error::InvalidToken)?;
    let player_id: i64 = row.try_get("player_id")?;
    // Every token of this purpose of the player is spent with this one.
    sql::query(
        "UPDATE mail_tokens SET used_at_ms = $1 WHERE player_id = $2 AND purpose = $3 \
         AND used_at_ms IS NULL",
    )
    .bind(now_ms)
    .bind(player_id)
    .bind(purpose)
    .execute(conn)
    .await?;
    Ok((player_id, row.try_get("email")?))
}

async fn set_password_hash(conn: &mut Conn, player_id: i64, hash: &str) -> Result<(), Error> {
    sql::query("UPDATE players SET password_hash = $1 WHERE id = $2")
        .bind(hash)
        .bind(player_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Spends every outstanding reset link of the player (a password or
/// address change, an undone address change): a link mailed before no
/// longer sets a password (issue 32, finding 8). How many it spent.
pub(super) async fn spend_reset_links(
    conn: &mut Conn,
    player_id: i64,
    now_ms: i64,
) -> Result<u64, Error> {
    sql::query(
        "UPDATE mail_tokens SET used_at_ms = $1 WHERE player_id = $2 \
         AND purpose = 'password_reset' AND used_at_ms IS NULL",
    )
    .bind(now_ms)
    .bind(player_id)
    .execute(conn)
    .await
}

impl Service {
    /// Changes the player's password, the current one `confirmed`; every
    /// other session of the player (all but `session_token`'s) ends, and
    /// every reset link mailed before is spent.
    pub async fn change_password(
        &self,
        player: &Player,
        confirmed: PasswordConfirmed,
        session_token: &str,
        new: &str,
    ) -> Result<u64, Error> {
        confirmed.check(PasswordOf::Player(player.id))?;
        password_rule("new_password", new)?;
        let new = new.to_owned();
        let cost = self.settings.password_cost;
        let hash = with_hashing_permit(move || hash_password(&new, cost)).await?;
        let keep = sha256_hex(session_token.as_bytes());
        let now_ms = self.now_ms();
        let who = player.clone();
        let ended = self
            .write(move |conn| {
                let (player, hash, keep) = (who.clone(), hash.clone(), keep.clone());
                Box::pin(async move {
                    set_password_hash(conn, player.id, &hash).await?;
                    let ended = PasswordOf::Player(player.id)
                        .end_other_sessions(conn, keep, now_ms)
                        .await?;
                    let links = spend_reset_links(conn, player.id, now_ms).await?;
                    trail::append(
                        conn,
                        now_ms,
                        &Actor::player(player.id, &player.username),
                        "password_changed",
                        json!({}),
                        json!({"sessions_ended": ended, "reset_links_spent": links}),
                    )
                    .await?;
                    Ok(ended)
                })
            })
            .await?;
        let username = player.username.clone();
        self.notify(player.id, Notice::PasswordChanged { username })
            .await;
        Ok(ended)
    }

    /// Asks a password reset for the accounts whose address is `email`,
    /// confirmed (an address given but never confirmed gets no link: it may
    /// be a thief's, set with a stolen session): each gets a link by mail. The same work and the same answer whether
    /// or not an account has that address: the trail records the asking
    /// by the address's SHA-256 only.
    pub async fn ask_password_reset(&self, email: &str) -> Result<(), Error> {
        let key = address_key(email);
        if key.is_empty() || key.len() > 254 {
            return Err(Error::Validation(
                "email: the address your account was opened with".to_owned(),
            ));
        }
        let now_ms = self.now_ms();
        let sent = self
            .write(move |conn| {
                let key = key.clone();
                Box::pin(async move {
                    let rows = sql::query(
                        "SELECT p.id, p.username, i.email FROM identities i \
                         JOIN players p ON p.id = i.player_id WHERE LOWER(i.email) = $1 \
                         AND i.email_confirmed_at_ms IS NOT NULL",
                    )
                    .bind(key.as_str())
                    .fetch_all(&mut *conn)
                    .await?;
                    let mut sent = Vec::new();
                    for row in rows {
                        let (token, hash) = new_token();
                        let player_id: i64 = row.try_get("id")?;
                        let email: String = row.try_get("email")?;
                        insert_token(
                            conn,
                            &hash,
                            "password_reset",
                            player_id,
                            &email,
                            now_ms,
                            RESET_TTL_MS,
                        )
                        .await?;
                        sent.push((row.try_get::<String, _>("username")?, email, token));
                    }
                    trail::append(
                        conn,
                        now_ms,
                        &Actor::Anonymous,
                        "password_reset_asked",
                        json!({"email_sha256": sha256_hex(key.as_bytes())}),
                        json!({}),
                    )
                    .await?;
                    Ok(sent)
                })
            })
            .await?;
        let site = self.site_url().unwrap_or_default();
        for (username, email, token) in sent {
            let notice = Notice::PasswordReset {
                username,
                link: format!("{site}/#/reset/{token}"),
                until: rfc3339(now_ms + RESET_TTL_MS),
            };
            self.send_notice(&email, &notice);
        }
        Ok(())
    }

    /// Sets a new password with a reset link's token: single use (every
    /// reset token of the player is spent), refused once expired; every
    /// session of the player ends.
    pub async fn reset_password(&self, token: &str, new: &str) -> Result<(), Error> {
        password_rule("new_password", new)?;
        let new = new.to_owned();
        let cost = self.settings.password_cost;
        let hash = with_hashing_permit(move || hash_password(&new, cost)).await?;
        let token = token.to_owned();
        let now_ms = self.now_ms();
        let (player_id, username) = self
            .write(move |conn| {
                let (token, hash) = (token.clone(), hash.clone());
                Box::pin(async move {
                    let (player_id, _) = take_token(conn, &token, "password_reset", now_ms).await?;
                    set_password_hash(conn, player_id, &hash).await?;
                    let ended = end_sessions(conn, player_id, now_ms).await?;
                    let username = username(conn, player_id).await?;
                    trail::append(
                        conn,
                        now_ms,
                        &Actor::player(player_id, &username),
                        "password_reset",
                        json!({}),
                        json!({"sessions_ended": ended}),
                    )
                    .await?;
                    Ok((player_id, username))
                })
            })
            .await?;
        self.notify(player_id, Notice::PasswordChanged { username })
            .await;
        Ok(())
    }

    /// Sends the player a link to confirm the address on file (none: nothing).
    pub async fn send_email_confirmation(&self, player: &Player) -> Result<(), Error> {
        let Some(email) = self.email_of(player.id).await? else {
            return Ok(());
        };
        let (token, hash) = new_token();
        let now_ms = self.now_ms();
        let (player_id, address) = (player.id, email.clone());
        self.write(move |conn| {
            let (hash, address) = (hash.clone(), address.clone());
            Box::pin(async move {
                insert_token(
                    conn,
                    &hash,
                    "email_confirm",
                    player_id,
                    &address,
                    now_ms,
                    CONFIRM_TTL_MS,
                )
                .await
            })
        })
        .await?;
        let site = self.site_url().unwrap_or_default();
        let notice = Notice::ConfirmEmail {
            username: player.username.clone(),
            link: format!("{site}/#/confirm-email/{token}"),
        };
        self.send_notice(&email, &notice);
        Ok(())
    }

    /// Confirms the address a confirmation link was sent to, if it is still
    /// the one on file.
    pub async fn confirm_email(&self, token: &str) -> Result<(), Error> {
        let token = token.to_owned();
        let now_ms = self.now_ms();
        self.write(move |conn| {
            let token = token.clone();
            Box::pin(async move {
                let (player_id, email) = take_token(conn, &token, "email_confirm", now_ms).await?;
                let confirmed = sql::query(
                    "UPDATE identities SET email_confirmed_at_ms = $1 WHERE player_id = $2 AND email = $3",
                )
                .bind(now_ms)
                .bind(player_id)
                .bind(email.as_str())
                .execute(&mut *conn)
                .await?;
                if confirmed == 0 {
                    // The address changed since: this link confirms nothing.
                    return Err(Error::InvalidToken);
                }
                trail::append(
                    conn,
                    now_ms,
                    &Actor::System,
                    "email_confirmed",
                    json!({"player_id": player_id}),
                    json!({}),
                )
                .await?;
                Ok(())
            })
        })
        .await
    }

    /// When the address on file was confirmed, if it was.
    pub async fn email_confirmed_at(&self, player: &Player) -> Result<Option<String>, Error> {
        let at: Option<i64> =
            sql::query_scalar("SELECT email_confirmed_at_ms FROM identities WHERE player_id = $1")
                .bind(player.id)
                .fetch_optional(&mut *self.db.conn().await?)
                .await?
                .flatten();
        Ok(at.map(rfc3339))
    }
}
