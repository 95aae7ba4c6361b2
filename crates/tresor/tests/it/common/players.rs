//! The one way a test makes a player: [`player`]`("ana")`, then what it
//! needs (7-day caps, an account for real money with an identity and an
//! IBAN, documents checked, the account verified, money), then where:
//!
//! ```ignore
//! let ana = player("ana").deposit(1_000).on(&app).await;          // demo mode, logged in
//! let sam = player("sam").verified().deposit(5_000).on(&app).await; // real money
//! player("bob").limits(50_000, 250).on(&app).await.me             // the registration's answer
//! player("carl").high_limits().deposit(10_000).at(&client, &server.base).await; // `tresor serve`
//! let cookie = player("alice").real_money().through(&api).await;  // the router in-process
//! let dan = player("dan").in_service(&service).await;             // straight on the service
//! ```
//!
//! A demo player registers (`/api/register`) and gets demo money; a player
//! for real money opens an account (`/api/account/open`, a person born 30
//! years before the app's clock, the [`IBAN`], an e-mail address) and its
//! money comes from the provider, confirmed by its signed webhook.

use super::opening::{IBAN, PASSWORD, deposit as provider_deposit, documents_verified};
use super::{Api, TestApp, client, header, now_ms};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tresor::service::{Registration, Service};

/// A player to make, named `username`: a demo player, the default caps, no
/// money, until said otherwise.
pub fn player(username: &str) -> NewPlayer {
    NewPlayer {
        username: username.to_owned(),
        limits: None,
        real_money: false,
        birth_name: None,
        first_names: "Anne Marie".to_owned(),
        birth_date: None,
        email: None,
        deposit_cents: 0,
        checked: Checked::No,
    }
}

/// What the console checked of the account before the test begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Checked {
    No,
    /// The identity document and the proof of IBAN sent and verified.
    Documents,
    /// That, and the account verified with its IBAN (by `vera`).
    Account,
}

/// A player not made yet: [`player`] and what it needs.
#[derive(Debug, Clone)]
pub struct NewPlayer {
    username: String,
    /// The 7-day deposit and stake caps, in cents (the defaults if none).
    limits: Option<(i64, i64)>,
    real_money: bool,
    birth_name: Option<String>,
    first_names: String,
    birth_date: Option<String>,
    email: Option<String>,
    deposit_cents: i64,
    checked: Checked,
}

/// A player made on a [`TestApp`]: the app as its client (logged in; the
/// same cookie jar as the app it was made on), its id and the answer of its
/// registration.
#[derive(Clone)]
pub struct Player {
    pub app: TestApp,
    pub id: i64,
    pub username: String,
    /// The player as the service knows it (for the service's own calls).
    pub service_player: tresor::service::Player,
    /// The answer of `/api/register` or `/api/account/open`.
    pub me: Value,
}

impl std::ops::Deref for Player {
    type Target = TestApp;

    fn deref(&self) -> &TestApp {
        &self.app
    }
}

impl NewPlayer {
    /// 7-day caps of `deposit_cents` and `stake_cents`.
    pub fn limits(mut self, deposit_cents: i64, stake_cents: i64) -> Self {
        self.limits = Some((deposit_cents, stake_cents));
        self
    }

    /// Caps high enough for any test's sums (10,000 €).
    pub fn high_limits(self) -> Self {
        self.limits(1_000_000, 1_000_000)
    }

    /// An account for real money: an identity, an IBAN, an e-mail address,
    /// high caps unless given.
    pub fn real_money(mut self) -> Self {
        self.real_money = true;
        self.limits = self.limits.or(Some((1_000_000, 1_000_000)));
        self
    }

    /// The identity's birth name (`Name of {username}` otherwise).
    pub fn birth_name(mut self, birth_name: &str) -> Self {
        self.birth_name = Some(birth_name.to_owned());
        self.real_money()
    }

    /// The identity's first names (`Anne Marie` otherwise).
    pub fn first_names(mut self, first_names: &str) -> Self {
        self.first_names = first_names.to_owned();
        self.real_money()
    }

