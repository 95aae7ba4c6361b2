//! `tresor bench`: a load generator that plays many simulated players against
//! a running server over real HTTP, and measures the same run's baselines.
//!
//! Each simulated player has its own keep-alive connection and its own
//! session, and loops as fast as the server answers (a closed loop: the
//! offered load is the concurrency). Set-up (registration, deposits) is not
//! measured. Latencies go into HDR histograms, one per player, merged at the
//! end so that measuring takes no lock.
//!
//! With `--spawn` the bench starts its own servers (the `tresor` binary it is
//! part of) on fresh databases, so that a result and its baselines come from
//! one run on one machine state: `/healthz` at the same concurrency (the HTTP
//! ceiling), the same mix against a server that commits each job alone
//! (`TRESOR_MAX_BATCH=1`), and on PostgreSQL pgbench's TPC-B-like script.
//!
//! With `--refusals-per-second R` a few extra players flood the server,
//! beside the measured ones, with requests it refuses (throws of finished
//! plays, purchases past the 7-day stake cap), paced at R per second in all:
//! what such a flood costs the good purchases.

use anyhow::{Context, bail};
use axum::body::Bytes;
use clap::{Args, ValueEnum};
use hdrhistogram::Histogram;
use serde::Deserialize;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What each simulated player does in a loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mix {
    /// Purchases only (`POST /api/plays`).
    Purchases,
    /// A purchase and its four throws: five requests per game.
    Games,
    /// `GET /healthz` only: the HTTP ceiling of the machine.
    Healthz,
}

/// `tresor bench`.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// A running server to load (http://127.0.0.1:8080), in demo mode so that
    /// the bench can deposit. Without it, give `--spawn`.
    #[arg(long, required_unless_present = "spawn")]
    pub url: Option<String>,
    /// Start the servers itself: on a fresh SQLite folder, or on fresh
    /// databases of the PostgreSQL server named by `--database-url`.
    #[arg(long, conflicts_with = "url")]
    pub spawn: bool,
    /// With `--spawn`: a PostgreSQL URL whose server gets a fresh scratch
    /// database per run (dropped afterwards).
    #[arg(long)]
    pub database_url: Option<String>,
    /// With `--spawn`: an existing SQLite data folder to serve (kept), for
    /// measuring a large database; no baseline runs on it.
    #[arg(long, conflicts_with = "database_url")]
    pub data: Option<PathBuf>,
    /// What the simulated players do.
    #[arg(long, value_enum, default_value = "purchases")]
    pub mix: Mix,
    /// Seconds of measured load.
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Seconds of unmeasured load first (connections, caches, page cache).
    #[arg(long, default_value_t = 1.0)]
    pub warmup: f64,
    /// Simulated players, each with one keep-alive connection.
    #[arg(long, default_value_t = 256)]
    pub concurrency: usize,
    /// The stake of every purchase, in cents.
    #[arg(long, default_value_t = 50)]
    pub stake_cents: i64,
    /// Also measure the baselines in the same run (needs `--spawn` for all
    /// but `/healthz`).
    #[arg(long)]
    pub baselines: bool,
    /// With `--spawn`: the tuned server's largest batch (0: its default).
    #[arg(long, default_value_t = 0)]
    pub max_batch: usize,
    /// With `--spawn`: blocks per stake added to the demo emission, so long
    /// runs do not sell out (450,000 units each).
    #[arg(long, default_value_t = 2)]
    pub extra_blocks: u32,
    /// pgbench's clients (`-c`) for the PostgreSQL yardstick: by default the
    /// server's own pool size, so both use as many connections.
    #[arg(long, default_value_t = 16)]
    pub pgbench_clients: usize,
    /// With `--url`: the server's process id, to report its memory.
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// With `--spawn --data DIR`: before serving, bulk-load finished plays
    /// (with their transfers and trail records) until the database holds
    /// this many, to measure purchases on a large database.
    #[arg(long, requires = "data")]
    pub preload_plays: Option<u64>,
    /// Beside the players, a flood of requests the server refuses, paced at
    /// this many per second in all (0: none) over a few extra players of
    /// their own: half throws of a finished play (409 `play_finished`), half
    /// purchases past the 7-day stake cap (403 `stake_limit_reached`).
    #[arg(long, default_value_t = 0)]
    pub refusals_per_second: u32,
}

