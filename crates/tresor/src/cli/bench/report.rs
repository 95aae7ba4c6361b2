//! What a run measured and how it is printed: the latency histograms, the
//! refusal flood's tally, the server's memory.

use super::Mix;
use hdrhistogram::Histogram;

/// One measured run of one mix.
#[derive(Debug)]
pub(super) struct RunResult {
    pub(super) label: String,
    pub(super) mix: Mix,
    pub(super) seconds: f64,
    /// Latency in microseconds per endpoint: purchase, throw, healthz.
    pub(super) purchase: Histogram<u64>,
    pub(super) throw: Histogram<u64>,
    pub(super) healthz: Histogram<u64>,
    pub(super) games: u64,
    pub(super) errors: u64,
    pub(super) memory: Option<Memory>,
    /// What the refusal flood got, when there was one.
    pub(super) flood: Option<FloodTally>,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Memory {
    pub(super) rss_kib: u64,
    pub(super) hwm_kib: u64,
}

impl RunResult {
    pub(super) fn per_second(&self, count: u64) -> f64 {
        count as f64 / self.seconds
    }

    /// Runs at the same time (one per server) as one: their counts and
    /// latencies together, over the longest one's time.
    pub(super) fn sum(label: String, runs: &[RunResult]) -> anyhow::Result<RunResult> {
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
        };
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

    pub(super) fn headline(&self) -> f64 {
        match self.mix {
            Mix::Purchases => self.per_second(self.purchase.len()),
            Mix::Games => self.per_second(self.games),
            Mix::Healthz => self.per_second(self.healthz.len()),
        }
    }
}

pub(super) fn new_histogram() -> Histogram<u64> {
    // 1 µs to 60 s at three significant digits.
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid histogram bounds")
}

/// What the refusal flood got. Answers are counted when their request was
/// sent inside the measurement, like the players' requests, except the
/// unexpected ones, counted at any time like the players' errors.
#[derive(Debug)]
pub(super) struct FloodTally {
    /// The pace asked for, in requests per second in all.
    pub(super) offered: u32,
    /// Latency of each expected refusal in microseconds: purchases refused
    /// with 403 `stake_limit_reached`, throws with 409 `play_finished`.
    pub(super) purchase: Histogram<u64>,
    pub(super) throw: Histogram<u64>,
    /// 429 `rate_limited`: throttles of a foreign server (`--url`).
    pub(super) throttled: u64,
    /// Any other answer, or none.
    pub(super) unexpected: u64,
}

impl FloodTally {
    pub(super) fn new(offered: u32) -> Self {
        FloodTally {
            offered,
            purchase: new_histogram(),
            throw: new_histogram(),
            throttled: 0,
            unexpected: 0,
        }
    }

    pub(super) fn add(&mut self, other: &FloodTally) -> anyhow::Result<()> {
        self.purchase.add(&other.purchase)?;
        self.throw.add(&other.throw)?;
        self.throttled += other.throttled;
        self.unexpected += other.unexpected;
        Ok(())
    }
}

/// The resident set and its high-water mark from /proc/PID/status.
pub(super) fn read_memory(pid: u32) -> Option<Memory> {
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

pub(super) fn quantile_ms(histogram: &Histogram<u64>, q: f64) -> f64 {
    histogram.value_at_quantile(q) as f64 / 1000.0
}

pub(super) fn print_result(result: &RunResult, ceiling: Option<f64>) {
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
