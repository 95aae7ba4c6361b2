//! The one place that runs the `tresor` binary: as a command (with or
//! without a database's flags, see [`TestDb::tresor`]) and as a real
//! `tresor serve` process on a free port ([`Server`]).

use super::TestDb;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The `tresor` binary of this build, with none of the environment that
/// would point it at a database (a test gives its own) and quiet logs.
pub fn tresor_command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tresor"));
    command
        .env_remove("TRESOR_DATA")
        .env_remove("TRESOR_DATABASE_URL")
        .env_remove("TRESOR_SECRETS_KEY_FILE")
        .env_remove("TRESOR_LOG_KEY_FILE")
        .env_remove("TRESOR_WRITER")
        // The log's signing key of every test database (TestDb signs with
        // the same one in the test's own process).
        .env("TRESOR_LOG_KEY", super::db::TEST_LOG_KEY)
        // A key for the databases a test makes without a TestDb (a cluster
        // of its own); a TestDb gives its own key over this one.
        .env("TRESOR_SECRETS_KEY", "5e".repeat(32))
        // The servers keep their published checkpoints in a folder of this
        // test binary's (a file per installation), not the working folder.
        .env("TRESOR_KEPT_CHECKPOINTS", kept_checkpoints_dir())
        .env("RUST_LOG", "warn");
    command
}

/// The folder where the servers of this test binary keep the checkpoints
/// they published (`--kept-checkpoints`): one file per installation.
pub fn kept_checkpoints_dir() -> &'static std::path::Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("a temporary folder"))
        .path()
}

/// Runs the `tresor` binary with `args` and no database.
pub fn tresor(args: &[&str]) -> Output {
    tresor_command()
        .args(args)
        .output()
        .expect("run the tresor binary")
}

/// [`tresor`] from a test's async code: on a blocking thread, so that the
/// servers the test runs in-process keep answering meanwhile.
pub async fn tresor_async(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        tresor(&args)
    })
    .await
    .unwrap()
}

