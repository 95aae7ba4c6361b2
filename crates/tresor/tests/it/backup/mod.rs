//! Backups and restores, for real: `tresor backup` of a SQLite database
//! while a real server sells, the data folder deleted, `tresor restore`
//! into a new one; the refusals of bad input (nothing written); sales held
//! closed after a restore behind what was published until the operator
//! reopens them; and PostgreSQL's point-in-time recovery (pg_basebackup and
//! WAL archiving) on a server of the test's own. docs/RELIABILITY.md has
//! the figures these tests print.

use crate::common::cluster::Cluster;

use crate::common::process::{refused as refused_with, stdout_ok as ok};
use crate::common::trail::{assert_trail_verifies, kept_file, until_kept};
use crate::common::wait::until_true;
use crate::common::{
    Harness, Server, TestDb, assert_ledger_balances, cookie_client, describe, free_port, get_json,
    post, register_and_deposit, tresor_command, unthrottled_flags,
};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tresor::store::Db;

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

/// Players buying 50-cent units until stopped, and how many purchases
/// were acknowledged so far.
struct Load {
    stop: Arc<AtomicBool>,
    acknowledged: Arc<AtomicUsize>,
    tasks: Vec<tokio::task::JoinHandle<Vec<Purchase>>>,
}

impl Load {
    /// The purchases acknowledged (201) so far.
    fn acknowledged(&self) -> usize {
        self.acknowledged.load(Ordering::SeqCst)
    }

    /// Waits (60 s at most) until `more` purchases past those acknowledged
    /// now are acknowledged.
    async fn acknowledges(&self, more: usize) {
        let goal = self.acknowledged() + more;
        until_true(
            format!("{goal} purchases acknowledged"),
            Duration::from_secs(60),
            || async move { self.acknowledged() >= goal },
        )
        .await;
    }

    /// Stops the players: what each of them bought.
    async fn stop(self) -> Vec<Vec<Purchase>> {
        self.stop.store(true, Ordering::Relaxed);
        let mut bought = Vec::new();
        for task in self.tasks {
            bought.push(task.await.unwrap());
        }
        bought
    }
}

/// `players` players buying 50-cent units on `base` until stopped.
async fn sell(base: &str, players: usize) -> Load {
    // Each call's players are new ones: a name not taken by an earlier call.
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    let (stop, acknowledged) = (Arc::<AtomicBool>::default(), Arc::<AtomicUsize>::default());
    let mut tasks = Vec::new();
    for p in 0..players {
        let client = cookie_client();
        let name = format!("buyer{p}c{call}");
        register_and_deposit(&client, base, &name, 100_000).await;
        let (base, stop, acknowledged) = (base.to_owned(), stop.clone(), acknowledged.clone());
        tasks.push(tokio::spawn(async move {
            let mut done = Vec::new();
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
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
                if status == 201 {
                    acknowledged.fetch_add(1, Ordering::SeqCst);
                } else {
                    // Paces a refused player (503 while the writer is
                    // busy) before it tries again.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
            done
        }));
    }
    Load {
        stop,
        acknowledged,
        tasks,
    }
}

/// A 50-cent purchase under `key` on `base`: its status and JSON answer.
async fn buy(client: &reqwest::Client, base: &str, key: &str) -> (u16, serde_json::Value) {
    post(
        client,
        &format!("{base}/api/plays"),
        &json!({"stake_cents": 50}),
        Some(key),
    )
    .await
    .expect("a JSON answer")
}

/// Runs `tresor` with `args` (which name the database) and `db`'s key.
fn run(db: &TestDb, args: &[&str]) -> Output {
    db.tresor_keyed(args)
}

/// A refusal: exit 2, with `words` in the message.
fn refused(output: Output, words: &str) {
    refused_with(&output, words);
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
    db.open_data_dir(data).await
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
/// one backup of it in the `backups` folder of a new temporary folder: that
/// temporary folder (for whatever else the test writes beside it) and the
/// backup's folder.
async fn one_backup(db: &TestDb) -> (tempfile::TempDir, PathBuf) {
    let outside = tempfile::tempdir().unwrap();
    let backups = outside.path().join("backups");
    let server = Server::start(db, &unthrottled_flags()).await;
    let client = cookie_client();
    register_and_deposit(&client, &server.base, "ana", 10_000).await;
    for n in 0..5 {
        let (status, body) = buy(&client, &server.base, &format!("k{n}")).await;
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
    let backup = only_backup(&backups);
    (outside, backup)
}
