//! Console accounts (staff): made at the command line (`tresor operator`),
//! logging in with a password and a TOTP code, their sessions apart from
//! the players', and the trail records of their logins and refusals. The
//! rules (roles, permissions, TOTP) are `crate::staff`'s.

use super::hashing::{DUMMY_HASH, hash_password, verify_password, with_hashing_permit};
use super::{Service, os_random_32, rfc3339, sha256_hex};
use crate::error::Error;
use crate::seal::SealError;
use crate::staff::{self, Permission, Role, StaffName};
use crate::store::{Conn, sql};
use crate::trail::{self, Actor};
use serde::Serialize;
use serde_json::{Value, json};

/// What a TOTP secret is sealed for (the associated data names it).
pub const TOTP_PURPOSE: &[u8] = b"staff totp";

/// A console account with a live session, or one that has just given its
/// password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaffMember {
    pub id: i64,
    pub username: String,
    pub role: Role,
}

impl StaffMember {
    pub fn actor(&self) -> Actor {
        Actor::staff(&self.username)
    }

    /// `{username, role, permissions}`, as `/console/api/me` answers.
    pub fn view(&self) -> Value {
        json!({
            "username": self.username,
            "role": self.role,
            "permissions": self.role.permissions(),
        })
    }
}

/// A console account as `tresor operator list` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct StaffListing {
    pub id: i64,
    pub username: String,
    pub role: Role,
    pub enrolled: bool,
    pub disabled: bool,
    pub created_at: String,
    pub enrolled_at: Option<String>,
    pub disabled_at: Option<String>,
}

/// The password was right: what the second step needs.
#[derive(Debug, Clone)]
pub struct PasswordChecked {
    pub member: StaffMember,
    /// Whether a TOTP secret is enrolled (else the second step enrols one).
    pub enrolled: bool,
}

/// Staff passwords are at least this long (the players' are 10).
pub const MIN_STAFF_PASSWORD: usize = 12;

pub(super) fn check_password_rule(password: &str) -> Result<(), Error> {
    if password.chars().count() < MIN_STAFF_PASSWORD {
        return Err(Error::Validation(format!(
            "password: at least {MIN_STAFF_PASSWORD} characters"
        )));
    }
    if password.len() > 1024 {
        return Err(Error::Validation("password: at most 1024 bytes".to_owned()));
    }
    Ok(())
}

fn role_of(text: &str) -> Result<Role, Error> {
    Role::parse(text).ok_or_else(|| Error::Validation(format!("unknown role {text}")))
}

/// The id of the account named `name`, or `NotFound`.
async fn staff_id(conn: &mut Conn, name: &StaffName) -> Result<i64, Error> {
    sql::query_scalar("SELECT id FROM staff WHERE username = $1")
        .bind(name.as_str())
        .fetch_optional(conn)
        .await?
        .ok_or(Error::NotFound)
}

async fn end_staff_sessions(conn: &mut Conn, staff_id: i64, now_ms: i64) -> Result<u64, Error> {
    sql::query(
        "UPDATE staff_sessions SET ended_at_ms = $1 WHERE staff_id = $2 AND ended_at_ms IS NULL",
    )
    .bind(now_ms)
    .bind(staff_id)
    .execute(conn)
    .await
}

