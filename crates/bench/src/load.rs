//! One run of a mix: every player's loop, the refusal flood and the free
//! tries started on
//! one clock, watched for the warm-up and the duration (progress, the
//! server's memory and CPU), then stopped and their tallies merged.

use crate::args::{BenchArgs, Mix};
use crate::flood::{Refuser, refuse_loop};
use crate::free::{free_loop, visitor_count};
use crate::play::{Clock, Tally, play_loop};
use crate::players::Player;
use crate::procstat::{Cpu, Memory, cpu_sample, read_memory};
use crate::report::progress;
use crate::report::{FloodTally, FreeTally, RunResult, new_histogram};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// The server a run loads, and how the run is named.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'a> {
    pub(crate) label: &'a str,
    pub(crate) base: &'a str,
    /// Its process, to sample its memory.
    pub(crate) pid: Option<u32>,
    /// Whether this run draws the progress bar (one of runs at once does).
    pub(crate) shown: bool,
}

/// Runs `mix` with every player for the warm-up and the duration, beside
/// the refusal flood of `refusers` if any.
pub(crate) async fn run_mix(
    target: Target<'_>,
    players: &[Player],
    refusers: &[Refuser],
    mix: Mix,
    args: &BenchArgs,
) -> anyhow::Result<RunResult> {
    let started = Instant::now();
    let clock = Arc::new(Clock {
        started,
        measure_from: started + Duration::from_secs_f64(args.warmup),
        stop: AtomicBool::new(false),
        stopped: tokio::sync::watch::Sender::new(false),
        done: AtomicU64::new(0),
    });
    let base: Arc<str> = Arc::from(target.base);
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
    let free_rate = args.free_tries_per_second;
    let free_count = if free_rate > 0 {
        visitor_count(free_rate)
    } else {
        0
    };
    let free_tasks: Vec<JoinHandle<FreeTally>> = (0..free_count as usize)
        .map(|index| {
            let base = base.clone();
            tokio::spawn(free_loop(
                base,
                index,
                free_rate,
                args.stake_cents,
                clock.clone(),
            ))
        })
        .collect();
    let (memory, cpu, seconds) = watch(&target, &clock, args).await;
    let mut result = RunResult {
        label: target.label.to_owned(),
        mix,
        seconds,
        purchase: new_histogram(),
        throw: new_histogram(),
        healthz: new_histogram(),
        games: 0,
        errors: 0,
        memory,
        flood: None,
        free: None,
        cpu,
    };
    gather(&mut result, tasks, flood_tasks, args).await?;
    if !free_tasks.is_empty() {
        let mut free = FreeTally::new(free_rate);
        for task in free_tasks {
            free.add(&task.await?)?;
        }
        result.free = Some(free);
    }
    // Requests still in flight when the clock stopped finish a little after
    // it: count them over the time they actually took.
    result.seconds = seconds.max(clock.measure_from.elapsed().as_secs_f64());
    if let Some(pid) = target.pid {
        result.memory = read_memory(pid).or(result.memory);
    }
    Ok(result)
}

/// Watches the run until its time is up, then stops it: the server's
/// memory under load, the CPU spent while measured (scaled to the whole
/// measurement), and the measurement's seconds.
async fn watch(
    target: &Target<'_>,
    clock: &Clock,
    args: &BenchArgs,
) -> (Option<Memory>, Option<Cpu>, f64) {
    let Target {
        label,
        pid: server_pid,
        shown,
        ..
    } = *target;
    let total = args.warmup + args.duration;
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
    (memory, cpu, seconds)
}

/// Every player's tally and the flood's, merged into `result`.
async fn gather(
    result: &mut RunResult,
    tasks: Vec<JoinHandle<Tally>>,
    flood_tasks: Vec<JoinHandle<FloodTally>>,
    args: &BenchArgs,
) -> anyhow::Result<()> {
    for task in tasks {
        let tally = task.await?;
        result.purchase.add(&tally.purchase)?;
        result.throw.add(&tally.throw)?;
        result.healthz.add(&tally.healthz)?;
        result.games += tally.games;
        result.errors += tally.errors;
    }
    if !flood_tasks.is_empty() {
        let mut flood = FloodTally::new(args.refusals_per_second);
        for task in flood_tasks {
            flood.add(&task.await?)?;
        }
        result.flood = Some(flood);
    }
    Ok(())
}
