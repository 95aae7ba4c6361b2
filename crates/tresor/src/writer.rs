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
//!
//! **Supervision**: the writer never half-lives. A writer that cannot open
//! its database, or that panics inside a batch, is started again with a
//! growing pause (50 ms doubling to 2 s); a panic rolls its batch back (the
//! transaction is dropped unfinished) and answers its callers with an
//! error, never running it again. While it is down every request is
//! answered at once with `unavailable`, and [`Writer::probe`] fails, so
//! `/readyz` does too.

use crate::batch::{self, Command, Reply};
use crate::error::Error;
use crate::store::sql::{self, Conn};
use crate::store::{Backend, Db};
use crate::trail;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use std::any::Any;
use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
    /// Readiness: answered by a writer that is up, between two batches.
    Probe(oneshot::Sender<Result<(), Error>>),
}

impl Request {
    /// Whether the caller stopped waiting (its future was dropped).
    fn caller_gone(&self) -> bool {
        match self {
            Request::Hot(_, reply) => reply.is_closed(),
            Request::Job(_, reply) => reply.is_closed(),
            Request::Probe(reply) => reply.is_closed(),
        }
    }

    /// Answers the request with `error` without running it.
    fn refuse(self, error: Error) {
        match self {
            Request::Hot(_, reply) => drop(reply.send(Err(error))),
            Request::Job(_, reply) => drop(reply.send(Err(error))),
            Request::Probe(reply) => drop(reply.send(Err(error))),
        }
    }
}

/// One request's answer.
enum Answer {
    Hot(Result<Reply, Error>),
    Job(Result<Boxed, Error>),
}

impl Answer {
    /// Whether the request could not run for an outage (see [`OUTAGE`]).
    fn is_outage(&self) -> bool {
        matches!(
            self,
            Answer::Hot(Err(Error::Unavailable(OUTAGE)))
                | Answer::Job(Err(Error::Unavailable(OUTAGE)))
        )
    }

    fn failed(error: Error, request: &Request) -> Answer {
        match request {
            Request::Hot(..) => Answer::Hot(Err(error)),
            Request::Job(..) | Request::Probe(..) => Answer::Job(Err(error)),
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
    /// From its BEGIN to its COMMIT answered, as in
    /// [`WriterStats::batch_seconds`] (whose buckets give no quantiles back:
    /// the recent batches' times do).
    pub elapsed: Duration,
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
    /// Times the writer was started again, after a panic or a failed start.
    pub restarts: Counter,
    /// Requests waiting for the writer now: from the moment a caller hands
    /// one over (including while it waits for room in a full queue) to the
    /// moment the writer takes it into a batch. 0 when the writer keeps up.
    pub queue_depth: Gauge,
    /// Seconds each committed batch took, from its BEGIN to its COMMIT
    /// answered (a lost COMMIT's lookup included): what every request of the
    /// batch waited for once taken from the queue.
    pub batch_seconds: Histogram,
    /// Whether the writer is up (its connection open, taking batches).
    up: AtomicBool,
    /// When the writer last finished a batch or answered a probe, in ms
    /// since `born`: its heartbeat.
    beat_ms: AtomicU64,
    born: std::time::Instant,
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
            restarts: Counter::default(),
            queue_depth: Gauge::default(),
            // 50 µs to 6.5 s, as the HTTP latency.
            batch_seconds: Histogram::new(exponential_buckets(0.000_05, 2.0, 18)),
            up: AtomicBool::new(false),
            beat_ms: AtomicU64::new(0),
            born: std::time::Instant::now(),
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

    /// Whether the writer is up now (see [`Writer::probe`] for an answer
    /// that also proves it is not stuck).
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::SeqCst)
    }

    fn beat(&self) {
        self.beat_ms
            .store(self.born.elapsed().as_millis() as u64, Ordering::SeqCst);
    }

    /// Whether the writer is up and finished a batch within `within`.
    fn beat_within(&self, within: Duration) -> bool {
        let now = self.born.elapsed().as_millis() as u64;
        self.is_up()
            && now.saturating_sub(self.beat_ms.load(Ordering::SeqCst)) <= within.as_millis() as u64
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
            Request::Probe(..) => f.write_str("Probe"),
        }
    }
}

/// The most requests committed in one transaction by default. Past a few
/// hundred a batch gains little (the commit's fsync is already shared) while
/// every request of it waits for the slowest.
pub const DEFAULT_MAX_BATCH: usize = 1024;
const MAX_ATTEMPTS: usize = 8;
/// The answer to a request its batch could not run for an outage.
const OUTAGE: &str = "the database cannot be reached; nothing was changed, try again shortly";
/// Batches' identities are kept this long, far longer than any COMMIT
/// takes to be resolved.
const KEEP_BATCH_IDS_MS: i64 = 24 * 3600 * 1000;

