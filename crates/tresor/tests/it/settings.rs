//! How `tresor` starts: plain `tresor` serves with `tresor serve`'s flags
//! and TRESOR_* settings; demo mode only for a new database that asks for it
//! (or plain `tresor` creating the default one), never switched on for an
//! existing database; one server per SQLite folder; the operator's listener
//! apart from the players', on loopback unless told otherwise.

use crate::common::{
    Server, TestDb, assert_exit, buy_at, cookie_client, describe, fetch_json, now_ms, post,
};
use serde_json::Value;
use serde_json::json;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A webhook secret of 32 bytes and a provider's page, as a real-money
/// server needs them.
const SECRET: &str = "8f3c2a71d94be6050a1f7c3e9d2b84f6a0c5e1d7b3f9284c6e0a5d1b7c3f9e2a";
const PAY_URL: &str = "https://pay.example/checkout?ref={deposit_id}";

/// Waits until `url` answers 200, or panics naming it.
async fn wait_for(url: &str) {
    crate::common::wait::answers(url, Duration::from_secs(60)).await;
}

async fn status(base: &str) -> Value {
    fetch_json(&format!("{base}/api/status")).await
}

/// `tresor` with no command, configured only by the environment.
async fn plain_tresor_by_environment(db: &TestDb) -> Server {
    let mut command = crate::common::tresor_command();
    db.env(&mut command);
    match db.data_dir() {
        Some(dir) => command.env("TRESOR_DATA", dir),
        None => command.env("TRESOR_DATABASE_URL", &db.url),
    };
    command
        .env("TRESOR_LISTEN", "127.0.0.1:0")
        .env("TRESOR_ADMIN_LISTEN", "127.0.0.1:0")
        .env("TRESOR_SESSION_IDLE_S", "120")
        // An outage budget within its range is taken.
        .env("TRESOR_OUTAGE_BUDGET_MS", "2000")
        // Real money needs the provider's page and a secret shared with it,
        // and mail said where it goes.
        .env("TRESOR_PAYMENT_WEBHOOK_SECRET", SECRET)
        .env("TRESOR_PAYMENT_PAY_URL", PAY_URL)
        .env("TRESOR_MAIL_OUTBOX", mail_outbox());
    Server::spawn(command).await
}

/// A private outbox folder of the test's own, kept for the test's life.
fn mail_outbox() -> std::path::PathBuf {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("outbox");
    std::mem::forget(dir);
    path
}

async fn plain_tresor_serves_with_the_settings_of_tresor_serve(db: &TestDb) {
    let server = plain_tresor_by_environment(db).await;
    let base = server.base.clone();
    wait_for(&format!("{}/metrics", server.admin_base)).await;
    // A database that is not the default one is not created in demo mode.
    assert_eq!(status(&base).await["demo"], false);

    // TRESOR_SESSION_IDLE_S=120: a session unused for 110 s still holds
    // (so does one under the default 30 minutes), one unused for 121 s has
    // ended (under the default it would hold). The session is aged in the
    // database rather than by waiting.
    let player = cookie_client();
    // Not a demo database: an account is opened with an identity.
    let opening = json!({
        "username": "ana", "password": "a long password", "accept_rules": true,
        "iban": "FR7630006000011234567890189",
        "identity": {"birth_name": "Martin", "first_names": "Ana", "birth_date": "1990-02-03",
                     "birth_place": "Lyon", "address": "2 rue du Port, Lyon"},
    });
    let (code, body) = post(&player, &format!("{base}/api/account/open"), &opening, None)
        .await
        .expect("the server answers the registration");
    assert_eq!(code, 201, "{body}");
    let store = db.connect().await;
    let age = |seconds: i64| {
        let pool = store.pool.clone();
        async move {
            let aged = sqlx::query("UPDATE sessions SET last_seen_at_ms = $1")
                .bind(now_ms() - seconds * 1000)
                .execute(&pool)
                .await
                .expect("age the session");
            assert_eq!(aged.rows_affected(), 1, "one session");
        }
    };
    age(110).await;
    let me = player.get(format!("{base}/api/me")).send().await.unwrap();
    assert_eq!(me.status(), 200, "a session unused for 110 s still holds");
    age(121).await;
    let me = player.get(format!("{base}/api/me")).send().await.unwrap();
    assert_eq!(me.status(), 401, "a session unused for 121 s has ended");
    let error: Value = me.json().await.unwrap();
    assert_eq!(error["error"]["reason"], "session_idle", "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("after 2 minutes without activity"),
        "{error}"
    );
    the_outage_budget_is_observed(db, &store, &player, &base).await;
    store.pool.close().await;
}