impl Service {
    /// Makes a console account (`tresor operator add`), in the trail as the
    /// command line's. It enrols its second factor at its first login.
    pub async fn add_staff(
        &self,
        name: &StaffName,
        role: Role,
        password: &str,
    ) -> Result<StaffMember, Error> {
        check_password_rule(password)?;
        let password = password.to_owned();
        let hash = with_hashing_permit(move || hash_password(&password)).await?;
        let now_ms = self.now_ms();
        let name = name.clone();
        self.write(move |conn| {
            let (name, hash) = (name.clone(), hash.clone());
            Box::pin(async move {
                match staff_id(conn, &name).await {
                    Ok(_) => return Err(Error::UsernameTaken),
                    Err(Error::NotFound) => {}
                    Err(other) => return Err(other),
                }
                let id: i64 = sql::query_scalar(
                    "INSERT INTO staff (username, role, password_hash, created_at_ms) \
                     VALUES ($1, $2, $3, $4) RETURNING id",
                )
                .bind(name.as_str())
                .bind(role.as_str())
                .bind(hash)
                .bind(now_ms)
                .fetch_one(&mut *conn)
                .await?;
                trail::append(
                    conn,
                    now_ms,
                    &Actor::Operator,
                    "staff_add",
                    json!({"username": name.as_str(), "role": role.as_str()}),
                    json!({"staff_id": id}),
                )
                .await?;
                Ok(StaffMember {
                    id,
                    username: name.as_str().to_owned(),
                    role,
                })
            })
        })
        .await
    }

    /// Every console account, by name.
    pub async fn list_staff(&self) -> Result<Vec<StaffListing>, Error> {
        let rows = sql::query(
            "SELECT id, username, role, CAST(CASE WHEN totp_sealed IS NULL THEN 0 ELSE 1 END AS BIGINT) AS enrolled, created_at_ms, \
             enrolled_at_ms, disabled_at_ms FROM staff ORDER BY username",
        )
        .fetch_all(&mut *self.db.conn().await?)
        .await?;
        rows.iter()
            .map(|row| {
                let enrolled: i64 = row.try_get("enrolled")?;
                let disabled_at: Option<i64> = row.try_get("disabled_at_ms")?;
                Ok(StaffListing {
                    id: row.try_get("id")?,
                    username: row.try_get("username")?,
                    role: role_of(&row.try_get::<String, _>("role")?)?,
                    enrolled: enrolled != 0,
                    disabled: disabled_at.is_some(),
                    created_at: rfc3339(row.try_get("created_at_ms")?),
                    enrolled_at: row
                        .try_get::<Option<i64>, _>("enrolled_at_ms")?
                        .map(rfc3339),
                    disabled_at: disabled_at.map(rfc3339),
                })
            })
            .collect()
    }

    /// Changes an account's role; it counts from the account's next request.
    pub async fn set_staff_role(&self, name: &StaffName, role: Role) -> Result<(), Error> {
        let now_ms = self.now_ms();
        let name = name.clone();
        self.write(move |conn| {
            let name = name.clone();
            Box::pin(async move {
                let id = staff_id(conn, &name).await?;
                let before: String = sql::query_scalar("SELECT role FROM staff WHERE id = $1")
                    .bind(id)
                    .fetch_one(&mut *conn)
                    .await?;
                sql::query("UPDATE staff SET role = $1 WHERE id = $2")
                    .bind(role.as_str())
                    .bind(id)
                    .execute(&mut *conn)
                    .await?;
                trail::append(
                    conn,
                    now_ms,
                    &Actor::Operator,
                    "staff_role",
                    json!({"username": name.as_str(), "role": role.as_str()}),
                    json!({"before": before}),
                )
                .await?;
                Ok(())
            })
        })
        .await
    }

    /// Disables an account: its sessions end and it cannot log in again.
    /// Returns how many sessions ended.
    pub async fn disable_staff(&self, name: &StaffName) -> Result<u64, Error> {
        let now_ms = self.now_ms();
        let name = name.clone();
        self.write(move |conn| {
            let name = name.clone();
            Box::pin(async move {
                let id = staff_id(conn, &name).await?;
                sql::query(
                    "UPDATE staff SET disabled_at_ms = $1 WHERE id = $2 AND disabled_at_ms IS NULL",
                )
                .bind(now_ms)
                .bind(id)
                .execute(&mut *conn)
                .await?;
                let ended = end_staff_sessions(conn, id, now_ms).await?;
                trail::append(
                    conn,
                    now_ms,
                    &Actor::Operator,
                    "staff_disable",
                    json!({"username": name.as_str()}),
                    json!({"sessions_ended": ended}),
                )
                .await?;
                Ok(ended)
            })
        })
        .await
    }

