//! The helpers every test binary shares (the API tests include this file by
//! path):
//!
//! - a fresh database per test on SQLite or PostgreSQL ([`TestDb`], run on both
//!   with [`on_both_databases!`]), a service on it with a hand-moved clock, and
//!   the real `tresor` binary pointed at it;
//! - the HTTP router driven in-process ([`Api`]);
//! - a real HTTP server in-process on a fresh database, one method per
//!   endpoint ([`TestApp`], run on both databases with [`on_both!`]);
//! - the real `tresor serve` process on a free port ([`Server`]) and a
//!   client for it;
//! - the ledger's invariants ([`assert_ledger_balances`]).
#![allow(
    dead_code,
    reason = "each test binary uses a different part of the helpers"
)]

pub mod proxy;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};
use sqlx::Row;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tower::ServiceExt;
use tresor::metrics::Metrics;
use tresor::service::{
    IdempotencyKey, ManualClock, Player, Purchase, Registration, Service, Settings,
};
use tresor::store::{Backend, Db, sqlite_url};
use tresor_game::Stake;

/// 2026-01-01T00:00:00Z: the tests' clock starts here.
pub const START_MS: i64 = 1_767_225_600_000;

/// The time now, in milliseconds since the epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

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

    /// Runs the real `tresor` binary like [`TestDb::tresor`] and checks that
    /// it succeeded.
    pub fn tresor_ok(&self, args: &[&str]) -> Output {
        let output = self.tresor(args);
        assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
        output
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

/// Checks the ledger: balances sum to zero, every balance equals its
/// transfers, no player balance is negative, and each player's balance is
/// deposits − stakes + prizes. Returns the number of transfers.
pub async fn assert_ledger_balances(db: &Db) -> i64 {
    let pool = &db.pool;
    let sum: i64 =
        sqlx::query_scalar("SELECT CAST(COALESCE(SUM(balance_cents), 0) AS BIGINT) FROM accounts")
            .fetch_one(pool)
            .await
            .unwrap();
    assert_eq!(sum, 0, "all balances sum to zero");
    let rows = sqlx::query(
        "SELECT a.id, a.kind, a.balance_cents, \
           CAST(COALESCE((SELECT SUM(amount_cents) FROM transfers WHERE credit_account_id = a.id), 0) AS BIGINT) AS credits, \
           CAST(COALESCE((SELECT SUM(amount_cents) FROM transfers WHERE debit_account_id = a.id), 0) AS BIGINT) AS debits \
         FROM accounts a",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    for row in &rows {
        let id: i64 = row.get("id");
        let kind: String = row.get("kind");
        let balance: i64 = row.get("balance_cents");
        let credits: i64 = row.get("credits");
        let debits: i64 = row.get("debits");
        assert_eq!(
            balance,
            credits - debits,
            "account {id} balance equals its transfers"
        );
        if kind == "player" {
            assert!(balance >= 0, "player account {id} is not negative");
        }
    }
    // Per player: deposits − stakes + prizes, from plays and deposits
    // independently; money in (deposits, credits, withdrawals given back)
    // and out (withdrawals asked, reserves) from the transfers of those kinds.
    let players = sqlx::query(
        "SELECT p.id, a.balance_cents, \
           CAST(COALESCE((SELECT SUM(amount_cents) FROM transfers t WHERE t.credit_account_id = a.id \
             AND t.kind IN ('deposit', 'credit', 'withdrawal_rejected', 'withdrawal_cancelled')), 0) \
           - COALESCE((SELECT SUM(amount_cents) FROM transfers t WHERE t.debit_account_id = a.id \
             AND t.kind IN ('withdrawal', 'reserve')), 0) AS BIGINT) AS deposits, \
           CAST(COALESCE((SELECT SUM(stake_cents) FROM plays WHERE plays.player_id = p.id), 0) AS BIGINT) AS stakes, \
           CAST(COALESCE((SELECT SUM(prize_cents) FROM plays WHERE plays.player_id = p.id AND plays.state = 'finished'), 0) AS BIGINT) AS wins \
         FROM players p JOIN accounts a ON a.id = p.account_id",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    for row in &players {
        let id: i64 = row.get("id");
        let balance: i64 = row.get("balance_cents");
        let (deposits, stakes, wins): (i64, i64, i64) =
            (row.get("deposits"), row.get("stakes"), row.get("wins"));
        assert_eq!(
            balance,
            deposits - stakes + wins,
            "player {id}: balance = deposits − stakes + wins"
        );
    }
    sqlx::query_scalar("SELECT COUNT(*) FROM transfers")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// A purchase of one unit at `stake_cents` under the idempotency key `key`.
pub fn purchase(stake_cents: i64, key: &str) -> Purchase {
    Purchase {
        stake: Stake::try_from(stake_cents).expect("a stake"),
        idempotency_key: IdempotencyKey::parse(key).expect("a key"),
    }
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

    /// Opens an account through the API, with an identity (outside demo
    /// mode `/api/register` is refused); returns the session cookie.
    pub async fn register(&self, username: &str) -> String {
        let answer = self
            .call(
                "POST",
                "/api/account/open",
                Some(serde_json::json!({
                    "username": username,
                    "password": "correct horse battery",
                    "accept_rules": true,
                    "identity": {
                        "birth_name": format!("Name of {username}"),
                        "first_names": "Test",
                        "birth_date": "1990-01-01",
                        "birth_place": "Nantes",
                        "address": "1 rue de la Paix, Paris",
                    },
                })),
                None,
                None,
            )
            .await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text);
        answer.cookie.expect("a session cookie")
    }

    /// Buys a unit at `stake_cents` as the player of `cookie`.
    pub async fn buy(&self, cookie: &str, stake_cents: i64, idempotency_key: &str) -> Answer {
        self.call(
            "POST",
            "/api/plays",
            Some(json!({ "stake_cents": stake_cents })),
            Some(cookie),
            Some(idempotency_key),
        )
        .await
    }
}

// ---- A real server in-process, over HTTP ----

/// A running server on its own database.
pub struct TestApp {
    pub address: String,
    pub service: Service,
    pub clock: Arc<ManualClock>,
    /// Shared with [`TestApp::another_client`]'s copies; dropped with the last.
    pub db: Arc<TestDb>,
    client: reqwest::Client,
}

impl TestApp {
    /// A server with an open emission of one block per stake, in demo mode.
    pub async fn spawn(backend: Backend) -> Option<TestApp> {
        Self::spawn_with(backend, Self::settings()).await
    }

    /// [`TestApp::spawn`]'s settings: the defaults, unthrottled. Every test
    /// player comes from one address, some as fast as they can: the
    /// throttles have tests of their own (tests/protect.rs).
    pub fn settings() -> Settings {
        Settings {
            rate_limits: tresor::protect::RateLimits::unthrottled(),
            ..Settings::default()
        }
    }

    pub async fn spawn_with(backend: Backend, settings: Settings) -> Option<TestApp> {
        let db = Arc::new(TestDb::new(backend).await?);
        let store = Db::connect(&db.url).await.expect("connect");
        let clock = Arc::new(ManualClock::new(now_ms()));
        let service = Service::new(store, clock.clone(), settings);
        service.set_demo().await.unwrap();
        service
            .create_emission("Test", &Stake::ALL, 1)
            .await
            .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = format!("http://{}", listener.local_addr().unwrap());
        let metrics = Arc::new(Metrics::new(&service.writer.stats));
        let state = tresor::http::AppState {
            service: service.clone(),
            metrics,
            secure_cookies: false,
        };
        let app =
            tresor::http::app(state).into_make_service_with_connect_info::<std::net::SocketAddr>();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Some(TestApp {
            address,
            service,
            clock,
            db,
            client: Self::new_client(),
        })
    }

    fn new_client() -> reqwest::Client {
        reqwest::Client::builder()
            .cookie_store(true)
            .build()
            .unwrap()
    }

    /// The same server seen by another browser (its own cookie jar).
    pub fn another_client(&self) -> TestApp {
        TestApp {
            address: self.address.clone(),
            service: self.service.clone(),
            clock: self.clock.clone(),
            db: self.db.clone(),
            client: Self::new_client(),
        }
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        let response = self
            .client
            .get(format!("{}{path}", self.address))
            .send()
            .await
            .unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    pub async fn post_raw(
        &self,
        path: &str,
        body: &str,
        headers: &[(&str, &str)],
    ) -> (StatusCode, Value) {
        let mut request = self
            .client
            .post(format!("{}{path}", self.address))
            .header("content-type", "application/json")
            .body(body.to_owned());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.post_raw(path, &body.to_string(), &[("x-requested-with", "tresor")])
            .await
    }

    /// PUTs `body` as JSON with the CSRF header.
    pub async fn put_json(&self, path: &str, body: Value) -> (StatusCode, Value) {
        let response = self
            .client
            .put(format!("{}{path}", self.address))
            .header("x-requested-with", "tresor")
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    pub async fn register(&self, username: &str) -> (StatusCode, Value) {
        self.post(
            "/api/register",
            json!({"username": username, "password": "a long password", "adult": true, "accept_rules": true}),
        )
        .await
    }

    pub async fn login(&self, username: &str, password: &str) -> (StatusCode, Value) {
        self.post(
            "/api/login",
            json!({"username": username, "password": password}),
        )
        .await
    }

    pub async fn logout(&self) -> (StatusCode, Value) {
        self.post("/api/logout", json!({})).await
    }

    pub async fn me(&self) -> (StatusCode, Value) {
        self.get("/api/me").await
    }

    pub async fn balance(&self) -> i64 {
        let (status, me) = self.me().await;
        assert_eq!(status, StatusCode::OK, "{me}");
        me["balance_cents"].as_i64().unwrap()
    }

    pub async fn deposit(&self, amount_cents: i64) -> (StatusCode, Value) {
        self.post("/api/demo/deposit", json!({"amount_cents": amount_cents}))
            .await
    }

    /// Registers `username` and deposits `cents`.
    pub async fn player(&self, username: &str, cents: i64) {
        let (status, body) = self.register(username).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        if cents > 0 {
            let (status, body) = self.deposit(cents).await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }
    }

    pub async fn buy_with_key(&self, stake_cents: i64, key: &str) -> (StatusCode, Value) {
        self.post_raw(
            "/api/plays",
            &json!({"stake_cents": stake_cents}).to_string(),
            &[("x-requested-with", "tresor"), ("idempotency-key", key)],
        )
        .await
    }

    pub async fn buy(&self, stake_cents: i64) -> (StatusCode, Value) {
        let key = hex::encode(&tresor::service::os_random_32()[..12]);
        self.buy_with_key(stake_cents, &key).await
    }

    pub async fn throw(&self, play_id: i64) -> (StatusCode, Value) {
        self.post(&format!("/api/plays/{play_id}/throws"), json!({}))
            .await
    }

    /// Plays the four throws of a play and returns the finished play.
    pub async fn finish(&self, play_id: i64) -> Value {
        let mut last = Value::Null;
        for _ in 0..4 {
            let (status, play) = self.throw(play_id).await;
            assert_eq!(status, StatusCode::OK, "{play}");
            last = play;
        }
        last
    }

    pub async fn play(&self, play_id: i64) -> (StatusCode, Value) {
        self.get(&format!("/api/plays/{play_id}")).await
    }

    /// The status of `GET /api/plays/{id}`, whatever `id` is.
    pub async fn play_raw(&self, id: &str) -> StatusCode {
        self.get(&format!("/api/plays/{id}")).await.0
    }

    pub async fn history(&self, query: &str) -> (StatusCode, Value) {
        self.get(&format!("/api/plays{query}")).await
    }

    /// Checks the ledger: balances sum to zero, every balance equals its
    /// transfers, no player balance is negative, and each player's balance is
    /// deposits − stakes + prizes. Returns the number of transfers.
    pub async fn assert_ledger_balances(&self) -> i64 {
        assert_ledger_balances(&self.service.db).await
    }
}

/// Runs a test body on a [`TestApp`] on SQLite and on PostgreSQL, as
/// `name::on_sqlite` and `name::on_postgres`; the server has
/// [`TestApp::spawn`]'s settings, or the ones given before the body.
#[macro_export]
macro_rules! on_both {
    ($name:ident, |$app:ident| $body:block) => {
        $crate::on_both!($name, $crate::common::TestApp::settings(), |$app| $body);
    };
    ($name:ident, $settings:expr, |$app:ident| $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            async fn run($app: $crate::common::TestApp) $body

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn on_sqlite() {
                if let Some(app) =
                    $crate::common::TestApp::spawn_with(::tresor::store::Backend::Sqlite, $settings)
                        .await
                {
                    run(app).await;
                }
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn on_postgres() {
                if let Some(app) =
                    $crate::common::TestApp::spawn_with(::tresor::store::Backend::Postgres, $settings)
                        .await
                {
                    run(app).await;
                }
            }
        }
    };
}

// ---- The real `tresor serve` process ----

/// A TCP port free on 127.0.0.1 when asked.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind a free port")
        .local_addr()
        .expect("a local address")
        .port()
}

/// Flags that lift the per-player and per-address throttles, for those this
/// binary has: every simulated player comes from 127.0.0.1.
pub fn unthrottled_flags() -> Vec<String> {
    tresor::cli::bench::unthrottled(std::path::Path::new(env!("CARGO_BIN_EXE_tresor")))
}

/// A real `tresor serve --demo` process, killed when dropped (pass or fail).
#[derive(Debug)]
pub struct Server {
    /// `http://127.0.0.1:{port}`.
    pub base: String,
    child: Child,
}

impl Server {
    /// Starts `tresor serve --demo` on `db` at 127.0.0.1:`port` with the
    /// `extra` flags, and waits until it answers `/healthz`.
    pub async fn start(db: &TestDb, port: u16, extra: &[String]) -> Server {
        let child = Command::new(env!("CARGO_BIN_EXE_tresor"))
            .args(["serve", "--demo", "--listen", &format!("127.0.0.1:{port}")])
            .args(db.db_args())
            .args(extra)
            .env_remove("TRESOR_DATA")
            .env_remove("TRESOR_DATABASE_URL")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .expect("start tresor serve");
        let server = Server {
            base: format!("http://127.0.0.1:{port}"),
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

/// A client for a [`Server`] with a cookie jar of its own (one player).
pub fn cookie_client() -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .timeout(Duration::from_secs(30))
        .build()
        .expect("an HTTP client")
}

/// POSTs `body` as JSON with the CSRF header and, if given, an idempotency
/// key. The status and the JSON answer, or `None` when no JSON answer came
/// (the server was killed, say).
pub async fn post(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
    idempotency_key: Option<&str>,
) -> Option<(u16, Value)> {
    let mut request = client
        .post(url)
        .header("x-requested-with", "tresor")
        .json(body);
    if let Some(key) = idempotency_key {
        request = request.header("idempotency-key", key);
    }
    let response = request.send().await.ok()?;
    let status = response.status().as_u16();
    Some((status, response.json().await.ok()?))
}

/// GETs `url` and parses its JSON answer.
pub async fn get_json(client: &reqwest::Client, url: &str) -> Value {
    client
        .get(url)
        .send()
        .await
        .expect("the server answers")
        .json()
        .await
        .expect("a JSON answer")
}

/// Registers `username` on the server at `base` as `client`'s player, with
/// high 7-day caps, and deposits `cents`.
pub async fn register_and_deposit(
    client: &reqwest::Client,
    base: &str,
    username: &str,
    cents: i64,
) {
    let body = json!({
        "username": username, "password": "a long password", "adult": true, "accept_rules": true,
        "deposit_limit_cents": 1_000_000, "stake_limit_cents": 1_000_000,
    });
    let (status, body) = post(client, &format!("{base}/api/register"), &body, None)
        .await
        .expect("the server answers the registration");
    assert_eq!(status, 201, "{body}");
    let deposit = json!({ "amount_cents": cents });
    let (status, body) = post(client, &format!("{base}/api/demo/deposit"), &deposit, None)
        .await
        .expect("the server answers the deposit");
    assert_eq!(status, 200, "{body}");
}
