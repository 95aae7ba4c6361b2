//! The console, as its accounts reach it: the one client of the console API
//! ([`Console`]: a cookie jar on the operator listener, the console's CSRF
//! header on every write), accounts added through the service
//! ([`logged_in`], at the app's clock) or by the command line
//! ([`add_operator`], `tresor operator add` with the password on stdin, then
//! [`Console::enrolled_at`] at the real clock a `tresor serve` reads), and
//! the TOTP codes an authenticator app would show.

use super::app::answer;
use super::{TestApp, TestDb, cookie_client, describe, expect, now_ms, tresor_command};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::io::Write;
use std::process::{Output, Stdio};
use tresor::staff::{Role, StaffName, totp_code};

/// The console accounts' password in these tests.
pub const CONSOLE_PASSWORD: &str = "a console password";

/// RFC 4648 base32 without padding, decoded (spaces, as a screen groups
/// the digits, skipped).
pub fn base32_decode(text: &str) -> Vec<u8> {
    const ALPHABET: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let (mut buffer, mut bits, mut out) = (0u32, 0u32, Vec::new());
    for c in text.trim().chars().filter(|c| *c != ' ') {
        buffer = (buffer << 5) | ALPHABET.find(c).expect("a base32 digit") as u32;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
        }
    }
    out
}

/// The code an authenticator app shows now, at the real clock, for
/// `secret` as the enrolment screen shows it (base32).
pub fn code_now(secret: &str) -> String {
    totp_code(&base32_decode(secret), now_ms() / 1000)
}

/// The app's clock, in seconds (what its TOTP codes are computed at).
pub fn now_s(app: &TestApp) -> i64 {
    app.service.now_ms() / 1000
}

/// `tresor operator add ARGS --password-stdin` on `db`, `password` written
/// on its stdin: the output, whatever it is.
pub fn operator_add(db: &TestDb, args: &[&str], password: &str) -> Output {
    let mut command = tresor_command();
    command
        .args(["operator", "add"])
        .args(args)
        .arg("--password-stdin")
        .args(db.db_args())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    db.env(&mut command);
    let mut child = command.spawn().unwrap();
    // A command refused by its flags exits before reading: no matter.
    let _ = writeln!(child.stdin.take().unwrap(), "{password}");
    child.wait_with_output().unwrap()
}

/// A console account `name` of `role` (`operator`, `viewer`…) with
/// [`CONSOLE_PASSWORD`], added by the command line, which must succeed.
pub fn add_operator(db: &TestDb, name: &str, role: &str) {
    let output = operator_add(db, &["--username", name, "--role", role], CONSOLE_PASSWORD);
    assert!(output.status.success(), "{}", describe(&output));
}

/// A console account `name` of `role` with [`CONSOLE_PASSWORD`], added
/// through the app's service.
pub async fn add_staff(app: &TestApp, name: &str, role: Role) {
    app.service
        .add_staff(&StaffName::parse(name).unwrap(), role, CONSOLE_PASSWORD)
        .await
        .unwrap();
}

/// A console account of `role` named `name`, added, enrolled and logged in
/// at the app's clock; its TOTP secret.
pub async fn logged_in(app: &TestApp, name: &str, role: Role) -> (Console, Vec<u8>) {
    add_staff(app, name, role).await;
    let console = Console::on(app);
    let secret = console.enrol(name, || now_s(app)).await;
    (console, secret)
}

/// An operator named `name`, added, enrolled and logged in at the app's
/// clock.
pub async fn console(app: &TestApp, name: &str) -> Console {
    logged_in(app, name, Role::Operator).await.0
}

/// A browser on the console: its own cookie jar, on the operator listener
/// at `base`; clones share the jar (one session).
#[derive(Clone, Debug)]
pub struct Console {
    pub base: String,
    pub client: reqwest::Client,
}

impl Console {
    /// A client with no session yet on the operator listener at `base`.
    pub fn at(base: &str) -> Console {
        Console {
            base: base.to_owned(),
            client: cookie_client(),
        }
    }

    /// [`Console::at`] the app's operator listener.
    pub fn on(app: &TestApp) -> Console {
        Console::at(&app.admin_address)
    }

    /// An account added by the command line ([`add_operator`]) enrols and
    /// logs in at `base`, at the real clock a `tresor serve` reads: its
    /// session is every server's of the database (cookies go by host).
    pub async fn enrolled_at(base: &str, name: &str) -> Console {
        let console = Console::at(base);
        console.enrol(name, || now_ms() / 1000).await;
        console
    }

    /// This session on another server's operator listener at `base` (the
    /// cookie goes by host, not by port).
    pub fn with_base(&self, base: &str) -> Console {
        Console {
            base: base.to_owned(),
            client: self.client.clone(),
        }
    }