/// Faults a test injects into the real writer (fault-injection hooks, all
/// off by default; `tresor serve` sets the first two from hidden flags).
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// Panic inside the transaction of the N-th batch the writer begins
    /// (counted from 1, across restarts), after its statements ran and
    /// before its COMMIT…
    pub panic_at_batch: Option<u64>,
    /// …and in as many batches from that one (1 when 0).
    pub panics: u64,
    /// SQLite: the writer connection's `PRAGMA max_page_count`, read before
    /// every batch, so a test fills the "disk" and frees it while the
    /// server runs (0: SQLite's own limit).
    pub sqlite_max_page_count: Arc<AtomicU64>,
}

impl Faults {
    fn maybe_panic(&self, batch_number: u64) {
        if let Some(at) = self.panic_at_batch
            && (at..at + self.panics.max(1)).contains(&batch_number)
        {
            panic!("fault injection: the writer panics in batch {batch_number}");
        }
    }
}

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
            Engine::Pool(db) => Ok(Conn::Tx(db.begin().await?)),
        }
    }

    async fn end(&mut self, mut conn: Conn, commit: bool) -> Result<(), Error> {
        match conn {
            Conn::Tx(tx) => {
                let outcome = if commit {
                    tx.commit().await
                } else {
                    tx.rollback().await
                };
                if let (Err(error), Engine::Pool(db)) = (outcome, &*self) {
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
    async fn abandon(&mut self, conn: Conn, error: Error) -> Error {
        let _ = self.end(conn, false).await;
        match self {
            Engine::Pool(db) => db.noticed(error),
            Engine::Lite(_) => error,
        }
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
        Writer::start_with(db, max_batch, context, Faults::default())
    }

    /// [`Writer::start`] with `faults` injected (tests only).
    pub fn start_with(
        db: Db,
        max_batch: usize,
        context: Arc<batch::Context>,
        faults: Faults,
    ) -> Writer {
        let max_batch = max_batch.max(1);
        let (queue, receiver) = mpsc::channel(16 * max_batch.max(64));
        let stats = Arc::new(WriterStats::default());
        let loop_ = Loop {
            receiver,
            stats: stats.clone(),
            max_batch,
            context,
            ids: BatchIds::new(),
            faults,
            page_limit: PageLimit::default(),
            log: trail::log::Writer {
                name: db.writer.clone(),
                edge: None,
            },
            log_key: db.log_key.clone(),
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
                        let open = move || {
                            let conn = sql::open_lite(&path).map_err(|error| {
                                tracing::error!(%error, path = %path.display(), "the writer cannot open the database");
                                Error::from(error)
                            })?;
                            Ok(Engine::Lite(Some(Conn::Lite(conn))))
                        };
                        runtime.block_on(loop_.supervise(open));
                    })
                    .expect("a thread for the writer");
            }
            _ => {
                tokio::spawn(loop_.supervise(move || Ok(Engine::Pool(db.clone()))));
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
        // Waiting from now; uncounted again if the request never enters the
        // queue (the writer stopped, or the caller gave up while the queue
        // was full), else by the writer when it takes it.
        let waiting = Waiting(&self.stats.queue_depth);
        waiting.0.inc();
        self.queue
            .send(request)
            .await
            .map_err(|_| Error::Unavailable("the writer has stopped"))?;
        std::mem::forget(waiting);
        Ok(())
    }

    /// Whether the writer is up and not stuck, within `within`: `Ok` once
    /// it takes a probe queued behind every request before it, or if it is
    /// finishing batches meanwhile (busy under load is not stuck); an error
    /// when it is down (restarting) or has finished nothing for `within`.
    /// Runs no statement.
    pub async fn probe(&self, within: Duration) -> Result<(), Error> {
        let (reply, answer) = oneshot::channel();
        let probe = async {
            self.send(Request::Probe(reply)).await?;
            answer
                .await
                .map_err(|_| Error::Unavailable("the writer has stopped"))?
        };
        match tokio::time::timeout(within, probe).await {
            Ok(answer) => answer,
            Err(_) if self.stats.beat_within(within) => Ok(()),
            Err(_) => Err(Error::NotReady(
                "the writer is stuck: it finished no batch in time",
            )),
        }
    }

    /// Requests waiting in the queue.
    pub fn queued(&self) -> usize {
        self.queue.max_capacity() - self.queue.capacity()
    }
}

/// A request counted in [`WriterStats::queue_depth`] that has not entered
/// the queue yet: uncounted when dropped.
struct Waiting<'a>(&'a Gauge);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.dec();
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
    faults: Faults,
    page_limit: PageLimit,
    /// The writer's own log (one per writer name) and the right edge it
    /// keeps between transactions.
    log: trail::log::Writer,
    /// The key that signs the log's checkpoints (none: unsigned, only in
    /// the library's own uses; `tresor` refuses to start without one).
    log_key: Option<crate::logkey::LogKey>,
}