/// TRESOR_OUTAGE_BUDGET_MS=2000, observed: with the database held by
/// another (a transaction that holds SQLite's write lock, or PostgreSQL's
/// sessions table, which the purchase's session check reads), a purchase
/// is answered 503 `unavailable` at 2 s, not at the default's 5 s and not
/// at once.
async fn the_outage_budget_is_observed(
    db: &TestDb,
    store: &tresor::store::Db,
    player: &reqwest::Client,
    base: &str,
) {
    let (code, body) = post(
        player,
        &format!("{base}/api/login"),
        &json!({"username": "ana", "password": "a long password"}),
        None,
    )
    .await
    .expect("the server answers the login");
    assert_eq!(code, 200, "{body}");
    let mut holder = store.pool.acquire().await.unwrap();
    let hold: &[&str] = match db.backend {
        tresor::store::Backend::Sqlite => &["BEGIN IMMEDIATE"],
        tresor::store::Backend::Postgres => {
            &["BEGIN", "LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE"]
        }
    };
    for statement in hold {
        sqlx::query(statement).execute(&mut *holder).await.unwrap();
    }
    let asked = Instant::now();
    let answer = buy_at(player, base, 100, "held-by-another").await;
    let took = asked.elapsed();
    sqlx::query("ROLLBACK").execute(&mut *holder).await.unwrap();
    let (code, body) = answer.expect("an answer");
    assert_eq!(
        (code, body["error"]["code"].as_str()),
        (503, Some("unavailable")),
        "{body}"
    );
    assert!(
        took >= Duration::from_millis(2000) && took < Duration::from_millis(3000),
        "answered after {took:?}, not at the budget of 2 s"
    );
}

async fn demo_mode_is_never_switched_on_for_an_existing_database_created_without_it(db: &TestDb) {
    db.tresor_ok(&["emission", "list"]);
    db.assert_demo_refused();
    let (service, _) = db.service().await;
    assert!(
        !service.is_demo().await.unwrap(),
        "still not a demo database"
    );
    assert!(
        service.emissions().await.unwrap().is_empty(),
        "no demo emission"
    );
    // Plain `tresor` on it serves it as it is.
    let server = plain_tresor_by_environment(db).await;
    assert_eq!(status(&server.base).await["demo"], false);
}

async fn serve_demo_creates_a_new_database_in_demo_mode(db: &TestDb) {
    let server = Server::start(db, &[]).await;
    let shown = status(&server.base).await;
    assert_eq!(shown["demo"], true, "{shown}");
    assert_eq!(shown["stakes"], serde_json::json!([50, 100, 200]));
}

/// Runs `tresor serve` on `db`'s database with `args` and `env`, its
/// players' listener on `host` at a port the kernel gives, and checks that
/// it exits 2 naming `named`, having never said it was open: a server that
/// starts fails the test.
fn refused_on(db: &TestDb, host: &str, args: &[&str], env: &[(&str, &str)], named: &str) {
    let mut command = crate::common::tresor_command();
    command
        .args(["serve", "--listen", &format!("{host}:0")])
        .args(["--admin-listen", "127.0.0.1:0"])
        .args(args)
        .args(db.db_args());
    db.env(&mut command);
    for (name, value) in env {
        command.env(name, value);
    }
    let out = crate::common::process::refused_at_start(command, &format!("{args:?} {env:?}"));
    assert_eq!(
        out.status.code(),
        Some(2),
        "{args:?} {env:?}: {}",
        describe(&out)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(named),
        "{args:?} {env:?} names {named}: {stderr}"
    );
}

fn refused_at_start(db: &TestDb, args: &[&str], env: &[(&str, &str)], named: &str) {
    refused_on(db, "127.0.0.1", args, env, named);
}

