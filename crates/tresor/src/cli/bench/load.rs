//! The load: simulated players (registration, deposit, the play loop), the
//! refusal flood's players, and one run of a mix over all of them.

use super::report::{FloodTally, RunResult, cpu_sample, new_histogram, read_memory};
use super::{BenchArgs, Mix, progress};
use anyhow::{Context, bail};
use axum::body::Bytes;
use hdrhistogram::Histogram;
use serde::Deserialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The extra players of a refusal flood: at most this many connections.
pub(super) const REFUSERS: u32 = 128;

/// One simulated player: its connection and its session cookie.
#[derive(Debug, Clone)]
pub(super) struct Player {
    pub(super) client: reqwest::Client,
    pub(super) cookie: String,
}

pub(super) fn client() -> anyhow::Result<reqwest::Client> {
    // One connection per player, kept alive: a pool of at most one idle
    // connection, and no proxy lookups.
    reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .tcp_nodelay(true)
        .no_proxy()
        .timeout(Duration::from_secs(60))
        .build()
        .context("cannot build the HTTP client")
}

#[derive(Deserialize)]
pub(super) struct PlayId {
    pub(super) id: i64,
}

pub(super) async fn register(base: &str, name: &str) -> anyhow::Result<Player> {
    register_with_stake_cap(base, name, 1_000_000).await
}

pub(super) async fn register_with_stake_cap(
    base: &str,
    name: &str,
    stake_limit_cents: i64,
) -> anyhow::Result<Player> {
    let client = client()?;
    let body = format!(
        "{{\"username\":\"{name}\",\"password\":\"a long bench password\",\"adult\":true,\"accept_rules\":true,\
         \"deposit_limit_cents\":1000000,\"stake_limit_cents\":{stake_limit_cents}}}"
    );
    let response = client
        .post(format!("{base}/api/register"))
        .header("content-type", "application/json")
        .header("x-requested-with", "tresor")
        .body(body)
        .send()
        .await
        .context("cannot register a player")?;
    if response.status().as_u16() != 201 {
        bail!(
            "registering {name}: {} {}",
            response.status(),
            response.text().await.unwrap_or_default()
        );
    }
    let cookie = response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("tresor_session="))
        .and_then(|v| v.split(';').next())
        .context("no session cookie after registration")?
        .to_owned();
    let player = Player { client, cookie };
    deposit(base, &player).await?;
    Ok(player)
}

pub(super) async fn deposit(base: &str, player: &Player) -> anyhow::Result<()> {
    let response = player
        .client
        .post(format!("{base}/api/demo/deposit"))
        .header("content-type", "application/json")
        .header("x-requested-with", "tresor")
        .header("cookie", &player.cookie)
        .body(r#"{"amount_cents":100000}"#)
        .send()
        .await?;
    if !response.status().is_success() {
        bail!(
            "demo deposit refused ({}): the server must run in demo mode",
            response.status()
        );
    }
    Ok(())
}

/// Registers `count` players, a few at a time: registration hashes a
/// password with argon2id (19 MiB each), which must not swamp the server.
pub(super) async fn register_players(
    base: &str,
    count: usize,
    run: &str,
) -> anyhow::Result<Vec<Player>> {
    let bar = progress(count as u64, "registering players");
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..8.min(count) {
        let base = base.to_owned();
        let next = next.clone();
        let bar = bar.clone();
        let run = run.to_owned();
        tasks.push(tokio::spawn(async move {
            let mut players = Vec::new();
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed) as usize;
                if n >= count {
                    return anyhow::Ok(players);
                }
                players.push(register(&base, &format!("b{run}{n}")).await?);
                bar.inc(1);
            }
        }));
    }
    let mut players = Vec::with_capacity(count);
    for task in tasks {
        players.extend(task.await??);
    }
    bar.finish_and_clear();
    Ok(players)
}

/// What one player measured.
pub(super) struct Tally {
    pub(super) purchase: Histogram<u64>,
    pub(super) throw: Histogram<u64>,
    pub(super) healthz: Histogram<u64>,
    pub(super) games: u64,
    pub(super) errors: u64,
}

