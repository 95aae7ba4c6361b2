//! The free-try flood of `--free-tries-per-second` (issue 45): visitors
//! without an account, one connection each, asking `POST /api/free/plays`
//! at the run's stake in open loop at a fixed pace beside the measured
//! players: what free tries cost real sales.

use crate::flood::{Paced, error_code};
use crate::play::{Clock, timed};
use crate::players::client;
use crate::report::FreeTally;
use std::sync::Arc;

/// The visitors of a free-try flood: at most this many connections.
pub(crate) const VISITORS: u32 = 128;

/// How many visitors a flood of `rate` free tries a second needs: a free
/// try is answered in a millisecond or so unloaded, but waits its turn for
/// the CPU under load: one visitor per 20 a second, at most [`VISITORS`].
pub(crate) fn visitor_count(rate: u32) -> u32 {
    rate.div_ceil(20).clamp(1, VISITORS)
}

/// Visitor `index`'s share of the flood, in open loop (ticks missed while
/// an answer is awaited are skipped, never caught up in a burst), until
/// the players stop.
pub(crate) async fn free_loop(
    base: Arc<str>,
    index: usize,
    offered: u32,
    stake_cents: i64,
    clock: Arc<Clock>,
) -> FreeTally {
    let mut tally = FreeTally::new(offered);
    let Ok(visitor) = client() else {
        tally.unexpected += 1;
        return tally;
    };
    let mut paced = Paced::new(&clock, index, visitor_count(offered), offered);
    let url = format!("{base}/api/free/plays");
    let body = format!(r#"{{"stake_cents":{stake_cents}}}"#);
    while paced.tick().await {
        let request = visitor
            .post(&url)
            .header("content-type", "application/json")
            .header("x-requested-with", "tresor")
            .body(body.clone());
        let (result, at, micros) = timed(request).await;
        let measuring = clock.measuring(at);
        match result {
            Some((200, answer)) if answer.starts_with(br#"{"free":true"#) => {
                if measuring {
                    tally.answered.saturating_record(micros);
                }
            }
            Some((429, answer)) if error_code(&answer).as_deref() == Some("rate_limited") => {
                if measuring {
                    tally.throttled += 1;
                }
            }
            _ => tally.unexpected += 1,
        }
    }
    tally
}
