//! A console account changes its own password: the current one asked
//! (`reauth`), the account's other console sessions ended, in the trail.

use super::hashing::{hash_password, with_hashing_permit};
use super::reauth::{PasswordConfirmed, PasswordOf};
use super::staff::check_password_rule;
use super::{Service, StaffMember, sha256_hex};
use crate::error::Error;
use crate::store::sql;
use crate::trail;
use serde_json::json;

impl Service {
    /// Changes `member`'s password, the current one `confirmed`; every
    /// other console session of theirs (all but `session_token`'s) ends.
    /// Returns how many ended.
    pub async fn change_staff_password(
        &self,
        member: &StaffMember,
        confirmed: PasswordConfirmed,
        session_token: &str,
        new: &str,
    ) -> Result<u64, Error> {
        confirmed.check(PasswordOf::Staff(member.id))?;
        check_password_rule(new)
            .map_err(|error| Error::Validation(format!("new_{}", error_text(error))))?;
        let new = new.to_owned();
        let cost = self.settings.password_cost;
        let hash = with_hashing_permit(move || hash_password(&new, cost)).await?;
        let keep = sha256_hex(session_token.as_bytes());
        let now_ms = self.now_ms();
        let member = member.clone();
        self.write(move |conn| {
            let (member, hash, keep) = (member.clone(), hash.clone(), keep.clone());
            Box::pin(async move {
                sql::query("UPDATE staff SET password_hash = $1 WHERE id = $2")
                    .bind(hash.as_str())
                    .bind(member.id)
                    .execute(&mut *conn)
                    .await?;
                let ended = PasswordOf::Staff(member.id)
                    .end_other_sessions(conn, keep, now_ms)
                    .await?;
                trail::append(
                    conn,
                    now_ms,
                    &member.actor(),
                    "staff_password_changed",
                    json!({"username": member.username}),
                    json!({"sessions_ended": ended}),
                )
                .await?;
                Ok(ended)
            })
        })
        .await
    }
}

/// A validation refusal's text.
fn error_text(error: Error) -> String {
    match error {
        Error::Validation(text) => text,
        other => other.to_string(),
    }
}
