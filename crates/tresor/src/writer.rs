//! The single writer: every change to the database goes through one task
//! that commits whatever is queued in one transaction (group commit). A lone
//! request is committed at once; under load the queue fills while the
//! previous batch is being made durable, so batches grow with the load by
//! themselves. A request is answered only after its batch has committed.
//!
//! A batch, top to bottom:
//! 1. requests whose caller is gone (timed out, disconnected) are dropped
//!    before they run, so nobody told "failed" finds the effect later;
//! 2. one transaction: lock the trail's head; the hot commands (purchases,
//!    throws, settlements) as one set ([`crate::batch`]); then the rare jobs
//!    (register, deposit, operator commands…) one by one, each in a
//!    savepoint so that a refusal rolls back alone; the head written back;
//!    on PostgreSQL the batch's identity recorded;
//! 3. COMMIT — or ROLLBACK when nothing was written (a batch of refusals
//!    needs no fsync). A COMMIT whose answer is lost is **resolved**, never
//!    replayed: the writer looks the batch's identity up on a fresh
//!    connection and answers from what it finds (on SQLite a failed COMMIT
//!    ran in this process and was rolled back: not committed);
//! 4. a batch that failed before committing (rolled back: nothing applied)
//!    runs again request by request, so one request's trouble cannot sink
//!    the others.
//!
//! On SQLite the writer runs on a thread of its own with its own connection
//! (`sql::Conn::Lite`): its statements are plain function calls on prepared
//! statements, and only a request and its answer cross threads.

use crate::batch::{self, Command, Reply};
use crate::error::Error;
use crate::store::sql::{self, Conn};
use crate::store::{Backend, Db};
use crate::trail;
use futures_util::future::BoxFuture;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use std::any::Any;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

type Boxed = Box<dyn Any + Send>;

/// A rare job run inside the writer's transaction, in a savepoint of its
/// own. It may be run more than once (a batch that fails before committing
/// is run again request by request), so it must not have effects outside
/// the connection it is given.
pub type Job =
    Box<dyn for<'c> Fn(&'c mut Conn) -> BoxFuture<'c, Result<Boxed, Error>> + Send + Sync>;

/// A request waiting in the writer's queue.
enum Request {
    Hot(Command, oneshot::Sender<Result<Reply, Error>>),
    Job(Job, oneshot::Sender<Result<Boxed, Error>>),
}

impl Request {
    /// Whether the caller stopped waiting (its future was dropped).
    fn caller_gone(&self) -> bool {
        match self {
            Request::Hot(_, reply) => reply.is_closed(),
            Request::Job(_, reply) => reply.is_closed(),
        }
    }
}

/// One request's answer.
enum Answer {
    Hot(Result<Reply, Error>),
    Job(Result<Boxed, Error>),
}

impl Answer {
    fn failed(error: Error, request: &Request) -> Answer {
        match request {
            Request::Hot(..) => Answer::Hot(Err(error)),
            Request::Job(..) => Answer::Job(Err(error)),
        }
    }
}

/// What one committed batch cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchCost {
    /// Requests in the batch.
    pub requests: usize,
    /// Statements the batch ran, from its first to its COMMIT excluded.
    pub statements: u64,
}

/// What the writer measures of itself, for the metrics endpoint.
#[derive(Debug)]
pub struct WriterStats {
    /// Requests per committed batch.
    pub batch_size: Histogram,
    /// Batches that failed before committing and ran again request by request.
    pub batch_retries: Counter,
    /// Requests dropped before running because their caller was gone.
    pub dropped: Counter,
    /// Requests queued (jobs and hot commands), whatever became of them: what
    /// tests count to prove a refused request never reached the writer.
    pub queued: Counter,
    /// COMMITs whose answer was lost, resolved by looking the batch up.
    pub commits_resolved: Counter,
    /// The last batches' costs, newest last (for tests and diagnosis).
    recent: Mutex<VecDeque<BatchCost>>,
}

impl Default for WriterStats {
    fn default() -> Self {
        WriterStats {
            batch_size: Histogram::new(exponential_buckets(1.0, 2.0, 12)),
            batch_retries: Counter::default(),
            dropped: Counter::default(),
            queued: Counter::default(),
            commits_resolved: Counter::default(),
            recent: Mutex::default(),
        }
    }
}

