//! What a run measured and how it is printed: the latency histograms, the
//! refusal flood's tally, the server's memory, and the CPU the server and
//! PostgreSQL spent (read by `procstat`).

use crate::args::Mix;
use crate::procstat::{Cpu, Memory};
use hdrhistogram::Histogram;

/// One measured run of one mix.
#[derive(Debug)]
pub(crate) struct RunResult {
    pub(crate) label: String,
    pub(crate) mix: Mix,
    pub(crate) seconds: f64,
    /// Latency in microseconds per endpoint: purchase, throw, healthz.
    pub(crate) purchase: Histogram<u64>,
    pub(crate) throw: Histogram<u64>,
    pub(crate) healthz: Histogram<u64>,
    pub(crate) games: u64,
    pub(crate) errors: u64,
    pub(crate) memory: Option<Memory>,
    /// What the refusal flood got, when there was one.
    pub(crate) flood: Option<FloodTally>,
    /// What the free tries beside the players got, when there were some.
    pub(crate) free: Option<FreeTally>,
    /// The CPU spent during the measurement, when it could be read.
    pub(crate) cpu: Option<Cpu>,
}

impl RunResult {
    pub(crate) fn per_second(&self, count: u64) -> f64 {
        count as f64 / self.seconds
    }

    /// Runs at the same time (one per server) as one: their counts and
    /// latencies together, over the longest one's time.
    pub(crate) fn sum(label: String, runs: &[RunResult]) -> anyhow::Result<RunResult> {
        let mut sum = RunResult {
            label,
            mix: runs.first().map_or(Mix::Purchases, |run| run.mix),
            seconds: 0.0,
            purchase: new_histogram(),
            throw: new_histogram(),
            healthz: new_histogram(),
            games: 0,
            errors: 0,
            memory: None,
            flood: None,
            free: None,
            cpu: None,
        };
        // Each server's own CPU, added up; PostgreSQL's CPU is the
        // machine's, read by every run over the same window: the largest
        // reading, not their sum.
        let servers: Option<f64> = runs.iter().map(|run| run.cpu?.server_us).sum();
        let postgres = runs
            .iter()
            .filter_map(|run| run.cpu?.postgres_us)
            .reduce(f64::max);
        sum.cpu = Some(Cpu {
            server_us: servers,
            postgres_us: postgres,
        });
        for run in runs {
            sum.seconds = sum.seconds.max(run.seconds);
            sum.purchase.add(&run.purchase)?;
            sum.throw.add(&run.throw)?;
            sum.healthz.add(&run.healthz)?;
            sum.games += run.games;
            sum.errors += run.errors;
        }
        Ok(sum)
    }

    pub(crate) fn headline(&self) -> f64 {
        match self.mix {
            Mix::Purchases => self.per_second(self.purchase.len()),
            Mix::Games => self.per_second(self.games),
            Mix::Healthz => self.per_second(self.healthz.len()),
        }
    }
}

pub(crate) fn new_histogram() -> Histogram<u64> {
    // 1 µs to 60 s at three significant digits.
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid histogram bounds")
}

/// What the refusal flood got. Answers are counted when their request was
/// sent inside the measurement, like the players' requests, except the
/// unexpected ones, counted at any time like the players' errors.
#[derive(Debug)]
pub(crate) struct FloodTally {
    /// The pace asked for, in requests per second in all.
    pub(crate) offered: u32,
    /// Latency of each expected refusal in microseconds: purchases refused
    /// with 403 `stake_limit_reached`, throws with 409 `play_finished`.
    pub(crate) purchase: Histogram<u64>,
    pub(crate) throw: Histogram<u64>,
    /// 429 `rate_limited`: throttles of a foreign server (`--url`).
    pub(crate) throttled: u64,
    /// Any other answer, or none.
    pub(crate) unexpected: u64,
}

impl FloodTally {
    pub(crate) fn new(offered: u32) -> Self {
        FloodTally {
            offered,
            purchase: new_histogram(),
            throw: new_histogram(),
            throttled: 0,
            unexpected: 0,
        }
    }

    pub(crate) fn add(&mut self, other: &FloodTally) -> anyhow::Result<()> {
        self.purchase.add(&other.purchase)?;
        self.throw.add(&other.throw)?;
        self.throttled += other.throttled;
        self.unexpected += other.unexpected;
        Ok(())
    }
}

/// What the free-try flood got. Answers are counted when their request was
/// sent inside the measurement, except the unexpected ones, counted at any
/// time like the players' errors.
#[derive(Debug)]
pub(crate) struct FreeTally {
    /// The pace asked for, in free tries per second in all.
    pub(crate) offered: u32,
    /// Latency of each free try answered (200, `"free": true`), in µs.
    pub(crate) answered: Histogram<u64>,
    /// 429 `rate_limited`: the throttle of a foreign server (`--url`).
    pub(crate) throttled: u64,
    /// Any other answer, or none.
    pub(crate) unexpected: u64,
}

impl FreeTally {
    pub(crate) fn new(offered: u32) -> Self {
        FreeTally {
            offered,
            answered: new_histogram(),
            throttled: 0,
            unexpected: 0,
        }
    }

    pub(crate) fn add(&mut self, other: &FreeTally) -> anyhow::Result<()> {
        self.answered.add(&other.answered)?;
        self.throttled += other.throttled;
        self.unexpected += other.unexpected;
        Ok(())
    }
}

