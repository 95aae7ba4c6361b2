//! What the writer measures of itself: batch sizes and times, retries,
//! drops, the queue's depth, its heartbeat, and the last batches' costs.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// What one committed batch cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchCost {
    /// Requests in the batch.
    pub requests: usize,
    /// Statements the batch ran, from its first to its COMMIT excluded.
    pub statements: u64,
    /// Messages the batch sent to PostgreSQL and waited for, from its
    /// BEGIN to its COMMIT, both excluded: each statement run now is one,
    /// the reads sent together one, the writes held back one (0 on SQLite,
    /// whose statements are function calls).
    pub round_trips: u64,
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
    /// Callers answered `unavailable` at the outage budget (their request
    /// still queued, or in a batch not yet answered).
    pub over_budget: Counter,
    /// Requests waiting for the writer now: from the moment a caller hands
    /// one over (including while it waits for room in a full queue) to the
    /// moment the writer takes it into a batch. 0 when the writer keeps up.
    pub queue_depth: Gauge,
    /// Seconds each committed batch took, from its BEGIN to its COMMIT
    /// answered (a lost COMMIT's lookup included): what every request of the
    /// batch waited for once taken from the queue.
    pub batch_seconds: Histogram,
    /// Whether the writer is up (its connection open, taking batches).
    pub(super) up: AtomicBool,
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
            over_budget: Counter::default(),
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

    /// Whether the writer is up now (see [`Writer::probe`](super::Writer::probe) for an answer
    /// that also proves it is not stuck).
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::SeqCst)
    }

    pub(super) fn beat(&self) {
        self.beat_ms
            .store(self.born.elapsed().as_millis() as u64, Ordering::SeqCst);
    }

    /// Whether the writer is up and finished a batch within `within`.
    pub(super) fn beat_within(&self, within: Duration) -> bool {
        let now = self.born.elapsed().as_millis() as u64;
        self.is_up()
            && now.saturating_sub(self.beat_ms.load(Ordering::SeqCst)) <= within.as_millis() as u64
    }

    pub(super) fn record(&self, cost: BatchCost) {
        self.batch_size.observe(cost.requests as f64);
        let mut recent = self.recent.lock().expect("stats lock");
        if recent.len() == 64 {
            recent.pop_front();
        }
        recent.push_back(cost);
    }
}
