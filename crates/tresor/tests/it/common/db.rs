//! A fresh database per test, on SQLite (a temporary folder, blank: the
//! first connection migrates it) or PostgreSQL (a database of its own on the
//! test server, made migrated, a copy of a template: `template.rs`; fenced
//! off at the end and dropped later, many at once: `trash.rs`). Either is a
//! new installation that nothing was written into (`Db::fresh`): a server
//! started on it in demo mode makes the demo's emissions. A test that needs
//! a database without a schema asks for one ([`TestDb::blank`],
//! [`TestDb::migrated_before`]).

use super::START_MS;
use super::process::{describe, tresor_command};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::Arc;
use tresor::seal::SecretsKey;
use tresor::service::{ManualClock, Service, Settings};
use tresor::store::{Backend, Db, sqlite_url};

/// The log's signing key (an Ed25519 seed, hex) of every test database,
/// in the test's process and in the `tresor` binary it runs.
pub const TEST_LOG_KEY: &str = "4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c";

/// The seed of [`TEST_LOG_KEY`].
pub fn test_log_seed() -> tresor::logkey::LogSeed {
    tresor::logkey::LogSeed::parse_hex(TEST_LOG_KEY).expect("a seed")
}

/// `db` signing its log with the test log key, listed as the
/// installation's when it has none.
pub async fn signed(db: Db) -> Db {
    let db = db
        .with_log_seed(&test_log_seed())
        .await
        .expect("name the log key");
    if db
        .current_log_vkey()
        .await
        .expect("read the log keys")
        .is_none()
    {
        db.register_log_key(super::START_MS)
            .await
            .expect("list the log key");
    }
    db
}

/// A database of its own for one test, gone at the end.
#[derive(Debug)]
pub struct TestDb {
    pub url: String,
    pub backend: Backend,
    /// The key of this database's block secrets, given to the binary by
    /// `TRESOR_SECRETS_KEY`.
    pub secrets_key: SecretsKey,
    data_dir: Option<tempfile::TempDir>,
    /// The PostgreSQL server's base URL and this test's database name.
    postgres: Option<(String, String)>,
}

impl TestDb {
    /// A fresh database on `backend`; `None` as [`TestDb::postgres`] says.
    pub async fn new(backend: Backend) -> Option<TestDb> {
        match backend {
            Backend::Sqlite => Some(TestDb::sqlite().await),
            Backend::Postgres => TestDb::postgres().await,
        }
    }

    pub async fn sqlite() -> TestDb {
        let dir = tempfile::tempdir().expect("a temporary folder");
        TestDb {
            url: sqlite_url(dir.path()),
            backend: Backend::Sqlite,
            secrets_key: SecretsKey::generate(),
            data_dir: Some(dir),
            postgres: None,
        }
    }

    /// A fresh PostgreSQL database, migrated, or `None` (with a skip line)
    /// when no server answers and `TRESOR_REQUIRE_POSTGRES` is not `1`.
    pub async fn postgres() -> Option<TestDb> {
        use sqlx::Connection;
        let base = std::env::var("TRESOR_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
        let mut conn = match sqlx::PgConnection::connect(&base).await {
            Ok(conn) => conn,
            Err(error) => {
                if std::env::var("TRESOR_REQUIRE_POSTGRES").as_deref() == Ok("1") {
                    panic!("PostgreSQL is required but unreachable at {base}: {error}");
                }
                eprintln!("skipped: PostgreSQL unreachable at {base}: {error}");
                return None;
            }
        };
        super::trash::adopt(&mut conn, &base).await;
        let name = super::trash::fresh_name("tresor_test_");
        super::template::copy(&mut conn, &base, &name).await;
        let _ = conn.close().await;
        let (server, _) = base.rsplit_once('/').expect("a URL with a database name");
        let server = server.to_owned();
        Some(TestDb {
            url: format!("{server}/{name}"),
            backend: Backend::Postgres,
            secrets_key: SecretsKey::generate(),
            data_dir: None,
            postgres: Some((base, name)),
        })
    }

    /// The command-line flags that point `tresor` at this database.
    pub fn db_args(&self) -> Vec<String> {
        match &self.data_dir {
            Some(dir) => vec!["--data".to_owned(), dir.path().display().to_string()],
            None => vec!["--database-url".to_owned(), self.url.clone()],
        }
    }

    pub fn data_dir(&self) -> Option<PathBuf> {
        self.data_dir.as_ref().map(|d| d.path().to_owned())
    }

    /// Connects (and migrates), with this database's secrets key and the
    /// test log key (see [`signed`]).
    pub async fn connect(&self) -> Db {
        signed(
            Db::connect(&self.url)
                .await
                .expect("connect to the test database")
                .with_secrets_key(self.secrets_key.clone()),
        )
        .await
    }

    /// A service on this database whose clock starts at [`START_MS`],
    /// passwords hashed at argon2's least cost.
    pub async fn service(&self) -> (Service, Arc<ManualClock>) {
        self.service_with(Settings {
            password_cost: tresor::service::PasswordCost::Least,
            ..Settings::default()
        })
        .await
    }

    /// A service like [`TestDb::service`] with an emission `name` on sale
    /// (one block of every stake).
    pub async fn service_selling(&self, name: &str) -> (Service, Arc<ManualClock>) {
        let (service, clock) = self.service().await;
        service
            .create_emission(name, &tresor_game::Stake::ALL, 1)
            .await
            .expect("create an emission");
        (service, clock)
    }

    /// The same, with `settings`.
    pub async fn service_with(&self, settings: Settings) -> (Service, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::new(START_MS));
        let service = Service::new(self.connect().await, clock.clone(), settings);
        service
            .open_secrets()
            .await
            .expect("open the block secrets");
        (service, clock)
    }