    /// The identity's birth date, `YYYY-MM-DD` (30 years before the app's
    /// clock otherwise).
    pub fn born(mut self, birth_date: &str) -> Self {
        self.birth_date = Some(birth_date.to_owned());
        self.real_money()
    }

    /// The identity's e-mail address (`{username}@example.org` otherwise).
    pub fn email(mut self, email: &str) -> Self {
        self.email = Some(email.to_owned());
        self.real_money()
    }

    /// `cents` on the account once made: demo money for a demo player, a
    /// provider's deposit confirmed by its webhook for real money.
    pub fn deposit(mut self, cents: i64) -> Self {
        self.deposit_cents = cents;
        self
    }

    /// An account for real money whose identity document and proof of
    /// IBAN were sent and verified by a console account (`staff:docs`).
    pub fn documents(mut self) -> Self {
        self.checked = self.checked.max(Checked::Documents);
        self.real_money()
    }

    /// [`NewPlayer::documents`], and the account verified with its IBAN by
    /// an operator (`vera`; the command line approves withdrawals, four eyes).
    pub fn verified(mut self) -> Self {
        self.checked = Checked::Account;
        self.real_money()
    }

    /// Where its registration goes.
    pub fn path(&self) -> &'static str {
        if self.real_money {
            "/api/account/open"
        } else {
            "/api/register"
        }
    }

    /// The body of its registration, a birth date counted from `now_ms`.
    pub fn body_at(&self, now_ms: i64) -> Value {
        let mut body = json!({
            "username": self.username, "password": PASSWORD, "accept_rules": true,
        });
        if let Some((deposit, stake)) = self.limits {
            body["deposit_limit_cents"] = json!(deposit);
            body["stake_limit_cents"] = json!(stake);
        }
        if !self.real_money {
            body["adult"] = json!(true);
            return body;
        }
        let born = self
            .birth_date
            .clone()
            .unwrap_or_else(|| born_years_ago(now_ms, 30));
        body["marketing_consent"] = json!(false);
        body["iban"] = json!(IBAN);
        body["identity"] = json!({
            "birth_name": self.birth_name.clone().unwrap_or_else(|| format!("Name of {}", self.username)),
            "first_names": self.first_names,
            "birth_date": born,
            "birth_place": "Nantes",
            "address": "1 rue de la Paix, 75002 Paris",
            "email": self.email.clone().unwrap_or_else(|| format!("{}@example.org", self.username)),
        });
        body
    }

    /// The body of its registration on `app` (born by the app's clock).
    pub fn body(&self, app: &TestApp) -> Value {
        self.body_at(app.service.now_ms())
    }

    /// Sends its registration as `app`'s client; the answer, whatever it is
    /// (nothing else done: for the tests of a refusal).
    pub async fn register(&self, app: &TestApp) -> (StatusCode, Value) {
        app.post(self.path(), self.body(app)).await
    }

    /// Makes the player on `app`, as `app`'s client (logged in after), with
    /// all it was given; each step must succeed.
    pub async fn on(self, app: &TestApp) -> Player {
        let (status, me) = self.register(app).await;
        assert_eq!(status, StatusCode::CREATED, "{me}");
        let found = match self.checked {
            Checked::No => app
                .service
                .player_by_username(&self.username)
                .await
                .unwrap(),
            Checked::Documents => {
                documents_verified(&app.service, &self.username).await;
                app.service
                    .player_by_username(&self.username)
                    .await
                    .unwrap()
            }
            Checked::Account => verify_account(app, &self.username).await,
        };
        if self.deposit_cents > 0 {
            if self.real_money {
                provider_deposit(app, self.deposit_cents).await;
            } else {
                let (status, body) = app.deposit(self.deposit_cents).await;
                assert_eq!(status, StatusCode::OK, "{body}");
            }
        }
        Player {
            app: app.clone(),
            id: found.id,
            username: self.username,
            me,
            service_player: found,
        }
    }

    /// Makes the demo player on the `tresor serve` at `base` as `client`'s
    /// player (its cookie jar logged in), with demo money; the answer of
    /// its registration.
    pub async fn at(self, client: &reqwest::Client, base: &str) -> Value {
        assert!(
            !self.real_money,
            "a player for real money is made on a TestApp"
        );
        let url = format!("{base}{}", self.path());
        let (status, me) = client::post(client, &url, &self.body_at(now_ms()), None)
            .await
            .expect("the server answers the registration");
        assert_eq!(status, 201, "{me}");
        if self.deposit_cents > 0 {
            let deposit = json!({ "amount_cents": self.deposit_cents });
            let (status, body) =
                client::post(client, &format!("{base}/api/demo/deposit"), &deposit, None)
                    .await
                    .expect("the server answers the deposit");
            assert_eq!(status, 200, "{body}");
        }
        me
    }

    /// Makes the player through the router in-process (`api`); its session
    /// cookie. Outside demo mode a player opens an account for real money.
    pub async fn through(self, api: &Api) -> String {
        assert_eq!(self.deposit_cents, 0, "no money through the router alone");
        let answer = api
            .call(
                "POST",
                self.path(),
                Some(self.body_at(now_ms())),
                None,
                None,
            )
            .await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text);
        answer.cookie.expect("a session cookie")
    }

    /// Registers the demo player straight on `service` (no HTTP, no
    /// session), with the highest caps unless given.
    pub async fn in_service(self, service: &Service) -> tresor::service::Player {
        assert!(
            !self.real_money && self.deposit_cents == 0,
            "the service alone makes a bare demo player"
        );
        let limits = match self.limits {
            None => tresor::protect::Limits::highest(),
            Some((deposit, stake)) => {
                tresor::protect::Limits::parse(Some(deposit), Some(stake)).expect("caps in range")
            }
        };
        let registration = Registration::parse(&self.username, PASSWORD, true, true)
            .expect("a valid registration")
            .with_limits(limits);
        service.register(registration).await.expect("register")
    }
}