impl WriterStats {
    /// The last (at most 64) batches' costs, oldest first.
    pub fn recent_batches(&self) -> Vec<BatchCost> {
        self.recent
            .lock()
            .expect("stats lock")
            .iter()
            .copied()
            .collect()
    }

    fn record(&self, cost: BatchCost) {
        self.batch_size.observe(cost.requests as f64);
        let mut recent = self.recent.lock().expect("stats lock");
        if recent.len() == 64 {
            recent.pop_front();
        }
        recent.push_back(cost);
    }
}

/// The handle through which requests reach the writer.
#[derive(Debug, Clone)]
pub struct Writer {
    queue: mpsc::Sender<Request>,
    pub stats: Arc<WriterStats>,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Request::Hot(command, _) => f.debug_tuple("Hot").field(command).finish(),
            Request::Job(..) => f.write_str("Job"),
        }
    }
}

/// The most requests committed in one transaction by default. Past a few
/// hundred a batch gains little (the commit's fsync is already shared) while
/// every request of it waits for the slowest.
pub const DEFAULT_MAX_BATCH: usize = 1024;
const MAX_ATTEMPTS: usize = 8;
/// Batches' identities are kept this long, far longer than any COMMIT
/// takes to be resolved.
const KEEP_BATCH_IDS_MS: i64 = 24 * 3600 * 1000;

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

    /// Ends a transaction after an error: rolls back whatever it did.
    async fn abandon(&mut self, conn: Conn) {
        let _ = self.end(conn, false).await;
    }

    /// Whether the batch `id` committed. On PostgreSQL it is read on a
    /// connection other than the one that lost the COMMIT's answer. On
    /// SQLite the COMMIT runs in this process: when it fails, the
    /// transaction was not committed (it was rolled back), so there is
    /// nothing to look up and no identity is written.
    async fn committed(&mut self, id: &str) -> Result<bool, Error> {
        match self {
            Engine::Lite(_) => Ok(false),
            Engine::Pool(db) => {
                let mut conn = Conn::Pooled(db.pool.acquire().await?);
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
    fn records_identity(&self) -> bool {
        matches!(self, Engine::Pool(_))
    }
}

impl Writer {
    /// Starts the writer, committing at most `max_batch` requests per
    /// transaction (1: each alone). On SQLite it runs on a thread of its own
    /// with its own connection to the file; on PostgreSQL as a task of the
    /// current runtime, on the pool.
    pub fn start(db: Db, max_batch: usize, context: Arc<batch::Context>) -> Writer {
        let max_batch = max_batch.max(1);
        let (queue, receiver) = mpsc::channel(16 * max_batch.max(64));
        let stats = Arc::new(WriterStats::default());
        let loop_ = Loop {
            receiver,
            stats: stats.clone(),
            max_batch,
            context,
            ids: BatchIds::new(),
        };
        match (&db.backend, &db.sqlite_path) {
            (Backend::Sqlite, Some(path)) => {
                let path = path.clone();
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
                        runtime.block_on(loop_.run(engine));
                    })
                    .expect("a thread for the writer");
            }
            _ => {
                tokio::spawn(loop_.run(Engine::Pool(db)));
            }
        }
        Writer { queue, stats }
    }

    /// Runs a rare `job` in the next batch and returns its result once the
    /// batch is durable. A job that returns an error has its changes rolled
    /// back alone.
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
        self.send(Request::Job(job, reply)).await?;
        let value = answer
            .await
            .map_err(|_| Error::Unavailable("the writer has stopped"))??;
        Ok(*value
            .downcast::<T>()
            .expect("a job's reply has the job's type"))
    }

    /// Runs a hot command in the next batch's set and returns its result
    /// once the batch is durable.
    pub async fn hot(&self, command: Command) -> Result<Reply, Error> {
        let (reply, answer) = oneshot::channel();
        self.send(Request::Hot(command, reply)).await?;
        answer
            .await
            .map_err(|_| Error::Unavailable("the writer has stopped"))?
    }

    async fn send(&self, request: Request) -> Result<(), Error> {
        self.stats.queued.inc();
        self.queue
            .send(request)
            .await
            .map_err(|_| Error::Unavailable("the writer has stopped"))
    }

    /// Requests waiting in the queue.
    pub fn queued(&self) -> usize {
        self.queue.max_capacity() - self.queue.capacity()
    }
}

/// Names batches uniquely across servers and restarts: a random prefix per
/// writer, then a counter.
struct BatchIds {
    prefix: String,
    next: u64,
}

