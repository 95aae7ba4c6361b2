//! The single writer: every change to the database goes through one task that
//! commits whatever is queued in one transaction (group commit). A lone
//! request is committed at once; under load the queue fills while the previous
//! batch is being made durable, so batches grow with the load by themselves.
//! A request is answered only after its batch has committed.
//!
//! Tuning (see BENCHMARKS.md): a batch runs without per-job savepoints unless
//! one of its jobs is refused, and the trail's head is locked once per batch
//! and kept in memory while its jobs append (`trail::with_batch_head`). On
//! SQLite the writer runs on a thread of its own with its own connection
//! (`sql::Conn::Lite`): its statements are plain function calls on prepared
//! statements, and only a request and its answer cross threads.

use crate::error::Error;
use crate::store::sql::{self, Conn};
use crate::store::{Backend, Db};
use crate::trail;
use futures_util::future::BoxFuture;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use std::any::Any;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

type Boxed = Box<dyn Any + Send>;

/// A unit of work run inside the writer's transaction. It may be run more than
/// once (a batch that fails on a transient error is retried job by job), so it
/// must not have effects outside the connection it is given.
pub type Job =
    Box<dyn for<'c> Fn(&'c mut Conn) -> BoxFuture<'c, Result<Boxed, Error>> + Send + Sync>;

struct Request {
    job: Job,
    reply: oneshot::Sender<Result<Boxed, Error>>,
}

/// What the writer measures of itself, for the metrics endpoint.
#[derive(Debug)]
pub struct WriterStats {
    /// Jobs per committed batch.
    pub batch_size: Histogram,
    /// Batches that failed as a whole and were retried job by job.
    pub batch_retries: Counter,
}

impl Default for WriterStats {
    fn default() -> Self {
        WriterStats {
            batch_size: Histogram::new(exponential_buckets(1.0, 2.0, 12)),
            batch_retries: Counter::default(),
        }
    }
}

/// The handle through which requests reach the writer task.
#[derive(Debug, Clone)]
pub struct Writer {
    queue: mpsc::Sender<Request>,
    pub stats: Arc<WriterStats>,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Request")
    }
}

/// The most jobs committed in one transaction by default. Past a few hundred
/// a batch gains little (the commit's fsync is already shared) while every
/// job of it waits for the slowest.
pub const DEFAULT_MAX_BATCH: usize = 1024;
const MAX_ATTEMPTS: usize = 8;

/// Where the writer's transactions come from.
enum Engine {
    /// The writer's own SQLite connection, used on the writer's thread.
    Lite(Option<Conn>),
    /// Transactions of sqlx's pool (PostgreSQL).
    Pool(Db),
}

impl Engine {
    async fn begin(&mut self) -> Result<Conn, Error> {
        match self {
            Engine::Lite(conn) => {
                let mut conn = conn.take().expect("the SQLite connection is back");
                if let Err(error) = conn.execute_raw("BEGIN IMMEDIATE").await {
                    *self = Engine::Lite(Some(conn));
                    return Err(error);
                }
                Ok(conn)
            }
            Engine::Pool(db) => Ok(Conn::Tx(db.pool.begin().await?)),
        }
    }

    async fn end(&mut self, mut conn: Conn, commit: bool) -> Result<(), Error> {
        match conn {
            Conn::Tx(tx) if commit => tx.commit().await?,
            Conn::Tx(tx) => tx.rollback().await?,
            Conn::Lite(_) => {
                let outcome = conn
                    .execute_raw(if commit { "COMMIT" } else { "ROLLBACK" })
                    .await;
                if outcome.is_err() && commit {
                    // A failed COMMIT leaves the transaction open: end it.
                    let _ = conn.execute_raw("ROLLBACK").await;
                }
                *self = Engine::Lite(Some(conn));
                outcome?;
            }
            Conn::Pooled(_) => unreachable!("the writer uses transactions"),
        }
        Ok(())
    }

    /// Ends a transaction after an error: rolls back whatever it did.
    async fn abandon(&mut self, conn: Conn) {
        let _ = self.end(conn, false).await;
    }
}

