//! Helpers for the operate and audit tests: a fresh database per test on
//! SQLite or PostgreSQL, a service on it with a hand-moved clock, the real
//! `tresor` binary pointed at it, and the HTTP router driven in-process.
#![allow(
    dead_code,
    reason = "each test binary uses a different part of the helpers"
)]

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Output;
use std::sync::Arc;
use tower::ServiceExt;
use tresor::metrics::Metrics;
use tresor::service::{ManualClock, Player, Registration, Service, Settings};
use tresor::store::{Backend, Db, sqlite_url};

/// 2026-01-01T00:00:00Z: the tests' clock starts here.
pub const START_MS: i64 = 1_767_225_600_000;

/// Runs each named `async fn name(db: &TestDb)` on SQLite and on PostgreSQL,
/// as `name::on_sqlite` and `name::on_postgres`.
#[macro_export]
macro_rules! on_both_databases {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn on_sqlite() {
                let db = $crate::common::TestDb::sqlite().await;
                super::$name(&db).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn on_postgres() {
                let Some(db) = $crate::common::TestDb::postgres().await else {
                    return;
                };
                super::$name(&db).await;
            }
        }
    )*};
}

/// A database of its own for one test, dropped at the end.
#[derive(Debug)]
pub struct TestDb {
    pub url: String,
    pub backend: Backend,
    data_dir: Option<tempfile::TempDir>,
    /// The PostgreSQL server's base URL and this test's database name.
    postgres: Option<(String, String)>,
}

impl TestDb {
    pub async fn sqlite() -> TestDb {
        let dir = tempfile::tempdir().expect("a temporary folder");
        TestDb {
            url: sqlite_url(dir.path()),
            backend: Backend::Sqlite,
            data_dir: Some(dir),
            postgres: None,
        }
    }

    /// A fresh PostgreSQL database, or `None` (with a skip line) when no
    /// server answers and `TRESOR_REQUIRE_POSTGRES` is not `1`.
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
        let mut random = [0u8; 8];
        getrandom::fill(&mut random).expect("random bytes");
        let name = format!("tresor_test_{}", hex::encode(random));
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut conn)
            .await
            .expect("create the test database");
        let _ = conn.close().await;
        let (server, _) = base.rsplit_once('/').expect("a URL with a database name");
        let server = server.to_owned();
        Some(TestDb {
            url: format!("{server}/{name}"),
            backend: Backend::Postgres,
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

    /// Connects (and migrates).
    pub async fn connect(&self) -> Db {
        Db::connect(&self.url)
            .await
            .expect("connect to the test database")
    }

    /// A service on this database whose clock starts at [`START_MS`].
    pub async fn service(&self) -> (Service, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::new(START_MS));
        let service = Service::new(self.connect().await, clock.clone(), Settings::default());
        (service, clock)
    }

    /// Runs the real `tresor` binary with `args` and this database's flags.
    pub fn tresor(&self, args: &[&str]) -> Output {
        std::process::Command::new(env!("CARGO_BIN_EXE_tresor"))
            .args(args)
            .args(self.db_args())
            .env_remove("TRESOR_DATA")
            .env_remove("TRESOR_DATABASE_URL")
            .env("RUST_LOG", "warn")
            .output()
            .expect("run the tresor binary")
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
                runtime.block_on(async move {
                    use sqlx::Connection;
                    if let Ok(mut conn) = sqlx::PgConnection::connect(&base).await {
                        let _ =
                            sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                                .execute(&mut conn)
                                .await;
                    }
                });
            })
            .join();
        }
    }
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

/// Registers a player with a valid password and the highest 7-day caps (the
/// operate and audit tests move large sums; tests/protect.rs tests the caps).
pub async fn player(service: &Service, username: &str) -> Player {
    let registration = Registration::parse(username, "correct horse battery", true, true)
        .expect("a valid registration")
        .with_limits(tresor::protect::Limits::highest());
    service.register(registration).await.expect("register")
}

/// The HTTP router on `service`, driven in-process.
#[derive(Debug, Clone)]
pub struct Api {
    router: axum::Router,
}

/// An answer of the API.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub body: Value,
    pub text: String,
    pub cookie: Option<String>,
}

impl Api {
    pub fn new(service: &Service) -> Api {
        let metrics = Arc::new(Metrics::new(&service.writer.stats));
        let router = tresor::http::app(tresor::http::AppState {
            service: service.clone(),
            metrics,
            secure_cookies: false,
        });
        Api { router }
    }

    pub async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        cookie: Option<&str>,
        idempotency_key: Option<&str>,
    ) -> Answer {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header("x-requested-with", "tresor");
        if let Some(cookie) = cookie {
            request = request.header(header::COOKIE, cookie);
        }
        if let Some(key) = idempotency_key {
            request = request.header("idempotency-key", key);
        }
        let request = match body {
            Some(body) => request
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body.to_string())),
            None => request.body(Body::empty()),
        }
        .expect("a valid request");
        let response = self
            .router
            .clone()
            .oneshot(request)
            .await
            .expect("the router answers");
        let status = response.status();
        let cookie = response
            .headers()
            .get(header::SET_COOKIE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(str::to_owned);
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 24)
            .await
            .expect("a body");
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Answer {
            status,
            body,
            text,
            cookie,
        }
    }

    pub async fn get(&self, path: &str) -> Answer {
        self.call("GET", path, None, None, None).await
    }

    /// Registers a player through the API; returns the session cookie.
    pub async fn register(&self, username: &str) -> String {
        let answer = self
            .call(
                "POST",
                "/api/register",
                Some(serde_json::json!({
                    "username": username,
                    "password": "correct horse battery",
                    "adult": true,
                    "accept_rules": true,
                })),
                None,
                None,
            )
            .await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text);
        answer.cookie.expect("a session cookie")
    }
}
