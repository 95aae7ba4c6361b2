//! Sales held closed after a restore behind what was published: the hold
//! (a `restore_hold` setting the batch reads with the sales opening, so it
//! costs no statement) and the operator's acknowledgement that lifts it.
//! Both are in the trail: players' acknowledged purchases after the backup
//! are the operator's to make good, and the trail says when they were told.

use super::Service;
use super::status::{put_setting, setting};
use crate::error::Error;
use crate::trail::{self, Actor};
use serde_json::{Value, json};

impl Service {
    /// Why sales are held after a restore, if they are.
    pub async fn restore_hold(&self) -> Result<Option<String>, Error> {
        let mut conn = self.db.conn().await?;
        setting(&mut conn, "restore_hold").await
    }

    /// Closes sales until [`Service::open_sales_after_restore`], saying
    /// `reason` (shown to the operator); `detail` (the checkpoints compared)
    /// goes into the trail record. `against` names the published checkpoint
    /// compared with: once the operator has reopened sales against it, it
    /// holds them no more (a server restarted with the same kept checkpoint
    /// does not close them again). A hold already in place is kept, and
    /// this records nothing more. Whether it closed sales.
    pub async fn hold_sales_after_restore(
        &self,
        reason: String,
        detail: Value,
        against: Option<String>,
    ) -> Result<bool, Error> {
        let now_ms = self.now_ms();
        self.write(move |conn| {
            let (reason, detail, against) = (reason.clone(), detail.clone(), against.clone());
            Box::pin(async move {
                if setting(conn, "restore_hold").await?.is_some() {
                    return Ok(false);
                }
                if against.is_some() && setting(conn, "restore_acknowledged").await? == against {
                    return Ok(false);
                }
                put_setting(conn, "restore_hold", Some(&reason)).await?;
                put_setting(conn, "restore_hold_against", against.as_deref()).await?;
                trail::append(
                    conn,
                    now_ms,
                    &Actor::System,
                    "sales_held_after_restore",
                    detail,
                    json!({"reason": reason}),
                )
                .await?;
                Ok(true)
            })
        })
        .await
    }

    /// Where the server last kept this database's published checkpoints
    /// (`backup::keeper`: its record, JSON), if ever.
    pub async fn kept_checkpoints(&self) -> Result<Option<String>, Error> {
        let mut conn = self.db.conn().await?;
        setting(&mut conn, "kept_checkpoints").await
    }

    /// Records where the server keeps them (`place`, JSON).
    pub async fn record_kept_checkpoints(&self, place: String) -> Result<(), Error> {
        self.write(move |conn| {
            let place = place.clone();
            Box::pin(async move { put_setting(conn, "kept_checkpoints", Some(&place)).await })
        })
        .await
    }

    /// Records a restore in the trail (what was restored, compared with
    /// what), whether or not it holds sales. The restore answers for
    /// whether the copy is behind what was published (it compared, or it
    /// holds sales): where the copy's server kept its checkpoints is
    /// forgotten, and the restored server records its own.
    pub async fn record_restore(&self, detail: Value) -> Result<(), Error> {
        let now_ms = self.now_ms();
        self.write(move |conn| {
            let detail = detail.clone();
            Box::pin(async move {
                put_setting(conn, "kept_checkpoints", None).await?;
                trail::append(conn, now_ms, &Actor::System, "restored", detail, json!({})).await?;
                Ok(())
            })
        })
        .await
    }

    /// The operator's acknowledgement (`tresor sales open --after-restore`):
    /// lifts the hold, recorded in the trail with the reason it had.
    /// `NotFound` when sales are not held.
    pub async fn open_sales_after_restore(&self, actor: Actor) -> Result<String, Error> {
        let now_ms = self.now_ms();
        self.write(move |conn| {
            let actor = actor.clone();
            Box::pin(async move {
                let Some(reason) = setting(conn, "restore_hold").await? else {
                    return Err(Error::NotFound);
                };
                put_setting(conn, "restore_hold", None).await?;
                if let Some(against) = setting(conn, "restore_hold_against").await? {
                    put_setting(conn, "restore_acknowledged", Some(&against)).await?;
                    put_setting(conn, "restore_hold_against", None).await?;
                }
                trail::append(
                    conn,
                    now_ms,
                    &actor,
                    "sales_opened_after_restore",
                    json!({"held_because": reason}),
                    json!({}),
                )
                .await?;
                Ok(reason)
            })
        })
        .await
    }
}
