//! A start refused for its configuration writes nothing (issue 42, finding
//! 11). A real-money `tresor serve` on a new database without mail
//! settings exited with its clear error after it had migrated the
//! database, stored an installation id and made a secrets key file bound
//! to it: the next start, with mail and another key, was refused ("this
//! database's block secrets are sealed"). Now every setting is checked
//! before anything is created or written: for each refusal below the
//! process exits ≠ 0 naming the setting, the database has no table (no
//! SQLite file, or an empty one), no key file was made, and a start with
//! the right settings and another key serves.

use crate::common::process::refused_at_start;
use crate::common::{Server, TestDb, describe, tresor_command};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const SECRET: &str = "8f3c2a71d94be6050a1f7c3e9d2b84f6a0c5e1d7b3f9284c6e0a5d1b7c3f9e2a";
const PAY_URL: &str = "https://pay.example/checkout?ref={deposit_id}";

/// `tresor serve` for real money (a payment provider named) on `db`, the
/// secrets key in the file `key`, with `extra` flags.
fn serve(db: &TestDb, key: &Path, listen: &str, extra: &[&str]) -> Command {
    let mut command = tresor_command();
    command
        // The key comes from its file alone.
        .env_remove("TRESOR_SECRETS_KEY")
        .args(["serve", "--listen", listen, "--admin-listen", "127.0.0.1:0"])
        .args([
            "--payment-webhook-secret",
            SECRET,
            "--payment-pay-url",
            PAY_URL,
        ])
        .arg("--secrets-key-file")
        .arg(key)
        .args(extra)
        .args(db.db_args());
    command
}

/// The tables of `db` (PostgreSQL: in schema public), or on SQLite the
/// bytes of its file (none when it is missing).
async fn tables(db: &TestDb) -> i64 {
    if let Some(dir) = db.data_dir() {
        let file = dir.join("tresor.db");
        return std::fs::metadata(&file).map_or(0, |m| m.len() as i64);
    }
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
    let count: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public'",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    let _ = conn.close().await;
    count
}

/// Runs `command` to its end (killed, and the test failed, if it
/// serves): it must fail; what it wrote on its standard error.
fn refused(command: Command, why: &str) -> String {
    let out = refused_at_start(command, why);
    assert_ne!(out.status.code(), Some(0), "{why}: {}", describe(&out));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The files a test names: the keys, the outbox, a loose folder, a file.
struct Paths {
    root: tempfile::TempDir,
    first_key: PathBuf,
    outbox: String,
    loose: String,
    a_file: String,
}

fn paths() -> Paths {
    let root = tempfile::tempdir().unwrap();
    let loose = root.path().join("loose");
    std::fs::create_dir(&loose).unwrap();
    std::fs::set_permissions(&loose, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let a_file = root.path().join("a-file");
    std::fs::write(&a_file, "").unwrap();
    Paths {
        first_key: root.path().join("first.key"),
        outbox: root.path().join("mail").display().to_string(),
        loose: loose.display().to_string(),
        a_file: a_file.display().to_string(),
        root,
    }
}

/// A port the kernel gives: the refused start must never say it is open.
const ANY_PORT: u16 = 0;

/// Each refusal: why, the players' port, its flags, what the error names.
fn refusals(p: &Paths, taken_port: u16) -> Vec<(&'static str, u16, Vec<&str>, &'static str)> {
    let mail = ["--mail-outbox", p.outbox.as_str()];
    let with_mail = |more: &[&'static str]| -> Vec<&str> { [&mail[..], more].concat() };
    vec![
        ("no mail", ANY_PORT, vec![], "--mail-outbox"),
        (
            "a loose kept folder",
            ANY_PORT,
            [&mail[..], &["--kept-checkpoints", &p.loose]].concat(),
            "--kept-checkpoints",
        ),
        (
            "a file for an outbox",
            ANY_PORT,
            vec!["--mail-outbox", &p.a_file],
            "--mail-outbox",
        ),
        (
            "a witness",
            ANY_PORT,
            with_mail(&["--witness", "nobody+00000000+AAAA"]),
            "--witness",
        ),
        (
            "a public operator's listener",
            ANY_PORT,
            with_mail(&["--admin-listen", "0.0.0.0:0"]),
            "--admin-listen",
        ),
        ("taken", taken_port, mail.to_vec(), "cannot listen on"),
        (
            "a published checkpoint",
            ANY_PORT,
            [&mail[..], &["--published-checkpoint", &p.a_file]].concat(),
            "--published-checkpoint",
        ),
    ]
}

async fn assert_nothing_written(db: &TestDb, p: &Paths, why: &str) {
    assert_eq!(tables(db).await, 0, "{why}: the database was written");
    assert!(!p.first_key.exists(), "{why}: a key file was made");
    assert!(!Path::new(&p.outbox).exists(), "{why}: the outbox was made");
}

on_both!(a_start_refused_for_its_settings_writes_nothing);

async fn a_start_refused_for_its_settings_writes_nothing(db: &TestDb) {
    // A database without a schema, as before its first start (a PostgreSQL
    // test database starts migrated).
    db.blank().await;
    let p = paths();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    for (why, port, extra, named) in refusals(&p, taken.local_addr().unwrap().port()) {
        let listen = format!("127.0.0.1:{port}");
        let stderr = refused(serve(db, &p.first_key, &listen, &extra), why);
        assert!(stderr.contains(named), "{why}: names {named}: {stderr}");
        assert_nothing_written(db, &p, why).await;
    }
    drop(taken);
    // The log key outside demo mode, which no default makes.
    let mail = ["--mail-outbox", p.outbox.as_str()];
    let mut command = serve(db, &p.first_key, "127.0.0.1:0", &mail);
    let none = p.root.path().join("none.key").display().to_string();
    command
        .env_remove("TRESOR_LOG_KEY")
        .args(["--log-key", &none]);
    let stderr = refused(command, "no log key");
    assert!(stderr.contains("no log key"), "{stderr}");
    assert_eq!(tables(db).await, 0, "no log key: the database was written");
    assert!(!p.first_key.exists(), "no log key: a key file was made");
    serves_with_another_key(db, &p).await;
}

/// The right settings and another key: it serves, and makes that key.
async fn serves_with_another_key(db: &TestDb, p: &Paths) {
    let second_key = p.root.path().join("second.key");
    let mail = ["--mail-outbox", p.outbox.as_str()];
    let mut command = serve(db, &second_key, "127.0.0.1:0", &mail);
    command.stderr(Stdio::null());
    drop(Server::spawn(command).await);
    assert!(second_key.exists(), "the new database's key was made");
    assert!(!p.first_key.exists());
    assert!(tables(db).await > 0);
}
