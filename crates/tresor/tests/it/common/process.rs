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
/// this test binary.
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
    [
        "--purchases-per-minute-per-player",
        "--purchases-per-minute-per-address",
        "--registrations-per-hour-per-address",
        "--logins-per-minute-per-address",
        "--actions-per-minute-per-player",
        "--actions-per-minute-per-address",
        "--failed-logins-free-per-name-and-address",
        "--failed-logins-free-per-address",
        "--max-connections-per-address",
        "--max-connections",
    ]
    .into_iter()
    .flat_map(|flag| [flag.to_owned(), "100000000".to_owned()])
    .collect()
}

/// A real `tresor serve --demo` process, killed when dropped (pass or fail).
#[derive(Debug)]
pub struct Server {
    /// `http://127.0.0.1:{port}`.
    pub base: String,
    /// The operator's listener, on a free port of its own.
    pub admin_base: String,
    child: Child,
}

impl Server {
    /// Starts `tresor serve --demo` on `db` at 127.0.0.1:`port` with the
    /// `extra` flags, and waits until it answers `/healthz`.
    pub async fn start(db: &TestDb, port: u16, extra: &[String]) -> Server {
        Server::start_with(&db.db_args(), Some(db), port, extra).await
    }

    /// Starts `tresor serve --demo` with `db`'s key on the database of
    /// `db_args` (a restored folder, say) like [`Server::start`].
    pub async fn start_with_args(
        db_args: &[String],
        db: &TestDb,
        port: u16,
        extra: &[String],
    ) -> Server {
        Server::start_with(db_args, Some(db), port, extra).await
    }

    /// Starts `tresor serve --demo` on the PostgreSQL `url` (a multi-host
    /// one, say) like [`Server::start`].
    pub async fn start_on_url(url: &str, port: u16, extra: &[String]) -> Server {
        let db_args = ["--database-url".to_owned(), url.to_owned()];
        Server::start_with(&db_args, None, port, extra).await
    }

    async fn start_with(
        db_args: &[String],
        db: Option<&TestDb>,
        port: u16,
        extra: &[String],
    ) -> Server {
        let admin_port = free_port();
        let mut command = tresor_command();
        command
            // The writer name of the tests' servers, unless one is given
            // (the default is the host name and port: `serve_writer_name`).
            .env("TRESOR_WRITER", "server")
            .args(["serve", "--demo", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--admin-listen", &format!("127.0.0.1:{admin_port}")])
            .args(db_args)
            .args(extra)
            .stdout(Stdio::null());
        if let Some(db) = db {
            db.env(&mut command);
        }
        let child = command.spawn().expect("start tresor serve");
        let server = Server {
            base: format!("http://127.0.0.1:{port}"),
            admin_base: format!("http://127.0.0.1:{admin_port}"),
            child,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if reqwest::get(format!("{}/healthz", server.base))
                .await
                .is_ok_and(|r| r.status().is_success())
            {
                return server;
            }
            assert!(
                Instant::now() < deadline,
                "the server at {} never answered /healthz",
                server.base
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
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