impl Writer {
    /// Starts the writer.
    pub fn start(db: Db) -> Writer {
        Writer::start_with(db, DEFAULT_MAX_BATCH)
    }

    /// Starts the writer, committing at most `max_batch` jobs per transaction
    /// (1: each job alone). On SQLite it runs on a thread of its own with its
    /// own connection to the file; on PostgreSQL as a task of the current
    /// runtime, on the pool.
    pub fn start_with(db: Db, max_batch: usize) -> Writer {
        let max_batch = max_batch.max(1);
        let (queue, receiver) = mpsc::channel(16 * max_batch.max(64));
        let stats = Arc::new(WriterStats::default());
        match (&db.backend, &db.sqlite_path) {
            (Backend::Sqlite, Some(path)) => {
                let path = path.clone();
                let stats = stats.clone();
                std::thread::Builder::new()
                    .name("tresor-writer".to_owned())
                    .spawn(move || {
                        let runtime = tokio::runtime::Builder::new_current_thread()
                            .enable_all()
                            .build()
                            .expect("a runtime for the writer");
                        let engine = match sql::open_lite(&path) {
                            Ok(conn) => Engine::Lite(Some(Conn::Lite(conn))),
                            Err(error) => {
                                tracing::error!(%error, path = %path.display(), "the writer cannot open the database");
                                return;
                            }
                        };
                        runtime.block_on(run(engine, receiver, stats, max_batch));
                    })
                    .expect("a thread for the writer");
            }
            _ => {
                tokio::spawn(run(Engine::Pool(db), receiver, stats.clone(), max_batch));
            }
        }
        Writer { queue, stats }
    }

    /// Runs `job` in the next batch and returns its result once the batch is
    /// durable. A job that returns an error has its changes rolled back alone.
    pub async fn run<T, F>(&self, job: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: for<'c> Fn(&'c mut Conn) -> BoxFuture<'c, Result<T, Error>> + Send + Sync + 'static,
    {
        let job: Job = Box::new(move |conn| {
            let future = job(conn);
            Box::pin(async move { future.await.map(|value| Box::new(value) as Boxed) })
        });
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(Request { job, reply })
            .await
            .map_err(|_| Error::Unavailable("the writer has stopped"))?;
        let value = answer
            .await
            .map_err(|_| Error::Unavailable("the writer has stopped"))??;
        Ok(*value
            .downcast::<T>()
            .expect("a job's reply has the job's type"))
    }
}

async fn run(
    mut engine: Engine,
    mut receiver: mpsc::Receiver<Request>,
    stats: Arc<WriterStats>,
    max_batch: usize,
) {
    let mut batch = Vec::with_capacity(max_batch);
    while receiver.recv_many(&mut batch, max_batch).await > 0 {
        stats.batch_size.observe(batch.len() as f64);
        // Most batches have no refusal: run them without savepoints, which
        // cost two statements per job. A refusal rolls that attempt back and
        // the batch runs again with a savepoint per job (jobs may run twice).
        let mut outcome = commit_batch(&mut engine, &batch, false).await;
        if matches!(outcome, Ok(None)) {
            outcome = commit_batch(&mut engine, &batch, true).await;
        }
        let results = match outcome {
            Ok(Some(results)) => results,
            Ok(None) => unreachable!("a batch with savepoints always completes"),
            Err(error) => {
                // The batch as a whole failed (a deadlock with another server,
                // a lost connection): retry each job in its own transaction so
                // one job's trouble cannot sink the others.
                stats.batch_retries.inc();
                tracing::warn!(error = %error, size = batch.len(), "batch failed; retrying job by job");
                let mut results = Vec::with_capacity(batch.len());
                for request in &batch {
                    results.push(commit_alone(&mut engine, &request.job).await);
                }
                results
            }
        };
        for (request, result) in batch.drain(..).zip(results) {
            let _ = request.reply.send(result);
        }
    }
}