impl BatchIds {
    fn new() -> BatchIds {
        let mut random = [0u8; 12];
        getrandom::fill(&mut random).expect("the operating system's random generator works");
        BatchIds {
            prefix: hex::encode(random),
            next: 0,
        }
    }

    fn next(&mut self) -> (String, u64) {
        self.next += 1;
        (format!("{}-{}", self.prefix, self.next), self.next)
    }
}

struct Loop {
    receiver: mpsc::Receiver<Request>,
    stats: Arc<WriterStats>,
    max_batch: usize,
    context: Arc<batch::Context>,
    ids: BatchIds,
}

impl Loop {
    async fn run(mut self, mut engine: Engine) {
        let mut batch = Vec::with_capacity(self.max_batch);
        while self.receiver.recv_many(&mut batch, self.max_batch).await > 0 {
            let before = batch.len();
            batch.retain(|request| !request.caller_gone());
            self.stats.dropped.inc_by((before - batch.len()) as u64);
            if batch.is_empty() {
                continue;
            }
            let answers = self.batch(&mut engine, &batch).await;
            for (request, answer) in batch.drain(..).zip(answers) {
                match (request, answer) {
                    (Request::Hot(_, reply), Answer::Hot(result)) => {
                        let _ = reply.send(result);
                    }
                    (Request::Job(_, reply), Answer::Job(result)) => {
                        let _ = reply.send(result);
                    }
                    _ => unreachable!("answers follow their requests"),
                }
            }
        }
    }

    async fn batch(&mut self, engine: &mut Engine, batch: &[Request]) -> Vec<Answer> {
        match self.attempt(engine, batch).await {
            Ok(answers) => answers,
            Err(error) => {
                // The transaction was rolled back (a deadlock with another
                // server, a lost connection before COMMIT): nothing of it
                // was applied, so each request runs again in a transaction
                // of its own.
                self.stats.batch_retries.inc();
                tracing::warn!(%error, size = batch.len(), "batch failed; running its requests one by one");
                let mut answers = Vec::with_capacity(batch.len());
                for request in batch {
                    answers.push(self.alone(engine, request).await);
                }
                answers
            }
        }
    }

    async fn alone(&mut self, engine: &mut Engine, request: &Request) -> Answer {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.attempt(engine, std::slice::from_ref(request)).await {
                Ok(mut answers) => return answers.pop().expect("one answer"),
                Err(error) if is_transient(&error) && attempt < MAX_ATTEMPTS => {
                    tokio::time::sleep(Duration::from_millis(2 << attempt)).await;
                }
                Err(error) => return Answer::failed(error, request),
            }
        }
    }

    /// One transaction for the whole batch. `Err` means it was rolled back
    /// and nothing of it applied.
    async fn attempt(
        &mut self,
        engine: &mut Engine,
        batch: &[Request],
    ) -> Result<Vec<Answer>, Error> {
        let (id, number) = self.ids.next();
        let now_ms = system_now_ms();
        let identity = engine.records_identity();
        let mut conn = engine.begin().await?;
        let (inside, statements) = sql::counting(async {
            let head = trail::lock_head(&mut conn).await?;
            let start_seq = head.seq;
            let (outcome, head) =
                trail::with_batch_head(head, requests(&mut conn, &self.context, batch)).await;
            let (answers, wrote) = outcome?;
            if wrote && head.seq != start_seq {
                trail::store_head(&mut conn, &head).await?;
            }
            if wrote && identity {
                sql::query("INSERT INTO writer_batches (id, committed_at_ms) VALUES ($1, $2)")
                    .bind(&id)
                    .bind(now_ms)
                    .execute(&mut conn)
                    .await?;
                if number % 4096 == 0 {
                    // Old identities are pruned now and then.
                    sql::query("DELETE FROM writer_batches WHERE committed_at_ms < $1")
                        .bind(now_ms - KEEP_BATCH_IDS_MS)
                        .execute(&mut conn)
                        .await?;
                }
            }
            Ok::<_, Error>((answers, wrote))
        })
        .await;
        let (answers, wrote) = match inside {
            Ok(inside) => inside,
            Err(error) => {
                engine.abandon(conn).await;
                return Err(error);
            }
        };
        if !wrote {
            // Nothing to make durable: every request was refused.
            engine.end(conn, false).await?;
            return Ok(answers);
        }
        if let Err(error) = engine.end(conn, true).await {
            // The COMMIT's answer is lost: the database may have committed
            // or not. Find out rather than run the batch again.
            tracing::warn!(%error, batch = %id, "COMMIT failed; looking the batch up");
            match resolve(engine, &id).await {
                Some(true) => {
                    self.stats.commits_resolved.inc();
                }
                Some(false) => return Err(error),
                None => {
                    return Ok(batch
                        .iter()
                        .map(|request| {
                            Answer::failed(
                                Error::Unavailable("the database did not confirm the change"),
                                request,
                            )
                        })
                        .collect());
                }
            }
        }
        self.stats.record(BatchCost {
            requests: batch.len(),
            statements,
        });
        Ok(answers)
    }
}

