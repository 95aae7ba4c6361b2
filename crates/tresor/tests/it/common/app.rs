//! A real HTTP server in-process on a test's database, over a socket, with
//! a cookie jar: one method per endpoint.

use super::api::router;
use super::ledger::assert_ledger_balances;
use super::{TestDb, now_ms};
use axum::http::StatusCode;
use serde_json::{Value, json};
use std::sync::Arc;
use tresor::service::{ManualClock, Service, Settings};
use tresor::store::Backend;
use tresor_game::Stake;

/// A running server on its own database. A clone is the same client (its
/// cookie jar shared); [`TestApp::another_client`] is another one.
#[derive(Clone)]
pub struct TestApp {
    pub address: String,
    /// The operator's listener (`/metrics`).
    pub admin_address: String,
    pub service: Service,
    pub clock: Arc<ManualClock>,
    /// Shared with [`TestApp::another_client`]'s copies; dropped with the last.
    pub db: Arc<TestDb>,
    /// The mail outbox (`.eml` files), a folder of its own unless the
    /// settings named a mailer.
    pub outbox: Option<Arc<tempfile::TempDir>>,
    client: reqwest::Client,
}

impl TestApp {
    /// A server with an open emission of one block per stake, in demo mode.
    pub async fn spawn(backend: Backend) -> Option<TestApp> {
        Self::spawn_with(backend, Self::settings()).await
    }

    /// [`TestApp::spawn`]'s settings: the defaults, unthrottled, passwords
    /// hashed at argon2's least cost. Every test player comes from one
    /// address, some as fast as they can: the throttles have tests of their
    /// own (tests/it/protect.rs), and so do logins at the standard cost
    /// (`protect::logins`).
    pub fn settings() -> Settings {
        Settings {
            rate_limits: tresor::protect::RateLimits::unthrottled(),
            password_cost: tresor::service::PasswordCost::Least,
            ..Settings::default()
        }
    }

    pub async fn spawn_with(backend: Backend, settings: Settings) -> Option<TestApp> {
        Some(Self::on(Arc::new(TestDb::new(backend).await?), settings).await)
    }

