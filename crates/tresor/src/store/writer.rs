//! The single writer: every change to the database goes through one task that
//! commits whatever is queued in one transaction (group commit). A lone
//! request is committed at once; under load the queue fills while the previous
//! batch is being made durable, so batches grow with the load by themselves.
//! A request is answered only after its batch has committed.
//!
//! Tuning (see BENCHMARKS.md): a batch runs without per-job savepoints unless
//! one of its jobs is refused, and the trail's head is locked once per batch
//! and kept in memory while its jobs append (`trail::with_batch_head`).

use crate::error::Error;
use crate::store::Db;
use crate::trail;
use futures_util::future::BoxFuture;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use sqlx::{Acquire, AnyConnection};
use std::any::Any;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

type Boxed = Box<dyn Any + Send>;

/// A unit of work run inside the writer's transaction. It may be run more than
/// once (a batch that fails on a transient error is retried job by job), so it
/// must not have effects outside the connection it is given.
pub type Job =
    Box<dyn for<'c> Fn(&'c mut AnyConnection) -> BoxFuture<'c, Result<Boxed, Error>> + Send + Sync>;

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

impl Writer {
    /// Starts the writer task on the current runtime.
    pub fn start(db: Db) -> Writer {
        Writer::start_with(db, DEFAULT_MAX_BATCH)
    }

    /// Starts the writer task, committing at most `max_batch` jobs per
    /// transaction (1: each job alone).
    pub fn start_with(db: Db, max_batch: usize) -> Writer {
        let max_batch = max_batch.max(1);
        let (queue, receiver) = mpsc::channel(16 * max_batch.max(64));
        let stats = Arc::new(WriterStats::default());
        tokio::spawn(run(db, receiver, stats.clone(), max_batch));
        Writer { queue, stats }
    }

    /// Runs `job` in the next batch and returns its result once the batch is
    /// durable. A job that returns an error has its changes rolled back alone.
    pub async fn run<T, F>(&self, job: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: for<'c> Fn(&'c mut AnyConnection) -> BoxFuture<'c, Result<T, Error>>
            + Send
            + Sync
            + 'static,
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
    db: Db,
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
        let mut outcome = commit_batch(&db, &batch, false).await;
        if matches!(outcome, Ok(None)) {
            outcome = commit_batch(&db, &batch, true).await;
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
                    results.push(commit_alone(&db, &request.job).await);
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
    db: &Db,
    batch: &[Request],
    savepoints: bool,
) -> Result<Option<Vec<Result<Boxed, Error>>>, sqlx::Error> {
    let mut tx = db.pool.begin().await?;
    let head = trail::lock_head(&mut tx).await?;
    let start_seq = head.seq;
    let (outcome, head) = trail::with_batch_head(head, async {
        let mut results = Vec::with_capacity(batch.len());
        for request in batch {
            if !savepoints {
                match (request.job)(&mut tx).await {
                    Ok(value) => results.push(Ok(value)),
                    Err(Error::Database(error)) if is_transient(&error) => return Err(error),
                    Err(error) if batch.len() == 1 => {
                        results.push(Err(error));
                        return Ok(Some((results, false)));
                    }
                    Err(_) => return Ok(None),
                }
                continue;
            }
            let before = trail::batch_head().expect("inside the batch scope");
            let mut savepoint = tx.begin().await?;
            match (request.job)(&mut savepoint).await {
                Ok(value) => {
                    savepoint.commit().await?;
                    results.push(Ok(value));
                }
                Err(Error::Database(error)) if is_transient(&error) => return Err(error),
                Err(error) => {
                    savepoint.rollback().await?;
                    trail::reset_batch_head(before);
                    results.push(Err(error));
                }
            }
        }
        Ok(Some((results, true)))
    })
    .await;
    match outcome? {
        None => {
            tx.rollback().await?;
            Ok(None)
        }
        Some((results, true)) => {
            if head.seq != start_seq {
                trail::store_head(&mut tx, &head).await?;
            }
            tx.commit().await?;
            Ok(Some(results))
        }
        Some((results, false)) => {
            // The batch's only job was refused: nothing to keep.
            tx.rollback().await?;
            Ok(Some(results))
        }
    }
}

async fn commit_alone(db: &Db, job: &Job) -> Result<Boxed, Error> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let result = async {
            let mut tx = db.pool.begin().await?;
            let head = trail::lock_head(&mut tx).await?;
            let start_seq = head.seq;
            let (value, head) = trail::with_batch_head(head, job(&mut tx)).await;
            let value = value?;
            if head.seq != start_seq {
                trail::store_head(&mut tx, &head).await?;
            }
            tx.commit().await?;
            Ok(value)
        }
        .await;
        match result {
            Err(Error::Database(error)) if is_transient(&error) && attempt < MAX_ATTEMPTS => {
                tokio::time::sleep(std::time::Duration::from_millis(2 << attempt)).await;
            }
            other => return other,
        }
    }
}

/// Errors that go away when the transaction is tried again.
fn is_transient(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Database(db) => matches!(
            db.code().as_deref(),
            // PostgreSQL: serialization failure, deadlock; SQLite: busy, locked.
            Some("40001" | "40P01" | "5" | "6" | "517" | "262")
        ),
        sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) | sqlx::Error::PoolClosed => false,
        _ => false,
    }
}