/// The account for real money of `username` verified as the console does
/// it: its identity document and proof of IBAN sent and verified, then the
/// account verified with the [`IBAN`] by an operator (`vera`). The player.
pub async fn verify_account(app: &TestApp, username: &str) -> tresor::service::Player {
    documents_verified(&app.service, username).await;
    let found = app.service.player_by_username(username).await.unwrap();
    let iban = tresor::account::Iban::parse(IBAN).unwrap();
    app.service
        .verify_account_as(tresor::trail::Actor::staff("vera"), &found, &iban)
        .await
        .expect("the account verified");
    found
}

/// `username` logs in with [`PASSWORD`] on a client of its own, without a
/// cookie jar: the session's cookie (`name=value`), for requests made by hand.
pub async fn session_cookie(app: &TestApp, username: &str) -> String {
    let response = log_in(&reqwest::Client::new(), app, username).await;
    let cookie = header(&response, "set-cookie");
    cookie.split(';').next().unwrap().to_owned()
}

/// A browser of its own (a bare client with a cookie jar, to read an
/// answer's headers) logged in as `username` with [`PASSWORD`].
pub async fn logged_in(app: &TestApp, username: &str) -> reqwest::Client {
    let client = client::cookie_client();
    log_in(&client, app, username).await;
    client
}

/// `username` logs in with [`PASSWORD`] as `client`, which must succeed.
async fn log_in(client: &reqwest::Client, app: &TestApp, username: &str) -> reqwest::Response {
    let response = client
        .post(format!("{}/api/login", app.address))
        .header("x-requested-with", "tresor")
        .json(&json!({"username": username, "password": PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    response
}

/// A birth date `years` years before `now_ms` (a day more, to be sure).
pub fn born_years_ago(now_ms: i64, years: i32) -> String {
    let now = time::OffsetDateTime::from_unix_timestamp(now_ms / 1000).unwrap();
    let date = now
        .date()
        .replace_year(now.year() - years)
        .unwrap()
        .previous_day()
        .unwrap();
    format!("{date}")
}
