//! One batch's transaction: the writer's log locked, the hot set and the
//! rare jobs run, the purchases' receipts proven and signed, the log's
//! checkpoint and the batch's identity written, then COMMIT — and a COMMIT
//! whose answer was lost resolved by that identity, never run again.

use super::batch_loop::Loop;
use super::engine::Engine;
use super::stats::BatchCost;
use super::{Answer, Boxed, Job, Request};
use crate::batch::{self, Command, Reply};
use crate::error::Error;
use crate::store::sql::{self, Conn};
use crate::trail;
use std::time::Duration;

/// Batches' identities are kept this long, far longer than any COMMIT
/// takes to be resolved.
const KEEP_BATCH_IDS_MS: i64 = 24 * 3600 * 1000;

/// Purchase keys past their window are forgotten every this many batches.
const PRUNE_KEYS_EVERY: u64 = 4096;

/// What a batch's transaction did before its COMMIT: its answers, whether
/// it wrote, and the log's right edge to keep once it commits.
struct Inside {
    answers: Vec<Answer>,
    wrote: bool,
    edge: Option<trail::log::Edge>,
}

impl Loop {
    /// One transaction for the whole batch. `Err` means it was rolled back
    /// and nothing of it applied.
    pub(super) async fn attempt(
        &mut self,
        engine: &mut Engine,
        batch: &[Request],
    ) -> Result<Vec<Answer>, Error> {
        let (id, number) = self.ids.next();
        let now_ms = system_now_ms();
        self.page_limit.apply(&self.faults, engine).await?;
        let started = std::time::Instant::now();
        let mut conn = engine.begin().await?;
        let identity = engine.records_identity().then_some(id.as_str());
        let (inside, counts) =
            sql::counting(self.inside(&mut conn, batch, identity, number, now_ms)).await;
        let Inside {
            answers,
            wrote,
            edge,
        } = match inside {
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
        if let Some(unconfirmed) = self.commit(engine, conn, &id, edge, batch).await? {
            return Ok(unconfirmed);
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

    /// The transaction's statements, up to its COMMIT excluded: the log
    /// locked, the requests, the receipts and the log's checkpoint, the
    /// batch's identity (`identity`: on PostgreSQL), the writes held back.
    async fn inside(
        &mut self,
        conn: &mut Conn,
        batch: &[Request],
        identity: Option<&str>,
        number: u64,
        now_ms: i64,
    ) -> Result<Inside, Error> {
        let kept = self.log.edge.take();
        let vkey = self.log_key.as_ref().map(|key| key.vkey());
        // A batch with hot commands sends the log's lock with its reads
        // (settled before it decides); rare jobs alone lock it first.
        let (head, ahead) = if batch.iter().any(|r| matches!(r, Request::Hot(..))) {
            trail::log::lock_ahead(conn, &self.log.name, kept, now_ms, vkey).await?
        } else {
            let head = trail::log::lock(conn, &self.log.name, kept, now_ms, vkey).await?;
            (head, None)
        };
        let (outcome, head) =
            trail::with_batch_head(head, ahead, requests(conn, &self.context, batch)).await;
        let (mut answers, wrote) = outcome?;
        self.faults.maybe_panic(number);
        let edge = if wrote {
            Some(self.sign_receipts(conn, &mut answers, head, now_ms).await?)
        } else if head.appended() {
            // Appended (the v1 seal) but rolled back: read it again.
            None
        } else {
            Some(head.into_edge())
        };
        if wrote {
            if let Some(id) = identity {
                record_identity(conn, id, number, now_ms).await?;
            }
            if number % PRUNE_KEYS_EVERY == 1 {
                // Purchase keys past their window are forgotten at the
                // writer's first batch and every 4,096 after.
                crate::store::batch::prune_purchase_keys(conn).await?;
            }
            // The writes held back go now, in one round trip, so that a
            // failure of any of them fails the batch here, as it would have
            // run alone, and never looks like a lost COMMIT.
            conn.flush().await?;
        }
        Ok(Inside {
            answers,
            wrote,
            edge,
        })
    }

    /// Each purchase's receipt: its proof from the log's edge in memory,
    /// then the checkpoint this transaction signs (stored with the log's
    /// new hashes). Returns the log's new right edge.
    async fn sign_receipts(
        &self,
        conn: &mut Conn,
        answers: &mut [Answer],
        head: trail::Head,
        now_ms: i64,
    ) -> Result<trail::log::Edge, Error> {
        for receipt in receipts(answers) {
            if !receipt.as_mut().is_some_and(|r| r.prove_in(&head)) {
                *receipt = None;
            }
        }
        let (edge, note) = trail::log::store(conn, head, self.log_key.as_ref(), now_ms).await?;
        for receipt in receipts(answers) {
            match (receipt.as_mut(), &note, &self.log_key) {
                (Some(r), Some(note), Some(key)) => {
                    r.checkpoint.clone_from(note);
                    r.key = key.vkey().to_owned();
                }
                _ => *receipt = None,
            }
        }
        Ok(edge)
    }

    /// COMMITs. `Ok(None)`: committed (or found committed); `Ok(Some(_))`:
    /// the database stayed unreachable, so whether it committed is unknown,
    /// and each request is told so; `Err`: not committed (rolled back).
    async fn commit(
        &mut self,
        engine: &mut Engine,
        conn: Conn,
        id: &str,
        edge: Option<trail::log::Edge>,
        batch: &[Request],
    ) -> Result<Option<Vec<Answer>>, Error> {
        let Err(error) = engine.end(conn, true).await else {
            self.log.edge = edge;
            return Ok(None);
        };
        // The COMMIT's answer is lost: the database may have committed or
        // not. Find out rather than run the batch again; a COMMIT resolved
        // leaves the edge to be read again.
        tracing::warn!(%error, batch = %id, "COMMIT failed; looking the batch up");
        match resolve(engine, id).await {
            Some(true) => {
                self.stats.commits_resolved.inc();
                Ok(None)
            }
            Some(false) => Err(error),
            None => Ok(Some(
                batch
                    .iter()
                    .map(|request| {
                        let unconfirmed =
                            Error::Unavailable("the database did not confirm the change");
                        Answer::failed(unconfirmed, request)
                    })
                    .collect(),
            )),
        }
    }
}

/// The batch's identity, for the look-up of a lost COMMIT; old identities
/// pruned now and then.
async fn record_identity(conn: &mut Conn, id: &str, number: u64, now_ms: i64) -> Result<(), Error> {
    sql::query("INSERT INTO writer_batches (id, committed_at_ms) VALUES ($1, $2)")
        .bind(id)
        .bind(now_ms)
        .defer(conn)
        .await?;
    if number.is_multiple_of(4096) {
        sql::query("DELETE FROM writer_batches WHERE committed_at_ms < $1")
            .bind(now_ms - KEEP_BATCH_IDS_MS)
            .defer(conn)
            .await?;
    }
    Ok(())
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
    // Settled by the hot set's batch; rare jobs never see a head unsettled.
    trail::settle_batch_head(conn).await?;
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