/// `args` as owned strings (for [`tresor_async`]).
pub fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// What a command printed and how it ended.
pub fn describe(output: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A TCP port free on 127.0.0.1 when asked, and not handed out twice by
/// this test binary: only for what cannot bind port 0 and say which port it
/// got (a PostgreSQL server of a test's own). Every other server binds
/// `127.0.0.1:0` and says its address ([`Printed`]).
///
/// Ports come from below the kernel's ephemeral range (32768–60999 by
/// default): a port the kernel picked for `bind(0)` and let go of can be
/// taken again at once as the source port of any outgoing connection, before
/// the server binds it ("Address already in use"). Each test binary (cargo
/// runs them one after another) starts at a place of its own in 20000–31999.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    const FIRST: u16 = 20_000;
    const SPAN: u16 = 12_000;
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let start = (std::process::id() % u32::from(SPAN)) as u16;
    for _ in 0..SPAN {
        let offset = NEXT.fetch_add(1, Ordering::Relaxed) % SPAN;
        let port = FIRST + (start + offset) % SPAN;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free TCP port in {FIRST}..{}", FIRST + SPAN);
}

/// Flags that lift the per-player and per-address throttles: every
/// simulated player comes from 127.0.0.1 (as `tresor-bench` lifts them).
pub fn unthrottled_flags() -> Vec<String> {
    tresor::cli::serve::LOAD_TEST_LIFTS
        .into_iter()
        .flat_map(|flag| [flag.to_owned(), "100000000".to_owned()])
        .collect()
}

/// The flags of a server among several on one database: unthrottled,
/// selling first from its `block_offset`-th block, and, with `writer`,
/// appending to a log of that name.
pub fn own_blocks_flags(block_offset: u32, writer: Option<&str>) -> Vec<String> {
    let mut flags = vec!["--block-offset".to_owned(), block_offset.to_string()];
    if let Some(writer) = writer {
        flags.extend(["--writer".to_owned(), writer.to_owned()]);
    }
    flags.extend(unthrottled_flags());
    flags
}

/// A real `tresor serve --demo` process, killed when dropped (pass or fail).
///
/// It listens on ports the kernel gave it (`127.0.0.1:0`): the addresses
/// are read back from what it prints once bound ([`Printed`]), never
/// guessed beforehand.
#[derive(Debug)]
pub struct Server {
    /// `http://127.0.0.1:{port}`.
    pub base: String,
    /// The operator's listener, on a port of its own.
    pub admin_base: String,
    /// Every line the server printed, as it prints them.
    pub printed: Printed,
    child: Child,
}

impl Server {
    /// Starts `tresor serve --demo` on `db` with the `extra` flags, and
    /// waits until it answers `/healthz`.
    pub async fn start(db: &TestDb, extra: &[String]) -> Server {
        Server::start_with(&db.db_args(), Some(db), 0, extra).await
    }

    /// Starts `tresor serve --demo` on `db` at 127.0.0.1:`port`: to start
    /// one again where an earlier one (now stopped) listened.
    pub async fn start_at(db: &TestDb, port: u16, extra: &[String]) -> Server {
        Server::start_with(&db.db_args(), Some(db), port, extra).await
    }

    /// Starts `tresor serve --demo` with `db`'s key on the database of
    /// `db_args` (a restored folder, say) like [`Server::start`].
    pub async fn start_with_args(db_args: &[String], db: &TestDb, extra: &[String]) -> Server {
        Server::start_with(db_args, Some(db), 0, extra).await
    }

    /// Starts `tresor serve --demo` on the PostgreSQL `url` (a multi-host
    /// one, say) like [`Server::start`].
    pub async fn start_on_url(url: &str, extra: &[String]) -> Server {
        Server::start_on_url_at(url, 0, extra).await
    }

    /// [`Server::start_on_url`] at 127.0.0.1:`port` (0: a port the kernel
    /// gives).
    pub async fn start_on_url_at(url: &str, port: u16, extra: &[String]) -> Server {
        let db_args = ["--database-url".to_owned(), url.to_owned()];
        Server::start_with(&db_args, None, port, extra).await
    }

    async fn start_with(
        db_args: &[String],
        db: Option<&TestDb>,
        port: u16,
        extra: &[String],
    ) -> Server {
        Server::spawn(Server::command(db_args, db, port, extra)).await
    }

    /// The command [`Server::start`] runs (`tresor serve --demo` on `db`
    /// with `extra`), for a caller that wraps it ([`under_ulimit`]).
    pub fn demo_command(db: &TestDb, extra: &[String]) -> Command {
        Server::command(&db.db_args(), Some(db), 0, extra)
    }

    fn command(db_args: &[String], db: Option<&TestDb>, port: u16, extra: &[String]) -> Command {
        let mut command = tresor_command();
        command
            // The writer name of the tests' servers, unless one is given
            // (the default is the host name and port: `serve_writer_name`).
            .env("TRESOR_WRITER", "server")
            .args(["serve", "--demo", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--admin-listen", "127.0.0.1:0"])
            .args(db_args)
            .args(extra);
        if let Some(db) = db {
            db.env(&mut command);
        }
        command
    }

    /// Starts a `tresor` serving command built by the caller (listening on
    /// port 0: its flags or `TRESOR_LISTEN`), reads back the addresses it
    /// bound, and waits until it answers `/healthz`.
    pub async fn spawn(mut command: Command) -> Server {
        let mut child = command
            .stdout(Stdio::piped())
            .spawn()
            .expect("start tresor serve");
        let printed = Printed::follow(&mut child);
        let (base, admin_base) = printed.addresses().await;
        let server = Server {
            base,
            admin_base,
            printed,
            child,
        };
        wait_healthy(&server.base).await;
        server
    }

    /// The operator's port.
    pub fn admin_port(&self) -> u16 {
        port_of(&self.admin_base)
    }

    /// The players' port.
    pub fn port(&self) -> u16 {
        port_of(&self.base)
    }

    /// Whether the server's process has not ended.
    pub fn is_running(&mut self) -> bool {
        self.exited().is_none()
    }

    /// How the server's process ended, if it has.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().expect("the server's state")
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the server with SIGKILL, as a crash would, and reaps it.
    pub fn kill(mut self) {
        self.child.kill().expect("SIGKILL the server");
        self.child.wait().expect("reap the server");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What a started process prints on its standard output, line by line,
/// read on a thread of its own to the end (a server prints on).
#[derive(Debug, Clone)]
pub struct Printed {
    lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    ended: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Printed {
    /// Follows `child`'s piped standard output.
    pub fn follow(child: &mut Child) -> Printed {
        use std::io::BufRead;
        let stdout = child.stdout.take().expect("a piped standard output");
        let printed = Printed {
            lines: Default::default(),
            ended: Default::default(),
        };
        let (lines, ended) = (printed.lines.clone(), printed.ended.clone());
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                lines.lock().unwrap().push(line);
            }
            ended.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        printed
    }

    /// Every line printed so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// Waits (60 s at most) for the first line that `pick` takes, and gives
    /// what it took; panics with all that was printed if the process ended
    /// or the time passed first.
    pub async fn wait_for<T>(&self, what: &str, pick: impl Fn(&str) -> Option<T>) -> T {
        let found = self.wait_for_or_end(what, pick).await;
        found
            .unwrap_or_else(|| panic!("ended without printing {what}; printed: {:?}", self.lines()))
    }

    /// As [`Printed::wait_for`], but `None` if the process ended first.
    pub async fn wait_for_or_end<T>(
        &self,
        what: &str,
        pick: impl Fn(&str) -> Option<T>,
    ) -> Option<T> {
        let printed =
            super::wait::until(format!("{what} printed"), Duration::from_secs(60), || {
                // Read `ended` first: a line printed just before the end
                // is then still found.
                let ended = self.ended.load(std::sync::atomic::Ordering::SeqCst);
                let found = self.lines.lock().unwrap().iter().find_map(|l| pick(l));
                let done = match found {
                    Some(found) => Some(Some(found)),
                    None if ended => Some(None),
                    None => None,
                };
                async move { done }
            });
        printed.await
    }

    /// The players' and the operator's addresses a `tresor serve` printed
    /// once it had bound both (`http://127.0.0.1:{port}` each).
    pub async fn addresses(&self) -> (String, String) {
        let after = |marker: &'static str, end: &'static str| {
            move |line: &str| {
                let rest = &line[line.find(marker)? + marker.len()..];
                Some(format!("http://{}", &rest[..rest.find(end)?]))
            }
        };
        let base = self
            .wait_for("the players' address", after("is open at http://", "/"))
            .await;
        let admin = self
            .wait_for(
                "the operator's address",
                after("console at http://", "/console"),
            )
            .await;
        (base, admin)
    }
}

/// The port of `http://host:port`.
pub fn port_of(base: &str) -> u16 {
    base.rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a port")
}

/// Waits (60 s at most) until `base` answers `/healthz`.
pub async fn wait_healthy(base: &str) {
    super::wait::answers(&format!("{base}/healthz"), Duration::from_secs(60)).await;
}

/// `tresor serve` (not the demo) on `db` with `args`, on ports the kernel
/// gives (`127.0.0.1:0`), with `db`'s key: for [`Server::spawn`] or
/// [`refused_at_start`].
pub fn serve_command(db: &TestDb, args: &[&str]) -> Command {
    let mut command = tresor_command();
    command
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(["--admin-listen", "127.0.0.1:0"])
        .args(args)
        .args(db.db_args());
    db.env(&mut command);
    command
}

/// Runs a serving `command` to its end: it must stop without serving
/// (killed, and the test failed naming `why`, if it serves or still runs
/// after 60 s). Gives how it ended; the caller asserts the exit code and
/// the words of the refusal.
pub fn refused_at_start(mut command: Command, why: &str) -> Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tresor serve");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{why}: tresor serve still runs after 60 s: {}",
                describe(&out)
            );
        }
        std::thread::sleep(super::wait::STEP);
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("is open at"),
        "{why}: tresor serve started: {}",
        describe(&out)
    );
    out
}

/// `command` run by `sh` under `ulimit {limit}` (`-S -n 1024`: the soft
/// limit of open files), with the same environment; `sh` execs it, so the
/// process is the command's.
pub fn under_ulimit(command: &Command, limit: &str) -> Command {
    let mut wrapped = Command::new("sh");
    wrapped
        .args(["-c", &format!("ulimit {limit} && exec \"$@\""), "sh"])
        .arg(command.get_program())
        .args(command.get_args());
    for (name, value) in command.get_envs() {
        match value {
            Some(value) => wrapped.env(name, value),
            None => wrapped.env_remove(name),
        };
    }
    wrapped
}

/// A command that succeeded: what it printed.
pub fn stdout_ok(output: Output) -> String {
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A refusal of bad input: exit 2, with `words` in what it wrote on its
/// standard error.
pub fn refused(output: &Output, words: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{}", describe(output));
    assert!(
        stderr.contains(words),
        "expected {words:?}: {}",
        describe(output)
    );
}