/// The `max_page_count` of the writer's SQLite connection ([`Faults`]).
#[derive(Debug, Default)]
struct PageLimit {
    /// The limit the connection has now (0: its own).
    applied: u64,
    /// SQLite's own limit, read before the first change.
    default: Option<u64>,
}

/// Why [`Loop::run`] returned.
enum Exit {
    /// Every [`Writer`] handle is gone: the server is stopping.
    Closed,
    /// A batch panicked, after `batches` batches had run.
    Panicked { batches: u64 },
}

/// The pause before the writer's `failures`-th start in a row.
fn backoff(failures: u32) -> Duration {
    Duration::from_millis((50u64 << failures.saturating_sub(1).min(6)).min(2_000))
}

impl Loop {
    /// Opens an engine and runs batches on it, again and again: after a
    /// failed start or a panic, pauses (answering every request with
    /// `unavailable` meanwhile) and starts again.
    async fn supervise(mut self, mut open: impl FnMut() -> Result<Engine, Error>) {
        let mut failures = 0u32;
        loop {
            match open() {
                Ok(engine) => {
                    if failures > 0 {
                        tracing::warn!(failures, "the writer started again");
                    }
                    self.page_limit = PageLimit::default();
                    self.stats.up.store(true, Ordering::SeqCst);
                    let exit = self.run(engine).await;
                    self.stats.up.store(false, Ordering::SeqCst);
                    match exit {
                        Exit::Closed => return,
                        Exit::Panicked { batches } => {
                            // A writer that ran a while before its panic
                            // starts again at once; one that panics at
                            // every start waits longer each time.
                            failures = if batches > 0 { 1 } else { failures + 1 };
                        }
                    }
                }
                Err(_) => failures += 1,
            }
            self.stats.restarts.inc();
            if !self.refuse_for(backoff(failures)).await {
                return;
            }
        }
    }