pub(crate) fn quantile_ms(histogram: &Histogram<u64>, q: f64) -> f64 {
    histogram.value_at_quantile(q) as f64 / 1000.0
}

/// Prints a run: its headline (against the `/healthz` `ceiling` when
/// given), each endpoint's latencies, the flood, the memory and the CPU.
pub(crate) fn print_result(result: &RunResult, ceiling: Option<f64>) {
    println!("{}", headline_line(result, ceiling));
    print_latencies(result);
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
    if let Some(free) = &result.free {
        println!(
            "    free tries: {:.0}/s answered of {}/s offered, {} throttled (429), {} unexpected",
            result.per_second(free.answered.len()),
            free.offered,
            free.throttled,
            free.unexpected,
        );
    }
    if let Some(memory) = result.memory {
        println!(
            "    server memory: VmRSS {:.1} MiB, VmHWM {:.1} MiB",
            memory.rss_kib as f64 / 1024.0,
            memory.hwm_kib as f64 / 1024.0
        );
    }
    if let Some(line) = cpu_line(result) {
        println!("{line}");
    }
}

/// A run's first line: its label, its rate, and what stood beside it.
fn headline_line(result: &RunResult, ceiling: Option<f64>) -> String {
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
    if let Some(free) = &result.free {
        line += &format!(
            "  beside {:.0} free tries/s",
            result.per_second(free.answered.len())
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
    line
}

/// Each endpoint's count and latencies (the refusals' too), when it had
/// requests.
fn print_latencies(result: &RunResult) {
    let none = (new_histogram(), new_histogram(), new_histogram());
    let (refused_purchase, refused_throw) = result
        .flood
        .as_ref()
        .map_or((&none.0, &none.1), |f| (&f.purchase, &f.throw));
    let free = result.free.as_ref().map_or(&none.2, |f| &f.answered);
    for (name, histogram) in [
        ("POST /api/plays", &result.purchase),
        ("POST /api/plays/{id}/throws", &result.throw),
        ("GET /healthz", &result.healthz),
        ("refused purchase (403)", refused_purchase),
        ("refused throw (409)", refused_throw),
        ("POST /api/free/plays", free),
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
}

/// The CPU per purchase (per request for `/healthz`), when it was read.
fn cpu_line(result: &RunResult) -> Option<String> {
    let cpu = result.cpu?;
    let (count, what) = match result.mix {
        Mix::Purchases => (result.purchase.len(), "purchase"),
        Mix::Games => (result.games, "game (a purchase and four throws)"),
        Mix::Healthz => (result.healthz.len(), "request"),
    };
    if count == 0 {
        return None;
    }
    let per = |us: Option<f64>| us.map(|us| us / count as f64);
    let mut line = format!("    CPU per {what}:");
    if let Some(server) = per(cpu.server_us) {
        line += &format!(" server {server:.0} µs");
    }
    if let Some(postgres) = per(cpu.postgres_us) {
        line += &format!(", PostgreSQL {postgres:.0} µs (all its processes)");
    }
    Some(line)
}

/// One server's run, as the several servers' run of the same go is
/// compared with it: its rate, and its CPU per purchase.
#[derive(Debug, Clone, Copy)]
pub(crate) struct One {
    pub(crate) rate: f64,
    server_us: Option<f64>,
    postgres_us: Option<f64>,
}

impl One {
    pub(crate) fn of(result: &RunResult) -> One {
        let count = result.purchase.len().max(1) as f64;
        let per = |us: Option<f64>| us.map(|us| us / count);
        One {
            rate: result.headline(),
            server_us: result.cpu.and_then(|cpu| per(cpu.server_us)),
            postgres_us: result.cpu.and_then(|cpu| per(cpu.postgres_us)),
        }
    }

    /// The CPU per purchase of `servers` (their sum) against this one's:
    /// scale-out shows as cost on a machine whose cores the servers share.
    pub(crate) fn cpu_against(&self, servers: &RunResult, count: usize) -> Option<String> {
        let theirs = One::of(servers);
        let compare = |name: &str, one: Option<f64>, them: Option<f64>| {
            let (one, them) = (one?, them?);
            Some(format!(
                "{name} {them:.0} vs {one:.0} µs ({:.2}×)",
                them / one
            ))
        };
        let parts: Vec<String> = [
            compare("server", self.server_us, theirs.server_us),
            compare("PostgreSQL", self.postgres_us, theirs.postgres_us),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!parts.is_empty()).then(|| {
            format!(
                "    CPU per purchase, {count} servers vs one: {}",
                parts.join(", ")
            )
        })
    }
}

/// PostgreSQL's CPU per purchase of `result` against `per_transaction`
/// µs per pgbench transaction, when both were read.
pub(crate) fn cpu_against_pgbench(
    result: &RunResult,
    per_transaction: Option<f64>,
) -> Option<String> {
    let postgres_us = result.cpu?.postgres_us?;
    let purchases = result.purchase.len();
    let per_transaction = per_transaction?;
    if purchases == 0 || per_transaction <= 0.0 {
        return None;
    }
    let per_purchase = postgres_us / purchases as f64;
    Some(format!(
        "    PostgreSQL's CPU: {per_purchase:.0} µs a purchase vs {per_transaction:.0} µs a pgbench transaction = {:.1}×",
        per_purchase / per_transaction
    ))
}

/// A progress bar on stderr (stdout is the report).
pub(crate) fn progress(length: u64, message: &'static str) -> indicatif::ProgressBar {
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
