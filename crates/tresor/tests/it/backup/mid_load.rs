//! A backup taken mid-load restores everything acknowledged before it.

use super::*;

on_sqlite!(a_backup_taken_mid_load_restores_everything_acknowledged_before_it);

fn percentile(mut values: Vec<Duration>, p: f64) -> Duration {
    if values.is_empty() {
        return Duration::ZERO;
    }
    values.sort();
    values[((values.len() as f64 * p).ceil() as usize).clamp(1, values.len()) - 1]
}

async fn a_backup_taken_mid_load_restores_everything_acknowledged_before_it(db: &TestDb) {
    let data = db.data_dir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let backups = outside.path().join("backups");
    let server = Server::start(db, &unthrottled_flags()).await;
    let load = sell(&server.base, 6).await;
    // More than the 20 the test asks for before the backup.
    load.acknowledges(30).await;

    // The backup, mid-load, from another process, as an operator runs it.
    let backup_started = Instant::now();
    let output = {
        let (db_args, key) = (db.db_args(), db.secrets_key.to_hex());
        let to = backups.display().to_string();
        tokio::task::spawn_blocking(move || {
            let mut command = tresor_command();
            command.args(["backup", "--to", &to]).args(&db_args);
            command.env("TRESOR_SECRETS_KEY", key);
            command.output().unwrap()
        })
        .await
        .unwrap()
    };
    let backup_ended = Instant::now();
    let said = ok(output);
    // More than the 20 the test asks for after it.
    load.acknowledges(30).await;
    let purchases: Vec<Purchase> = load.stop().await.concat();
    drop(server);

    let acknowledged: Vec<&Purchase> = purchases.iter().filter(|p| p.status == 201).collect();
    for p in &purchases {
        assert!(p.status == 201 || p.status == 503, "{p:?}");
    }
    let before: Vec<i64> = acknowledged
        .iter()
        .filter(|p| p.answered < backup_started)
        .map(|p| p.play_id.unwrap())
        .collect();
    let after = acknowledged
        .iter()
        .filter(|p| p.answered > backup_ended)
        .count();
    // The purchase latency while the backup ran, against the rest (measured,
    // not asserted: docs/RELIABILITY.md).
    let during: Vec<Duration> = purchases
        .iter()
        .filter(|p| p.answered >= backup_started && p.answered <= backup_ended)
        .map(|p| p.took)
        .collect();
    let outside_backup: Vec<Duration> = purchases
        .iter()
        .filter(|p| p.answered < backup_started || p.answered > backup_ended)
        .map(|p| p.took)
        .collect();
    eprintln!(
        "backup: {said}\nbackup took {:?}; purchases during it: {} (p50 {:?}, p99 {:?}), outside it: {} (p50 {:?}, p99 {:?})",
        backup_ended - backup_started,
        during.len(),
        percentile(during.clone(), 0.5),
        percentile(during, 0.99),
        outside_backup.len(),
        percentile(outside_backup.clone(), 0.5),
        percentile(outside_backup, 0.99),
    );
    assert!(
        before.len() > 20 && after > 20,
        "{} before, {after} after",
        before.len()
    );

    // The disk is lost.
    std::fs::remove_dir_all(&data).unwrap();
    let restored = outside.path().join("restored");
    let started = Instant::now();
    let said = db.restore(&only_backup(&backups), &restored, &[]);
    eprintln!("restore took {:?}: {said}", started.elapsed());
    assert!(said.contains("the trail verifies"), "{said}");
    assert!(said.contains("sales are closed"), "{said}");

    let restored_db = open_sqlite(&restored, db).await;
    let found = play_ids(&restored_db).await;
    let lost: Vec<&i64> = before.iter().filter(|id| !found.contains(id)).collect();
    assert!(
        lost.is_empty(),
        "acknowledged before the backup, not restored: {lost:?}"
    );
    assert_ledger_balances(&restored_db).await;
    assert_trail_verifies(&restored_db).await;
    let lost_after = acknowledged.len() - found.len().min(acknowledged.len());
    eprintln!(
        "{} purchases acknowledged in all, {} before the backup (all restored), {} restored, {lost_after} lost (after the backup)",
        acknowledged.len(),
        before.len(),
        found.len()
    );
}
