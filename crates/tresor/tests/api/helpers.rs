//! `TestApp`: a real server on a fresh database (a SQLite file or a PostgreSQL
//! database of its own), driven over HTTP with one method per endpoint.

use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::Row;
use std::sync::Arc;
use tresor::http::AppState;
use tresor::metrics::Metrics;
use tresor::service::{ManualClock, Service, Settings};
use tresor::store::Db;
use tresor_game::Stake;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A fresh, empty database for one test; dropped (best effort) with it.
pub struct TestDb {
    pub url: String,
    _dir: Option<tempfile::TempDir>,
    pg_name: Option<String>,
}

pub fn postgres_base_url() -> String {
    std::env::var("TRESOR_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

impl TestDb {
    /// A new database, or `None` when PostgreSQL is not reachable and not
    /// required (`TRESOR_REQUIRE_POSTGRES=1` turns that into a failure).
    pub async fn new(backend: Backend) -> Option<TestDb> {
        match backend {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().expect("temp dir");
                let url = tresor::store::sqlite_url(dir.path());
                Some(TestDb {
                    url,
                    _dir: Some(dir),
                    pg_name: None,
                })
            }
            Backend::Postgres => {
                use sqlx::Connection;
                let base = postgres_base_url();
                let mut admin = match sqlx::PgConnection::connect(&base).await {
                    Ok(conn) => conn,
                    Err(error) => {
                        if std::env::var("TRESOR_REQUIRE_POSTGRES").as_deref() == Ok("1") {
                            panic!("PostgreSQL is required but unreachable at {base}: {error}");
                        }
                        eprintln!("skipped: PostgreSQL unreachable at {base}: {error}");
                        return None;
                    }
                };
                let name = format!(
                    "tresor_test_{}",
                    hex::encode(tresor::service::os_random_32())[..16].to_owned()
                );
                sqlx::query(&format!("CREATE DATABASE {name}"))
                    .execute(&mut admin)
                    .await
                    .expect("create database");
                let (prefix, _) = base.rsplit_once('/').expect("a database URL has a path");
                Some(TestDb {
                    url: format!("{prefix}/{name}"),
                    _dir: None,
                    pg_name: Some(name),
                })
            }
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Some(name) = self.pg_name.take() {
            // Dropped from a plain thread: the test's runtime may be gone.
            let base = postgres_base_url();
            let _ = std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .ok()?;
                runtime.block_on(async {
                    use sqlx::Connection;
                    let mut admin = sqlx::PgConnection::connect(&base).await.ok()?;
                    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .execute(&mut admin)
                        .await
                        .ok()
                })
            })
            .join();
        }
    }
}

/// A running server on its own database.
pub struct TestApp {
    pub address: String,
    pub service: Service,
    pub clock: Arc<ManualClock>,
    pub db: TestDb,
    client: reqwest::Client,
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

impl TestApp {
    /// A server with an open emission of one block per stake, in demo mode.
    pub async fn spawn(backend: Backend) -> Option<TestApp> {
        // Every test player comes from one address, some as fast as they can:
        // the throttles have tests of their own (tests/protect.rs).
        let rate_limits = tresor::protect::RateLimits::unthrottled();
        Self::spawn_with(
            backend,
            Settings {
                rate_limits,
                ..Settings::default()
            },
        )
        .await
    }

    pub async fn spawn_with(backend: Backend, settings: Settings) -> Option<TestApp> {
        let db = TestDb::new(backend).await?;
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
        let state = AppState {
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
            db: TestDb {
                url: self.db.url.clone(),
                _dir: None,
                pg_name: None,
            },
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
    // Per player: deposits − stakes + prizes, from plays and deposits independently.
    let players = sqlx::query(
        "SELECT p.id, a.balance_cents, \
           CAST(COALESCE((SELECT SUM(amount_cents) FROM transfers t WHERE t.credit_account_id = a.id AND t.kind = 'deposit'), 0) AS BIGINT) AS deposits, \
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

/// Runs a test body on SQLite and on PostgreSQL.
#[macro_export]
macro_rules! on_both {
    ($name:ident, |$app:ident| $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            async fn run($app: $crate::helpers::TestApp) $body

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn on_sqlite() {
                if let Some(app) = $crate::helpers::TestApp::spawn($crate::helpers::Backend::Sqlite).await {
                    run(app).await;
                }
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn on_postgres() {
                if let Some(app) = $crate::helpers::TestApp::spawn($crate::helpers::Backend::Postgres).await {
                    run(app).await;
                }
            }
        }
    };
}

impl TestApp {
    pub async fn play_raw(&self, id: &str) -> StatusCode {
        self.get(&format!("/api/plays/{id}")).await.0
    }
}
