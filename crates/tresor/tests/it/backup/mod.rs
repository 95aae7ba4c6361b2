//! Backups and restores, for real: `tresor backup` of a SQLite database
//! while a real server sells, the data folder deleted, `tresor restore`
//! into a new one; the refusals of bad input (nothing written); sales held
//! closed after a restore behind what was published until the operator
//! reopens them; and PostgreSQL's point-in-time recovery (pg_basebackup and
//! WAL archiving) on a server of the test's own. docs/RELIABILITY.md has
//! the figures these tests print.

use crate::common::cluster::Cluster;

use crate::common::{
    Harness, Server, TestDb, assert_ledger_balances, cookie_client, describe, free_port, get_json,
    post, register_and_deposit, tresor_command, unthrottled_flags,
};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};
use tresor::store::Db;
use tresor::trail::{self, Verdict};

mod continuous;
mod mid_load;
mod pitr;
mod refusals;
mod restores;

/// One purchase of the load: its status, play id, and when it was answered.
#[derive(Debug, Clone)]
struct Purchase {
    status: u16,
    play_id: Option<i64>,
    answered: Instant,
    took: Duration,
}

/// `players` players buying 50-cent units on `base` until `stop` is set.
async fn sell(
    base: &str,
    players: usize,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Vec<tokio::task::JoinHandle<Vec<Purchase>>> {
    // Each call's players are new ones: a name not taken by an earlier call.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut tasks = Vec::new();
    for p in 0..players {
        let client = cookie_client();
        let name = format!("buyer{p}c{call}");
        register_and_deposit(&client, base, &name, 100_000).await;
        let (base, stop) = (base.to_owned(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut done = Vec::new();
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let key = format!("{name}-{n}");
                n += 1;
                let sent = Instant::now();
                let answer = post(
                    &client,
                    &format!("{base}/api/plays"),
                    &json!({"stake_cents": 50}),
                    Some(&key),
                )
                .await;
                let Some((status, body)) = answer else {
                    break;
                };
                done.push(Purchase {
                    status,
                    play_id: body["id"].as_i64(),
                    answered: Instant::now(),
                    took: sent.elapsed(),
                });
                if status != 201 {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
            done
        }));
    }
    tasks
}

/// Runs `tresor` with `args` and `db`'s secrets key.
fn run(db: &TestDb, args: &[&str]) -> Output {
    let mut command = tresor_command();
    command.args(args);
    db.env(&mut command);
    command.output().expect("run tresor")
}

fn ok(output: Output) -> String {
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A refusal: exit 2, with `words` in the message.
fn refused(output: Output, words: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
    assert!(
        stderr.contains(words),
        "expected {words:?}: {}",
        describe(&output)
    );
}

/// The single backup folder in `dir`.
fn only_backup(dir: &Path) -> PathBuf {
    let found = tresor::backup::list(dir).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    found[0].clone()
}

/// The names in `dir`.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

async fn open_sqlite(data: &Path, db: &TestDb) -> Db {
    crate::common::db::signed(
        Db::open_data_dir(data)
            .await
            .unwrap()
            .with_secrets_key(db.secrets_key.clone()),
    )
    .await
}

async fn assert_trail_verifies(db: &Db) -> i64 {
    match trail::verify(&db.pool, |_| {}).await.unwrap() {
        Verdict::Intact { records, .. } => records,
        Verdict::Broken { seq, reason } => panic!("the trail breaks at record {seq}: {reason}"),
    }
}

async fn play_ids(db: &Db) -> std::collections::HashSet<i64> {
    sqlx::query_scalar::<_, i64>("SELECT id FROM plays")
        .fetch_all(&db.pool)
        .await
        .unwrap()
        .into_iter()
        .collect()
}

/// A small database with a demo emission, a player and a few plays, and
/// one backup of it in `backups`: its folder.
async fn one_backup(db: &TestDb, backups: &Path) -> PathBuf {
    let server = Server::start(db, &unthrottled_flags()).await;
    let client = cookie_client();
    register_and_deposit(&client, &server.base, "ana", 10_000).await;
    for n in 0..5 {
        let (status, body) = post(
            &client,
            &format!("{}/api/plays", server.base),
            &json!({"stake_cents": 50}),
            Some(&format!("k{n}")),
        )
        .await
        .unwrap();
        assert_eq!(status, 201, "{body}");
    }
    drop(server);
    ok(run(
        db,
        &[
            &["backup", "--to", &backups.display().to_string()][..],
            &db.db_args().iter().map(String::as_str).collect::<Vec<_>>()[..],
        ]
        .concat(),
    ));
    only_backup(backups)
}
