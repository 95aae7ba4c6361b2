//! The writer's loop: a batch taken from the queue, run as one transaction
//! (`transaction.rs`), a failed batch run again request by request, and the
//! supervision that starts the writer again after a panic or a failed open.

use super::engine::Engine;
use super::faults::{Faults, PageLimit};
use super::stats::WriterStats;
use super::{Answer, OUTAGE, OVER_BUDGET, Request};
use crate::batch;
use crate::error::Error;
use crate::trail;
use futures_util::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::mpsc;

/// The most times a request alone is tried when its error is transient.
const MAX_ATTEMPTS: usize = 8;

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

    pub(super) fn next(&mut self) -> (String, u64) {
        self.next += 1;
        (format!("{}-{}", self.prefix, self.next), self.next)
    }
}

/// The writer's loop and what it keeps between batches (its transactions:
/// `transaction.rs`).
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
                request.answer(answer);
            }
        }
        Exit::Closed
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
