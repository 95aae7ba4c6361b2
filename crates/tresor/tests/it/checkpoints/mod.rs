//! One checkpoint file everywhere (issue 35): the signed checkpoints a
//! monitor (`tresor audit watch`) keeps of a real site are what `audit
//! verify --checkpoint`, `restore --published` and `serve
//! --published-checkpoint` take, what `audit checkpoint --out` and a
//! backup's manifest write; malformed input is bad input (exit 2). A
//! checkpoint given from outside that the log does not hold names the leaf,
//! or the leaves, where it differs — never an empty range. A database
//! brought back behind what the server last published (a Litestream
//! restore) starts with sales held on its own, and Litestream dies with
//! the server.

use crate::common::{
    Server, TestDb, buy_and_play, cookie_client, describe, get_json, kept_checkpoints_dir,
    register_and_deposit, tresor, tresor_command, unthrottled_flags,
};

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

mod monitor;
mod restores;
mod writers;

fn code(output: &Output) -> Option<i32> {
    output.status.code()
}

fn ok(output: Output) -> String {
    assert_eq!(code(&output), Some(0), "{}", describe(&output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `tresor audit watch --once` against `base`, keeping its state in `state`.
async fn watch(base: &str, state: &Path) {
    let args = [
        "audit".to_owned(),
        "watch".to_owned(),
        "--once".to_owned(),
        "--url".to_owned(),
        base.to_owned(),
        "--state".to_owned(),
        state.display().to_string(),
    ];
    let output = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        tresor(&args)
    })
    .await
    .unwrap();
    ok(output);
}

/// The monitor's latest checkpoint of each log (`<writer>.checkpoint`).
fn monitor_files(state: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(state)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".checkpoint"))
                .is_some_and(|w| !w.contains('.'))
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "the monitor kept nothing in {state:?}");
    files
}

async fn sell(base: &str, name: &str, n: usize) {
    let client = cookie_client();
    register_and_deposit(&client, base, name, 10_000).await;
    for _ in 0..n {
        buy_and_play(&client, base, 100).await;
    }
}

async fn status(base: &str) -> Value {
    get_json(&cookie_client(), &format!("{base}/api/status")).await
}

/// `tresor serve` with `args`: it must stop at once with exit 2.
fn serve_refused(db: &TestDb, args: &[&str]) -> Output {
    let mut command = tresor_command();
    command
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
        ])
        .args(db.db_args())
        .args(args);
    db.env(&mut command);
    command.output().unwrap()
}

/// The log of `writer` in `db`: its origin and latest two stored
/// checkpoints (size, note).
async fn two_checkpoints(db: &TestDb, writer: &str) -> (String, Vec<(i64, String)>) {
    let conn = db.connect().await;
    let origin: String = sqlx::query_scalar("SELECT origin FROM logs WHERE writer = $1")
        .bind(writer)
        .fetch_one(&conn.pool)
        .await
        .unwrap();
    let rows: Vec<(i64, String)> = sqlx::query_as(
        "SELECT c.size, c.note FROM checkpoints c JOIN logs l ON l.id = c.log_id \
         WHERE l.writer = $1 ORDER BY c.size DESC LIMIT 2",
    )
    .bind(writer)
    .fetch_all(&conn.pool)
    .await
    .unwrap();
    (origin, rows)
}

/// The database's own latest checkpoints (`audit checkpoint --out`), in a file.
async fn write_latest(db: &TestDb, dir: &Path) -> PathBuf {
    let file = dir.join("latest.checkpoint");
    db.tresor_ok(&["audit", "checkpoint", "--out", &file.display().to_string()]);
    file
}

/// Runs `tresor` with `args` and `db`'s secrets key.
fn run(db: &TestDb, args: &[&str]) -> Output {
    let mut command = tresor_command();
    command.args(args);
    db.env(&mut command);
    command.output().expect("run tresor")
}

/// The file where the test servers keep the checkpoints of `db`'s
/// installation.
pub(crate) async fn kept_file(db: &TestDb) -> PathBuf {
    let conn = db.connect().await;
    let installation: String =
        sqlx::query_scalar("SELECT value FROM settings WHERE key = 'installation_id'")
            .fetch_one(&conn.pool)
            .await
            .unwrap();
    kept_checkpoints_dir().join(format!("tresor-{installation}.checkpoints"))
}
