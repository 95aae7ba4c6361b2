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
    Server, TestDb, buy_and_play, cookie_client, describe, get_json, register_and_deposit, tresor,
    tresor_command, unthrottled_flags,
};

use crate::common::process::{refused_at_start, serve_command, stdout_ok as ok};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

mod monitor;
mod restores;
mod writers;

/// `tresor audit verify --checkpoint state` on `db` says the trail is
/// intact.
fn assert_intact_against(db: &TestDb, state: &Path) {
    let state = state.display().to_string();
    let said = ok(db.tresor(&["audit", "verify", "--checkpoint", &state]));
    assert!(said.contains("the trail is intact"), "{said}");
}

fn code(output: &Output) -> Option<i32> {
    output.status.code()
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
    let files = tresor::backup::checkpoint::state_files(state, false).unwrap();
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

/// `tresor serve` with `args`: it must stop without serving (the caller
/// asserts how).
fn serve_refused(db: &TestDb, args: &[&str]) -> Output {
    refused_at_start(serve_command(db, args), &format!("serve {args:?}"))
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

/// Runs `tresor` with `args` (which name the database) and `db`'s key.
fn run(db: &TestDb, args: &[&str]) -> Output {
    db.tresor_keyed(args)
}

/// The file where the test servers keep the checkpoints of `db`'s
/// installation.
pub(crate) async fn kept_file(db: &TestDb) -> PathBuf {
    crate::common::trail::kept_file(&db.connect().await).await
}
