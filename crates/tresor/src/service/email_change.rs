//! A change of the address on file, which a stolen session alone cannot
//! make (issue 32, findings 1, 8 and 9): the current password is asked
//! (`reauth`), the old address is told and, if it was confirmed, gets a
//! link that undoes the change for [`UNDO_TTL_MS`], the reset links mailed
//! before are spent, and changes are counted per player and per address (a
//! quota, so that no one sends mail to an address again and again).
//! Changes are kept in `email_changes` (migration 0018). The undo link is
//! bound to the state the change left ([`undo_state`], migration 0024):
//! a later change made with the password spends it, and an undo puts the
//! old address back as it was, never confirming one (issue 42, finding 1).

use super::notify::Notice;
use super::passwords::{CONFIRM_TTL_MS, address_key, insert_token, new_token, spend_reset_links};
use super::reauth::{PasswordConfirmed, PasswordOf};
use super::{Service, rfc3339, sha256_hex};
use crate::error::Error;
use crate::model::Player;
use crate::store::Conn;
use crate::store::accounts::end_sessions;
use crate::store::documents::username;
use crate::store::sql;
use crate::trail::{self, Actor};
use serde_json::json;

/// The link mailed to the old address undoes a change this long.
pub const UNDO_TTL_MS: i64 = 7 * 24 * 3600 * 1000;
/// The window the quotas count in.
pub const QUOTA_WINDOW_MS: i64 = 24 * 3600 * 1000;
/// Address changes (a confirmation asked again included) a player may make
/// in [`QUOTA_WINDOW_MS`].
pub const CHANGES_PER_PLAYER: i64 = 5;
/// Changes to one address, by any player, in [`QUOTA_WINDOW_MS`].
pub const CHANGES_PER_ADDRESS: i64 = 3;

/// What a change sends once committed.
struct Sent {
    username: String,
    new_email: String,
    confirm_token: Option<String>,
    /// The old address and its undo link's token, when the address changed.
    undo: Option<(String, String)>,
}

/// Refuses a change past a quota: [`Error::MailQuota`], with the seconds
/// until the oldest change counted leaves the window.
async fn check_quota(conn: &mut Conn, player_id: i64, key: &str, now_ms: i64) -> Result<(), Error> {
    let since = now_ms - QUOTA_WINDOW_MS;
    let quotas = [
        (
            "SELECT COUNT(*) AS n, MIN(changed_at_ms) AS oldest FROM email_changes \
             WHERE player_id = $1 AND changed_at_ms > $2",
            sql::Arg::from(player_id),
            CHANGES_PER_PLAYER,
            format!("you changed your address {CHANGES_PER_PLAYER} times in 24 hours"),
        ),
        (
            "SELECT COUNT(*) AS n, MIN(changed_at_ms) AS oldest FROM email_changes \
             WHERE new_email = $1 AND changed_at_ms > $2",
            sql::Arg::from(key),
            CHANGES_PER_ADDRESS,
            format!("this address was given {CHANGES_PER_ADDRESS} times in 24 hours"),
        ),
    ];
    for (text, counted, most, why) in quotas {
        let (count, oldest): (i64, Option<i64>) = sql::query_as(text)
            .bind(counted)
            .bind(since)
            .fetch_one(&mut *conn)
            .await?;
        if count >= most {
            let wait_ms = (oldest.unwrap_or(now_ms) + QUOTA_WINDOW_MS - now_ms).max(1000);
            let retry_after_s = (wait_ms as u64).div_ceil(1000);
            return Err(Error::MailQuota {
                message: format!(
                    "{why}: nothing was changed and no mail sent; try again in {retry_after_s} seconds"
                ),
                retry_after_s,
            });
        }
    }
    Ok(())
}

impl Service {
    /// Changes the address on file (an account with an identity), the
    /// current password `confirmed`: the new address waits for its
    /// confirmation (a link goes to it), the old one is told and gets a
    /// link that undoes the change for [`UNDO_TTL_MS`], and the reset links
    /// mailed before are spent. The same address again asks its
    /// confirmation again. Past a quota, [`Error::MailQuota`] and nothing
    /// changes.
    pub async fn set_email(
        &self,
        player: &Player,
        confirmed: PasswordConfirmed,
        email: &str,
    ) -> Result<(), Error> {
        confirmed.check(PasswordOf::Player(player.id))?;
        let parsed =
            crate::account::Identity::parse("A", "B", "2000-01-01", "C", "D", Some(email))?
                .email
                .ok_or_else(|| {
                    Error::Validation("email: an address such as ana@example.org".to_owned())
                })?;
        let now_ms = self.now_ms();
        let who = player.clone();
        let sent = self
            .write(move |conn| {
                let (player, email) = (who.clone(), parsed.clone());
                Box::pin(async move { change(conn, &player, &email, now_ms).await })
            })
            .await?;
        let site = self.site_url().unwrap_or_default();
        if let Some(token) = &sent.confirm_token {
            let notice = Notice::ConfirmEmail {
                username: sent.username.clone(),
                link: format!("{site}/#/confirm-email/{token}"),
            };
            self.send_notice(&sent.new_email, &notice);
        }
        if let Some((old, token)) = &sent.undo {
            let notice = Notice::EmailChanged {
                username: sent.username.clone(),
                link: format!("{site}/#/undo-email/{token}"),
                until: rfc3339(now_ms + UNDO_TTL_MS),
            };
            self.send_notice(old, &notice);
        }
        Ok(())
    }