async fn every_unsafe_setting_is_refused_at_start_naming_it(db: &TestDb) {
    let secret = ["--payment-webhook-secret", SECRET];
    let pay_url = ["--payment-pay-url", PAY_URL];
    let outbox = mail_outbox().display().to_string();
    let mail = ["--mail-outbox", outbox.as_str()];
    let real = [&secret[..], &pay_url[..], &mail[..]].concat();
    let with = |extra: &[&'static str]| [&real[..], extra].concat();
    // The webhook's secret: empty (by flag or by an unset variable), short, missing.
    for args in [
        [&pay_url[..], &["--payment-webhook-secret", ""]].concat(),
        [&pay_url[..], &["--payment-webhook-secret", "00"]].concat(),
        [&pay_url[..], &["--payment-webhook-secret", &SECRET[..62]]].concat(),
        pay_url.to_vec(),
    ] {
        refused_at_start(db, &args, &[], "--payment-webhook-secret");
    }
    refused_at_start(
        db,
        &pay_url,
        &[("TRESOR_PAYMENT_WEBHOOK_SECRET", "")],
        "TRESOR_PAYMENT_WEBHOOK_SECRET",
    );
    // The sandbox's page outside demo mode.
    refused_at_start(db, &secret, &[], "--payment-pay-url");
    // Session cookies in clear off loopback.
    refused_on(db, "0.0.0.0", &real, &[], "--secure-cookies");
    // The operator's listener off loopback (tested below with its own message).
    // Settings no operator means: zero timeouts, caps or session lengths.
    for (flag, named) in [
        ("--session-idle-s", "--session-idle-s"),
        ("--auto-settle-after-s", "--auto-settle-after-s"),
        ("--header-read-timeout-s", "--header-read-timeout-s"),
        ("--idle-timeout-s", "--idle-timeout-s"),
        ("--max-connections", "--max-connections"),
        (
            "--max-connections-per-address",
            "--max-connections-per-address",
        ),
        ("--admin-max-connections", "--admin-max-connections"),
        (
            "--admin-max-connections-per-address",
            "--admin-max-connections-per-address",
        ),
    ] {
        refused_at_start(db, &with(&[flag, "0"]), &[], named);
    }
    // An outage budget out of 100..=600000 ms, by flag or by environment.
    for budget in ["0", "99", "600001"] {
        refused_at_start(
            db,
            &with(&["--outage-budget-ms", budget]),
            &[],
            "--outage-budget-ms",
        );
    }
    refused_at_start(
        db,
        &real,
        &[("TRESOR_OUTAGE_BUDGET_MS", "50")],
        "TRESOR_OUTAGE_BUDGET_MS",
    );
    // A short secret is refused in demo mode too; the database is untouched.
    refused_at_start(
        db,
        &["--demo", "--payment-webhook-secret", "00"],
        &[],
        "--payment-webhook-secret",
    );
    let (service, _) = db.service().await;
    assert!(!service.is_demo().await.unwrap());
    // With all of them right, it serves.
    plain_tresor_by_environment(db).await;
}

on_both!(
    every_unsafe_setting_is_refused_at_start_naming_it,
    plain_tresor_serves_with_the_settings_of_tresor_serve,
    demo_mode_is_never_switched_on_for_an_existing_database_created_without_it,
    serve_demo_creates_a_new_database_in_demo_mode,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_tresor_in_a_fresh_folder_creates_the_default_database_in_demo_mode() {
    let folder = tempfile::tempdir().unwrap();
    let mut command = crate::common::tresor_command();
    command
        .current_dir(folder.path())
        .env_remove("TRESOR_SECRETS_KEY")
        .env("TRESOR_LISTEN", "127.0.0.1:0")
        .env("TRESOR_ADMIN_LISTEN", "127.0.0.1:0")
        .stderr(Stdio::null());
    let server = Server::spawn(command).await;
    let shown = status(&server.base).await;
    assert_eq!(shown["demo"], true, "{shown}");
    assert_eq!(shown["stakes"], serde_json::json!([50, 100, 200]));
    drop(server);
    // The key beside the data folder, not in it; both the owner's only.
    let key = folder.path().join("tresor-secrets.key");
    assert!(key.exists());
    assert!(!folder.path().join("data/tresor-secrets.key").exists());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&key), 0o600);
        assert_eq!(mode(&folder.path().join("data")), 0o700);
        assert_eq!(mode(&folder.path().join("data/tresor.db")), 0o600);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_server_on_the_same_folder_exits_naming_the_first() {
    let db = TestDb::sqlite().await;
    let first = Server::start(&db, &[]).await;
    let out = db.tresor(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--admin-listen",
        "127.0.0.1:0",
    ]);
    assert_exit(&out, 1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("pid {}", first.pid())),
        "names the holder: {stderr}"
    );
    // Operator commands still work beside the server.
    db.tresor_ok(&["emission", "create", "--blocks", "1"]);
    db.tresor_ok(&["announce", "Bienvenue"]);
    assert_eq!(status(&first.base).await["message"], "Bienvenue");
    // Once the first is gone (even killed), the folder can be served again.
    first.kill();
    let again = Server::start(&db, &[]).await;
    assert_eq!(status(&again.base).await["message"], "Bienvenue");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metrics_are_served_on_the_operator_listener_and_not_to_players() {
    let db = TestDb::sqlite().await;
    let server = Server::start(&db, &[]).await;
    let public = reqwest::get(format!("{}/metrics", server.base))
        .await
        .unwrap();
    assert_eq!(public.status(), 404);
    let admin = reqwest::get(format!("{}/metrics", server.admin_base))
        .await
        .unwrap();
    assert_eq!(admin.status(), 200);
    assert!(
        admin
            .text()
            .await
            .unwrap()
            .contains("tresor_wins_paid_cents")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_listener_off_loopback_is_refused_unless_allowed() {
    let db = TestDb::sqlite().await;
    let out = db.tresor(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--admin-listen",
        "0.0.0.0:0",
    ]);
    assert_exit(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a loopback address"));

    // Allowed: it serves the metrics on every address, 127.0.0.1 included.
    let mut command = crate::common::tresor_command();
    command
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(["--admin-listen", "0.0.0.0:0"])
        .arg("--admin-allow-remote")
        .args(db.db_args())
        // Real money needs the provider's page and a secret shared with it,
        // and mail said where it goes.
        .env("TRESOR_PAYMENT_WEBHOOK_SECRET", SECRET)
        .env("TRESOR_PAYMENT_PAY_URL", PAY_URL)
        .env("TRESOR_MAIL_OUTBOX", mail_outbox());
    db.env(&mut command);
    let server = Server::spawn(command).await;
    let (port, admin_port) = (server.port(), server.admin_port());
    wait_for(&format!("http://127.0.0.1:{admin_port}/metrics")).await;
    // The addresses really listened on (a server binding loopback anyway
    // would answer the probes above too): the kernel's own table.
    assert_eq!(
        listening_on(admin_port),
        ["0.0.0.0"],
        "the operator's listener"
    );
    assert_eq!(listening_on(port), ["127.0.0.1"], "the players' listener");
}

/// The IPv4 addresses a socket listens on at `port`, from `/proc/net/tcp`
/// (state `0A`: LISTEN; addresses as little-endian hex).
fn listening_on(port: u16) -> Vec<String> {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (address, local_port) = fields.get(1)?.split_once(':')?;
            if fields.get(3) != Some(&"0A") || u16::from_str_radix(local_port, 16).ok()? != port {
                return None;
            }
            let raw = u32::from_str_radix(address, 16).ok()?;
            Some(std::net::Ipv4Addr::from(raw.swap_bytes()).to_string())
        })
        .collect()
}

