//! What the kernel says a process spent, from /proc: the CPU ticks of the
//! server and of PostgreSQL's processes, and the server's resident memory.

/// CPU time spent during a measurement, in µs: the server's process, and
/// every PostgreSQL process of the machine (its backends and its own
/// processes: the WAL writer, the checkpointer…), when the run is on
/// PostgreSQL.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cpu {
    pub(crate) server_us: Option<f64>,
    pub(crate) postgres_us: Option<f64>,
}

/// CPU clock ticks read at one moment ([`cpu_sample`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct CpuSample {
    server: Option<u64>,
    postgres: Option<u64>,
}

/// The CPU ticks (user and system) of `pid` so far, from /proc/PID/stat,
/// with those of its children that ended (and were waited for) when
/// `children`.
fn process_ticks(pid: u32, children: bool) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command's closing parenthesis: state is field 3, utime 14,
    // stime 15, cutime 16, cstime 17.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| -> Option<u64> { fields.get(n)?.parse().ok() };
    let own = field(11)? + field(12)?;
    Some(if children {
        own + field(13)? + field(14)?
    } else {
        own
    })
}

/// The CPU ticks so far of every process named `postgres`, with those of
/// the backends that ended (counted in the postmaster's children's time:
/// pgbench's connections end before the run is read again).
pub(crate) fn postgres_ticks() -> Option<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let is_postgres = std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .is_ok_and(|comm| comm.trim_end() == "postgres");
        if is_postgres {
            total += process_ticks(pid, true).unwrap_or(0);
        }
    }
    Some(total)
}

/// The server's and (with `postgres`) PostgreSQL's CPU ticks now.
pub(crate) fn cpu_sample(server: Option<u32>, postgres: bool) -> CpuSample {
    CpuSample {
        server: server.and_then(|pid| process_ticks(pid, false)),
        postgres: if postgres { postgres_ticks() } else { None },
    }
}

/// Microseconds of CPU in `ticks` clock ticks.
pub(crate) fn ticks_us(ticks: u64) -> f64 {
    ticks as f64 * 1e6 / rustix::param::clock_ticks_per_second() as f64
}

impl CpuSample {
    /// The CPU spent from `self` to `later`.
    pub(crate) fn until(self, later: CpuSample) -> Cpu {
        let spent = |a: Option<u64>, b: Option<u64>| Some(ticks_us(b?.saturating_sub(a?)));
        Cpu {
            server_us: spent(self.server, later.server),
            postgres_us: spent(self.postgres, later.postgres),
        }
    }
}

/// The server's resident set and its high-water mark, in KiB.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Memory {
    pub(crate) rss_kib: u64,
    pub(crate) hwm_kib: u64,
}

/// The resident set and its high-water mark from /proc/PID/status.
pub(crate) fn read_memory(pid: u32) -> Option<Memory> {
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