/// The batch's requests inside its transaction: the hot set, then the rare
/// jobs. Returns their answers in the batch's order and whether anything was
/// written.
async fn requests(
    conn: &mut Conn,
    context: &batch::Context,
    batch: &[Request],
) -> Result<(Vec<Answer>, bool), Error> {
    let hot: Vec<&Command> = batch
        .iter()
        .filter_map(|request| match request {
            Request::Hot(command, _) => Some(command),
            Request::Job(..) => None,
        })
        .collect();
    let (hot_results, mut wrote) = if hot.is_empty() {
        (Vec::new(), false)
    } else {
        batch::run(conn, context, &hot).await?
    };
    let mut hot_results = hot_results.into_iter();
    let lone = batch.len() == 1;
    let mut answers = Vec::with_capacity(batch.len());
    for request in batch {
        match request {
            Request::Hot(..) => {
                answers.push(Answer::Hot(
                    hot_results.next().expect("one result per command"),
                ));
            }
            Request::Job(job, _) => {
                let result = rare_job(conn, job, lone).await?;
                wrote |= result.is_ok();
                answers.push(Answer::Job(result));
            }
        }
    }
    Ok((answers, wrote))
}

/// Runs a rare job in a savepoint of its own, so that its refusal rolls
/// back alone. A job alone in its batch needs none: its refusal means the
/// batch wrote nothing and is rolled back whole.
async fn rare_job(conn: &mut Conn, job: &Job, lone: bool) -> Result<Result<Boxed, Error>, Error> {
    if lone {
        return match job(conn).await {
            Err(error) if is_failure(&error) => Err(error),
            result => Ok(result),
        };
    }
    let before = trail::batch_head().expect("inside the batch scope");
    conn.execute_raw("SAVEPOINT job").await?;
    match job(conn).await {
        Ok(value) => {
            conn.execute_raw("RELEASE SAVEPOINT job").await?;
            Ok(Ok(value))
        }
        Err(error) if is_failure(&error) => Err(error),
        Err(error) => {
            conn.execute_raw("ROLLBACK TO SAVEPOINT job").await?;
            conn.execute_raw("RELEASE SAVEPOINT job").await?;
            trail::reset_batch_head(before);
            Ok(Err(error))
        }
    }
}

/// Looks a batch up after its COMMIT failed: `Some(committed)`, or `None`
/// when the database stays unreachable for about half a minute.
async fn resolve(engine: &mut Engine, id: &str) -> Option<bool> {
    for attempt in 0..30u64 {
        match engine.committed(id).await {
            Ok(found) => return Some(found),
            Err(error) => {
                tracing::warn!(%error, attempt, "cannot look the batch up yet");
                tokio::time::sleep(Duration::from_millis(100 * attempt.min(10))).await;
            }
        }
    }
    None
}

fn system_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Errors of the database rather than refusals: they abort the batch.
fn is_failure(error: &Error) -> bool {
    matches!(
        error,
        Error::Database(_) | Error::Sqlite(_) | Error::Unavailable(_)
    )
}

/// Errors that go away when the transaction is tried again.
fn is_transient(error: &Error) -> bool {
    match error {
        Error::Database(sqlx::Error::Database(db)) => matches!(
            db.code().as_deref(),
            // PostgreSQL: serialization failure, deadlock; SQLite: busy, locked.
            Some("40001" | "40P01" | "5" | "6" | "517" | "262")
        ),
        Error::Database(sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut) => true,
        Error::Sqlite(rusqlite::Error::SqliteFailure(failure, _)) => matches!(
            failure.code,
            rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
        ),
        _ => false,
    }
}
