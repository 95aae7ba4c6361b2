//! The outage budget on the caller's side: a request waits for the writer at
//! most the budget, whatever happens behind it (a COMMIT in doubt, a
//! failover, a batch run again request by request), then is answered
//! `unavailable` and may be retried under its idempotency key.
//!
//! A hot command (a purchase, a throw, a settlement) is safe to abandon at
//! any time: its caller simply stops waiting, and the writer skips a request
//! whose caller is gone. A rare job may be abandoned only while it is still
//! queued: the writer *takes* it, or its caller *withdraws* it, whichever
//! comes first ([`Claim`]); a job the writer took may take effect, so its
//! caller waits for its answer.

use super::Boxed;
use crate::error::Error;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;
use tokio::sync::oneshot;

/// The outage budget unless told otherwise (`tresor serve --outage-budget-ms`).
pub const DEFAULT_OUTAGE_BUDGET: Duration = Duration::from_secs(5);

/// The answer to a request not answered within the outage budget. It may
/// still take effect (a purchase whose COMMIT is in doubt): the retry under
/// the same idempotency key tells.
pub(super) const OVER_BUDGET: &str = "the database did not answer in time; try again shortly \
     (a purchase retried with the same Idempotency-Key is bought once)";

const QUEUED: u8 = 0;
const TAKEN: u8 = 1;
const WITHDRAWN: u8 = 2;

/// Who has a queued rare job: still queued, taken by the writer, or
/// withdrawn by its caller at the budget. Exactly one of the two wins.
#[derive(Debug, Default)]
pub(super) struct Claim(AtomicU8);

impl Claim {
    /// The writer takes the job (again, for a re-run: still its own);
    /// `false` when its caller withdrew it first.
    fn take(&self) -> bool {
        match self
            .0
            .compare_exchange(QUEUED, TAKEN, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) => true,
            Err(now) => now == TAKEN,
        }
    }

    /// The caller withdraws the job; `false` when the writer took it first.
    pub(super) fn withdraw(&self) -> bool {
        self.0
            .compare_exchange(QUEUED, WITHDRAWN, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    fn withdrawn(&self) -> bool {
        self.0.load(Ordering::SeqCst) == WITHDRAWN
    }
}

/// Where a rare job's answer goes, and the claim on a job that must not be
/// abandoned once taken (none for one safe to abandon at any time).
pub(super) struct JobReply {
    sender: oneshot::Sender<Result<Boxed, Error>>,
    claim: Option<Arc<Claim>>,
}

impl JobReply {
    pub(super) fn new(
        sender: oneshot::Sender<Result<Boxed, Error>>,
        claim: Option<Arc<Claim>>,
    ) -> JobReply {
        JobReply { sender, claim }
    }

    /// Answers the caller (who may be gone).
    pub(super) fn send(self, result: Result<Boxed, Error>) -> Result<(), Result<Boxed, Error>> {
        self.sender.send(result)
    }

    /// Whether the caller stopped waiting or withdrew the job.
    pub(super) fn is_closed(&self) -> bool {
        self.sender.is_closed() || self.claim.as_ref().is_some_and(|claim| claim.withdrawn())
    }

    /// The writer takes the job to run it; `false` when its caller withdrew
    /// it first (or is gone).
    pub(super) fn take(&self) -> bool {
        !self.sender.is_closed() && self.claim.as_ref().is_none_or(|claim| claim.take())
    }
}
