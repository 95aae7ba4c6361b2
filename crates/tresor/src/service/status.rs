//! The site status: demo mode, the sales window, the announcement, settings;
//! and readiness (`/readyz`): whether this server should be sent players.

use super::{Service, rfc3339};
use crate::error::Error;
use crate::store::{Conn, sql};
use crate::trail::{self, Actor};
use serde::Serialize;
use serde_json::json;
use std::time::Duration;

/// How long each readiness probe may take: a load balancer polling every
/// second sees a dead, stuck or cut-off server at its next poll.
pub const READY_WITHIN: Duration = Duration::from_millis(500);

/// The sales window and site message (Article 1).
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub sales_open: bool,
    pub opens_at: Option<String>,
    pub message: Option<String>,
    pub demo: bool,
    pub stakes: Vec<i64>,
    /// Sales are held closed since a restore behind what was published,
    /// until the operator reopens them (`tresor sales open --after-restore`).
    pub closed_after_restore: bool,
}

pub(super) async fn setting(conn: &mut Conn, key: &str) -> Result<Option<String>, Error> {
    sql::query_scalar("SELECT value FROM settings WHERE key = $1")
        .bind(key)
        .fetch_optional(conn)
        .await
}

pub(super) async fn put_setting(
    conn: &mut Conn,
    key: &str,
    value: Option<&str>,
) -> Result<(), Error> {
    sql::query("DELETE FROM settings WHERE key = $1")
        .bind(key)
        .execute(&mut *conn)
        .await?;
    if let Some(value) = value {
        sql::query("INSERT INTO settings (key, value) VALUES ($1, $2)")
            .bind(key)
            .bind(value)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

impl Service {
    pub async fn is_demo(&self) -> Result<bool, Error> {
        let mut conn = self.db.conn().await?;
        Ok(setting(&mut conn, "demo").await?.as_deref() == Some("1"))
    }

    /// Marks this database as a demo database, for good.
    pub async fn set_demo(&self) -> Result<(), Error> {
        let now_ms = self.now_ms();
        self.write(move |conn| {
            Box::pin(async move {
                put_setting(conn, "demo", Some("1")).await?;
                trail::append(
                    conn,
                    now_ms,
                    &Actor::System,
                    "demo_mode",
                    json!({}),
                    json!({"demo": true}),
                )
                .await?;
                Ok(())
            })
        })
        .await
    }

    /// Whether this server can serve players now: the writer answers a
    /// probe or finishes batches (it is up and not stuck) and the database
    /// answers a read, each within [`READY_WITHIN`], both at once. A probe
    /// runs no statement through the writer and the read is one row by key,
    /// so it can be polled. A full disk does not make a server unready:
    /// every server on that disk is full, and players are better told so
    /// (`storage_full`) than refused a connection.
    pub async fn readiness(&self) -> Result<(), Error> {
        let writer = self.writer.probe(READY_WITHIN);
        let read = tokio::time::timeout(READY_WITHIN, async {
            let mut conn = self.db.conn().await?;
            sql::query_scalar::<i64>("SELECT seq FROM trail_head WHERE id = 1")
                .fetch_one(&mut conn)
                .await
        });
        let (writer, read) = tokio::join!(writer, read);
        match writer {
            Err(Error::NotReady(why)) => return Err(Error::NotReady(why)),
            Err(_) => {
                return Err(Error::NotReady(
                    "the writer is down; it is being started again",
                ));
            }
            Ok(()) => {}
        }
        match read {
            Err(_) => Err(Error::NotReady(
                "the database has not answered a read within 500 ms",
            )),
            Ok(Err(error)) => {
                tracing::warn!(%error, "readiness: the database does not answer a read");
                Err(Error::NotReady("the database does not answer a read"))
            }
            Ok(Ok(_)) => Ok(()),
        }
    }

    pub async fn status(&self) -> Result<Status, Error> {
        let mut conn = self.db.conn().await?;
        let opens_at_ms: Option<i64> = setting(&mut conn, "sales_open_at_ms")
            .await?
            .and_then(|v| v.parse().ok());
        let message = setting(&mut conn, "announcement").await?;
        let demo = setting(&mut conn, "demo").await?.as_deref() == Some("1");
        let closed_after_restore = setting(&mut conn, "restore_hold").await?.is_some();
        let stakes: Vec<i64> = sql::query_scalar(
            "SELECT DISTINCT b.stake_cents FROM blocks b JOIN emissions e ON e.id = b.emission_id \
             WHERE b.state = 'open' AND e.state = 'open' ORDER BY b.stake_cents",
        )
        .fetch_all(&mut conn)
        .await?;
        let now_ms = self.now_ms();
        Ok(Status {
            sales_open: opens_at_ms.is_none_or(|t| t <= now_ms)
                && !stakes.is_empty()
                && !closed_after_restore,
            opens_at: opens_at_ms.map(rfc3339),
            message,
            demo,
            stakes,
            closed_after_restore,
        })
    }

    /// Sets (or clears) when sales open.
    pub async fn set_sales_open_at(&self, opens_at_ms: Option<i64>) -> Result<(), Error> {
        self.set_sales_open_at_as(Actor::Operator, opens_at_ms)
            .await
    }

    /// [`Service::set_sales_open_at`], recorded in the trail as `actor`'s.
    pub async fn set_sales_open_at_as(
        &self,
        actor: Actor,
        opens_at_ms: Option<i64>,
    ) -> Result<(), Error> {
        let now_ms = self.now_ms();
        self.write(move |conn| {
            let actor = actor.clone();
            Box::pin(async move {
                put_setting(
                    conn,
                    "sales_open_at_ms",
                    opens_at_ms.map(|t| t.to_string()).as_deref(),
                )
                .await?;
                trail::append(
                    conn,
                    now_ms,
                    &actor,
                    "sales_open_at",
                    json!({"opens_at": opens_at_ms.map(rfc3339), "opens_at_ms": opens_at_ms}),
                    json!({}),
                )
                .await?;
                Ok(())
            })
        })
        .await
    }

    /// Sets (or clears) the message shown on the site.
    pub async fn set_announcement(&self, message: Option<String>) -> Result<(), Error> {
        self.set_announcement_as(Actor::Operator, message).await
    }

    /// [`Service::set_announcement`], recorded in the trail as `actor`'s.
    pub async fn set_announcement_as(
        &self,
        actor: Actor,
        message: Option<String>,
    ) -> Result<(), Error> {
        if let Some(text) = &message
            && (text.trim().is_empty() || text.chars().count() > 1000)
        {
            return Err(Error::Validation(
                "announcement: 1 to 1000 characters, not only spaces".to_owned(),
            ));
        }
        let request = json!({"message": message});
        self.write_recorded(actor, "announce", request, move |conn, _| {
            let message = message.clone();
            Box::pin(async move {
                put_setting(conn, "announcement", message.as_deref()).await?;
                Ok(((), json!({})))
            })
        })
        .await
    }
}
