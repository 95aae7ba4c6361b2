//! A PostgreSQL of the test's own: a primary (and, if asked, a synchronous
//! standby streaming from it) in a temporary folder on free ports, run as
//! the `postgres` OS user when the tests run as root (PostgreSQL refuses
//! root). Every process and the folder go when the [`Cluster`] is dropped,
//! pass or fail. `fsync` is off: the tests kill processes, not machines,
//! and what a killed process wrote is in the OS page cache.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One PostgreSQL server: its data folder and port.
#[derive(Debug)]
pub struct Instance {
    pub data: PathBuf,
    pub port: u16,
}

impl Instance {
    /// `host:port` as a URL's host list holds it.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn log(&self) -> PathBuf {
        self.data.with_extension("log")
    }
}

/// A primary and maybe a synchronous standby, stopped and removed on drop.
#[derive(Debug)]
pub struct Cluster {
    bin: PathBuf,
    root: tempfile::TempDir,
    pub primary: Instance,
    pub standby: Option<Instance>,
}

/// The newest PostgreSQL's binaries, or `None` (with a skip line) unless
/// `TRESOR_REQUIRE_POSTGRES=1`, where their absence is a failure.
fn binaries() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| bin.join("initdb").exists() && bin.join("pg_ctl").exists())
        .collect();
    found.sort_by_key(|bin| {
        bin.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    super::procs::required(
        found.pop(),
        "TRESOR_REQUIRE_POSTGRES",
        "PostgreSQL binaries under /usr/lib/postgresql/*/bin",
    )
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

impl Cluster {
    /// A primary alone.
    pub fn primary() -> Option<Cluster> {
        Cluster::primary_with("")
    }

    /// A primary alone, with `conf` added to its `postgresql.conf` before
    /// its first start (WAL archiving, say: `{root}` in it is replaced by
    /// [`Cluster::root`]).
    pub fn primary_with(conf: &str) -> Option<Cluster> {
        let bin = binaries()?;
        let root = tempfile::Builder::new()
            .prefix("tresor-pg-")
            .tempdir()
            .expect("a temporary folder");
        // Where WAL archiving, when a test asks for it, copies segments.
        std::fs::create_dir(root.path().join("archive")).expect("the archive folder");
        if is_root() {
            let status = Command::new("chown")
                .args(["-R", "postgres:", &root.path().display().to_string()])
                .status()
                .expect("chown");
            assert!(status.success(), "give the temporary folder to postgres");
        }
        let primary = Instance {
            data: root.path().join("primary"),
            // PostgreSQL takes no port 0 to report back: a free one is probed.
            port: super::free_port(),
        };
        let cluster = Cluster {
            bin,
            root,
            primary,
            standby: None,
        };
        cluster.run_ok(
            "initdb",
            &[
                "-D",
                &cluster.primary.data.display().to_string(),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        );
        let socket_dir = cluster.root.path().display().to_string();
        append(
            &cluster.primary.data.join("postgresql.conf"),
            &format!(
                "port = {}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{socket_dir}'\n\
                 wal_level = replica\nmax_wal_senders = 4\nhot_standby = on\nfsync = off\n\
                 full_page_writes = off\nshared_buffers = 32MB\nmax_connections = 60\n",
                cluster.primary.port
            ),
        );
        append(
            &cluster.primary.data.join("postgresql.conf"),
            &conf.replace("{root}", &socket_dir),
        );
        cluster.start(false);
        Some(cluster)
    }

    /// A primary and a synchronous standby streaming from it: a COMMIT is
    /// acknowledged once the standby has it.
    pub fn with_standby() -> Option<Cluster> {
        let mut cluster = Cluster::primary()?;
        let standby = Instance {
            data: cluster.root.path().join("standby"),
            // PostgreSQL takes no port 0 to report back: a free one is probed.
            port: super::free_port(),
        };
        cluster.base_backup(&standby.data, &["-R"]);
        append(
            &standby.data.join("postgresql.conf"),
            &format!("port = {}\n", standby.port),
        );
        cluster.standby = Some(standby);
        cluster.start(true);
        // Only now the primary waits for the standby: the base backup had
        // to run first.
        append(
            &cluster.primary.data.join("postgresql.conf"),
            "synchronous_standby_names = '*'\nsynchronous_commit = on\n",
        );
        cluster.run_ok(
            "pg_ctl",
            &["-D", &cluster.primary.data.display().to_string(), "reload"],
        );
        cluster.wait_streaming();
        Some(cluster)
    }

    /// A URL with every host, primary first.
    pub fn url(&self, target_session_attrs: &str) -> String {
        let mut hosts = vec![self.primary.host()];
        hosts.extend(self.standby.as_ref().map(Instance::host));
        format!(
            "postgres://postgres@{}/postgres?target_session_attrs={target_session_attrs}",
            hosts.join(",")
        )
    }

    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        let mut command = if is_root() {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(path);
            command
        } else {
            Command::new(path)
        };
        command.current_dir(self.root.path()).stdin(Stdio::null());
        command
    }

    /// The temporary folder every file of the cluster is in (owned by the
    /// `postgres` user when the tests run as root).
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// Runs one of PostgreSQL's programs (`pg_basebackup`, `pg_ctl`…) as
    /// the cluster's user, and checks that it succeeded.
    pub fn run(&self, program: &str, args: &[&str]) {
        self.run_ok(program, args);
    }

    /// Stops the server of the data folder `data` at once, whatever its
    /// state (for a server the test started itself, in a `Drop`).
    pub fn stop_quietly(&self, data: &Path) {
        let _ = self
            .command("pg_ctl")
            .args([
                "-D",
                &data.display().to_string(),
                "-m",
                "immediate",
                "-w",
                "-t",
                "10",
                "stop",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }

    /// Gives `path` (made by the test) to the cluster's user.
    pub fn give(&self, path: &Path) {
        if is_root() {
            let status = Command::new("chown")
                .args(["-R", "postgres:", &path.display().to_string()])
                .status()
                .expect("chown");
            assert!(status.success(), "give {} to postgres", path.display());
        }
    }

    /// `pg_basebackup` of the primary into `into` (streaming its WAL, a
    /// fast checkpoint), with `extra` flags (`-R`: a standby's settings).
    pub fn base_backup(&self, into: &Path, extra: &[&str]) {
        let (port, into) = (self.primary.port.to_string(), into.display().to_string());
        let args = [
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                "postgres",
                "-D",
                &into,
            ][..],
            &["-X", "stream", "--checkpoint=fast", "--no-sync"],
            extra,
        ]
        .concat();
        self.run_ok("pg_basebackup", &args);
    }

    /// `psql -At -c sql` on the server at `port` (one the test started).
    pub fn psql_at(&self, port: u16, sql: &str) -> String {
        let output = self
            .command("psql")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-U",
                "postgres",
                "-At",
                "-c",
                sql,
            ])
            .output()
            .expect("run psql");
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    fn run_ok(&self, program: &str, args: &[&str]) {
        let output = self
            .command(program)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("run {program}: {e}"));
        assert!(
            output.status.success(),
            "{program} {args:?} failed: {}",
            super::describe(&output)
        );
    }

    fn instance(&self, standby: bool) -> &Instance {
        if standby {
            self.standby.as_ref().expect("a standby")
        } else {
            &self.primary
        }
    }

    /// Starts the primary (or the standby) and waits until it runs.
    pub fn start(&self, standby: bool) {
        let instance = self.instance(standby);
        self.run_ok(
            "pg_ctl",
            &[
                "-D",
                &instance.data.display().to_string(),
                "-l",
                &instance.log().display().to_string(),
                "-w",
                "-t",
                "30",
                "start",
            ],
        );
    }

    /// What the server (the standby's, or the primary's) has logged so far.
    pub fn log_text(&self, standby: bool) -> String {
        std::fs::read_to_string(self.instance(standby).log()).unwrap_or_default()
    }

    /// The postmaster's process id, from `postmaster.pid`.
    fn postmaster(&self, standby: bool) -> Option<u32> {
        let pid =
            std::fs::read_to_string(self.instance(standby).data.join("postmaster.pid")).ok()?;
        pid.lines().next()?.trim().parse().ok()
    }

    /// SIGKILLs the server and every process of it, as a machine's crash
    /// would stop it, and waits until they are gone and its port refuses
    /// connections. Panics if there is no such server to kill: a kill that
    /// did nothing would let a failover test pass on the old primary.
    pub fn kill(&self, standby: bool) {
        let instance = self.instance(standby);
        let postmaster = self.postmaster(standby).unwrap_or_else(|| {
            panic!(
                "no postmaster.pid to read in {}: the server to kill is not running",
                instance.data.display()
            )
        });
        assert!(
            self.is_own_postmaster(standby, postmaster),
            "process {postmaster} named by {}/postmaster.pid is not that server's postmaster",
            instance.data.display()
        );
        self.kill_postmaster(postmaster);
        assert!(
            !self.answers(standby),
            "the killed server on port {} still accepts connections",
            instance.port
        );
    }

    /// Whether `pid` is the postmaster of the primary (or the standby): a
    /// stale postmaster.pid (after a kill) may name a process that is no
    /// longer this server's.
    fn is_own_postmaster(&self, standby: bool, pid: u32) -> bool {
        let data = self.instance(standby).data.display().to_string();
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        String::from_utf8_lossy(&cmdline).contains(&data)
    }

    /// SIGKILLs `postmaster` and its children and waits until they are gone.
    fn kill_postmaster(&self, postmaster: u32) {
        let mut pids = super::procs::children(postmaster);
        pids.push(postmaster);
        for pid in &pids {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
        let what = format!("the killed server's processes {pids:?} going");
        super::wait::until_blocking(what, Duration::from_secs(10), || {
            (!pids
                .iter()
                .any(|pid| Path::new(&format!("/proc/{pid}")).exists()))
            .then_some(())
        });
    }

    /// Whether the primary (or the standby) accepts a TCP connection on its
    /// port.
    pub fn answers(&self, standby: bool) -> bool {
        let address = std::net::SocketAddr::from(([127, 0, 0, 1], self.instance(standby).port));
        std::net::TcpStream::connect_timeout(&address, Duration::from_secs(2)).is_ok()
    }

    /// Sends `signal` (`STOP`, `CONT`) to the processes of the primary (or
    /// the standby) whose title starts with `title` (`postgres: walreceiver`,
    /// or `postgres: postgres postgres` for the sessions of the tests'
    /// user); returns how many.
    pub fn signal(&self, standby: bool, title: &str, signal: &str) -> usize {
        let Some(postmaster) = self.postmaster(standby) else {
            return 0;
        };
        let mut signalled = 0;
        for pid in super::procs::children(postmaster) {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&cmdline).starts_with(title) {
                let _ = Command::new("kill")
                    .args([&format!("-{signal}"), &pid.to_string()])
                    .status();
                signalled += 1;
            }
        }
        signalled
    }

    /// Promotes the standby to primary and waits until it accepts writes.
    pub fn promote(&self) {
        self.run_ok(
            "pg_ctl",
            &[
                "-D",
                &self.instance(true).data.display().to_string(),
                "-w",
                "-t",
                "30",
                "promote",
            ],
        );
    }

    /// Restarts the primary as after a crash: every process stops at once
    /// (`-m immediate`), then it recovers from its WAL.
    pub fn restart_immediate(&self) {
        self.run_ok(
            "pg_ctl",
            &[
                "-D",
                &self.primary.data.display().to_string(),
                "-l",
                &self.primary.log().display().to_string(),
                "-m",
                "immediate",
                "-w",
                "-t",
                "30",
                "restart",
            ],
        );
    }

    /// `psql -At -c sql` on the primary (or the standby).
    pub fn psql(&self, standby: bool, sql: &str) -> String {
        self.psql_at(self.instance(standby).port, sql)
    }

    fn wait_streaming(&self) {
        super::wait::until_blocking(
            "the standby streaming synchronously",
            Duration::from_secs(30),
            || {
                (self.psql(false, "SELECT sync_state FROM pg_stat_replication") == "sync")
                    .then_some(())
            },
        );
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Stop nicely first; kill whatever is left.
        for standby in [false, true] {
            if standby && self.standby.is_none() {
                continue;
            }
            let data = self.instance(standby).data.display().to_string();
            let _ = self
                .command("pg_ctl")
                .args(["-D", &data, "-m", "immediate", "-w", "-t", "10", "stop"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            // Whatever is left, quietly: a test may have killed it already,
            // and a panic in a drop would hide the test's own failure.
            if let Some(postmaster) = self.postmaster(standby)
                && self.is_own_postmaster(standby, postmaster)
            {
                let mut pids = super::procs::children(postmaster);
                pids.push(postmaster);
                for pid in &pids {
                    let _ = Command::new("kill")
                        .args(["-KILL", &pid.to_string()])
                        .stderr(Stdio::null())
                        .status();
                }
            }
        }
        // The temporary folder goes with `root`.
    }
}

fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    file.write_all(text.as_bytes()).expect("append");
}