    /// Forgets an account's TOTP secret (a lost phone): it enrols again at
    /// its next login, and its sessions end.
    pub async fn reset_staff_totp(&self, name: &StaffName) -> Result<(), Error> {
        let now_ms = self.now_ms();
        let name = name.clone();
        self.write(move |conn| {
            let name = name.clone();
            Box::pin(async move {
                let id = staff_id(conn, &name).await?;
                sql::query(
                    "UPDATE staff SET totp_sealed = NULL, totp_last_step = NULL, enrolled_at_ms = NULL \
                     WHERE id = $1",
                )
                .bind(id)
                .execute(&mut *conn)
                .await?;
                let ended = end_staff_sessions(conn, id, now_ms).await?;
                trail::append(
                    conn,
                    now_ms,
                    &Actor::Operator,
                    "staff_reset_totp",
                    json!({"username": name.as_str()}),
                    json!({"sessions_ended": ended}),
                )
                .await?;
                Ok(())
            })
        })
        .await
    }

    /// The first step of a console login: the password. An unknown name
    /// costs the same argon2 verification as a known one; a disabled account
    /// answers as a wrong password. A failure is in the trail (as the
    /// account's when the name is one, else anonymous, without the name).
    pub async fn check_staff_password(
        &self,
        username: &str,
        password: &str,
    ) -> Result<PasswordChecked, Error> {
        let found = match StaffName::parse(username) {
            Some(name) => {
                sql::query(
                    "SELECT id, username, role, password_hash, CAST(CASE WHEN totp_sealed IS NULL THEN 0 ELSE 1 END AS BIGINT) AS enrolled, \
                     disabled_at_ms FROM staff WHERE username = $1",
                )
                .bind(name.as_str())
                .fetch_optional(&mut *self.db.conn().await?)
                .await?
            }
            None => None,
        };
        let (member, enrolled, disabled, hash) = match &found {
            Some(row) => {
                let enrolled = row.try_get::<i64, _>("enrolled")? != 0;
                (
                    Some(StaffMember {
                        id: row.try_get("id")?,
                        username: row.try_get("username")?,
                        role: role_of(&row.try_get::<String, _>("role")?)?,
                    }),
                    enrolled,
                    row.try_get::<Option<i64>, _>("disabled_at_ms")?.is_some(),
                    row.try_get::<String, _>("password_hash")?,
                )
            }
            None => (None, false, false, DUMMY_HASH.to_owned()),
        };
        let password = password.to_owned();
        let ok = with_hashing_permit(move || verify_password(&password, &hash)).await;
        match member {
            Some(member) if ok && !disabled => Ok(PasswordChecked { member, enrolled }),
            member => {
                let actor = member.as_ref().map_or(Actor::Anonymous, StaffMember::actor);
                let why = if disabled {
                    "disabled"
                } else {
                    "invalid_credentials"
                };
                self.record_console_event(
                    actor,
                    "console_login_failed",
                    json!({"username_known": member.is_some()}),
                    json!({"error": why}),
                )
                .await?;
                Err(Error::InvalidCredentials)
            }
        }
    }