/// The state every player shares during a run.
pub(super) struct Clock {
    pub(super) started: Instant,
    pub(super) measure_from: Instant,
    pub(super) stop: AtomicBool,
    /// `stop` for those that wait on it: the refusers between two ticks.
    pub(super) stopped: tokio::sync::watch::Sender<bool>,
    pub(super) done: AtomicU64,
}

impl Clock {
    pub(super) fn measuring(&self, at: Instant) -> bool {
        at >= self.measure_from
    }
}

pub(super) async fn timed(
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

pub(super) async fn play_loop(
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
    let plays_url = format!("{base}/api/plays");
    let health_url = format!("{base}/healthz");
    let purchase_body = format!(r#"{{"stake_cents":{stake_cents}}}"#);
    let mut n: u64 = 0;
    while !clock.stop.load(Ordering::Relaxed) {
        if mix == Mix::Healthz {
            let (result, at, micros) = timed(player.client.get(&health_url)).await;
            match result {
                Some((200, _)) if clock.measuring(at) => {
                    tally.healthz.saturating_record(micros);
                    clock.done.fetch_add(1, Ordering::Relaxed);
                }
                Some((200, _)) => {}
                _ => tally.errors += 1,
            }
            continue;
        }
        n += 1;
        let key = format!("b{index}-{n}");
        let request = player
            .client
            .post(&plays_url)
            .header("content-type", "application/json")
            .header("x-requested-with", "tresor")
            .header("cookie", &player.cookie)
            .header("idempotency-key", key)
            .body(purchase_body.clone());
        let (result, at, micros) = timed(request).await;
        let play_id = match result {
            Some((201, body)) => {
                if clock.measuring(at) {
                    tally.purchase.saturating_record(micros);
                    if mix == Mix::Purchases {
                        clock.done.fetch_add(1, Ordering::Relaxed);
                    }
                }
                serde_json::from_slice::<PlayId>(&body).ok().map(|p| p.id)
            }
            Some((402, _)) => {
                // Out of money: top up (not measured) and go on.
                if deposit(&base, &player).await.is_err() {
                    tally.errors += 1;
                }
                continue;
            }
            Some((403, body)) if body.windows(19).any(|w| w == b"stake_limit_reached") => {
                // A fast player reaches the highest 7-day stake cap in
                // seconds: go on as a new player (registration not measured).
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.subsec_nanos());
                match register(&base, &format!("c{nanos:x}i{index}n{n}")).await {
                    Ok(fresh) => player = fresh,
                    Err(_) => tally.errors += 1,
                }
                continue;
            }
            _ => {
                tally.errors += 1;
                continue;
            }
        };
        if mix != Mix::Games {
            continue;
        }
        let Some(play_id) = play_id else {
            tally.errors += 1;
            continue;
        };
        let throw_url = format!("{base}/api/plays/{play_id}/throws");
        let game_started = at;
        let mut whole = true;
        for _ in 0..4 {
            let request = player
                .client
                .post(&throw_url)
                .header("content-type", "application/json")
                .header("x-requested-with", "tresor")
                .header("cookie", &player.cookie)
                .body("{}");
            let (result, at, micros) = timed(request).await;
            match result {
                Some((200, _)) => {
                    if clock.measuring(at) {
                        tally.throw.saturating_record(micros);
                    }
                }
                _ => {
                    tally.errors += 1;
                    whole = false;
                    break;
                }
            }
        }
        if whole && clock.measuring(game_started) {
            tally.games += 1;
            clock.done.fetch_add(1, Ordering::Relaxed);
        }
    }
    tally
}

/// One extra player of a refusal flood: its connection, and its play that
/// is already finished.
#[derive(Debug, Clone)]
pub(super) struct Refuser {
    pub(super) player: Player,
    pub(super) play_id: i64,
}

#[derive(Deserialize)]
pub(super) struct ErrorBody {
    pub(super) error: ErrorCode,
}

#[derive(Deserialize)]
pub(super) struct ErrorCode {
    pub(super) code: String,
}

pub(super) fn error_code(body: &[u8]) -> Option<String> {
    serde_json::from_slice::<ErrorBody>(body)
        .ok()
        .map(|b| b.error.code)
}

/// How many refusers a flood of `rate` per second needs: a refusal waits
/// for its batch like any request (tens of milliseconds under load), so one
/// per 20 a second, at most [`REFUSERS`].
pub(super) fn refuser_count(rate: u32) -> u32 {
    rate.div_ceil(20).clamp(1, REFUSERS)
}

/// As many refusers as a flood of `rate` per second needs, set up outside the measurement: each registers with a
/// 7-day stake cap of one stake, spends it on one play and throws that play
/// to its end, so that every further purchase and throw of it is refused.
pub(super) async fn setup_refusers(
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
            let player = register_with_stake_cap(&base, &name, stake_cents).await?;
            let response = player
                .client
                .post(format!("{base}/api/plays"))
                .header("content-type", "application/json")
                .header("x-requested-with", "tresor")
                .header("cookie", &player.cookie)
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
                    .client
                    .post(format!("{base}/api/plays/{play_id}/throws"))
                    .header("content-type", "application/json")
                    .header("x-requested-with", "tresor")
                    .header("cookie", &player.cookie)
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
            anyhow::Ok(Refuser { player, play_id })
        }));
    }
    let mut refusers = Vec::with_capacity(count as usize);
    for task in tasks {
        refusers.push(task.await??);
    }
    Ok(refusers)
}