/// The extra players of a refusal flood: at most this many connections.
const REFUSERS: u32 = 128;

/// One measured run of one mix.
#[derive(Debug)]
struct RunResult {
    label: String,
    mix: Mix,
    seconds: f64,
    /// Latency in microseconds per endpoint: purchase, throw, healthz.
    purchase: Histogram<u64>,
    throw: Histogram<u64>,
    healthz: Histogram<u64>,
    games: u64,
    errors: u64,
    memory: Option<Memory>,
    /// What the refusal flood got, when there was one.
    flood: Option<FloodTally>,
}

#[derive(Debug, Clone, Copy)]
struct Memory {
    rss_kib: u64,
    hwm_kib: u64,
}

impl RunResult {
    fn per_second(&self, count: u64) -> f64 {
        count as f64 / self.seconds
    }

    fn headline(&self) -> f64 {
        match self.mix {
            Mix::Purchases => self.per_second(self.purchase.len()),
            Mix::Games => self.per_second(self.games),
            Mix::Healthz => self.per_second(self.healthz.len()),
        }
    }
}

fn new_histogram() -> Histogram<u64> {
    // 1 µs to 60 s at three significant digits.
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid histogram bounds")
}

/// One simulated player: its connection and its session cookie.
#[derive(Debug, Clone)]
struct Player {
    client: reqwest::Client,
    cookie: String,
}

