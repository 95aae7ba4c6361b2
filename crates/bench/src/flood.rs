//! The refusal flood of `--refusals-per-second`: a few extra players, set
//! up outside the measurement, whose every request the server refuses
//! (throws of a finished play, purchases past the 7-day stake cap), sent in
//! open loop at a fixed pace beside the measured players.

use crate::play::{Clock, timed};
use crate::players::{PlayId, Player, register_with_stake_cap};
use crate::report::FloodTally;
use anyhow::bail;
use bytes::Bytes;
use serde::Deserialize;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The extra players of a refusal flood: at most this many connections.
pub(crate) const REFUSERS: u32 = 128;

/// One extra player of a refusal flood: its connection, and its play that
/// is already finished.
#[derive(Debug, Clone)]
pub(crate) struct Refuser {
    pub(crate) player: Player,
    pub(crate) play_id: i64,
}

#[derive(Deserialize)]
pub(crate) struct ErrorBody {
    pub(crate) error: ErrorCode,
}

#[derive(Deserialize)]
pub(crate) struct ErrorCode {
    pub(crate) code: String,
}

pub(crate) fn error_code(body: &[u8]) -> Option<String> {
    serde_json::from_slice::<ErrorBody>(body)
        .ok()
        .map(|b| b.error.code)
}

/// How many refusers a flood of `rate` per second needs: a refusal waits
/// for its batch like any request (tens of milliseconds under load), so one
/// per 20 a second, at most [`REFUSERS`].
pub(crate) fn refuser_count(rate: u32) -> u32 {
    rate.div_ceil(20).clamp(1, REFUSERS)
}

/// As many refusers as a flood of `rate` per second needs, set up outside
/// the measurement: each registers with a 7-day stake cap of one stake,
/// spends it on one play and throws that play to its end, so that every
/// further purchase and throw of it is refused.
pub(crate) async fn setup_refusers(
    base: &str,
    rate: u32,
    stake_cents: i64,
    run: &str,
) -> anyhow::Result<Vec<Refuser>> {
    let count = refuser_count(rate);
    let mut tasks = Vec::new();
    for index in 0..count {
        let base = base.to_owned();
        let name = format!("r{run}{index}");
        tasks.push(tokio::spawn(async move {
            set_up_one(&base, &name, index, stake_cents).await
        }));
    }
    let mut refusers = Vec::with_capacity(count as usize);
    for task in tasks {
        refusers.push(task.await??);
    }
    Ok(refusers)
}

/// Refuser `index`, named `name`: registered with a 7-day stake cap of one
/// stake, which it spends on one play thrown to its end.
async fn set_up_one(
    base: &str,
    name: &str,
    index: u32,
    stake_cents: i64,
) -> anyhow::Result<Refuser> {
    let player = register_with_stake_cap(base, name, stake_cents).await?;
    let response = player
        .post(format!("{base}/api/plays"))
        .header("idempotency-key", format!("r{index}-0"))
        .body(format!(r#"{{"stake_cents":{stake_cents}}}"#))
        .send()
        .await?;
    let status = response.status();
    let body = response.bytes().await?;
    if status.as_u16() != 201 {
        bail!(
            "a refuser's one purchase: {status} {}",
            String::from_utf8_lossy(&body)
        );
    }
    let play_id = serde_json::from_slice::<PlayId>(&body)?.id;
    for _ in 0..4 {
        let response = player
            .post(format!("{base}/api/plays/{play_id}/throws"))
            .body("{}")
            .send()
            .await?;
        let status = response.status().as_u16();
        let body = response.bytes().await?;
        match status {
            200 => {}
            409 if error_code(&body).as_deref() == Some("play_finished") => break,
            _ => bail!(
                "a refuser's throw: {status} {}",
                String::from_utf8_lossy(&body)
            ),
        }
    }
    Ok(Refuser { player, play_id })
}

/// The ticks of sender `index` of `count` that send `offered` requests a
/// second in all: each offered / count per second, their ticks staggered
/// over one period, a tick missed while an answer is awaited skipped.
pub(crate) struct Paced {
    interval: tokio::time::Interval,
    stopped: tokio::sync::watch::Receiver<bool>,
    clock: Arc<Clock>,
}

impl Paced {
    pub(crate) fn new(clock: &Arc<Clock>, index: usize, count: u32, offered: u32) -> Self {
        let period = Duration::from_secs_f64(f64::from(count) / f64::from(offered));
        let first = clock.started + period.mul_f64(index as f64 / f64::from(count));
        let mut interval = tokio::time::interval_at(first.into(), period);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        Self {
            interval,
            stopped: clock.stopped.subscribe(),
            clock: Arc::clone(clock),
        }
    }

    /// Waits for the next tick: `false` once the players stop (woken
    /// between two ticks, not only at the next).
    pub(crate) async fn tick(&mut self) -> bool {
        tokio::select! {
            _ = self.interval.tick() => {}
            _ = self.stopped.wait_for(|stopped| *stopped) => return false,
        }
        !self.clock.stop.load(Ordering::Relaxed)
    }
}

/// One refuser's share of the flood, in open loop: a request per tick of
/// its own interval, ticks missed while an answer is awaited skipped (never
/// a burst to catch up, so the flood never passes its pace), throws of its
/// finished play and purchases past its cap in turn, until the players stop.
pub(crate) async fn refuse_loop(
    base: Arc<str>,
    refuser: Refuser,
    index: usize,
    offered: u32,
    stake_cents: i64,
    clock: Arc<Clock>,
) -> FloodTally {
    let mut tally = FloodTally::new(offered);
    let mut paced = Paced::new(&clock, index, refuser_count(offered), offered);
    let plays_url = format!("{base}/api/plays");
    let throw_url = format!("{base}/api/plays/{}/throws", refuser.play_id);
    let purchase_body = format!(r#"{{"stake_cents":{stake_cents}}}"#);
    let player = refuser.player;
    let mut n: u64 = 0;
    while paced.tick().await {
        n += 1;
        let purchase = (n + index as u64).is_multiple_of(2);
        let request = if purchase {
            player
                .post(&plays_url)
                .header("idempotency-key", format!("r{index}-{n}"))
                .body(purchase_body.clone())
        } else {
            player.post(&throw_url).body("{}")
        };
        let (result, at, micros) = timed(request).await;
        record(&mut tally, result, purchase, clock.measuring(at), micros);
    }
    tally
}

/// What one refusal's answer was: the refusal expected (its latency
/// recorded when `measuring`), a throttle, or anything else.
fn record(
    tally: &mut FloodTally,
    result: Option<(u16, Bytes)>,
    purchase: bool,
    measuring: bool,
    micros: u64,
) {
    match result {
        Some((status, body)) => match (status, error_code(&body).as_deref(), purchase) {
            (403, Some("stake_limit_reached"), true) => {
                if measuring {
                    tally.purchase.saturating_record(micros);
                }
            }
            (409, Some("play_finished"), false) => {
                if measuring {
                    tally.throw.saturating_record(micros);
                }
            }
            (429, _, _) => {
                if measuring {
                    tally.throttled += 1;
                }
            }
            _ => tally.unexpected += 1,
        },
        None => tally.unexpected += 1,
    }
}
