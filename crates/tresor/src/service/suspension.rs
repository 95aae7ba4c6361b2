//! The operator's suspension of a player account, apart from an exclusion:
//! a reason is required (kept for the staff, never shown to the player),
//! the player's sessions end, and stakes and deposits are refused with a
//! neutral `account_suspended` until it is lifted; the player may log in
//! again to read their balance and statement and ask a withdrawal, which
//! is not approved before the lifting. Both in the trail.

use super::{Service, rfc3339};
use crate::error::Error;
use crate::model::Player;
use crate::store::accounts as store;
use crate::store::suspension::{self, Suspension};
use crate::trail::Actor;
use serde::Serialize;
use serde_json::json;

/// A suspension as the console shows it.
#[derive(Debug, Clone, Serialize)]
pub struct SuspensionView {
    pub suspended_at: String,
    pub suspended_by: String,
    pub reason: String,
}

impl From<Suspension> for SuspensionView {
    fn from(s: Suspension) -> Self {
        SuspensionView {
            suspended_at: rfc3339(s.at_ms),
            suspended_by: s.by,
            reason: s.reason,
        }
    }
}

/// The staff's reason: 3 to 500 characters, no control character.
fn reason(text: &str) -> Result<String, Error> {
    let text = text.trim();
    if !(3..=500).contains(&text.chars().count()) || text.chars().any(char::is_control) {
        return Err(Error::Validation(
            "reason: 3 to 500 characters, on one line (the staff read it; the player does not)"
                .to_owned(),
        ));
    }
    Ok(text.to_owned())
}

impl Service {
    /// The suspension in force on the player's account, if any.
    pub async fn suspension(&self, player: &Player) -> Result<Option<SuspensionView>, Error> {
        let found = suspension::suspension(&mut *self.db.conn().await?, player.id).await?;
        Ok(found.map(SuspensionView::from))
    }

    /// Suspends the player's account for `reason`: every session of the
    /// player ends in the same job. An account already suspended is
    /// refused (`validation`), and nothing changes.
    pub async fn suspend_account(
        &self,
        by: Actor,
        player: &Player,
        reason_text: &str,
    ) -> Result<SuspensionView, Error> {
        let reason = reason(reason_text)?;
        let request = json!({"player_id": player.id, "username": player.username,
                             "reason": reason});
        let (player, by_label) = (player.clone(), by.label());
        self.write_recorded(by, "account_suspended", request, move |conn, now_ms| {
            let (player, by, reason) = (player.clone(), by_label.clone(), reason.clone());
            Box::pin(async move {
                if let Some(current) = suspension::suspension(conn, player.id).await? {
                    return Err(Error::Validation(format!(
                        "{} is already suspended, since {} by {}",
                        player.username,
                        rfc3339(current.at_ms),
                        current.by
                    )));
                }
                let suspension = Suspension {
                    at_ms: now_ms,
                    by,
                    reason,
                };
                suspension::set_suspension(conn, player.id, Some(&suspension)).await?;
                let ended = store::end_sessions(conn, player.id, now_ms).await?;
                Ok((
                    SuspensionView::from(suspension),
                    json!({"sessions_ended": ended}),
                ))
            })
        })
        .await
    }

    /// Lifts the suspension of the player's account, for `reason`. An
    /// account not suspended is refused (`validation`).
    pub async fn unsuspend_account(
        &self,
        by: Actor,
        player: &Player,
        reason_text: &str,
    ) -> Result<(), Error> {
        let reason = reason(reason_text)?;
        let request = json!({"player_id": player.id, "username": player.username,
                             "reason": reason});
        let player = player.clone();
        self.write_recorded(by, "account_unsuspended", request, move |conn, _| {
            let player = player.clone();
            Box::pin(async move {
                let Some(current) = suspension::suspension(conn, player.id).await? else {
                    return Err(Error::Validation(format!(
                        "{} is not suspended",
                        player.username
                    )));
                };
                suspension::set_suspension(conn, player.id, None).await?;
                Ok(((), json!({"suspended_at": rfc3339(current.at_ms)})))
            })
        })
        .await
    }
}
