//! The current password, asked again before a change that could take an
//! account: a player's password, address or IBAN, a console account's
//! password (issue 32, finding 7). A wrong value is counted on the session
//! it came in (`wrong_passwords`, migration 0018) and the fifth ends that
//! session; the HTTP edge counts it with failed logins as well (growing
//! waits per name and address, `protect::logins`). A right value gives a
//! [`PasswordConfirmed`], which each of those changes takes: none runs
//! without one.

use super::hashing::{verify_password, with_hashing_permit};
use super::{Service, sha256_hex};
use crate::error::{Error, SessionEnd};
use crate::store::documents::username;
use crate::store::{Conn, sql};
use crate::trail::{self, Actor};
use serde_json::json;

/// Wrong current passwords a session may give: the last ends it.
pub const WRONG_PASSWORDS_PER_SESSION: i64 = 5;

/// Whose password: a player's or a console account's (by id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PasswordOf {
    Player(i64),
    Staff(i64),
}

impl PasswordOf {
    fn password_sql(self) -> &'static str {
        match self {
            PasswordOf::Player(_) => "SELECT password_hash FROM players WHERE id = $1",
            PasswordOf::Staff(_) => "SELECT password_hash FROM staff WHERE id = $1",
        }
    }

    /// Counts a wrong value on the live session of this owner; its count.
    fn count_sql(self) -> &'static str {
        match self {
            PasswordOf::Player(_) => {
                "UPDATE sessions SET wrong_passwords = wrong_passwords + 1 \
                 WHERE token_hash = $1 AND player_id = $2 AND ended_at_ms IS NULL \
                 RETURNING wrong_passwords"
            }
            PasswordOf::Staff(_) => {
                "UPDATE staff_sessions SET wrong_passwords = wrong_passwords + 1 \
                 WHERE token_hash = $1 AND staff_id = $2 AND ended_at_ms IS NULL \
                 RETURNING wrong_passwords"
            }
        }
    }

    /// Ends every open session of the account but the request's (`keep`,
    /// its token's hash), once its password changed: how many ended.
    pub(super) async fn end_other_sessions(
        self,
        conn: &mut Conn,
        keep: String,
        now_ms: i64,
    ) -> Result<u64, Error> {
        let sql = match self {
            PasswordOf::Player(_) => {
                "UPDATE sessions SET ended_at_ms = $1 WHERE player_id = $2 \
                 AND ended_at_ms IS NULL AND token_hash <> $3"
            }
            PasswordOf::Staff(_) => {
                "UPDATE staff_sessions SET ended_at_ms = $1 WHERE staff_id = $2 \
                 AND ended_at_ms IS NULL AND token_hash <> $3"
            }
        };
        let query = sql::query(sql).bind(now_ms).bind(self.id()).bind(keep);
        query.execute(conn).await
    }

    fn end_sql(self) -> &'static str {
        match self {
            PasswordOf::Player(_) => "UPDATE sessions SET ended_at_ms = $1 WHERE token_hash = $2",
            PasswordOf::Staff(_) => {
                "UPDATE staff_sessions SET ended_at_ms = $1 WHERE token_hash = $2"
            }
        }
    }

    fn id(self) -> i64 {
        match self {
            PasswordOf::Player(id) | PasswordOf::Staff(id) => id,
        }
    }
}

/// The current password was given right, for `of`: what a change of the
/// password, the address or the IBAN takes.
#[derive(Debug)]
pub struct PasswordConfirmed {
    of: PasswordOf,
}

impl PasswordConfirmed {
    /// Refuses a confirmation given for someone else.
    pub(super) fn check(&self, of: PasswordOf) -> Result<(), Error> {
        if self.of == of {
            Ok(())
        } else {
            Err(Error::Unauthorized)
        }
    }
}

impl Service {
    /// Checks `current` against the password of `of`, asked in the session
    /// whose token is `session_token`. Wrong: [`Error::WrongPassword`],
    /// counted on the session; the [`WRONG_PASSWORDS_PER_SESSION`]th ends it
    /// ([`SessionEnd::WrongPasswords`], in the trail).
    pub async fn confirm_password(
        &self,
        of: PasswordOf,
        session_token: &str,
        current: &str,
    ) -> Result<PasswordConfirmed, Error> {
        let stored: String = sql::query_scalar(of.password_sql())
            .bind(of.id())
            .fetch_one(&mut *self.db.conn().await?)
            .await?;
        let current = current.to_owned();
        if with_hashing_permit(move || verify_password(&current, &stored)).await {
            return Ok(PasswordConfirmed { of });
        }
        let token_hash = sha256_hex(session_token.as_bytes());
        let now_ms = self.now_ms();
        let ended = self
            .write(move |conn| {
                let token_hash = token_hash.clone();
                Box::pin(async move {
                    let count: Option<i64> = sql::query_scalar(of.count_sql())
                        .bind(token_hash.as_str())
                        .bind(of.id())
                        .fetch_optional(&mut *conn)
                        .await?;
                    if count.unwrap_or(0) < WRONG_PASSWORDS_PER_SESSION {
                        return Ok(false);
                    }
                    sql::query(of.end_sql())
                        .bind(now_ms)
                        .bind(token_hash.as_str())
                        .execute(&mut *conn)
                        .await?;
                    let actor = match of {
                        PasswordOf::Player(id) => {
                            let username = username(conn, id).await?;
                            Actor::player(id, &username)
                        }
                        PasswordOf::Staff(id) => {
                            let username: String =
                                sql::query_scalar("SELECT username FROM staff WHERE id = $1")
                                    .bind(id)
                                    .fetch_one(&mut *conn)
                                    .await?;
                            Actor::staff(&username)
                        }
                    };
                    trail::append(
                        conn,
                        now_ms,
                        &actor,
                        "session_ended_wrong_passwords",
                        json!({"wrong_passwords": WRONG_PASSWORDS_PER_SESSION}),
                        json!({"sessions_ended": 1}),
                    )
                    .await?;
                    Ok(true)
                })
            })
            .await?;
        Err(if ended {
            Error::SessionEnded(SessionEnd::WrongPasswords)
        } else {
            Error::WrongPassword
        })
    }
}
