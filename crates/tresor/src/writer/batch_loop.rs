//! The writer's loop: one transaction per batch (the hot set, then the rare
//! jobs in savepoints), a failed batch run again request by request, a lost
//! COMMIT resolved by the batch's identity, and the supervision that starts
//! the writer again after a panic or a failed open.

use super::engine::Engine;
use super::faults::{Faults, PageLimit};
use super::stats::{BatchCost, WriterStats};
use super::{Answer, Boxed, Job, OUTAGE, OVER_BUDGET, Request};
use crate::batch::{self, Command, Reply};
use crate::error::Error;
use crate::store::sql::{self, Conn};
use crate::trail;
use futures_util::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::mpsc;

const MAX_ATTEMPTS: usize = 8;
/// Batches' identities are kept this long, far longer than any COMMIT
/// takes to be resolved.
const KEEP_BATCH_IDS_MS: i64 = 24 * 3600 * 1000;

/// Purchase keys past their window are forgotten every this many batches.
const PRUNE_KEYS_EVERY: u64 = 4096;

/// Names batches uniquely across servers and restarts: a random prefix per
/// writer, then a counter.
pub(super) struct BatchIds {
    prefix: String,
    next: u64,
}

impl BatchIds {
    pub(super) fn new() -> BatchIds {
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

pub(super) struct Loop {
    pub(super) receiver: mpsc::Receiver<Request>,
    pub(super) stats: Arc<WriterStats>,
    pub(super) max_batch: usize,
    pub(super) context: Arc<batch::Context>,
    pub(super) ids: BatchIds,
    pub(super) faults: Faults,
    pub(super) page_limit: PageLimit,
    /// The writer's own log (one per writer name) and the right edge it
    /// keeps between transactions.
    pub(super) log: trail::log::Writer,
    /// The key that signs the log's checkpoints (none: unsigned, only in
    /// the library's own uses; `tresor` refuses to start without one).
    pub(super) log_key: Option<crate::logkey::LogKey>,
}

/// Why [`Loop::run`] returned.
enum Exit {
    /// Every [`Writer`](super::Writer) handle is gone: the server is stopping.
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
    pub(super) async fn supervise(mut self, mut open: impl FnMut() -> Result<Engine, Error>) {
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
            // Taken now: a rare job its caller withdrew at the outage budget
            // is dropped, one taken is run and its caller waits for it.
            batch.retain(Request::take);
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
            // A caller gone (past the outage budget) is not run again: a
            // batch re-run request by request does not make each wait in turn.
            if request.caller_gone() {
                self.stats.dropped.inc();
                return Answer::failed(Error::Unavailable(OVER_BUDGET), request);
            }
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
        let (inside, counts) = sql::counting(async {
            let kept = self.log.edge.take();
            let head = trail::log::lock(
                &mut conn,
                &self.log.name,
                kept,
                now_ms,
                self.log_key.as_ref().map(|key| key.vkey()),
            )
            .await?;
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
                    .defer(&mut conn)
                    .await?;
                if number % 4096 == 0 {
                    // Old identities are pruned now and then.
                    sql::query("DELETE FROM writer_batches WHERE committed_at_ms < $1")
                        .bind(now_ms - KEEP_BATCH_IDS_MS)
                        .defer(&mut conn)
                        .await?;
                }
            }
            if wrote && number % PRUNE_KEYS_EVERY == 1 {
                // Purchase keys past their window are forgotten at the
                // writer's first batch and every 4,096 after.
                crate::store::batch::prune_purchase_keys(&mut conn).await?;
            }
            // The writes held back go now, in one round trip, so that a
            // failure of any of them fails the batch here, as it would have
            // run alone, and never looks like a lost COMMIT.
            if wrote {
                conn.flush().await?;
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
        self.faults.stall_before_commit().await;
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
            statements: counts.statements,
            round_trips: counts.round_trips,
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
        Error::Database(_)
            | Error::Sqlite(_)
            | Error::Unavailable(_)
            | Error::StorageFull
            | Error::LogDoesNotHold(_)
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