    /// While the writer is down: answers every request at once for `pause`.
    /// `false` when the queue closed.
    async fn refuse_for(&mut self, pause: Duration) -> bool {
        let until = tokio::time::Instant::now() + pause;
        let mut waiting = Vec::new();
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(until) => return true,
                received = self.receive(&mut waiting) => {
                    if received == 0 {
                        return false;
                    }
                    for request in waiting.drain(..) {
                        request.refuse(Error::Unavailable("the writer is restarting"));
                    }
                }
            }
        }
    }

    /// Takes what is queued (at most a batch, waiting for one request),
    /// uncounting it from the queue's depth; 0 when the queue closed.
    async fn receive(&mut self, into: &mut Vec<Request>) -> usize {
        let received = self.receiver.recv_many(into, self.max_batch).await;
        self.stats.queue_depth.dec_by(received as i64);
        received
    }

    async fn run(&mut self, mut engine: Engine) -> Exit {
        let mut batch = Vec::with_capacity(self.max_batch);
        let mut batches = 0;
        while self.receive(&mut batch).await > 0 {
            let before = batch.len();
            batch.retain(|request| !request.caller_gone());
            self.stats.dropped.inc_by((before - batch.len()) as u64);
            // Probes are answered here: the writer is up and between batches.
            for probe in batch.extract_if(.., |request| matches!(request, Request::Probe(_))) {
                if let Request::Probe(reply) = probe {
                    let _ = reply.send(Ok(()));
                }
            }
            self.stats.beat();
            if batch.is_empty() {
                continue;
            }
            let outcome = AssertUnwindSafe(self.batch(&mut engine, &batch))
                .catch_unwind()
                .await;
            let Ok(answers) = outcome else {
                // The batch's transaction was dropped unfinished, so rolled
                // back (a SQLite connection closed in a transaction, a sqlx
                // transaction dropped): its callers are told, nothing runs
                // again, and the engine is opened afresh.
                tracing::error!(
                    size = batch.len(),
                    "the writer panicked in a batch; starting it again"
                );
                for request in batch.drain(..) {
                    request.refuse(Error::Unavailable(
                        "the writer failed during this request; nothing was saved: try again",
                    ));
                }
                return Exit::Panicked { batches };
            };
            batches += 1;
            self.stats.beat();
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
        Exit::Closed
    }

    /// Gives the writer's SQLite connection the `max_page_count` the
    /// faults ask for, when it changed.
    async fn apply_page_limit(&mut self, engine: &mut Engine) -> Result<(), Error> {
        let wanted = self.faults.sqlite_max_page_count.load(Ordering::SeqCst);
        let Engine::Lite(Some(conn)) = engine else {
            return Ok(());
        };
        if wanted == self.page_limit.applied {
            return Ok(());
        }
        if self.page_limit.default.is_none() {
            let default: i64 = sql::query_scalar("PRAGMA max_page_count")
                .fetch_one(&mut *conn)
                .await?;
            self.page_limit.default = Some(default as u64);
        }
        let limit = if wanted == 0 {
            self.page_limit.default.unwrap_or(u64::from(u32::MAX - 1))
        } else {
            wanted
        };
        conn.execute_raw(&format!("PRAGMA max_page_count = {limit}"))
            .await?;
        self.page_limit.applied = wanted;
        Ok(())
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
                // Once one fails for an outage (the database unreachable or
                // read-only, failing over), the rest are answered at once
                // rather than each waiting for a connection in turn.
                let mut answers = Vec::with_capacity(batch.len());
                let mut outage = false;
                for request in batch {
                    let answer = if outage {
                        Answer::failed(Error::Unavailable(OUTAGE), request)
                    } else {
                        self.alone(engine, request).await
                    };
                    outage = answer.is_outage();
                    answers.push(answer);
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
                Err(error) if error.is_outage() => {
                    return Answer::failed(Error::Unavailable(OUTAGE), request);
                }
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
        self.apply_page_limit(engine).await?;
        let started = std::time::Instant::now();
        let mut conn = engine.begin().await?;
        let (inside, statements) = sql::counting(async {
            let kept = self.log.edge.take();
            let head = trail::log::lock(&mut conn, &self.log.name, kept, now_ms).await?;
            let (outcome, head) =
                trail::with_batch_head(head, requests(&mut conn, &self.context, batch)).await;
            let (mut answers, wrote) = outcome?;
            self.faults.maybe_panic(number);
            let edge = if wrote {
                // Each purchase's receipt: its proof from the log's edge in
                // memory, then the checkpoint this transaction signs.
                for receipt in receipts(&mut answers) {
                    if !receipt.as_mut().is_some_and(|r| r.prove_in(&head)) {
                        *receipt = None;
                    }
                }
                let (edge, note) =
                    trail::log::store(&mut conn, head, self.log_key.as_ref(), now_ms).await?;
                for receipt in receipts(&mut answers) {
                    match (receipt.as_mut(), &note, &self.log_key) {
                        (Some(r), Some(note), Some(key)) => {
                            r.checkpoint.clone_from(note);
                            r.key = key.vkey().to_owned();
                        }
                        _ => *receipt = None,
                    }
                }
                Some(edge)
            } else if head.appended() {
                // Appended (the v1 seal) but rolled back: read it again.
                None
            } else {
                Some(head.into_edge())
            };
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
            Ok::<_, Error>((answers, wrote, edge))
        })
        .await;
        let (answers, wrote, edge) = match inside {
            Ok(inside) => inside,
            Err(error) => return Err(engine.abandon(conn, error).await),
        };
        if !wrote {
            // Nothing to make durable: every request was refused.
            engine.end(conn, false).await?;
            self.log.edge = edge;
            return Ok(answers);
        }
        let committed = engine.end(conn, true).await;
        if committed.is_ok() {
            // A COMMIT resolved below leaves the edge to be read again.
            self.log.edge = edge;
        }
        if let Err(error) = committed {
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
        let elapsed = started.elapsed();
        self.stats.batch_seconds.observe(elapsed.as_secs_f64());
        self.stats.record(BatchCost {
            requests: batch.len(),
            statements,
            elapsed,
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
            Request::Job(..) | Request::Probe(..) => None,
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
            Request::Probe(_) => unreachable!("probes are answered before the batch"),
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

/// The purchases' receipts among a batch's answers.
fn receipts(answers: &mut [Answer]) -> impl Iterator<Item = &mut Option<Box<trail::Receipt>>> {
    answers.iter_mut().filter_map(|answer| match answer {
        Answer::Hot(Ok(Reply::Bought { receipt, .. })) => Some(receipt),
        _ => None,
    })
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
        Error::Database(_) | Error::Sqlite(_) | Error::Unavailable(_) | Error::StorageFull
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
