//! Where the writer's transactions come from: its own SQLite connection or
//! its own PostgreSQL connection (`store::pipe`); BEGIN, COMMIT or
//! ROLLBACK, and the look-up of a batch whose COMMIT's answer was lost.

use crate::error::Error;
use crate::store::Db;
use crate::store::pipe::Pipe;
use crate::store::sql::{self, Conn};

/// Where the writer's transactions come from.
pub(super) enum Engine {
    /// The writer's own SQLite connection, used on the writer's thread.
    Lite(Option<Conn>),
    /// PostgreSQL: the writer's own connection, kept between transactions
    /// with its prepared statements (`idle` while none is open), made again
    /// to the primary when it is lost; the pool for the look-ups.
    Pool { db: Db, idle: Option<Box<Pipe>> },
}

impl Engine {
    pub(super) async fn begin(&mut self) -> Result<Conn, Error> {
        match self {
            Engine::Lite(conn) => {
                let mut conn = conn.take().expect("the SQLite connection is back");
                if let Err(error) = conn.execute_raw("BEGIN IMMEDIATE").await {
                    *self = Engine::Lite(Some(conn));
                    return Err(error);
                }
                Ok(conn)
            }
            // BEGIN goes with the transaction's first message, cut at the
            // outage budget as BEGIN alone was.
            Engine::Pool { db, idle } => Ok(Conn::Pipe(db.begin_pipe(idle.take()).await?)),
        }
    }

    /// Commits (sending first the writes still held back) or rolls back
    /// (dropping them).
    pub(super) async fn end(&mut self, mut conn: Conn, commit: bool) -> Result<(), Error> {
        if commit && let Err(error) = conn.flush().await {
            // Nothing is committed: the transaction is rolled back below.
            let _ = Box::pin(self.end(conn, false)).await;
            return Err(match self {
                Engine::Pool { db, .. } => db.noticed(error),
                Engine::Lite(_) => error,
            });
        }
        match conn {
            Conn::Pipe(mut pipe) => {
                pipe.discard_held();
                let outcome = Box::pin(pipe.end(commit)).await;
                if let Engine::Pool { db, idle } = self {
                    match outcome {
                        // Kept, with its prepared statements, for the next
                        // transaction.
                        Ok(()) => *idle = Some(pipe),
                        // Its state is unknown (a COMMIT whose answer was
                        // lost): the connection is dropped, which ends any
                        // transaction left open on it.
                        Err(error) => return Err(db.noticed(error)),
                    }
                }
            }
            Conn::Tx(tx) => {
                let outcome = if commit {
                    tx.commit().await
                } else {
                    tx.rollback().await
                };
                if let (Err(error), Engine::Pool { db, .. }) = (outcome, &*self) {
                    return Err(db.noticed(error.into()));
                }
            }
            Conn::Lite(_) => {
                let outcome = conn
                    .execute_raw(if commit { "COMMIT" } else { "ROLLBACK" })
                    .await;
                if outcome.is_err() && commit {
                    // A failed COMMIT may leave the transaction open: end it.
                    let _ = conn.execute_raw("ROLLBACK").await;
                }
                *self = Engine::Lite(Some(conn));
                outcome?;
            }
            Conn::Pooled(_) => unreachable!("the writer uses transactions"),
        }
        Ok(())
    }

    /// Ends a transaction after `error`: rolls back whatever it did (and
    /// tells the pool's follower of the primary of an outage).
    pub(super) async fn abandon(&mut self, conn: Conn, error: Error) -> Error {
        let _ = self.end(conn, false).await;
        match self {
            Engine::Pool { db, .. } => db.noticed(error),
            Engine::Lite(_) => error,
        }
    }

    /// Whether the batch `id` committed. On PostgreSQL it is read on a
    /// connection other than the one that lost the COMMIT's answer. On
    /// SQLite the COMMIT runs in this process: when it fails, the
    /// transaction was not committed (it was rolled back), so there is
    /// nothing to look up and no identity is written.
    pub(super) async fn committed(&mut self, id: &str) -> Result<bool, Error> {
        match self {
            Engine::Lite(_) => Ok(false),
            Engine::Pool { db, .. } => {
                let mut conn = Conn::Pooled(db.acquire().await?);
                let found: i64 =
                    sql::query_scalar("SELECT COUNT(*) FROM writer_batches WHERE id = $1")
                        .bind(id)
                        .fetch_one(&mut conn)
                        .await?;
                Ok(found > 0)
            }
        }
    }

    /// Whether batches record their identity (see [`Engine::committed`]).
    pub(super) fn records_identity(&self) -> bool {
        matches!(self, Engine::Pool { .. })
    }
}