    /// The second step: the TOTP code of the account's secret, or of
    /// `enrolling` (the secret just shown, kept only now). Opens a session
    /// and returns its token; the code's step is remembered so that it is
    /// accepted once. A wrong code is in the trail and changes nothing else.
    pub async fn open_staff_session(
        &self,
        member: &StaffMember,
        code: &str,
        enrolling: Option<Vec<u8>>,
    ) -> Result<(String, StaffMember), Error> {
        let key = self.secrets_key()?.clone();
        let token = hex::encode(os_random_32());
        let token_hash = sha256_hex(token.as_bytes());
        let now_ms = self.now_ms();
        let code = code.to_owned();
        let staff_id = member.id;
        let was_enrolling = enrolling.is_some();
        let opened = self
            .write(move |conn| {
                let (key, token_hash, code, enrolling) =
                    (key.clone(), token_hash.clone(), code.clone(), enrolling.clone());
                Box::pin(async move {
                    let row = sql::query(
                        "SELECT username, role, totp_sealed, totp_last_step, disabled_at_ms \
                         FROM staff WHERE id = $1",
                    )
                    .bind(staff_id)
                    .fetch_optional(&mut *conn)
                    .await?
                    .ok_or(Error::InvalidCredentials)?;
                    if row.try_get::<Option<i64>, _>("disabled_at_ms")?.is_some() {
                        return Err(Error::InvalidCredentials);
                    }
                    let username: String = row.try_get("username")?;
                    let role = role_of(&row.try_get::<String, _>("role")?)?;
                    let sealed: Option<Vec<u8>> = row.try_get("totp_sealed")?;
                    let last_step: Option<i64> = row.try_get("totp_last_step")?;
                    let secret = match (&sealed, &enrolling) {
                        (Some(sealed), _) => key
                            .open_for(TOTP_PURPOSE, staff_id, sealed)
                            .map_err(|_| {
                                Error::Secrets(SealError::Key(format!(
                                    "the TOTP secret of console account {username} does not open \
                                     with this secrets key"
                                )))
                            })?,
                        (None, Some(fresh)) => fresh.clone(),
                        // Enrolled since, or reset since the password step.
                        (None, None) => return Err(Error::InvalidCode),
                    };
                    let enrolled_now = sealed.is_none();
                    let step = staff::accept_code(&secret, &code, now_ms.div_euclid(1000), last_step)
                        .ok_or(Error::InvalidCode)?;
                    if enrolled_now {
                        sql::query(
                            "UPDATE staff SET totp_sealed = $1, enrolled_at_ms = $2 WHERE id = $3",
                        )
                        .bind(key.seal_for(TOTP_PURPOSE, staff_id, &secret))
                        .bind(now_ms)
                        .bind(staff_id)
                        .execute(&mut *conn)
                        .await?;
                    }
                    // Checked again in the update: two logins racing with one
                    // code cannot both pass.
                    let moved = sql::query(
                        "UPDATE staff SET totp_last_step = $1 WHERE id = $2 \
                         AND (totp_last_step IS NULL OR totp_last_step < $1)",
                    )
                    .bind(step)
                    .bind(staff_id)
                    .execute(&mut *conn)
                    .await?;
                    if moved != 1 {
                        return Err(Error::InvalidCode);
                    }
                    sql::query(
                        "INSERT INTO staff_sessions (token_hash, staff_id, created_at_ms, last_seen_at_ms) \
                         VALUES ($1, $2, $3, $3)",
                    )
                    .bind(token_hash)
                    .bind(staff_id)
                    .bind(now_ms)
                    .execute(&mut *conn)
                    .await?;
                    let actor = Actor::staff(&username);
                    if enrolled_now {
                        trail::append(
                            conn,
                            now_ms,
                            &actor,
                            "console_enrol",
                            json!({"username": username}),
                            json!({"totp": "enrolled"}),
                        )
                        .await?;
                    }
                    trail::append(
                        conn,
                        now_ms,
                        &actor,
                        "console_login",
                        json!({"username": username}),
                        json!({"session": "opened", "role": role.as_str()}),
                    )
                    .await?;
                    Ok(StaffMember {
                        id: staff_id,
                        username,
                        role,
                    })
                })
            })
            .await;
        match opened {
            Ok(member) => Ok((token, member)),
            Err(Error::InvalidCode) => {
                self.record_console_event(
                    member.actor(),
                    "console_code_failed",
                    json!({"enrolling": was_enrolling}),
                    json!({"error": "invalid_code"}),
                )
                .await?;
                Err(Error::InvalidCode)
            }
            Err(other) => Err(other),
        }
    }

