//! Console accounts (staff), as the command line manages them (`tresor
//! operator`): made, listed, their role changed, disabled, their second
//! factor reset, each in the trail as the command line's. Logging in is
//! `staff_login.rs`; the rules (roles, permissions, TOTP) are
//! `crate::staff`'s.

use super::hashing::{hash_password, with_hashing_permit};
use super::{Service, rfc3339};
use crate::error::Error;
use crate::staff::{Role, StaffName};
use crate::store::{Conn, sql};
use crate::trail::Actor;
use futures_util::future::BoxFuture;
use serde::Serialize;
use serde_json::{Value, json};
use std::sync::Arc;

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

/// The role stored as `text`.
pub(super) fn role_of(text: &str) -> Result<Role, Error> {
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
        let cost = self.settings.password_cost;
        let hash = with_hashing_permit(move || hash_password(&password, cost)).await?;
        let request = json!({"username": name.as_str(), "role": role.as_str()});
        let name = name.clone();
        self.write_recorded(
            Actor::Operator,
            "staff_add",
            request,
            move |conn, now_ms| {
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
                    let member = StaffMember {
                        id,
                        username: name.as_str().to_owned(),
                        role,
                    };
                    Ok((member, json!({"staff_id": id})))
                })
            },
        )
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
        let request = json!({"username": name.as_str(), "role": role.as_str()});
        self.change_staff(name, "staff_role", request, move |conn, id, _| {
            Box::pin(async move {
                let before: String = sql::query_scalar("SELECT role FROM staff WHERE id = $1")
                    .bind(id)
                    .fetch_one(&mut *conn)
                    .await?;
                sql::query("UPDATE staff SET role = $1 WHERE id = $2")
                    .bind(role.as_str())
                    .bind(id)
                    .execute(&mut *conn)
                    .await?;
                Ok(((), json!({"before": before})))
            })
        })
        .await
    }

    /// Disables an account: its sessions end and it cannot log in again.
    /// Returns how many sessions ended.
    pub async fn disable_staff(&self, name: &StaffName) -> Result<u64, Error> {
        let request = json!({"username": name.as_str()});
        self.change_staff(name, "staff_disable", request, |conn, id, now_ms| {
            Box::pin(async move {
                sql::query(
                    "UPDATE staff SET disabled_at_ms = $1 WHERE id = $2 AND disabled_at_ms IS NULL",
                )
                .bind(now_ms)
                .bind(id)
                .execute(&mut *conn)
                .await?;
                let ended = end_staff_sessions(conn, id, now_ms).await?;
                Ok((ended, json!({"sessions_ended": ended})))
            })
        })
        .await
    }

    /// Forgets an account's TOTP secret (a lost phone): it enrols again at
    /// its next login, and its sessions end.
    pub async fn reset_staff_totp(&self, name: &StaffName) -> Result<(), Error> {
        let request = json!({"username": name.as_str()});
        self.change_staff(name, "staff_reset_totp", request, |conn, id, now_ms| {
            Box::pin(async move {
                sql::query(
                    "UPDATE staff SET totp_sealed = NULL, totp_last_step = NULL, enrolled_at_ms = NULL \
                     WHERE id = $1",
                )
                .bind(id)
                .execute(&mut *conn)
                .await?;
                let ended = end_staff_sessions(conn, id, now_ms).await?;
                Ok(((), json!({"sessions_ended": ended})))
            })
        })
        .await
    }

    /// Runs `change` on the console account `name` (given its id and the
    /// time) in a writer job, in the trail as the command line's `action`
    /// with `request` and the result `change` gives beside its value.
    async fn change_staff<T, F>(
        &self,
        name: &StaffName,
        action: &'static str,
        request: Value,
        change: F,
    ) -> Result<T, Error>
    where
        T: Send + 'static,
        F: for<'c> Fn(&'c mut Conn, i64, i64) -> BoxFuture<'c, Result<(T, Value), Error>>
            + Send
            + Sync
            + 'static,
    {
        let name = name.clone();
        let change = Arc::new(change);
        self.write_recorded(Actor::Operator, action, request, move |conn, now_ms| {
            let (name, change) = (name.clone(), change.clone());
            Box::pin(async move {
                let id = staff_id(conn, &name).await?;
                change(conn, id, now_ms).await
            })
        })
        .await
    }
}
