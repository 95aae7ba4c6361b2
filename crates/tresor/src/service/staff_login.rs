//! A console login: the password first (an unknown name costs the same
//! verification as a known one), then a TOTP code — enrolling the secret at
//! the first login — which opens a session apart from the players'; the
//! session's life after that, and the trail records of logins, refusals
//! and logouts.

use super::hashing::{verify_password, with_hashing_permit};
use super::sessions::Sessions;
use super::staff::{TOTP_PURPOSE, role_of};
use super::{Service, StaffMember, os_random_32, sha256_hex};
use crate::error::Error;
use crate::seal::{SealError, SecretsKey};
use crate::staff::{self, Permission, Role, StaffName};
use crate::store::{Conn, sql};
use crate::trail::{self, Actor};
use serde_json::{Value, json};

/// The password was right: what the second step needs.
#[derive(Debug, Clone)]
pub struct PasswordChecked {
    pub member: StaffMember,
    /// Whether a TOTP secret is enrolled (else the second step enrols one).
    pub enrolled: bool,
}

impl Service {
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
            None => (None, false, false, self.settings.password_cost.dummy_hash()),
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
        let token = hex::encode(os_random_32());
        let second = SecondStep {
            key: self.secrets_key()?.clone(),
            staff_id: member.id,
            token_hash: sha256_hex(token.as_bytes()),
            code: code.to_owned(),
            enrolling,
            now_ms: self.now_ms(),
        };
        let was_enrolling = second.enrolling.is_some();
        let opened = self
            .write(move |conn| {
                let second = second.clone();
                Box::pin(async move { second.open(conn).await })
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
        self.refresh_session(Sessions::Staff, token_hash, last_seen_at_ms, now_ms)
            .await?;
        Ok(StaffMember {
            id: row.try_get("id")?,
            username: row.try_get("username")?,
            role: role_of(&row.try_get::<String, _>("role")?)?,
        })
    }

    /// Ends a console session (a live one only reaches the writer).
    pub async fn close_staff_session(&self, token: &str) -> Result<(), Error> {
        self.end_session(Sessions::Staff, token).await
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

/// The second step's writer job, with what it needs.
#[derive(Clone)]
struct SecondStep {
    key: SecretsKey,
    staff_id: i64,
    token_hash: String,
    code: String,
    /// The secret just shown, when the account enrols now.
    enrolling: Option<Vec<u8>>,
    now_ms: i64,
}

/// The account as the second step reads it.
struct Account {
    username: String,
    role: Role,
    sealed: Option<Vec<u8>>,
    last_step: Option<i64>,
}

impl SecondStep {
    /// Checks the code, enrols the secret if it is new, and opens the
    /// session.
    async fn open(&self, conn: &mut Conn) -> Result<StaffMember, Error> {
        let account = self.account(conn).await?;
        let secret = self.secret(&account)?;
        let enrolled_now = account.sealed.is_none();
        let step = staff::accept_code(
            &secret,
            &self.code,
            self.now_ms.div_euclid(1000),
            account.last_step,
        )
        .ok_or(Error::InvalidCode)?;
        if enrolled_now {
            self.enrol(conn, &secret).await?;
        }
        self.spend(conn, step).await?;
        self.insert_session(conn).await?;
        self.record(conn, &account, enrolled_now).await?;
        Ok(StaffMember {
            id: self.staff_id,
            username: account.username,
            role: account.role,
        })
    }

    /// The account, unless it is gone or disabled.
    async fn account(&self, conn: &mut Conn) -> Result<Account, Error> {
        let row = sql::query(
            "SELECT username, role, totp_sealed, totp_last_step, disabled_at_ms \
             FROM staff WHERE id = $1",
        )
        .bind(self.staff_id)
        .fetch_optional(&mut *conn)
        .await?
        .ok_or(Error::InvalidCredentials)?;
        if row.try_get::<Option<i64>, _>("disabled_at_ms")?.is_some() {
            return Err(Error::InvalidCredentials);
        }
        Ok(Account {
            username: row.try_get("username")?,
            role: role_of(&row.try_get::<String, _>("role")?)?,
            sealed: row.try_get("totp_sealed")?,
            last_step: row.try_get("totp_last_step")?,
        })
    }

    /// The TOTP secret: the account's, or the one it enrols now.
    fn secret(&self, account: &Account) -> Result<Vec<u8>, Error> {
        match (&account.sealed, &self.enrolling) {
            (Some(sealed), _) => self
                .key
                .open_for(TOTP_PURPOSE, self.staff_id, sealed)
                .map_err(|_| {
                    Error::Secrets(SealError::Key(format!(
                        "the TOTP secret of console account {} does not open \
                         with this secrets key",
                        account.username
                    )))
                }),
            (None, Some(fresh)) => Ok(fresh.clone()),
            // Enrolled since, or reset since the password step.
            (None, None) => Err(Error::InvalidCode),
        }
    }

    /// Keeps the new secret, sealed.
    async fn enrol(&self, conn: &mut Conn, secret: &[u8]) -> Result<(), Error> {
        sql::query("UPDATE staff SET totp_sealed = $1, enrolled_at_ms = $2 WHERE id = $3")
            .bind(self.key.seal_for(TOTP_PURPOSE, self.staff_id, secret))
            .bind(self.now_ms)
            .bind(self.staff_id)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    /// Remembers the code's step, so that the code is accepted once.
    async fn spend(&self, conn: &mut Conn, step: i64) -> Result<(), Error> {
        // Checked again in the update: two logins racing with one code
        // cannot both pass.
        let moved = sql::query(
            "UPDATE staff SET totp_last_step = $1 WHERE id = $2 \
             AND (totp_last_step IS NULL OR totp_last_step < $1)",
        )
        .bind(step)
        .bind(self.staff_id)
        .execute(&mut *conn)
        .await?;
        if moved != 1 {
            return Err(Error::InvalidCode);
        }
        Ok(())
    }

    async fn insert_session(&self, conn: &mut Conn) -> Result<(), Error> {
        sql::query(
            "INSERT INTO staff_sessions (token_hash, staff_id, created_at_ms, last_seen_at_ms) \
             VALUES ($1, $2, $3, $3)",
        )
        .bind(&self.token_hash)
        .bind(self.staff_id)
        .bind(self.now_ms)
        .execute(&mut *conn)
        .await?;
        Ok(())
    }

    /// The login's trail records: the enrolment, if it is one, then the
    /// session.
    async fn record(
        &self,
        conn: &mut Conn,
        account: &Account,
        enrolled_now: bool,
    ) -> Result<(), Error> {
        let actor = Actor::staff(&account.username);
        let username = json!({"username": account.username});
        if enrolled_now {
            trail::append(
                conn,
                self.now_ms,
                &actor,
                "console_enrol",
                username.clone(),
                json!({"totp": "enrolled"}),
            )
            .await?;
        }
        trail::append(
            conn,
            self.now_ms,
            &actor,
            "console_login",
            username,
            json!({"session": "opened", "role": account.role.as_str()}),
        )
        .await?;
        Ok(())
    }
}
