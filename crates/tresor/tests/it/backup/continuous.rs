//! The continuous copy (litestream) loses only the last seconds when the disk is lost.

use super::*;
use crate::common::procs::{children, litestream};

on_sqlite!(the_continuous_copy_loses_only_the_last_seconds_when_the_disk_is_lost);

/// SIGKILLs these processes when dropped (the server's litestream, which a
/// SIGKILL of the server leaves running).
struct KillOnDrop(Vec<u32>);

impl KillOnDrop {
    fn now(&mut self) {
        for pid in self.0.drain(..) {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        self.now();
    }
}

async fn the_continuous_copy_loses_only_the_last_seconds_when_the_disk_is_lost(db: &TestDb) {
    let Some(litestream) = litestream() else {
        return;
    };
    let data = db.data_dir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let replica = outside.path().join("replica");
    let mut flags = unthrottled_flags();
    flags.extend([
        "--replicate-to".to_owned(),
        replica.display().to_string(),
        "--litestream".to_owned(),
        litestream.display().to_string(),
    ]);
    let server = Server::start(db, &flags).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut supervised = loop {
        let found = children(server.pid());
        if !found.is_empty() {
            break KillOnDrop(found);
        }
        assert!(
            Instant::now() < deadline,
            "tresor serve never started litestream"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let tasks = sell(&server.base, 4, stop.clone()).await;
    tokio::time::sleep(Duration::from_secs(5)).await;

    // The machine is lost: the server and its litestream die at once, and
    // the data folder with them. Purchases in flight get no answer.
    let lost_at = Instant::now();
    supervised.now();
    server.kill();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut purchases = Vec::new();
    for task in tasks {
        purchases.extend(task.await.unwrap());
    }
    std::fs::remove_dir_all(&data).unwrap();

    let restored = outside.path().join("restored");
    std::fs::create_dir(&restored).unwrap();
    let started = Instant::now();
    let output = std::process::Command::new(&litestream)
        .args(["restore", "-o"])
        .arg(restored.join("tresor.db"))
        .arg(format!("file://{}", replica.display()))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", describe(&output));
    let took = started.elapsed();
    let said = ok(run(
        db,
        &[
            "audit",
            "consistency",
            "--data",
            &restored.display().to_string(),
        ],
    ));
    assert!(said.contains("consistent"), "{said}");
    let restored_db = open_sqlite(&restored, db).await;
    let found = play_ids(&restored_db).await;
    let acknowledged: Vec<&Purchase> = purchases.iter().filter(|p| p.status == 201).collect();
    let missing: Vec<&&Purchase> = acknowledged
        .iter()
        .filter(|p| !found.contains(&p.play_id.unwrap()))
        .collect();
    let window = missing
        .iter()
        .map(|p| lost_at.saturating_duration_since(p.answered))
        .max()
        .unwrap_or_default();
    eprintln!(
        "litestream: {} purchases acknowledged, {} lost, the oldest lost answered {window:?} before the loss; restored in {took:?}",
        acknowledged.len(),
        missing.len()
    );
    assert!(acknowledged.len() > 50, "{}", acknowledged.len());
    // The guarantee: seconds, not the backup interval (the file replica
    // syncs every second).
    assert!(
        window < Duration::from_secs(3),
        "purchases acknowledged {window:?} before the loss are not in the copy"
    );
    assert_ledger_balances(&restored_db).await;
}
