//! Control characters refused at the edge (issue 42, finding 10): a NUL
//! (or any C0, DEL, C1 character) in a path segment (percent-decoded) is
//! not found, in a query string or a JSON string (nested, a key) refused
//! 422 `control_character`, once for every route of both listeners and
//! before any handler or query runs. On today's PostgreSQL each of these
//! reached a statement: 500 `internal` and an ERROR line, and the reset's
//! NUL failed the writer's whole batch, run again request by request.
//! Each reproduction runs on both databases, in process (the writer's
//! counters seen) and against the real `tresor serve` (its log read).

use crate::common::metrics;
use crate::common::staff::{Console, add_operator, console};
use crate::common::{Harness, Server, cookie_client, tresor_command};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;

/// Which listener a request goes to.
#[derive(Debug, Clone, Copy)]
enum On {
    Players,
    Operator,
}

/// One request that must be refused: its method, listener, path and JSON
/// body, and the status and code expected.
type Refused = (
    &'static str,
    On,
    &'static str,
    Option<&'static str>,
    u16,
    &'static str,
);

const CONTROL: &str = "control_character";
const NOT_FOUND: &str = "not_found";

/// The review's reproductions, and their cousins (C1, DEL, nested strings,
/// another route's query, the console's body).
const REPRODUCTIONS: &[Refused] = &[
    (
        "GET",
        On::Players,
        "/log/%00/checkpoint",
        None,
        404,
        NOT_FOUND,
    ),
    (
        "GET",
        On::Players,
        "/log/a%00/cosigned",
        None,
        404,
        NOT_FOUND,
    ),
    (
        "GET",
        On::Players,
        "/log/a%00/tile/0/000",
        None,
        404,
        NOT_FOUND,
    ),
    (
        "GET",
        On::Players,
        "/log/a%C2%85/checkpoint",
        None,
        404,
        NOT_FOUND,
    ),
    ("GET", On::Players, "/api/plays/1%7F", None, 404, NOT_FOUND),
    (
        "POST",
        On::Players,
        "/log/a%00/cosignature",
        Some(r#"{"size":1,"cosignature":"x"}"#),
        404,
        NOT_FOUND,
    ),
    (
        "POST",
        On::Players,
        "/log/server/cosignature",
        Some(r#"{"size":1,"cosignature":"\u0000 w"}"#),
        422,
        CONTROL,
    ),
    (
        "POST",
        On::Players,
        "/api/login",
        Some(r#"{"username":"ann\u0000","password":"a long password"}"#),
        422,
        CONTROL,
    ),
    (
        "POST",
        On::Players,
        "/api/password/reset",
        Some(r#"{"email":"ann\u0000@example.org"}"#),
        422,
        CONTROL,
    ),
    (
        "POST",
        On::Players,
        "/api/register",
        Some(r#"{"username":"ann","password":"a password\u0085","adult":true}"#),
        422,
        CONTROL,
    ),
    (
        "GET",
        On::Players,
        "/api/plays?cursor=%01",
        None,
        422,
        CONTROL,
    ),
    (
        "GET",
        On::Operator,
        "/console/api/players?q=%00",
        None,
        422,
        CONTROL,
    ),
    (
        "PUT",
        On::Operator,
        "/console/api/site/announcement",
        Some(r#"{"message":"closed\u001b[2J"}"#),
        422,
        CONTROL,
    ),
];

/// Sends each of [`REPRODUCTIONS`] (the operator's with `console`, logged
/// in) and checks its status and code.
async fn assert_refused(players: &str, console: &Console) {
    let anonymous = cookie_client();
    for &(method, on, path, body, expected, code) in REPRODUCTIONS {
        let (client, base, proof) = match on {
            On::Players => (&anonymous, players, "tresor"),
            On::Operator => (&console.client, console.base.as_str(), "tresor-console"),
        };
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let what = format!("{method} {path}");
        let mut request = client
            .request(method, format!("{base}{path}"))
            .header("x-requested-with", proof)
            .timeout(Duration::from_secs(30));
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        assert_eq!(status, expected, "{what}: {text}");
        assert_eq!(answer["error"]["code"], code, "{what}: {text}");
    }
}

on_both!(
    controls_are_refused_before_any_handler_and_reach_no_writer,
    |app| {
        app.player("ann", 1_000).await;
        let operator = console(&app, "olga").await;
        let stats = &app.service.writer.stats;
        let queued = stats.queued.get();
        assert_refused(&app.address, &operator).await;
        assert_eq!(
            stats.queued.get(),
            queued,
            "a refused request reached the writer"
        );

        // A reset with a NUL sent in the same moment as a purchase: the
        // purchase's batch is not failed (nor run again request by request).
        let other = app.another_client();
        let (reset, bought) = tokio::join!(
            other.post_raw(
                "/api/password/reset",
                r#"{"email":"ann\u0000@example.org"}"#,
                &[("x-requested-with", "tresor")],
            ),
            app.buy(100),
        );
        assert_eq!(reset.0.as_u16(), 422, "{}", reset.1);
        assert_eq!(reset.1["error"]["code"], CONTROL, "{}", reset.1);
        assert_eq!(bought.0.as_u16(), 201, "{}", bought.1);
        assert_eq!(stats.batch_retries.get(), 0, "a batch was run again");
        app.assert_ledger_balances().await;

        // Tab and line breaks are text (a ban list's CSV, a reason on several
        // lines): a JSON string may hold them.
        let (status, body) = app
            .post(
                "/api/login",
                json!({"username": "ann\t", "password": "a\nlong password"}),
            )
            .await;
        assert_ne!(body["error"]["code"], CONTROL, "{status}: {body}");
    }
);

/// A real `tresor serve --demo` (the harness's [`Server`]) whose log
/// (stderr, at `info`) is kept in a file, killed when dropped.
struct LoggedServer {
    log: tempfile::NamedTempFile,
    server: Server,
}

impl std::ops::Deref for LoggedServer {
    type Target = Server;

    fn deref(&self) -> &Server {
        &self.server
    }
}

impl LoggedServer {
    async fn start(h: &Harness) -> LoggedServer {
        let log = tempfile::NamedTempFile::new().unwrap();
        let mut command = tresor_command();
        command
            .env("TRESOR_WRITER", "server")
            // Its "serving" line shows that the log is read at all.
            .env("RUST_LOG", "info,sqlx=warn")
            .args(["serve", "--demo", "--listen", "127.0.0.1:0"])
            .args(["--admin-listen", "127.0.0.1:0"])
            .args(h.db_args())
            .stderr(log.reopen().unwrap());
        h.env(&mut command);
        let server = Server::spawn(command).await;
        LoggedServer { log, server }
    }

    fn logged(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap()
    }
}

/// `tresor operator add NAME --role operator`, then its console login at
/// the real clock: a client with its session.
async fn operator_of(h: &Harness, server: &LoggedServer, name: &str) -> Console {
    add_operator(h, name, "operator");
    Console::enrolled_at(&server.admin_base, name).await
}

on_both!(
    the_real_server_refuses_controls_and_logs_no_error,
    |h: &Harness| {
        let server = LoggedServer::start(h).await;
        let operator = operator_of(h, &server, "olga").await;
        assert_refused(&server.base, &operator).await;
        let retries = "tresor_writer_batch_retries_total";
        assert_eq!(metrics::read(&server.admin_base, retries).await, 0.0);
        let log = server.logged();
        assert!(log.contains("serving"), "{log}");
        assert!(!log.contains("ERROR"), "an ERROR line was logged:\n{log}");
    }
);