/// Runs every job of the batch in one transaction. The transaction first
/// locks the trail's head, which the jobs then move in memory
/// ([`trail::with_batch_head`]); it is written back once, before the commit.
///
/// With `savepoints`, each job runs in its own savepoint and a refused job
/// rolls back alone. Without, the first refusal rolls the whole transaction
/// back and `Ok(None)` asks for a run with savepoints; a batch of one job
/// needs none, its refusal is simply its result.
async fn commit_batch(
    engine: &mut Engine,
    batch: &[Request],
    savepoints: bool,
) -> Result<Option<Vec<Result<Boxed, Error>>>, Error> {
    let mut conn = engine.begin().await?;
    let outcome = batch_in(&mut conn, batch, savepoints).await;
    match outcome {
        Err(error) => {
            engine.abandon(conn).await;
            Err(error)
        }
        Ok(None) => {
            engine.end(conn, false).await?;
            Ok(None)
        }
        Ok(Some((results, keep))) => {
            engine.end(conn, keep).await?;
            Ok(Some(results))
        }
    }
}

/// The jobs of a batch inside its transaction: their results, and whether
/// the transaction is to be committed (`None`: run again with savepoints).
async fn batch_in(
    conn: &mut Conn,
    batch: &[Request],
    savepoints: bool,
) -> Result<Option<(Vec<Result<Boxed, Error>>, bool)>, Error> {
    let head = trail::lock_head(conn).await?;
    let start_seq = head.seq;
    let (outcome, head) = trail::with_batch_head(head, async {
        let mut results = Vec::with_capacity(batch.len());
        for request in batch {
            if !savepoints {
                match (request.job)(conn).await {
                    Ok(value) => results.push(Ok(value)),
                    Err(error) if is_transient(&error) => return Err(error),
                    Err(error) if batch.len() == 1 => {
                        results.push(Err(error));
                        return Ok(Some((results, false)));
                    }
                    Err(_) => return Ok(None),
                }
                continue;
            }
            let before = trail::batch_head().expect("inside the batch scope");
            conn.execute_raw("SAVEPOINT job").await?;
            match (request.job)(conn).await {
                Ok(value) => {
                    conn.execute_raw("RELEASE SAVEPOINT job").await?;
                    results.push(Ok(value));
                }
                Err(error) if is_transient(&error) => return Err(error),
                Err(error) => {
                    conn.execute_raw("ROLLBACK TO SAVEPOINT job").await?;
                    conn.execute_raw("RELEASE SAVEPOINT job").await?;
                    trail::reset_batch_head(before);
                    results.push(Err(error));
                }
            }
        }
        Ok(Some((results, true)))
    })
    .await;
    let outcome = outcome?;
    if let Some((_, true)) = &outcome
        && head.seq != start_seq
    {
        trail::store_head(conn, &head).await?;
    }
    Ok(outcome)
}

async fn commit_alone(engine: &mut Engine, job: &Job) -> Result<Boxed, Error> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let result = async {
            let mut conn = engine.begin().await?;
            let inside = async {
                let head = trail::lock_head(&mut conn).await?;
                let start_seq = head.seq;
                let (value, head) = trail::with_batch_head(head, job(&mut conn)).await;
                let value = value?;
                if head.seq != start_seq {
                    trail::store_head(&mut conn, &head).await?;
                }
                Ok(value)
            }
            .await;
            match inside {
                Ok(value) => {
                    engine.end(conn, true).await?;
                    Ok(value)
                }
                Err(error) => {
                    engine.abandon(conn).await;
                    Err(error)
                }
            }
        }
        .await;
        match result {
            Err(error) if is_transient(&error) && attempt < MAX_ATTEMPTS => {
                tokio::time::sleep(std::time::Duration::from_millis(2 << attempt)).await;
            }
            other => return other,
        }
    }
}

/// Errors that go away when the transaction is tried again.
fn is_transient(error: &Error) -> bool {
    match error {
        Error::Database(sqlx::Error::Database(db)) => matches!(
            db.code().as_deref(),
            // PostgreSQL: serialization failure, deadlock; SQLite: busy, locked.
            Some("40001" | "40P01" | "5" | "6" | "517" | "262")
        ),
        Error::Sqlite(rusqlite::Error::SqliteFailure(failure, _)) => matches!(
            failure.code,
            rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
        ),
        _ => false,
    }
}
