//! Restores behind the monitor's or the published checkpoints start with sales held, and
//! litestream dies with the server.

use super::*;
use crate::common::mirror::copy_dir;
use crate::common::procs::{
    KillOnDrop, litestream, litestream_flags, litestream_restore, running, signal,
    started_children, until_restorable,
};
use crate::common::wait::until_true;

on_sqlite!(
    a_backup_behind_the_monitors_checkpoints_restores_with_sales_held_and_says_why,
    a_litestream_restore_behind_the_published_checkpoints_starts_with_sales_held_and_litestream_dies_with_the_server,
);

async fn a_backup_behind_the_monitors_checkpoints_restores_with_sales_held_and_says_why(
    db: &TestDb,
) {
    let outside = tempfile::tempdir().unwrap();
    let state = outside.path().join("monitor");
    let backups = outside.path().join("backups");
    let server = Server::start(db, &unthrottled_flags()).await;
    sell(&server.base, "ana", 2).await;
    let said = ok(db.tresor(&["backup", "--to", &backups.display().to_string()]));
    // Where the backup is made, it says the keys are as vital as it.
    assert!(
        said.contains("the backup holds neither key") && said.contains("as vital as the backups"),
        "{said}"
    );
    watch(&server.base, &state).await;
    let early = outside.path().join("early");
    copy_dir(&state, &early);
    let backup = tresor::backup::list(&backups).unwrap().pop().unwrap();

    // The manifest holds the signed checkpoints, in the one format.
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(backup.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["format"], "tresor-backup/2", "{manifest}");
    assert!(manifest.get("checkpoint").is_none(), "{manifest}");
    let notes = manifest["checkpoints"].as_str().unwrap();
    for file in monitor_files(&early) {
        let note = std::fs::read_to_string(file).unwrap();
        assert!(
            notes.contains(&note),
            "{note} not in the manifest's {notes}"
        );
    }

    // Restored against the checkpoints as they were: it holds them, open.
    let early_arg = early.display().to_string();
    let said = db.restore(
        &backup,
        &outside.path().join("current"),
        &["--published", &early_arg],
    );
    assert!(said.contains("sales are open"), "{said}");

    // More is sold and the monitor keeps the later checkpoints...
    sell(&server.base, "bea", 2).await;
    watch(&server.base, &state).await;
    drop(server);
    let kept = monitor_files(&state)
        .into_iter()
        .find(|f| !std::fs::read_to_string(f).unwrap().is_empty())
        .unwrap();
    // ...so the backup, restored against the monitor's file, is behind it.
    let behind = outside.path().join("behind");
    let state_arg = state.display().to_string();
    let said = db.restore(&backup, &behind, &["--published", &state_arg]);
    assert!(
        said.contains("sales are closed: restored behind what was published"),
        "{said}"
    );
    let mut flags = unthrottled_flags();
    flags.extend([
        "--published-checkpoint".to_owned(),
        kept.display().to_string(),
    ]);
    // `sales status` says why.
    let (said, why) = held_after_restore(db, &behind, &flags).await;
    assert!(
        why.starts_with("held after a restore: restored behind what was published"),
        "{said}"
    );

    // The operator reopens; the restored copy sells on, past the size the
    // monitor kept, in another history: it is then beside the monitor's
    // checkpoints, not behind, and that does not hold them either.
    ok(run(
        db,
        &[
            "sales",
            "open",
            "--after-restore",
            "--data",
            &behind.display().to_string(),
        ],
    ));
    let behind_args = ["--data".to_owned(), behind.display().to_string()];
    let server = Server::start_with_args(&behind_args, db, &unthrottled_flags()).await;
    let reopened = status(&server.base).await;
    assert_eq!(reopened["sales_open"], true, "{reopened}");
    sell(&server.base, "dan", 5).await;
    drop(server);
    let restored = db.open_data_dir(&behind).await;
    let published = tresor::backup::checkpoint::Published::read(&state).unwrap();
    let standing = tresor::backup::checkpoint::standing(&restored.pool, &published)
        .await
        .unwrap();
    assert!(
        matches!(
            standing,
            tresor::backup::checkpoint::Standing::Diverged { .. }
        ),
        "{standing:?}"
    );
    assert!(
        standing.hold_reason().unwrap().contains("another history"),
        "{standing:?}"
    );
    drop(restored);
    let verify = run(
        db,
        &[
            "audit",
            "verify",
            "--checkpoint",
            &state.display().to_string(),
            "--data",
            &behind.display().to_string(),
        ],
    );
    assert_eq!(code(&verify), Some(1), "{}", describe(&verify));
}

/// `tresor sales status` of the data folder `data`: what it said, and
/// why sales are closed (empty when they are not).
/// A server started on `data` with `flags` holds its sales after the
/// restore; stopped, `sales status` prints (`said`) why (`why`).
async fn held_after_restore(db: &TestDb, data: &Path, flags: &[String]) -> (String, String) {
    let data_args = ["--data".to_owned(), data.display().to_string()];
    let server = Server::start_with_args(&data_args, db, flags).await;
    let held = status(&server.base).await;
    assert_eq!(held["closed_after_restore"], true, "{held}");
    assert_eq!(held["sales_open"], false, "{held}");
    drop(server);
    closed_because(db, data)
}

fn closed_because(db: &TestDb, data: &Path) -> (String, String) {
    let said = ok(run(
        db,
        &["sales", "status", "--data", &data.display().to_string()],
    ));
    let shown: Value = serde_json::from_str(&said).unwrap();
    let why = shown["closed_because"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (said, why)
}

async fn a_litestream_restore_behind_the_published_checkpoints_starts_with_sales_held_and_litestream_dies_with_the_server(
    db: &TestDb,
) {
    let Some(litestream) = litestream() else {
        return;
    };
    let outside = tempfile::tempdir().unwrap();
    let replica = outside.path().join("replica");
    let mut flags = unthrottled_flags();
    flags.extend(litestream_flags(&replica, &litestream));
    let server = Server::start(db, &flags).await;
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&replica).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "the replica's folder is {mode:o}");
    }
    let copier = started_children(server.pid()).await[0];
    // Killed at the end whatever happens (a SIGSTOPped litestream would
    // outlive the test otherwise).
    let _stopped = KillOnDrop(vec![copier]);
    sell(&server.base, "ana", 3).await;
    // Litestream ships the WAL (every second) with these sales; then it
    // stalls (stopped) while the server sells on and keeps what it publishes.
    let sold = crate::common::buying::count_plays(&db.connect().await).await;
    until_restorable(&litestream, &replica, sold).await;
    signal(copier, "STOP");
    sell(&server.base, "bea", 3).await;
    let kept = kept_file(db).await;
    // The database's own latest checkpoints, read with the server up.
    crate::kept::until_kept(db, &kept).await;

    // The server is SIGKILLed: its litestream goes with it.
    server.kill();
    let what = format!("litestream (pid {copier}) ending with the SIGKILLed server");
    until_true(
        what,
        Duration::from_secs(5),
        || async move { !running(copier) },
    )
    .await;

    // Litestream's restore: behind what the server published. A server
    // started on it, with no flag, holds sales.
    let restored = outside.path().join("restored");
    litestream_restore(&litestream, &replica, &restored);
    let (said, why) = held_after_restore(db, &restored, &unthrottled_flags()).await;
    assert!(
        why.contains("checkpoints this server last published"),
        "{said}"
    );
    assert!(why.contains("restored behind what was published"), "{said}");
}