    /// Undoes an address change with the link mailed to the old address:
    /// once, within [`UNDO_TTL_MS`], and only while the account is as the
    /// change left it ([`undo_state`]: a later change of address or
    /// password spends the link). The old address is back as it was
    /// (confirmed, since a link goes only to a confirmed address: the undo
    /// itself confirms nothing); the reset and confirmation links are
    /// spent; every session of the player ends.
    pub async fn undo_email_change(&self, token: &str) -> Result<(), Error> {
        let hash = sha256_hex(token.trim().as_bytes());
        let now_ms = self.now_ms();
        self.write(move |conn| {
            let hash = hash.clone();
            Box::pin(async move {
                let undo = take_undo(conn, &hash, now_ms).await?;
                sql::query(
                    "UPDATE identities SET email = $1, email_confirmed_at_ms = $2 WHERE player_id = $3",
                )
                .bind(undo.old_email.as_str())
                .bind(undo.old_confirmed_at_ms)
                .bind(undo.player_id)
                .execute(&mut *conn)
                .await?;
                sql::query(
                    "UPDATE mail_tokens SET used_at_ms = $1 WHERE player_id = $2 \
                     AND used_at_ms IS NULL",
                )
                .bind(now_ms)
                .bind(undo.player_id)
                .execute(&mut *conn)
                .await?;
                let ended = end_sessions(conn, undo.player_id, now_ms).await?;
                let username = username(conn, undo.player_id).await?;
                trail::append(
                    conn,
                    now_ms,
                    &Actor::player(undo.player_id, &username),
                    "email_change_undone",
                    json!({"email_sha256": sha256_hex(address_key(&undo.old_email).as_bytes())}),
                    json!({"sessions_ended": ended,
                           "confirmed": undo.old_confirmed_at_ms.is_some()}),
                )
                .await?;
                Ok(())
            })
        })
        .await
    }
}

/// The state an undo link is bound to (issue 42, finding 1; Django's
/// password-reset tokens hash the password likewise): the player's latest
/// address change, the address on file and the password's hash, hashed.
/// A later address change (a new address, or the same asked again), a
/// password change or a reset makes another, and the link made for the
/// state before undoes nothing.
async fn undo_state(conn: &mut Conn, player_id: i64) -> Result<String, Error> {
    let row = sql::query(
        "SELECT p.password_hash, i.email, \
         (SELECT MAX(c.id) FROM email_changes c WHERE c.player_id = p.id) AS latest \
         FROM players p JOIN identities i ON i.player_id = p.id WHERE p.id = $1",
    )
    .bind(player_id)
    .fetch_one(&mut *conn)
    .await?;
    let password_hash: String = row.try_get("password_hash")?;
    let email: Option<String> = row.try_get("email")?;
    let latest: Option<i64> = row.try_get("latest")?;
    let state = format!(
        "email undo\n{player_id}\n{}\n{}\n{password_hash}",
        latest.unwrap_or(0),
        email.as_deref().map(address_key).unwrap_or_default(),
    );
    Ok(sha256_hex(state.as_bytes()))
}

/// An undo taken: whose, and the address it puts back as it was.
struct Undo {
    player_id: i64,
    old_email: String,
    old_confirmed_at_ms: Option<i64>,
}

