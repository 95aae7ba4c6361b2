//! One simulated player's loop: it buys (and with `--mix games` throws) as
//! fast as the server answers, and records each answer's latency in its own
//! histograms, so that measuring takes no lock.

use crate::args::Mix;
use crate::players::{PlayId, Player, deposit, register};
use crate::report::new_histogram;
use bytes::Bytes;
use hdrhistogram::Histogram;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// What one player measured.
pub(crate) struct Tally {
    pub(crate) purchase: Histogram<u64>,
    pub(crate) throw: Histogram<u64>,
    pub(crate) healthz: Histogram<u64>,
    pub(crate) games: u64,
    pub(crate) errors: u64,
}

/// The state every player shares during a run.
pub(crate) struct Clock {
    pub(crate) started: Instant,
    pub(crate) measure_from: Instant,
    pub(crate) stop: AtomicBool,
    /// `stop` for those that wait on it: the refusers between two ticks.
    pub(crate) stopped: tokio::sync::watch::Sender<bool>,
    pub(crate) done: AtomicU64,
}

impl Clock {
    /// Whether a request sent `at` is measured (not in the warm-up).
    pub(crate) fn measuring(&self, at: Instant) -> bool {
        at >= self.measure_from
    }
}

/// Sends `request`: its status and body (none on a transport error), when
/// it was sent and how many µs it took.
pub(crate) async fn timed(
    request: reqwest::RequestBuilder,
) -> (Option<(u16, Bytes)>, Instant, u64) {
    let start = Instant::now();
    let result = match request.send().await {
        Ok(response) => {
            let status = response.status().as_u16();
            response.bytes().await.ok().map(|body| (status, body))
        }
        Err(_) => None,
    };
    let micros = start.elapsed().as_micros() as u64;
    (result, start, micros.max(1))
}

/// One player's loop in a run, and what it needs at each turn.
struct Loop {
    base: Arc<str>,
    index: usize,
    mix: Mix,
    clock: Arc<Clock>,
    plays_url: String,
    health_url: String,
    purchase_body: String,
}

/// Plays `mix` as `player` until the clock stops; what it measured.
pub(crate) async fn play_loop(
    base: Arc<str>,
    mut player: Player,
    index: usize,
    mix: Mix,
    stake_cents: i64,
    clock: Arc<Clock>,
) -> Tally {
    let mut tally = Tally {
        purchase: new_histogram(),
        throw: new_histogram(),
        healthz: new_histogram(),
        games: 0,
        errors: 0,
    };
    let turn = Loop {
        plays_url: format!("{base}/api/plays"),
        health_url: format!("{base}/healthz"),
        purchase_body: format!(r#"{{"stake_cents":{stake_cents}}}"#),
        base,
        index,
        mix,
        clock,
    };
    let mut n: u64 = 0;
    while !turn.clock.stop.load(Ordering::Relaxed) {
        if mix == Mix::Healthz {
            turn.healthz(&player, &mut tally).await;
            continue;
        }
        n += 1;
        let Some((play_id, at)) = turn.buy(&mut player, n, &mut tally).await else {
            continue;
        };
        if mix != Mix::Games {
            continue;
        }
        let Some(play_id) = play_id else {
            tally.errors += 1;
            continue;
        };
        if turn.throws(&player, play_id, &mut tally).await && turn.clock.measuring(at) {
            tally.games += 1;
            turn.clock.done.fetch_add(1, Ordering::Relaxed);
        }
    }
    tally
}

impl Loop {
    /// One `GET /healthz`.
    async fn healthz(&self, player: &Player, tally: &mut Tally) {
        let (result, at, micros) = timed(player.client.get(&self.health_url)).await;
        match result {
            Some((200, _)) if self.clock.measuring(at) => {
                tally.healthz.saturating_record(micros);
                self.clock.done.fetch_add(1, Ordering::Relaxed);
            }
            Some((200, _)) => {}
            _ => tally.errors += 1,
        }
    }

    /// The `n`-th purchase: the play's id (when its answer reads) and when
    /// it was sent, or `None` when the turn goes no further (topped up,
    /// re-registered past the stake cap, or an error).
    async fn buy(
        &self,
        player: &mut Player,
        n: u64,
        tally: &mut Tally,
    ) -> Option<(Option<i64>, Instant)> {
        let index = self.index;
        let request = player
            .post(&self.plays_url)
            .header("idempotency-key", format!("b{index}-{n}"))
            .body(self.purchase_body.clone());
        let (result, at, micros) = timed(request).await;
        match result {
            Some((201, body)) => {
                if self.clock.measuring(at) {
                    tally.purchase.saturating_record(micros);
                    if self.mix == Mix::Purchases {
                        self.clock.done.fetch_add(1, Ordering::Relaxed);
                    }
                }
                let play_id = serde_json::from_slice::<PlayId>(&body).ok().map(|p| p.id);
                return Some((play_id, at));
            }
            Some((402, _)) => {
                // Out of money: top up (not measured) and go on.
                if deposit(&self.base, player).await.is_err() {
                    tally.errors += 1;
                }
            }
            Some((403, body)) if body.windows(19).any(|w| w == b"stake_limit_reached") => {
                // A fast player reaches the highest 7-day stake cap in
                // seconds: go on as a new player (registration not measured).
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.subsec_nanos());
                match register(&self.base, &format!("c{nanos:x}i{index}n{n}")).await {
                    Ok(fresh) => *player = fresh,
                    Err(_) => tally.errors += 1,
                }
            }
            _ => tally.errors += 1,
        }
        None
    }

    /// The play's four throws; whether all four were answered.
    async fn throws(&self, player: &Player, play_id: i64, tally: &mut Tally) -> bool {
        let throw_url = format!("{}/api/plays/{play_id}/throws", self.base);
        for _ in 0..4 {
            let request = player.post(&throw_url).body("{}");
            let (result, at, micros) = timed(request).await;
            match result {
                Some((200, _)) => {
                    if self.clock.measuring(at) {
                        tally.throw.saturating_record(micros);
                    }
                }
                _ => {
                    tally.errors += 1;
                    return false;
                }
            }
        }
        true
    }
}