fn client() -> anyhow::Result<reqwest::Client> {
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
struct PlayId {
    id: i64,
}

async fn register(base: &str, name: &str) -> anyhow::Result<Player> {
    register_with_stake_cap(base, name, 1_000_000).await
}

async fn register_with_stake_cap(
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

async fn deposit(base: &str, player: &Player) -> anyhow::Result<()> {
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
async fn register_players(base: &str, count: usize, run: &str) -> anyhow::Result<Vec<Player>> {
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

fn progress(length: u64, message: &'static str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(length),
        indicatif::ProgressDrawTarget::stderr(),
    );
    bar.set_style(
        indicatif::ProgressStyle::with_template("{msg:>22} [{bar:30}] {pos}/{len} {elapsed}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_message(message);
    bar
}

/// What one player measured.
struct Tally {
    purchase: Histogram<u64>,
    throw: Histogram<u64>,
    healthz: Histogram<u64>,
    games: u64,
    errors: u64,
}

/// The state every player shares during a run.
struct Clock {
    started: Instant,
    measure_from: Instant,
    stop: AtomicBool,
    /// `stop` for those that wait on it: the refusers between two ticks.
    stopped: tokio::sync::watch::Sender<bool>,
    done: AtomicU64,
}

impl Clock {
    fn measuring(&self, at: Instant) -> bool {
        at >= self.measure_from
    }
}

async fn timed(request: reqwest::RequestBuilder) -> (Option<(u16, Bytes)>, Instant, u64) {
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

async fn play_loop(
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
struct Refuser {
    player: Player,
    play_id: i64,
}

/// What the refusal flood got. Answers are counted when their request was
/// sent inside the measurement, like the players' requests, except the
/// unexpected ones, counted at any time like the players' errors.
#[derive(Debug)]
struct FloodTally {
    /// The pace asked for, in requests per second in all.
    offered: u32,
    /// Latency of each expected refusal in microseconds: purchases refused
    /// with 403 `stake_limit_reached`, throws with 409 `play_finished`.
    purchase: Histogram<u64>,
    throw: Histogram<u64>,
    /// 429 `rate_limited`: throttles of a foreign server (`--url`).
    throttled: u64,
    /// Any other answer, or none.
    unexpected: u64,
}

impl FloodTally {
    fn new(offered: u32) -> Self {
        FloodTally {
            offered,
            purchase: new_histogram(),
            throw: new_histogram(),
            throttled: 0,
            unexpected: 0,
        }
    }

    fn add(&mut self, other: &FloodTally) -> anyhow::Result<()> {
        self.purchase.add(&other.purchase)?;
        self.throw.add(&other.throw)?;
        self.throttled += other.throttled;
        self.unexpected += other.unexpected;
        Ok(())
    }
}

#[derive(Deserialize)]
struct ErrorBody {
    error: ErrorCode,
}

#[derive(Deserialize)]
struct ErrorCode {
    code: String,
}

fn error_code(body: &[u8]) -> Option<String> {
    serde_json::from_slice::<ErrorBody>(body)
        .ok()
        .map(|b| b.error.code)
}

/// How many refusers a flood of `rate` per second needs: a refusal waits
/// for its batch like any request (tens of milliseconds under load), so one
/// per 20 a second, at most [`REFUSERS`].
fn refuser_count(rate: u32) -> u32 {
    rate.div_ceil(20).clamp(1, REFUSERS)
}

/// As many refusers as a flood of `rate` per second needs, set up outside the measurement: each registers with a
/// 7-day stake cap of one stake, spends it on one play and throws that play
/// to its end, so that every further purchase and throw of it is refused.
async fn setup_refusers(
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
async fn refuse_loop(
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

/// Runs `mix` with every player for the warm-up and the duration, beside
/// the refusal flood of `refusers` if any.
async fn run_mix(
    label: &str,
    base: &str,
    players: &[Player],
    refusers: &[Refuser],
    mix: Mix,
    args: &BenchArgs,
    server_pid: Option<u32>,
) -> anyhow::Result<RunResult> {
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
    let bar = progress((total * 10.0) as u64, "");
    bar.set_message(label.to_owned());
    let mut memory = None;
    while clock.started.elapsed().as_secs_f64() < total {
        tokio::time::sleep(Duration::from_millis(100)).await;
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

/// The resident set and its high-water mark from /proc/PID/status.
fn read_memory(pid: u32) -> Option<Memory> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<u64> {
        status
            .lines()
            .find(|l| l.starts_with(name))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    Some(Memory {
        rss_kib: field("VmRSS:")?,
        hwm_kib: field("VmHWM:")?,
    })
}

/// A `tresor serve` started by the bench, stopped when dropped.
struct Server {
    child: Child,
    base: String,
    store: Store,
}

/// Where a spawned server keeps its data.
enum Store {
    Sqlite {
        _dir: Option<tempfile_dir::Dir>,
        path: PathBuf,
    },
    Postgres {
        admin_url: String,
        name: String,
        url: String,
    },
}

/// A temporary folder removed on drop, without a dependency for it.
mod tempfile_dir {
    use std::path::PathBuf;

    #[derive(Debug)]
    pub struct Dir(pub PathBuf);

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

impl Store {
    async fn fresh(args: &BenchArgs, run: &str) -> anyhow::Result<Store> {
        if let Some(admin_url) = &args.database_url {
            use sqlx::Connection;
            let name = format!("tresor_bench_{run}_{}", std::process::id());
            let mut admin = sqlx::PgConnection::connect(admin_url)
                .await
                .with_context(|| format!("cannot reach PostgreSQL at {admin_url}"))?;
            sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .execute(&mut admin)
                .await?;
            sqlx::query(&format!("CREATE DATABASE {name}"))
                .execute(&mut admin)
                .await?;
            let (server, _) = admin_url
                .rsplit_once('/')
                .context("a PostgreSQL URL ends with a database name")?;
            Ok(Store::Postgres {
                admin_url: admin_url.clone(),
                url: format!("{server}/{name}"),
                name,
            })
        } else if let Some(path) = &args.data {
            Ok(Store::Sqlite {
                _dir: None,
                path: path.clone(),
            })
        } else {
            let path = std::env::temp_dir().join(format!(
                "tresor-bench-{run}-{}-{}",
                std::process::id(),
                hex::encode(crate::service::os_random_32())[..8].to_owned()
            ));
            std::fs::create_dir_all(&path)?;
            Ok(Store::Sqlite {
                _dir: Some(tempfile_dir::Dir(path.clone())),
                path,
            })
        }
    }

    /// Whether the bench made this database (its key is the bench's own);
    /// a `--data` folder given to it keeps the operator's key.
    fn is_fresh(&self) -> bool {
        !matches!(self, Store::Sqlite { _dir: None, .. })
    }

    fn db_args(&self) -> Vec<String> {
        match self {
            Store::Sqlite { path, .. } => vec!["--data".to_owned(), path.display().to_string()],
            Store::Postgres { url, .. } => vec!["--database-url".to_owned(), url.clone()],
        }
    }

    /// The database's size on disk, in bytes.
    async fn size_bytes(&self) -> Option<u64> {
        match self {
            Store::Sqlite { path, .. } => {
                let mut total = 0;
                for name in ["tresor.db", "tresor.db-wal"] {
                    total += std::fs::metadata(path.join(name)).map_or(0, |m| m.len());
                }
                Some(total)
            }
            Store::Postgres {
                admin_url, name, ..
            } => {
                use sqlx::Connection;
                let mut admin = sqlx::PgConnection::connect(admin_url).await.ok()?;
                let size: i64 = sqlx::query_scalar("SELECT pg_database_size($1)")
                    .bind(name)
                    .fetch_one(&mut admin)
                    .await
                    .ok()?;
                Some(size as u64)
            }
        }
    }

    async fn drop_database(&self) {
        if let Store::Postgres {
            admin_url, name, ..
        } = self
        {
            use sqlx::Connection;
            if let Ok(mut admin) = sqlx::PgConnection::connect(admin_url).await {
                let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .execute(&mut admin)
                    .await;
            }
        }
    }
}

/// Flags that lift the per-player and per-address throttles, for those this
/// binary has: every simulated player comes from 127.0.0.1 and buys as fast
/// as it can, which is the point of a load test and nothing a player does.
pub fn unthrottled(exe: &std::path::Path) -> Vec<String> {
    let help = Command::new(exe)
        .args(["serve", "--help"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    [
        "--purchases-per-minute-per-player",
        "--purchases-per-minute-per-address",
        "--registrations-per-hour-per-address",
        "--logins-per-minute-per-address",
        "--actions-per-minute-per-player",
        "--actions-per-minute-per-address",
        "--failed-logins-free-per-name-and-address",
        "--failed-logins-free-per-address",
        // Every simulated player's connection comes from 127.0.0.1 too.
        "--max-connections-per-address",
        "--max-connections",
    ]
    .into_iter()
    .filter(|flag| help.contains(flag))
    .flat_map(|flag| [flag.to_owned(), "100000000".to_owned()])
    .collect()
}

/// The key of the block secrets of the bench's own databases: one per run,
/// given to its servers and commands, so that no key file is left behind.
fn bench_secrets_key() -> &'static str {
    static KEY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    KEY.get_or_init(|| crate::seal::SecretsKey::generate().to_hex())
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl Server {
    async fn start(store: Store, max_batch: usize, extra_blocks: u32) -> anyhow::Result<Server> {
        let exe = std::env::current_exe().context("cannot find the tresor binary")?;
        let port = free_port()?;
        let mut command = Command::new(&exe);
        command
            .args(["serve", "--demo", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--admin-listen", "127.0.0.1:0"])
            .args(store.db_args())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        if store.is_fresh() {
            command.env("TRESOR_SECRETS_KEY", bench_secrets_key());
        }
        if max_batch > 0 {
            command.env("TRESOR_MAX_BATCH", max_batch.to_string());
        }
        command.args(unthrottled(&exe));
        let child = command.spawn().context("cannot start tresor serve")?;
        let server = Server {
            child,
            base: format!("http://127.0.0.1:{port}"),
            store,
        };
        server.wait_healthy().await?;
        if extra_blocks > 0 {
            // More units for long runs: an operator's emission beside the
            // demo one, created by the operator's own command.
            let mut create = Command::new(&exe);
            create
                .args(["emission", "create", "--name", "Bench"])
                .args(["--blocks", &extra_blocks.to_string()])
                .args(server.store.db_args())
                .env("RUST_LOG", "warn")
                .stdout(Stdio::null());
            if server.store.is_fresh() {
                create.env("TRESOR_SECRETS_KEY", bench_secrets_key());
            }
            let status = create
                .status()
                .context("cannot run tresor emission create")?;
            if !status.success() {
                bail!("tresor emission create failed");
            }
        }
        Ok(server)
    }

    async fn wait_healthy(&self) -> anyhow::Result<()> {
        let client = client()?;
        for _ in 0..600 {
            if let Ok(response) = client.get(format!("{}/healthz", self.base)).send().await
                && response.status().is_success()
            {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        bail!("the spawned server did not answer /healthz within 30 s")
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    async fn stop(mut self) -> Store {
        // SIGTERM lets the server finish its batch and shut down cleanly.
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::mem::replace(
            &mut self.store,
            Store::Sqlite {
                _dir: None,
                path: PathBuf::new(),
            },
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// pgbench's TPC-B-like script on a scratch database of the same server.
fn pgbench(admin_url: &str, clients: usize, seconds: f64) -> anyhow::Result<f64> {
    let (server, _) = admin_url
        .rsplit_once('/')
        .context("a PostgreSQL URL ends with a database name")?;
    let name = format!("tresor_pgbench_{}", std::process::id());
    let url = format!("{server}/{name}");
    let psql = |sql: &str| {
        Command::new("psql")
            .args([admin_url, "-qAtc", sql])
            .stdout(Stdio::null())
            .status()
    };
    psql(&format!("DROP DATABASE IF EXISTS {name}"))?;
    if !psql(&format!("CREATE DATABASE {name}"))?.success() {
        bail!("cannot create the pgbench scratch database (is psql installed?)");
    }
    let bar = progress(1, "pgbench -i -s 10");
    let init = Command::new("pgbench")
        .args(["-i", "-s", "10", "-q", &url])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .context("cannot run pgbench (apt-get install postgresql-client)")?;
    bar.finish_and_clear();
    if !init.success() {
        bail!("pgbench -i failed");
    }
    let bar = progress(1, "pgbench TPC-B-like");
    let output = Command::new("pgbench")
        .args(["-c", &clients.to_string(), "-j", "2"])
        .args(["-T", &(seconds.ceil() as u64).to_string(), &url])
        .output()
        .context("cannot run pgbench")?;
    bar.finish_and_clear();
    let _ = psql(&format!("DROP DATABASE IF EXISTS {name}"));
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .find_map(|line| {
            let rest = line.strip_prefix("tps = ")?;
            rest.split_whitespace().next()?.parse::<f64>().ok()
        })
        .with_context(|| format!("no tps in pgbench's output: {text}"))
}

fn quantile_ms(histogram: &Histogram<u64>, q: f64) -> f64 {
    histogram.value_at_quantile(q) as f64 / 1000.0
}

fn print_result(result: &RunResult, ceiling: Option<f64>) {
    let mut line = format!("{:<34}", result.label);
    match result.mix {
        Mix::Purchases => {
            line += &format!(
                " {:>9.0} purchases/s",
                result.per_second(result.purchase.len())
            )
        }
        Mix::Games => {
            line += &format!(
                " {:>9.0} games/s ({:.0} purchases/s, {:.0} requests/s)",
                result.per_second(result.games),
                result.per_second(result.purchase.len()),
                result.per_second(result.purchase.len() + result.throw.len())
            )
        }
        Mix::Healthz => {
            line += &format!(
                " {:>9.0} requests/s",
                result.per_second(result.healthz.len())
            )
        }
    }
    if let Some(ceiling) = ceiling
        && result.mix == Mix::Purchases
    {
        line += &format!(
            "  = {:.1} % of /healthz",
            100.0 * result.headline() / ceiling
        );
    }
    if let Some(flood) = &result.flood {
        line += &format!(
            "  beside {:.0} refusals/s",
            result.per_second(flood.purchase.len() + flood.throw.len())
        );
    }
    if result.errors > 0 {
        line += &format!("  ({} errors)", result.errors);
    }
    if let Some(flood) = &result.flood
        && flood.unexpected > 0
    {
        line += &format!("  ({} refusal errors)", flood.unexpected);
    }
    println!("{line}");
    let no_flood = (new_histogram(), new_histogram());
    let (refused_purchase, refused_throw) = result
        .flood
        .as_ref()
        .map_or((&no_flood.0, &no_flood.1), |f| (&f.purchase, &f.throw));
    for (name, histogram) in [
        ("POST /api/plays", &result.purchase),
        ("POST /api/plays/{id}/throws", &result.throw),
        ("GET /healthz", &result.healthz),
        ("refused purchase (403)", refused_purchase),
        ("refused throw (409)", refused_throw),
    ] {
        if histogram.is_empty() {
            continue;
        }
        println!(
            "    {name:<30} n={:<9} p50 {:>7.2} ms  p99 {:>7.2} ms  max {:>8.2} ms",
            histogram.len(),
            quantile_ms(histogram, 0.50),
            quantile_ms(histogram, 0.99),
            histogram.max() as f64 / 1000.0,
        );
    }
    if let Some(flood) = &result.flood {
        let refused = flood.purchase.len() + flood.throw.len();
        println!(
            "    refusal flood: {:.0}/s refused of {}/s offered: {} stake_limit_reached (403), \
             {} play_finished (409), {} throttled (429), {} unexpected{}",
            result.per_second(refused),
            flood.offered,
            flood.purchase.len(),
            flood.throw.len(),
            flood.throttled,
            flood.unexpected,
            if flood.unexpected == 0 && refused > 0 {
                ": every refusal as expected"
            } else {
                ""
            }
        );
    }
    if let Some(memory) = result.memory {
        println!(
            "    server memory: VmRSS {:.1} MiB, VmHWM {:.1} MiB",
            memory.rss_kib as f64 / 1024.0,
            memory.hwm_kib as f64 / 1024.0
        );
    }
}

/// The refusers of `--refusals-per-second`, none without it.
async fn flood_refusers(base: &str, args: &BenchArgs, run: &str) -> anyhow::Result<Vec<Refuser>> {
    if args.refusals_per_second == 0 {
        return Ok(Vec::new());
    }
    setup_refusers(base, args.refusals_per_second, args.stake_cents, run)
        .await
        .context("cannot set up the refusal flood")
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

pub async fn run_bench(args: BenchArgs) -> anyhow::Result<()> {
    if args.concurrency == 0 || args.duration <= 0.0 {
        bail!(super::Usage(
            "--concurrency and --duration must be positive".to_owned()
        ));
    }
    let backend = if args.database_url.is_some() {
        "PostgreSQL"
    } else {
        "SQLite"
    };
    // The flood is named in the runs it goes with (not the /healthz ceiling).
    let flood = if args.refusals_per_second > 0 {
        format!(", refusal flood {}/s", args.refusals_per_second)
    } else {
        String::new()
    };
    println!(
        "tresor bench: mix {:?}, {} players{flood}, {} s (+{} s warm-up), stake {} c; load average before: {}",
        args.mix,
        args.concurrency,
        args.duration,
        args.warmup,
        args.stake_cents,
        load_average()
    );
    if let (Some(plays), Some(data)) = (args.preload_plays, &args.data) {
        preload(data, plays).await?;
    }
    let mut results = Vec::new();
    let mut ceiling = None;
    if let Some(url) = &args.url {
        let base = url.trim_end_matches('/').to_owned();
        let run = hex::encode(&crate::service::os_random_32()[..4]);
        let players = register_players(&base, args.concurrency, &run).await?;
        let refusers = flood_refusers(&base, &args, &run).await?;
        if args.baselines {
            let result = run_mix(
                "/healthz (HTTP ceiling)",
                &base,
                &players,
                &[],
                Mix::Healthz,
                &args,
                None,
            )
            .await?;
            ceiling = Some(result.headline());
            print_result(&result, None);
            results.push(result);
        }
        let result = run_mix(
            &format!("{url}{flood}"),
            &base,
            &players,
            &refusers,
            args.mix,
            &args,
            args.server_pid,
        )
        .await?;
        print_result(&result, ceiling);
        results.push(result);
    } else {
        // The tuned server.
        let store = Store::fresh(&args, "tuned").await?;
        let server = Server::start(store, args.max_batch, args.extra_blocks).await?;
        let run = hex::encode(&crate::service::os_random_32()[..4]);
        let players = register_players(&server.base, args.concurrency, &run).await?;
        let refusers = flood_refusers(&server.base, &args, &run).await?;
        if args.baselines {
            let result = run_mix(
                "/healthz (HTTP ceiling)",
                &server.base,
                &players,
                &[],
                Mix::Healthz,
                &args,
                Some(server.pid()),
            )
            .await?;
            ceiling = Some(result.headline());
            print_result(&result, None);
            results.push(result);
        }
        let label = format!(
            "{backend}, group commit{}{flood}",
            if args.max_batch > 0 {
                format!(" (max batch {})", args.max_batch)
            } else {
                String::new()
            }
        );
        let result = run_mix(
            &label,
            &server.base,
            &players,
            &refusers,
            args.mix,
            &args,
            Some(server.pid()),
        )
        .await?;
        print_result(&result, ceiling);
        let tuned = result.headline();
        results.push(result);
        let store = server.stop().await;
        if let Some(bytes) = store.size_bytes().await {
            println!(
                "    database size after the run: {:.1} MiB",
                bytes as f64 / 1048576.0
            );
        }
        store.drop_database().await;
        drop(store);

        if args.baselines && args.data.is_none() {
            // One transaction per job, on a fresh database of the same kind.
            let store = Store::fresh(&args, "single").await?;
            let server = Server::start(store, 1, args.extra_blocks).await?;
            let players = register_players(&server.base, args.concurrency, &run).await?;
            let refusers = flood_refusers(&server.base, &args, &run).await?;
            let result = run_mix(
                &format!("{backend}, one transaction per job{flood}"),
                &server.base,
                &players,
                &refusers,
                args.mix,
                &args,
                Some(server.pid()),
            )
            .await?;
            print_result(&result, ceiling);
            println!(
                "    group commit: {:.2} × one transaction per job",
                tuned / result.headline()
            );
            results.push(result);
            let store = server.stop().await;
            store.drop_database().await;

            if let Some(admin_url) = &args.database_url {
                let tps = pgbench(admin_url, args.pgbench_clients, args.duration)?;
                println!(
                    "{:<34} {:>9.0} tps (pgbench -c {} -j 2 -T {}, scale 10)",
                    "pgbench TPC-B-like",
                    tps,
                    args.pgbench_clients,
                    args.duration.ceil()
                );
                println!("    tresor: {:.2} × pgbench's tps", tuned / tps);
            }
        }
    }
    println!("load average after: {}", load_average());
    Ok(())
}

/// Bulk-loads finished 50-cent plays into the SQLite database under `data`
/// until it holds `target` plays: closed blocks to hold them, one player per
/// thousand plays, a deposit per player, a stake transfer and a trail record
/// per play, all generated inside SQLite (recursive CTEs), a block at a time.
///
/// Only the measurement is real (purchases through the server afterwards):
/// the loaded plays all lose, and their trail records carry placeholder
/// hashes, so `tresor audit verify` refuses such a database. It is for
/// measuring growth, never for anything else.
async fn preload(data: &std::path::Path, target: u64) -> anyhow::Result<()> {
    use crate::service::{DEPOSITS_ACCOUNT, STAKES_ACCOUNT, os_random_32, sha256_hex};
    let db = crate::store::Db::open_data_dir(data).await?;
    let pool = &db.pool;
    let have: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM plays")
        .fetch_one(pool)
        .await?;
    let mut left = target.saturating_sub(have as u64);
    if left == 0 {
        return Ok(());
    }
    // The bench deposits through the demo deposit: a growth database is a
    // demo database (no trail record for it: this database is not audited).
    sqlx::query("DELETE FROM settings WHERE key = 'demo'")
        .execute(pool)
        .await?;
    sqlx::query("INSERT INTO settings (key, value) VALUES ('demo', '1')")
        .execute(pool)
        .await?;
    let bar = progress(left, "preloading plays");
    let now_ms = {
        use crate::service::Clock;
        crate::service::SystemClock.now_ms()
    };
    let emission_id: i64 = sqlx::query_scalar(
        "INSERT INTO emissions (name, state, created_at_ms, closed_at_ms) \
         VALUES ('Preload', 'closed', $1, $1) RETURNING id",
    )
    .bind(now_ms)
    .fetch_one(pool)
    .await?;
    const PER_PLAYER: u64 = 1000;
    let units = u64::from(tresor_game::UNITS_PER_BLOCK);
    while left > 0 {
        let count = left.min(units) as i64;
        let players = (count as u64).div_ceil(PER_PLAYER) as i64;
        let mut tx = pool.begin().await?;
        let secret = os_random_32();
        let block_id: i64 = sqlx::query_scalar(
            "INSERT INTO blocks (emission_id, stake_cents, secret, commitment, units_sold, state, \
             created_at_ms, published_at_ms) VALUES ($1, 50, $2, $3, $4, 'closed', $5, $5) RETURNING id",
        )
        .bind(emission_id)
        .bind(secret.to_vec())
        .bind(sha256_hex(&secret))
        .bind(count)
        .bind(now_ms)
        .fetch_one(&mut *tx)
        .await?;
        let first_account: i64 =
            sqlx::query_scalar("SELECT COALESCE(MAX(id), 0) + 1 FROM accounts")
                .fetch_one(&mut *tx)
                .await?;
        let first_player: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(id), 0) + 1 FROM players")
            .fetch_one(&mut *tx)
            .await?;
        let first_play: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(id), 0) + 1 FROM plays")
            .fetch_one(&mut *tx)
            .await?;
        let head_seq: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM trail")
            .fetch_one(&mut *tx)
            .await?;
        let statements = [
            // Players and their accounts: player k of this block is
            // first_player + k with account first_account + k.
            "WITH RECURSIVE c(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM c WHERE k + 1 < $1) \
             INSERT INTO accounts (id, kind, balance_cents) SELECT $2 + k, 'player', 0 FROM c",
            "WITH RECURSIVE c(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM c WHERE k + 1 < $1) \
             INSERT INTO players (id, username, username_key, password_hash, account_id, \
             adult_declared_at_ms, rules_accepted_at_ms, created_at_ms) \
             SELECT $3 + k, 'preload' || ($3 + k), 'preload' || ($3 + k), '!', $2 + k, $4, $4, $4 FROM c",
            // Each player deposits exactly what its plays stake.
            "WITH RECURSIVE c(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM c WHERE k + 1 < $1) \
             INSERT INTO transfers (debit_account_id, credit_account_id, amount_cents, kind, created_at_ms) \
             SELECT 1, $2 + k, 50 * ((($5 - 1 - k) / $1) + 1), 'deposit', $4 FROM c",
            // Play n of the block belongs to player n mod players.
            "WITH RECURSIVE c(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM c WHERE n + 1 < $5) \
             INSERT INTO plays (id, player_id, block_id, unit_index, stake_cents, level, prize_cents, \
             throws_made, state, idempotency_key, request_hash, created_at_ms, finished_at_ms) \
             SELECT $6 + n, $3 + n % $1, $7, n, 50, 0, 0, 4, 'finished', 'preload-' || n, \
             '5a1b6a0c0b7a4f3e2d1c0b9a8f7e6d5c4b3a29180f7e6d5c4b3a291807f6e5d4', $4, $4 FROM c",
            "WITH RECURSIVE c(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM c WHERE n + 1 < $5) \
             INSERT INTO transfers (debit_account_id, credit_account_id, amount_cents, kind, play_id, created_at_ms) \
             SELECT $2 + n % $1, 2, 50, 'stake', $6 + n, $4 FROM c",
            "WITH RECURSIVE c(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM c WHERE n + 1 < $5) \
             INSERT INTO trail (seq, at_ms, actor, action, request, result, prev_hash, hash) \
             SELECT $8 + 1 + n, $4, 'player:' || ($3 + n % $1) || ':preload' || ($3 + n % $1), 'buy', \
             '{\"idempotency_key\":\"preload-' || n || '\",\"stake_cents\":50}', \
             '{\"balance_cents\":0,\"block_id\":' || $7 || ',\"block_sold_out\":false,\"emission_id\":1,\"level\":0,\"play_id\":' || ($6 + n) || ',\"prize_cents\":0,\"unit_index\":' || n || '}', \
             printf('%064d', $8 + n), printf('%064d', $8 + 1 + n) FROM c",
        ];
        for sql in statements {
            sqlx::query(sql)
                .bind(players)
                .bind(first_account)
                .bind(first_player)
                .bind(now_ms)
                .bind(count)
                .bind(first_play)
                .bind(block_id)
                .bind(head_seq)
                .execute(&mut *tx)
                .await
                .with_context(|| format!("preloading: {}", &sql[..60.min(sql.len())]))?;
        }
        // The money moved from the deposits account to the stakes account.
        sqlx::query("UPDATE accounts SET balance_cents = balance_cents - $1 WHERE id = $2")
            .bind(50 * count)
            .bind(DEPOSITS_ACCOUNT)
            .execute(&mut *tx)
            .await?;
        sqlx::query("UPDATE accounts SET balance_cents = balance_cents + $1 WHERE id = $2")
            .bind(50 * count)
            .bind(STAKES_ACCOUNT)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        left -= count as u64;
        bar.inc(count as u64);
    }
    bar.finish_and_clear();
    db.pool.close().await;
    Ok(())
}