/// Takes the undo link whose token hashes to `hash`, marking its change
/// undone: unknown, used, expired, never mailed (no state: the old address
/// was not confirmed, or the change is older than migration 0024), or made
/// for a state the account has left is [`Error::InvalidToken`], which does
/// not say which.
async fn take_undo(conn: &mut Conn, hash: &str, now_ms: i64) -> Result<Undo, Error> {
    let row = sql::query(
        "SELECT id, player_id, old_email, old_confirmed_at_ms, undo_state FROM email_changes \
         WHERE undo_token_hash = $1 AND undone_at_ms IS NULL AND undo_until_ms > $2",
    )
    .bind(hash)
    .bind(now_ms)
    .fetch_optional(&mut *conn)
    .await?
    .ok_or(Error::InvalidToken)?;
    let id: i64 = row.try_get("id")?;
    let player_id: i64 = row.try_get("player_id")?;
    let bound: Option<String> = row.try_get("undo_state")?;
    let old_email: Option<String> = row.try_get("old_email")?;
    let old_confirmed_at_ms: Option<i64> = row.try_get("old_confirmed_at_ms")?;
    let (Some(bound), Some(old_email), Some(_)) = (bound, old_email, old_confirmed_at_ms) else {
        return Err(Error::InvalidToken);
    };
    if undo_state(conn, player_id).await? != bound {
        return Err(Error::InvalidToken);
    }
    sql::query("UPDATE email_changes SET undone_at_ms = $1 WHERE id = $2")
        .bind(now_ms)
        .bind(id)
        .execute(&mut *conn)
        .await?;
    Ok(Undo {
        player_id,
        old_email,
        old_confirmed_at_ms,
    })
}

/// Records the change in `email_changes` (the quota counts it): its id and
/// the undo link's token (mailed only if the old address was confirmed).
async fn record(
    conn: &mut Conn,
    player_id: i64,
    old: (Option<&str>, Option<i64>),
    key: &str,
    now_ms: i64,
) -> Result<(i64, String), Error> {
    let (undo_token, undo_hash) = new_token();
    let id: i64 = sql::query_scalar(
        "INSERT INTO email_changes (player_id, old_email, old_confirmed_at_ms, new_email, \
         changed_at_ms, undo_token_hash, undo_until_ms) VALUES ($1, $2, $3, $4, $5, $6, $7) \
         RETURNING id",
    )
    .bind(player_id)
    .bind(old.0)
    .bind(old.1)
    .bind(key)
    .bind(now_ms)
    .bind(undo_hash.as_str())
    .bind(now_ms + UNDO_TTL_MS)
    .fetch_one(&mut *conn)
    .await?;
    Ok((id, undo_token))
}

/// The change itself, inside its writer job. The old address gets an undo
/// link only if it was confirmed (issue 42, finding 1: a mistyped address,
/// or a thief's never confirmed, must not take the account back), bound to
/// the state this change leaves ([`undo_state`]).
async fn change(conn: &mut Conn, player: &Player, email: &str, now_ms: i64) -> Result<Sent, Error> {
    crate::store::suspension::refuse_changes(conn, player.id).await?;
    let row =
        sql::query("SELECT email, email_confirmed_at_ms FROM identities WHERE player_id = $1")
            .bind(player.id)
            .fetch_optional(&mut *conn)
            .await?
            .ok_or(Error::IdentityRequired)?;
    let old: Option<String> = row.try_get("email")?;
    let old_confirmed: Option<i64> = row.try_get("email_confirmed_at_ms")?;
    let key = address_key(email);
    check_quota(conn, player.id, &key, now_ms).await?;
    let same = old.as_deref().map(address_key).as_deref() == Some(key.as_str());
    let (id, undo_token) = record(
        conn,
        player.id,
        (old.as_deref(), old_confirmed),
        &key,
        now_ms,
    )
    .await?;
    let mut links_spent = 0;
    if !same {
        sql::query(
            "UPDATE identities SET email = $1, email_confirmed_at_ms = NULL WHERE player_id = $2",
        )
        .bind(email)
        .bind(player.id)
        .execute(&mut *conn)
        .await?;
        links_spent = spend_reset_links(conn, player.id, now_ms).await?;
    }
    let undo = old.filter(|_| !same && old_confirmed.is_some());
    if undo.is_some() {
        let state = undo_state(conn, player.id).await?;
        sql::query("UPDATE email_changes SET undo_state = $1 WHERE id = $2")
            .bind(state.as_str())
            .bind(id)
            .execute(&mut *conn)
            .await?;
    }
    // The same address, confirmed already: nothing to confirm again.
    let confirm_token = if same && old_confirmed.is_some() {
        None
    } else {
        let (token, hash) = new_token();
        insert_token(
            conn,
            &hash,
            "email_confirm",
            player.id,
            email,
            now_ms,
            CONFIRM_TTL_MS,
        )
        .await?;
        Some(token)
    };
    trail::append(
        conn,
        now_ms,
        &Actor::player(player.id, &player.username),
        "email_set",
        json!({"email_sha256": sha256_hex(key.as_bytes())}),
        json!({"changed": !same, "reset_links_spent": links_spent,
               "undo_until": undo.is_some().then(|| rfc3339(now_ms + UNDO_TTL_MS))}),
    )
    .await?;
    Ok(Sent {
        username: player.username.clone(),
        new_email: email.to_owned(),
        confirm_token,
        undo: undo.map(|old| (old, undo_token)),
    })
}
