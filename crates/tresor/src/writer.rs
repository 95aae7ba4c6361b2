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
//!
//! **The outage budget** ([`budget`]): a caller waits at most the budget
//! (5 s unless told), then is answered `unavailable`; a hot command is
//! abandoned at any time, a rare job only while still queued.

mod batch_loop;
mod budget;
mod engine;
mod faults;
mod stats;
mod transaction;

pub use budget::DEFAULT_OUTAGE_BUDGET;
pub use faults::Faults;
pub use stats::{BatchCost, WriterStats};

use crate::batch::{self, Command, Reply};
use crate::error::Error;
use crate::store::sql::{self, Conn};
use crate::store::{Backend, Db};
use crate::trail;
use batch_loop::{BatchIds, Loop};
use budget::{Claim, JobReply, OVER_BUDGET};
use engine::Engine;
use faults::PageLimit;
use futures_util::future::BoxFuture;
use prometheus_client::metrics::gauge::Gauge;
use std::any::Any;
use std::sync::Arc;
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
    Job(Job, JobReply),
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

    /// The writer takes the request into a batch: `false` when its caller
    /// is gone or withdrew it (see [`budget`]).
    fn take(&self) -> bool {
        match self {
            Request::Job(_, reply) => reply.take(),
            request => !request.caller_gone(),
        }
    }

    /// Sends the request's `answer` to its caller.
    fn answer(self, answer: Answer) {
        match (self, answer) {
            (Request::Hot(_, reply), Answer::Hot(result)) => drop(reply.send(result)),
            (Request::Job(_, reply), Answer::Job(result)) => drop(reply.send(result)),
            _ => unreachable!("answers follow their requests"),
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

/// The handle through which requests reach the writer.
#[derive(Debug, Clone)]
pub struct Writer {
    queue: mpsc::Sender<Request>,
    pub stats: Arc<WriterStats>,
    /// The longest a caller waits (see [`budget`]).
    budget: Duration,
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
/// The answer to a request its batch could not run for an outage.
const OUTAGE: &str = "the database cannot be reached; nothing was changed, try again shortly";
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
                            let conn = sql::open_lite_writer(&path).map_err(|error| {
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
                tokio::spawn(loop_.supervise(move || {
                    Ok(Engine::Pool {
                        db: db.clone(),
                        idle: None,
                    })
                }));
            }
        }
        Writer {
            queue,
            stats,
            budget: DEFAULT_OUTAGE_BUDGET,
        }
    }

    /// This writer's callers waiting at most `budget` (see [`budget`]).
    pub fn with_outage_budget(mut self, budget: Duration) -> Writer {
        self.budget = budget;
        self
    }

    /// Runs a rare `job` in the next batch and returns its result once the
    /// batch is durable. A job that returns an error has its changes rolled
    /// back alone. Still queued at the outage budget, it is withdrawn and
    /// answered `unavailable`; once the writer took it, its answer is
    /// awaited (it may take effect).
    pub async fn run<T, F>(&self, job: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: for<'c> Fn(&'c mut Conn) -> BoxFuture<'c, Result<T, Error>> + Send + Sync + 'static,
    {
        let claim = Arc::new(Claim::default());
        let (reply, mut answer) = oneshot::channel();
        let request = Request::Job(boxed(job), JobReply::new(reply, Some(claim.clone())));
        let deadline = tokio::time::Instant::now() + self.budget;
        match tokio::time::timeout_at(deadline, self.send(request)).await {
            Ok(sent) => sent?,
            // Never queued: nothing can happen.
            Err(_) => return Err(self.over_budget()),
        }
        let value = match tokio::time::timeout_at(deadline, &mut answer).await {
            Ok(value) => value,
            Err(_) if claim.withdraw() => return Err(self.over_budget()),
            Err(_) => answer.await,
        };
        unboxed(value.map_err(|_| Error::Unavailable("the writer has stopped"))?)
    }

    /// [`Writer::run`] for a job whose effect may be abandoned at any time
    /// (it is the same whether it happens or not, like refreshing a
    /// session's idle timer): answered `unavailable` at the outage budget
    /// even once taken.
    pub async fn run_idempotent<T, F>(&self, job: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: for<'c> Fn(&'c mut Conn) -> BoxFuture<'c, Result<T, Error>> + Send + Sync + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let request = Request::Job(boxed(job), JobReply::new(reply, None));
        let value = self
            .within_budget(async {
                self.send(request).await?;
                answer
                    .await
                    .map_err(|_| Error::Unavailable("the writer has stopped"))?
            })
            .await;
        unboxed(value)
    }

    /// Runs a hot command in the next batch's set and returns its result
    /// once the batch is durable, or `unavailable` at the outage budget (a
    /// purchase's idempotency key makes its retry safe).
    pub async fn hot(&self, command: Command) -> Result<Reply, Error> {
        let (reply, answer) = oneshot::channel();
        self.within_budget(async {
            self.send(Request::Hot(command, reply)).await?;
            answer
                .await
                .map_err(|_| Error::Unavailable("the writer has stopped"))?
        })
        .await
    }

    /// `wait`'s result, or `unavailable` once the outage budget is spent
    /// (`wait` is dropped: its request's caller is gone).
    async fn within_budget<T>(
        &self,
        wait: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        tokio::time::timeout(self.budget, wait)
            .await
            .unwrap_or_else(|_| Err(self.over_budget()))
    }

    /// Counts a caller answered at the budget, and its answer.
    fn over_budget(&self) -> Error {
        self.stats.over_budget.inc();
        Error::Unavailable(OVER_BUDGET)
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

/// A rare job as the queue carries it (its value boxed).
fn boxed<T, F>(job: F) -> Job
where
    T: Send + 'static,
    F: for<'c> Fn(&'c mut Conn) -> BoxFuture<'c, Result<T, Error>> + Send + Sync + 'static,
{
    Box::new(move |conn| {
        let future = job(conn);
        Box::pin(async move { future.await.map(|value| Box::new(value) as Boxed) })
    })
}

/// A rare job's answer, unboxed.
fn unboxed<T: 'static>(answer: Result<Boxed, Error>) -> Result<T, Error> {
    Ok(*answer?
        .downcast::<T>()
        .expect("a job's reply has the job's type"))
}

/// A request counted in [`WriterStats::queue_depth`] that has not entered
/// the queue yet: uncounted when dropped.
struct Waiting<'a>(&'a Gauge);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.dec();
    }
}