/// The README's first command (`cargo run --release`, plain `tresor` in the
/// repository's folder) leaves `git status` clean: the demo's database, its
/// keys and the checkpoints it keeps beside them are all ignored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_s_first_command_leaves_the_repository_s_tree_clean() {
    let repository = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let folder = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(folder.path())
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {}", describe(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    // A clone's own files: its ignore rules and its catalogue.
    git(&["init", "-q"]);
    std::fs::copy(
        repository.join(".gitignore"),
        folder.path().join(".gitignore"),
    )
    .unwrap();
    std::fs::create_dir(folder.path().join("games")).unwrap();
    for entry in std::fs::read_dir(repository.join("games")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(
            &path,
            folder.path().join("games").join(path.file_name().unwrap()),
        )
        .unwrap();
    }
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "a clone"]);

    // As a newcomer runs it: no key or folder given, every file the demo
    // makes where its defaults put them.
    let mut command = crate::common::tresor_command();
    command
        .current_dir(folder.path())
        .env_remove("TRESOR_SECRETS_KEY")
        .env_remove("TRESOR_LOG_KEY")
        .env_remove("TRESOR_KEPT_CHECKPOINTS")
        .env("TRESOR_LISTEN", "127.0.0.1:0")
        .env("TRESOR_ADMIN_LISTEN", "127.0.0.1:0")
        .stderr(Stdio::null());
    let server = Server::spawn(command).await;
    let base = server.base.clone();
    let player = cookie_client();
    crate::common::register_and_deposit(&player, &base, "ana", 1_000).await;
    crate::common::buy_and_play(&player, &base, 100).await;
    // The purchase's checkpoint is kept beside the demo's log key.
    let kept = || {
        std::fs::read_dir(folder.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().ends_with(".checkpoints"))
    };
    let what = format!("checkpoints kept in {:?}", folder.path());
    crate::common::wait::until_true(what, Duration::from_secs(30), || {
        let done = kept();
        async move { done }
    })
    .await;
    drop(server);
    let status = git(&[
        "status",
        "--porcelain",
        "--untracked-files=all",
        "--ignored=no",
    ]);
    assert_eq!(status, "", "the demo's files show in git status");
}