    /// GETs `path`: the status and the answer.
    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        answer(self.response(path).await).await
    }

    /// GETs `path`: the response itself (its headers, its stream).
    pub async fn response(&self, path: &str) -> reqwest::Response {
        let url = format!("{}{path}", self.base);
        self.client.get(url).send().await.unwrap()
    }

    /// GETs `path`, which must be answered 200 OK: the answer.
    pub async fn read(&self, path: &str) -> Value {
        let (status, body) = self.get(path).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
        body
    }

    /// `method path` with `body` as JSON, with the console's CSRF header
    /// when `csrf`: the status and the answer.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        csrf: bool,
    ) -> (StatusCode, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        if csrf {
            request = request.header("x-requested-with", "tresor-console");
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        answer(request.send().await.unwrap()).await
    }

    /// POSTs `body` to `path`: the status and the answer.
    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send("POST", path, Some(body), true).await
    }

    /// PUTs `body` to `path`: the status and the answer.
    pub async fn put(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send("PUT", path, Some(body), true).await
    }

    /// POSTs `body` to `path`, which must be answered 200 OK: the answer.
    pub async fn ok(&self, path: &str, body: Value) -> Value {
        let (status, answer) = self.post(path, body).await;
        assert_eq!(status, StatusCode::OK, "{path}: {answer}");
        answer
    }

    /// `action` on the console's `what` number `id` (`players`, 5,
    /// `credit`): POSTs `body` to `/console/api/{what}/{id}/{action}`.
    pub async fn act(
        &self,
        what: &str,
        id: impl std::fmt::Display,
        action: &str,
        body: Value,
    ) -> (StatusCode, Value) {
        self.post(&format!("/console/api/{what}/{id}/{action}"), body)
            .await
    }

    /// Credits `cents` to `player`'s account.
    pub async fn credit(&self, player: i64, cents: i64) -> (StatusCode, Value) {
        let body = json!({"amount_cents": cents});
        self.act("players", player, "credit", body).await
    }

    /// Verifies `player`'s account, its IBAN as reviewed (`iban`).
    pub async fn verify_account(&self, player: i64, iban: &str) -> (StatusCode, Value) {
        let body = json!({"iban": iban});
        self.act("players", player, "verify", body).await
    }

    /// Suspends `player`'s account (`suspend`) or lifts it (`unsuspend`),
    /// with `reason`.
    pub async fn suspension(&self, player: i64, action: &str, reason: &str) -> (StatusCode, Value) {
        let body = json!({"reason": reason});
        self.act("players", player, action, body).await
    }

    /// Verifies a document.
    pub async fn verify_document(&self, document: impl std::fmt::Display) -> (StatusCode, Value) {
        self.act("documents", document, "verify", json!({})).await
    }

    /// Refuses a document, with `reason`.
    pub async fn refuse_document(
        &self,
        document: impl std::fmt::Display,
        reason: &str,
    ) -> (StatusCode, Value) {
        let body = json!({"reason": reason});
        self.act("documents", document, "refuse", body).await
    }

    /// Approves (pays) a withdrawal.
    pub async fn approve(&self, withdrawal: i64) -> (StatusCode, Value) {
        self.act("withdrawals", withdrawal, "approve", json!({}))
            .await
    }

    /// Rejects a withdrawal, with `reason`.
    pub async fn reject(&self, withdrawal: i64, reason: &str) -> (StatusCode, Value) {
        let body = json!({"reason": reason});
        self.act("withdrawals", withdrawal, "reject", body).await
    }

    /// The login's password step.
    pub async fn login(&self, username: &str, password: &str) -> (StatusCode, Value) {
        let body = json!({"username": username, "password": password});
        self.post("/console/api/login", body).await
    }

    /// The login's code step.
    pub async fn code(&self, code: &str) -> (StatusCode, Value) {
        self.post("/console/api/login/code", json!({"code": code}))
            .await
    }

    /// `name`'s first login with [`CONSOLE_PASSWORD`]: the enrolment step,
    /// then the code for the secret it shows at `now_s()`; the secret.
    pub async fn enrol(&self, name: &str, now_s: impl Fn() -> i64) -> Vec<u8> {
        let body = expect(StatusCode::OK, self.login(name, CONSOLE_PASSWORD).await);
        assert_eq!(body["step"], "enrol", "{body}");
        let secret = base32_decode(body["secret"].as_str().expect("a secret to enrol"));
        expect(
            StatusCode::OK,
            self.code(&totp_code(&secret, now_s())).await,
        );
        secret
    }

    /// An enrolled account logs in on a client of its own at the app's
    /// clock (`password`, then the code of `secret`): the client, or the
    /// answer of the step that failed.
    pub async fn logs_in(
        app: &TestApp,
        name: &str,
        password: &str,
        secret: &[u8],
    ) -> Result<Console, (StatusCode, Value)> {
        let console = Console::on(app);
        let answer = console.login(name, password).await;
        if answer.0 != StatusCode::OK {
            return Err(answer);
        }
        let answer = console.code(&totp_code(secret, now_s(app))).await;
        if answer.0 != StatusCode::OK {
            return Err(answer);
        }
        Ok(console)
    }
}