    /// Makes this database blank, without a schema, as a database is before
    /// its first opening (a PostgreSQL test database starts migrated): to
    /// call before anything is written into it. A SQLite one is blank until
    /// it is first opened.
    pub async fn blank(&self) {
        if self.postgres.is_some() {
            use sqlx::Connection;
            let mut conn = sqlx::PgConnection::connect(&self.url)
                .await
                .expect("connect to the test database");
            super::template::empty(&mut conn).await;
            let _ = conn.close().await;
        }
    }

    /// One connection to this database, made blank ([`TestDb::blank`]) and
    /// its schema brought up to the migrations before `version` only: a
    /// database as older code left it.
    pub async fn migrated_before(&self, version: i64) -> sqlx::AnyPool {
        self.blank().await;
        sqlx::any::install_default_drivers();
        let pool = sqlx::any::AnyPoolOptions::new()
            .max_connections(1)
            .connect(&self.url)
            .await
            .expect("connect");
        let mut before = sqlx::migrate::Migrator::DEFAULT;
        before.migrations = tresor::store::migrator(self.backend)
            .migrations
            .iter()
            .filter(|m| m.version < version)
            .cloned()
            .collect::<Vec<_>>()
            .into();
        before
            .run(&pool)
            .await
            .unwrap_or_else(|error| panic!("the migrations before {version:04}: {error}"));
        pool
    }

    /// A copy of this database as it is now, with its key: its data
    /// folder's files, or a PostgreSQL database made from it (no server may
    /// have it open; connections of one just killed are waited for).
    pub async fn copy(&self) -> TestDb {
        let Some((base, name)) = &self.postgres else {
            let mut copy = TestDb::sqlite().await;
            let (from, to) = (self.data_dir().unwrap(), copy.data_dir().unwrap());
            for entry in std::fs::read_dir(from).unwrap().flatten() {
                if entry.file_type().unwrap().is_file() {
                    std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
                }
            }
            copy.secrets_key = self.secrets_key.clone();
            return copy;
        };
        use sqlx::Connection;
        let copy_name = super::trash::fresh_name("tresor_test_");
        let (server, _) = base.rsplit_once('/').expect("a URL with a database name");
        let mut copy = TestDb {
            url: format!("{server}/{copy_name}"),
            backend: Backend::Postgres,
            secrets_key: SecretsKey::generate(),
            data_dir: None,
            postgres: Some((base.clone(), copy_name.clone())),
        };
        let mut conn = sqlx::PgConnection::connect(base).await.unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let statement = format!("CREATE DATABASE {copy_name} TEMPLATE {name}");
        while let Err(error) = sqlx::query(&statement).execute(&mut conn).await {
            assert!(std::time::Instant::now() < deadline, "{statement}: {error}");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        copy.secrets_key = self.secrets_key.clone();
        copy
    }

    /// Gives `command` (a [`tresor_command`]) this database's secrets key.
    pub fn env(&self, command: &mut Command) {
        command.env("TRESOR_SECRETS_KEY", self.secrets_key.to_hex());
    }

    /// Runs the real `tresor` binary with `args` and this database's flags.
    pub fn tresor(&self, args: &[&str]) -> Output {
        let mut command = tresor_command();
        command.args(args).args(self.db_args());
        self.env(&mut command);
        command.output().expect("run the tresor binary")
    }

    /// Runs the real `tresor` binary with `args` (which name the database:
    /// a restored folder, say) and this database's secrets key only.
    pub fn tresor_keyed(&self, args: &[&str]) -> Output {
        let mut command = tresor_command();
        command.args(args);
        self.env(&mut command);
        command.output().expect("run the tresor binary")
    }

    /// `tresor restore --from backup --data data` (and `extra` flags) with
    /// this database's key, which must succeed: what it said.
    pub fn restore(
        &self,
        backup: &std::path::Path,
        data: &std::path::Path,
        extra: &[&str],
    ) -> String {
        let (backup, data) = (backup.display().to_string(), data.display().to_string());
        let args = [&["restore", "--from", &backup, "--data", &data][..], extra].concat();
        super::process::stdout_ok(self.tresor_keyed(&args))
    }

    /// Opens (and migrates) the SQLite data folder `data` (a restored copy,
    /// say) with this database's secrets key and the test log key.
    pub async fn open_data_dir(&self, data: &std::path::Path) -> Db {
        signed(
            Db::open_data_dir(data)
                .await
                .expect("open the data folder")
                .with_secrets_key(self.secrets_key.clone()),
        )
        .await
    }

    /// Runs the real `tresor` binary like [`TestDb::tresor`] and checks that
    /// it succeeded.
    pub fn tresor_ok(&self, args: &[&str]) -> Output {
        let output = self.tresor(args);
        assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
        output
    }

    /// Asserts `tresor serve --demo` refuses this database, one created
    /// without demo mode: exit 2, saying why, before it serves anything.
    pub fn assert_demo_refused(&self) {
        let out = self.tresor(&[
            "serve",
            "--demo",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
        ]);
        assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("created without demo mode"),
            "{}",
            describe(&out)
        );
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        // Best effort, on a thread of its own: Drop cannot await, and the
        // test's runtime may be shutting down.
        if let Some((base, name)) = self.postgres.take() {
            let _ = std::thread::spawn(move || {
                let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    return;
                };
                runtime.block_on(super::trash::give_back(&base, &name));
            })
            .join();
        }
    }
}