    /// The account of a live console session; refreshes its idle timer once
    /// a minute. Idle and age limits are the players' settings.
    pub async fn staff_session(&self, token: &str) -> Result<StaffMember, Error> {
        let token_hash = sha256_hex(token.as_bytes());
        let row = sql::query(
            "SELECT s.created_at_ms, s.last_seen_at_ms, s.ended_at_ms, t.id, t.username, t.role, \
             t.disabled_at_ms FROM staff_sessions s JOIN staff t ON t.id = s.staff_id \
             WHERE s.token_hash = $1",
        )
        .bind(&token_hash)
        .fetch_optional(&mut *self.db.conn().await?)
        .await?
        .ok_or(Error::Unauthorized)?;
        let now_ms = self.now_ms();
        let created_at_ms: i64 = row.try_get("created_at_ms")?;
        let last_seen_at_ms: i64 = row.try_get("last_seen_at_ms")?;
        let ended = row.try_get::<Option<i64>, _>("ended_at_ms")?.is_some()
            || row.try_get::<Option<i64>, _>("disabled_at_ms")?.is_some();
        self.session_still_open(ended, created_at_ms, last_seen_at_ms, now_ms)?;
        if now_ms - last_seen_at_ms > 60_000 {
            self.write(move |conn| {
                let token_hash = token_hash.clone();
                Box::pin(async move {
                    sql::query(
                        "UPDATE staff_sessions SET last_seen_at_ms = $1 WHERE token_hash = $2",
                    )
                    .bind(now_ms)
                    .bind(token_hash)
                    .execute(&mut *conn)
                    .await?;
                    Ok(())
                })
            })
            .await?;
        }
        Ok(StaffMember {
            id: row.try_get("id")?,
            username: row.try_get("username")?,
            role: role_of(&row.try_get::<String, _>("role")?)?,
        })
    }

    /// Ends a console session (a live one only reaches the writer).
    pub async fn close_staff_session(&self, token: &str) -> Result<(), Error> {
        let token_hash = sha256_hex(token.as_bytes());
        let live: Option<i64> = sql::query_scalar(
            "SELECT staff_id FROM staff_sessions WHERE token_hash = $1 AND ended_at_ms IS NULL",
        )
        .bind(&token_hash)
        .fetch_optional(&mut *self.db.conn().await?)
        .await?;
        if live.is_none() {
            return Ok(());
        }
        let now_ms = self.now_ms();
        self.write(move |conn| {
            let token_hash = token_hash.clone();
            Box::pin(async move {
                let closed: Option<String> = sql::query_scalar(
                    "UPDATE staff_sessions SET ended_at_ms = $1 WHERE token_hash = $2 AND ended_at_ms IS NULL \
                     RETURNING (SELECT username FROM staff WHERE staff.id = staff_sessions.staff_id)",
                )
                .bind(now_ms)
                .bind(token_hash)
                .fetch_optional(&mut *conn)
                .await?;
                if let Some(username) = closed {
                    trail::append(
                        conn,
                        now_ms,
                        &Actor::staff(&username),
                        "console_logout",
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

    /// A console request refused for the role: in the trail, nothing else,
    /// with how many of the account's refusals were left out of it since
    /// its last such record (the HTTP edge records one per minute).
    pub async fn record_staff_refusal(
        &self,
        member: &StaffMember,
        permission: Permission,
        request: &str,
        left_out: u64,
    ) -> Result<(), Error> {
        self.record_console_event(
            member.actor(),
            "console_forbidden",
            json!({"request": request, "role": member.role.as_str()}),
            json!({"error": "forbidden", "permission": permission.as_str(),
                   "refusals_not_recorded_before": left_out}),
        )
        .await
    }

    /// Appends one trail record of the console, in a writer job of its own.
    pub(super) async fn record_console_event(
        &self,
        actor: Actor,
        action: &'static str,
        request: Value,
        result: Value,
    ) -> Result<(), Error> {
        let now_ms = self.now_ms();
        self.write(move |conn| {
            let (actor, request, result) = (actor.clone(), request.clone(), result.clone());
            Box::pin(async move {
                trail::append(conn, now_ms, &actor, action, request, result).await?;
                Ok(())
            })
        })
        .await
    }
}
