//! The fault-injection hooks the tests set on the real writer, and the
//! SQLite page limit they drive.

use super::engine::Engine;
use crate::error::Error;
use crate::store::sql;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

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
    /// Holds each batch that wrote before its COMMIT for this many ms
    /// (read again while holding, so setting 0 releases it at once): a
    /// COMMIT slow to come, for the outage budget's tests (0: none).
    pub stall_before_commit_ms: Arc<AtomicU64>,
}

impl Faults {
    pub(super) fn maybe_panic(&self, batch_number: u64) {
        if let Some(at) = self.panic_at_batch
            && (at..at + self.panics.max(1)).contains(&batch_number)
        {
            panic!("fault injection: the writer panics in batch {batch_number}");
        }
    }

    /// Holds the writer before a COMMIT as long as
    /// [`Faults::stall_before_commit_ms`] says.
    pub(super) async fn stall_before_commit(&self) {
        let started = Instant::now();
        while started.elapsed()
            < Duration::from_millis(self.stall_before_commit_ms.load(Ordering::SeqCst))
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// The `max_page_count` of the writer's SQLite connection ([`Faults`]).
#[derive(Debug, Default)]
pub(super) struct PageLimit {
    /// The limit the connection has now (0: its own).
    pub(super) applied: u64,
    /// SQLite's own limit, read before the first change.
    pub(super) default: Option<u64>,
}

impl PageLimit {
    /// Gives the writer's SQLite connection the `max_page_count` the
    /// faults ask for, when it changed.
    pub(super) async fn apply(
        &mut self,
        faults: &Faults,
        engine: &mut Engine,
    ) -> Result<(), Error> {
        let wanted = faults.sqlite_max_page_count.load(Ordering::SeqCst);
        let Engine::Lite(Some(conn)) = engine else {
            return Ok(());
        };
        if wanted == self.applied {
            return Ok(());
        }
        if self.default.is_none() {
            let default: i64 = sql::query_scalar("PRAGMA max_page_count")
                .fetch_one(&mut *conn)
                .await?;
            self.default = Some(default as u64);
        }
        let limit = if wanted == 0 {
            self.default.unwrap_or(u64::from(u32::MAX - 1))
        } else {
            wanted
        };
        conn.execute_raw(&format!("PRAGMA max_page_count = {limit}"))
            .await?;
        self.applied = wanted;
        Ok(())
    }
}
