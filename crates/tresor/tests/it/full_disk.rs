//! A real full disk under a real SQLite file (issue 42, finding 12): the
//! database's folder is a small tmpfs, filled to its last page while the
//! server sells. In WAL mode a batch's statements only change pages in
//! memory; the disk is first needed at COMMIT, which meets the full disk in
//! one of two ways: appending to a WAL that must grow (`SQLITE_FULL`), or,
//! when the WAL's file already has the room (a WAL reused after a
//! checkpoint), growing the WAL's index, the `-shm` file, every 4,062
//! frames (`SQLITE_IOERR_SHMSIZE`, "disk I/O error"). Either way players
//! must be told `503 storage_full` with `Retry-After: 30`
//! (docs/RELIABILITY.md), not an outage; nothing may be lost, and sales
//! resume once space is back.
//!
//! Mounting needs root: without it the test says it was skipped, unless
//! `TRESOR_REQUIRE_ROOT=1` (as in CI), where it fails instead.

use crate::common::buying::timed_purchase;
use crate::common::trail::assert_trail_verifies;
use crate::common::{TestApp, TestDb, cookie_client, execute, register_and_deposit};
use serde_json::Value;
use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use tresor::store::Backend;

/// A tmpfs mounted over a folder, unmounted when dropped (lazily: the
/// server's connections may still hold its files open).
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` (as `mount -o size=` reads it) over `dir`;
    /// `None` (with a skip line) when it cannot and it is not required.
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700")])
            .arg("tmpfs")
            .arg(dir)
            .output();
        let failure = match output {
            Ok(output) if output.status.success() => return Some(Tmpfs(dir.to_owned())),
            Ok(output) => String::from_utf8_lossy(&output.stderr).into_owned(),
            Err(error) => error.to_string(),
        };
        assert!(
            std::env::var("TRESOR_REQUIRE_ROOT").as_deref() != Ok("1"),
            "TRESOR_REQUIRE_ROOT=1 but a tmpfs cannot be mounted: {failure}"
        );
        eprintln!("skipped: a tmpfs cannot be mounted (root is needed): {failure}");
        None
    }

    /// Fills what is left of the tmpfs with one file; returns its path.
    fn fill(&self) -> PathBuf {
        let path = self.0.join("filler");
        let mut file = std::fs::File::create_new(&path).expect("a filler file");
        let mut chunk = vec![0xA5u8; 64 * 1024];
        // Large writes first, then smaller ones down to a page: tmpfs
        // counts pages, so the last bytes take the last page.
        while chunk.len() >= 4096 {
            match file.write_all(&chunk) {
                Ok(()) => {}
                Err(error) if error.raw_os_error() == Some(28) => {
                    chunk.truncate(chunk.len() / 2);
                }
                Err(error) => panic!("filling the tmpfs: {error}"),
            }
        }
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// A purchase under `key`: its status, `Retry-After` and JSON answer.
async fn buy(client: &reqwest::Client, base: &str, key: &str) -> (u16, Option<String>, Value) {
    let bought = timed_purchase(client, base, key).await;
    (bought.status, bought.retry_after, bought.body)
}

async fn count_plays(app: &TestApp) -> usize {
    crate::common::buying::count_plays(&app.service.db).await as usize
}

const PLAYERS: usize = 4;

/// Each player buys until the disk refused it three times: every answer
/// (key, status, Retry-After, body).
async fn buy_until_refused(
    clients: &[reqwest::Client],
    base: &str,
) -> Vec<(usize, String, u16, Option<String>, Value)> {
    let mut tasks = Vec::new();
    for (p, client) in clients.iter().enumerate() {
        let (client, base) = (client.clone(), base.to_owned());
        tasks.push(tokio::spawn(async move {
            let mut answers = Vec::new();
            let mut refused = 0;
            for n in 0..2000 {
                let key = format!("p{p}-full-{n}");
                let (status, retry_after, body) = buy(&client, &base, &key).await;
                refused += usize::from(status != 201);
                answers.push((p, key, status, retry_after, body));
                if refused == 3 {
                    break;
                }
            }
            answers
        }));
    }
    let mut answers = Vec::new();
    for task in tasks {
        answers.extend(task.await.unwrap());
    }
    answers
}

/// How the disk is full when the server next commits.
#[derive(Debug, Clone, Copy)]
enum Full {
    /// The WAL cut to nothing: the next COMMIT must grow it (`SQLITE_FULL`).
    WalGrows,
    /// The WAL's file already holds 40 MiB and a reader keeps it from
    /// starting over: the COMMIT that crosses the index's first 4,062
    /// frames must grow the `-shm` file (`SQLITE_IOERR_SHMSIZE`).
    IndexGrows,
}

/// Sells on a tmpfs filled as `full` says until every player was refused,
/// then frees the disk: every refusal is `503 storage_full` with
/// `Retry-After: 30`, nothing is lost and the refused keys buy, once each.
async fn sell_into_a_full_disk(full: Full) {
    let db = TestDb::new(Backend::Sqlite).await.expect("SQLite");
    let dir = db.data_dir().expect("a SQLite folder");
    let Some(tmpfs) = Tmpfs::mount(&dir, "64m") else {
        return;
    };
    let app = TestApp::on(Arc::new(db), TestApp::settings()).await;
    let base = app.address.clone();
    let clients: Vec<reqwest::Client> = (0..PLAYERS).map(|_| cookie_client()).collect();
    for (p, client) in clients.iter().enumerate() {
        register_and_deposit(client, &base, &format!("full{p}"), 100_000).await;
    }
    let mut reader = None;
    match full {
        Full::WalGrows => {
            execute(&app.service.db.pool, &["PRAGMA wal_checkpoint(TRUNCATE)"]).await;
        }
        Full::IndexGrows => {
            let mut conn = app.service.db.pool.acquire().await.unwrap();
            sqlx::query("BEGIN").execute(&mut *conn).await.unwrap();
            sqlx::query("SELECT COUNT(*) FROM plays")
                .execute(&mut *conn)
                .await
                .unwrap();
            reader = Some(conn);
            let wal = dir.join("tresor.db-wal");
            let grown = Command::new("fallocate")
                .args(["-l", "40MiB"])
                .arg(&wal)
                .status()
                .unwrap();
            assert!(grown.success(), "fallocate the WAL");
        }
    }
    let filler = tmpfs.fill();
    if matches!(full, Full::WalGrows) {
        // Room left for a few batches first.
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&filler)
            .unwrap();
        let len = file.metadata().unwrap().len();
        file.set_len(len.saturating_sub(512 * 1024)).unwrap();
    }

    let answers = buy_until_refused(&clients, &base).await;
    let mut acknowledged: HashMap<String, i64> = HashMap::new();
    let mut refused = Vec::new();
    for (p, key, status, retry_after, body) in &answers {
        match status {
            201 => {
                acknowledged.insert(key.clone(), body["id"].as_i64().unwrap());
            }
            503 => {
                assert_eq!(body["error"]["code"], "storage_full", "{full:?}: {body}");
                assert_eq!(retry_after.as_deref(), Some("30"), "{body}");
                refused.push((*p, key.clone()));
            }
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert_eq!(refused.len(), 3 * PLAYERS, "every player was refused");
    // While full: exactly the acknowledged purchases, the ledger whole, the
    // server ready.
    assert_eq!(count_plays(&app).await, acknowledged.len());
    app.assert_ledger_balances().await;
    assert_eq!(
        app.get("/readyz").await.0,
        200,
        "a full disk is no reason to stop sending players"
    );

    // Space comes back: the refused keys buy, each once, without a restart.
    if let Some(mut conn) = reader {
        // Ended and closed, not put back in the pool with its old snapshot.
        sqlx::query("ROLLBACK").execute(&mut *conn).await.unwrap();
        conn.close().await.unwrap();
    }
    std::fs::remove_file(&filler).unwrap();
    for (p, key) in &refused {
        let (status, _, body) = buy(&clients[*p], &base, key).await;
        assert_eq!(status, 201, "{key} buys once space is back: {body}");
        acknowledged.insert(key.clone(), body["id"].as_i64().unwrap());
    }
    assert_eq!(app.service.writer.stats.restarts.get(), 0, "no restart");
    assert_eq!(count_plays(&app).await, acknowledged.len(), "none twice");
    app.assert_ledger_balances().await;
    assert_trail_verifies(&app.service.db).await;
    println!(
        "{full:?}: {} purchases acknowledged, {} answered 503 storage_full (Retry-After 30) \
         at COMMIT, each bought once when space came back",
        answers.len() - refused.len(),
        refused.len()
    );
    drop(app);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_as_the_wal_grows_at_commit_answers_storage_full() {
    sell_into_a_full_disk(Full::WalGrows).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_as_the_wal_index_grows_at_commit_answers_storage_full() {
    sell_into_a_full_disk(Full::IndexGrows).await;
}