/// One refuser's share of the flood, in open loop: a request per tick of
/// its own interval, ticks missed while an answer is awaited skipped (never
/// a burst to catch up, so the flood never passes its pace), throws of its
/// finished play and purchases past its cap in turn, until the players stop.
pub(super) async fn refuse_loop(
    base: Arc<str>,
    refuser: Refuser,
    index: usize,
    offered: u32,
    stake_cents: i64,
    clock: Arc<Clock>,
) -> FloodTally {
    let mut tally = FloodTally::new(offered);
    let count = refuser_count(offered);
    // Each of `count` refusers sends offered / count per second; their
    // ticks are staggered over one period.
    let period = Duration::from_secs_f64(f64::from(count) / f64::from(offered));
    let first = clock.started + period.mul_f64(index as f64 / f64::from(count));
    let mut interval = tokio::time::interval_at(first.into(), period);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let plays_url = format!("{base}/api/plays");
    let throw_url = format!("{base}/api/plays/{}/throws", refuser.play_id);
    let purchase_body = format!(r#"{{"stake_cents":{stake_cents}}}"#);
    let player = refuser.player;
    let mut stopped = clock.stopped.subscribe();
    let mut n: u64 = 0;
    loop {
        tokio::select! {
            _ = interval.tick() => {}
            _ = stopped.wait_for(|stopped| *stopped) => break,
        }
        if clock.stop.load(Ordering::Relaxed) {
            break;
        }
        n += 1;
        let purchase = (n + index as u64).is_multiple_of(2);
        let request = if purchase {
            player
                .client
                .post(&plays_url)
                .header("idempotency-key", format!("r{index}-{n}"))
                .body(purchase_body.clone())
        } else {
            player.client.post(&throw_url).body("{}")
        };
        let request = request
            .header("content-type", "application/json")
            .header("x-requested-with", "tresor")
            .header("cookie", &player.cookie);
        let (result, at, micros) = timed(request).await;
        let measuring = clock.measuring(at);
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
    tally
}

/// The server a run loads, and how the run is named.
#[derive(Debug, Clone, Copy)]
pub(super) struct Target<'a> {
    pub(super) label: &'a str,
    pub(super) base: &'a str,
    /// Its process, to sample its memory.
    pub(super) pid: Option<u32>,
    /// Whether this run draws the progress bar (one of runs at once does).
    pub(super) shown: bool,
}

/// Runs `mix` with every player for the warm-up and the duration, beside
/// the refusal flood of `refusers` if any.
pub(super) async fn run_mix(
    target: Target<'_>,
    players: &[Player],
    refusers: &[Refuser],
    mix: Mix,
    args: &BenchArgs,
) -> anyhow::Result<RunResult> {
    let Target {
        label,
        base,
        pid: server_pid,
        shown,
    } = target;
    let started = Instant::now();
    let clock = Arc::new(Clock {
        started,
        measure_from: started + Duration::from_secs_f64(args.warmup),
        stop: AtomicBool::new(false),
        stopped: tokio::sync::watch::Sender::new(false),
        done: AtomicU64::new(0),
    });
    let base: Arc<str> = Arc::from(base);
    let mut tasks = Vec::with_capacity(players.len());
    for (index, player) in players.iter().enumerate() {
        tasks.push(tokio::spawn(play_loop(
            base.clone(),
            player.clone(),
            index,
            mix,
            args.stake_cents,
            clock.clone(),
        )));
    }
    let total = args.warmup + args.duration;
    let mut flood_tasks = Vec::with_capacity(refusers.len());
    for (index, refuser) in refusers.iter().enumerate() {
        flood_tasks.push(tokio::spawn(refuse_loop(
            base.clone(),
            refuser.clone(),
            index,
            args.refusals_per_second,
            args.stake_cents,
            clock.clone(),
        )));
    }
    let bar = if shown {
        progress((total * 10.0) as u64, "")
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.set_message(label.to_owned());
    let mut memory = None;
    let on_postgres = args.database_url.is_some();
    // Read when the measurement starts (after the warm-up) and when it stops.
    let mut cpu_from = None;
    while clock.started.elapsed().as_secs_f64() < total {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if cpu_from.is_none() && Instant::now() >= clock.measure_from {
            cpu_from = Some((Instant::now(), cpu_sample(server_pid, on_postgres)));
        }
        bar.set_position((clock.started.elapsed().as_secs_f64() * 10.0) as u64);
        let done = clock.done.load(Ordering::Relaxed);
        let measured_s = clock.measure_from.elapsed().as_secs_f64();
        if measured_s > 0.0 {
            bar.set_message(format!("{label}: {:.0}/s", done as f64 / measured_s));
        }
        if let Some(pid) = server_pid {
            // Sampled during the load: the resident set under load.
            memory = read_memory(pid).or(memory);
        }
    }
    clock.stop.store(true, Ordering::Relaxed);
    clock.stopped.send_replace(true);
    let seconds = clock.measure_from.elapsed().as_secs_f64();
    // Spent over the time read, scaled to the measurement's whole time.
    let cpu = cpu_from.map(|(at, from)| {
        let mut cpu = from.until(cpu_sample(server_pid, on_postgres));
        let scale = seconds / at.elapsed().as_secs_f64().max(1e-3);
        cpu.server_us = cpu.server_us.map(|us| us * scale);
        cpu.postgres_us = cpu.postgres_us.map(|us| us * scale);
        cpu
    });
    bar.finish_and_clear();
    let mut result = RunResult {
        label: label.to_owned(),
        mix,
        seconds,
        purchase: new_histogram(),
        throw: new_histogram(),
        healthz: new_histogram(),
        games: 0,
        errors: 0,
        memory,
        flood: None,
        cpu,
    };
    for task in tasks {
        let tally = task.await?;
        result.purchase.add(&tally.purchase)?;
        result.throw.add(&tally.throw)?;
        result.healthz.add(&tally.healthz)?;
        result.games += tally.games;
        result.errors += tally.errors;
    }
    if !refusers.is_empty() {
        let mut flood = FloodTally::new(args.refusals_per_second);
        for task in flood_tasks {
            flood.add(&task.await?)?;
        }
        result.flood = Some(flood);
    }
    // Requests still in flight when the clock stopped finish a little after
    // it: count them over the time they actually took.
    result.seconds = seconds.max(clock.measure_from.elapsed().as_secs_f64());
    if let Some(pid) = server_pid {
        result.memory = read_memory(pid).or(result.memory);
    }
    Ok(result)
}