    /// A server on `db` with `settings`, as [`TestApp::spawn`] describes.
    pub async fn on(db: Arc<TestDb>, mut settings: Settings) -> TestApp {
        let clock = Arc::new(ManualClock::new(now_ms()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = format!("http://{}", listener.local_addr().unwrap());
        let mut outbox = None;
        if settings.mail.is_none() {
            let dir = tempfile::tempdir().expect("a temporary folder");
            settings.mail = Some(
                tresor::mail::Mailer::outbox(dir.path(), "Tresor <no-reply@tresor.test>", &address)
                    .unwrap(),
            );
            outbox = Some(Arc::new(dir));
        }
        let service = Service::new(db.connect().await, clock.clone(), settings);
        service.open_secrets().await.unwrap();
        demo_on_sale(&service, "Test").await;
        let state = super::api::state(&service);
        let app = tresor::http::app(state.clone())
            .into_make_service_with_connect_info::<std::net::SocketAddr>();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let admin_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let admin_address = format!("http://{}", admin_listener.local_addr().unwrap());
        let admin = tresor::http::admin_app(state);
        tokio::spawn(async move { axum::serve(admin_listener, admin).await.unwrap() });
        TestApp {
            address,
            admin_address,
            service,
            clock,
            db,
            outbox,
            client: Self::new_client(None),
        }
    }

    fn new_client(user_agent: Option<&str>) -> reqwest::Client {
        let builder = reqwest::Client::builder().cookie_store(true);
        match user_agent {
            Some(user_agent) => builder.user_agent(user_agent),
            None => builder,
        }
        .build()
        .unwrap()
    }

    /// The same server seen by another browser (its own cookie jar).
    pub fn another_client(&self) -> TestApp {
        TestApp {
            client: Self::new_client(None),
            ..self.clone()
        }
    }

    /// The same server seen by another browser that names itself
    /// `user_agent` (its own cookie jar).
    pub fn another_browser(&self, user_agent: &str) -> TestApp {
        TestApp {
            client: Self::new_client(Some(user_agent)),
            ..self.clone()
        }
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.get_from(&self.address, path).await
    }

    /// `GET path` on the operator's listener.
    pub async fn admin_get(&self, path: &str) -> (StatusCode, Value) {
        self.get_from(&self.admin_address, path).await
    }

    async fn get_from(&self, base: &str, path: &str) -> (StatusCode, Value) {
        let response = self
            .client
            .get(format!("{base}{path}"))
            .send()
            .await
            .unwrap();
        answer(response).await
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
        answer(request.send().await.unwrap()).await
    }

    /// POSTs `body` as raw bytes with `headers` (no CSRF header unless given).
    pub async fn post_bytes(
        &self,
        path: &str,
        body: Vec<u8>,
        headers: &[(&str, &str)],
    ) -> (StatusCode, Value) {
        let mut request = self
            .client
            .post(format!("{}{path}", self.address))
            .body(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        answer(request.send().await.unwrap()).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.post_raw(path, &body.to_string(), &[("x-requested-with", "tresor")])
            .await
    }

    /// Sends `bytes` as this client's document of `kind` named `name`, as
    /// the page does (the file is the body; the Content-Type says nothing
    /// the server trusts).
    pub async fn upload(&self, kind: &str, name: &str, bytes: &[u8]) -> (StatusCode, Value) {
        let request = self
            .client
            .post(format!("{}/api/account/documents", self.address))
            .query(&[("kind", kind), ("name", name)])
            .header("x-requested-with", "tresor")
            .header("content-type", "image/jpeg")
            .body(bytes.to_vec());
        answer(request.send().await.unwrap()).await
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
        answer(response).await
    }

    /// Registers the demo player `username` (the default caps) as this
    /// client: [`super::players::player`]'s answer, whatever it is.
    pub async fn register(&self, username: &str) -> (StatusCode, Value) {
        super::players::player(username).register(self).await
    }

    pub async fn login(&self, username: &str, password: &str) -> (StatusCode, Value) {
        self.post(
            "/api/login",
            json!({"username": username, "password": password}),
        )
        .await
    }

    /// The player changes its password (`current`, then `new`).
    pub async fn change_password(&self, current: &str, new: &str) -> (StatusCode, Value) {
        let body = json!({"current_password": current, "new_password": new});
        self.post("/api/account/password", body).await
    }

    /// The player changes its e-mail address, with its password.
    pub async fn change_email(&self, email: &str, current: &str) -> (StatusCode, Value) {
        let body = json!({"email": email, "current_password": current});
        self.put_json("/api/account/email", body).await
    }

    /// Asks a password reset for the account of `email`.
    pub async fn ask_reset(&self, email: &str) -> (StatusCode, Value) {
        self.post("/api/password/reset", json!({"email": email}))
            .await
    }

    /// Sets `new` as the password with the reset link's `token`.
    pub async fn reset_password(&self, token: &str, new: &str) -> (StatusCode, Value) {
        let body = json!({"token": token, "new_password": new});
        self.post("/api/password/reset/confirm", body).await
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

    /// Asks a deposit of `cents` through the provider: the answer, whatever
    /// it is.
    pub async fn ask_deposit(&self, cents: i64) -> (StatusCode, Value) {
        self.post("/api/account/deposits", json!({"amount_cents": cents}))
            .await
    }

    /// Asks a withdrawal of `cents`: the answer, whatever it is.
    pub async fn ask_withdrawal(&self, cents: i64) -> (StatusCode, Value) {
        self.post("/api/account/withdrawals", json!({"amount_cents": cents}))
            .await
    }

    /// Registers the demo player `username` as this client and deposits
    /// `cents` (the short form of [`super::players::player`]).
    pub async fn player(&self, username: &str, cents: i64) -> super::players::Player {
        super::players::player(username)
            .deposit(cents)
            .on(self)
            .await
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

/// The body of `answer`, whose status must be `status` (the body said if
/// not): `let play = expect(StatusCode::CREATED, app.buy(100).await);`.
#[track_caller]
pub fn expect(status: StatusCode, answer: (StatusCode, Value)) -> Value {
    assert_eq!(answer.0, status, "{}", answer.1);
    answer.1
}

/// An answer's status and its body as JSON (or as a string when it is not).
pub async fn answer(response: reqwest::Response) -> (StatusCode, Value) {
    let status = response.status();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// Puts `service` in demo mode with one block of every stake on sale, of
/// the emission `name`.
pub async fn demo_on_sale(service: &Service, name: &str) {
    service.set_demo().await.unwrap();
    service.create_emission(name, &Stake::ALL, 1).await.unwrap();
}
