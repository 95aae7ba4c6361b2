//! Restores behind the monitor's or the published checkpoints start with sales held, and
//! litestream dies with the server.

use super::*;
use crate::common::mirror::copy_dir;
use crate::common::procs::{children, litestream};

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
    let current = outside.path().join("current");
    let said = ok(run(
        db,
        &[
            "restore",
            "--from",
            &backup.display().to_string(),
            "--data",
            &current.display().to_string(),
            "--published",
            &early.display().to_string(),
        ],
    ));
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
    let said = ok(run(
        db,
        &[
            "restore",
            "--from",
            &backup.display().to_string(),
            "--data",
            &behind.display().to_string(),
            "--published",
            &state.display().to_string(),
        ],
    ));
    assert!(
        said.contains("sales are closed: restored behind what was published"),
        "{said}"
    );
    let mut flags = unthrottled_flags();
    flags.extend([
        "--published-checkpoint".to_owned(),
        kept.display().to_string(),
    ]);
    let behind_args = ["--data".to_owned(), behind.display().to_string()];
    let server = Server::start_with_args(&behind_args, db, &flags).await;
    let held = status(&server.base).await;
    assert_eq!(held["closed_after_restore"], true, "{held}");
    drop(server);
    // `sales status` says why.
    let said = ok(run(
        db,
        &["sales", "status", "--data", &behind.display().to_string()],
    ));
    let shown: Value = serde_json::from_str(&said).unwrap();
    let why = shown["closed_because"].as_str().unwrap_or_default();
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
    let server = Server::start_with_args(&behind_args, db, &unthrottled_flags()).await;
    let reopened = status(&server.base).await;
    assert_eq!(reopened["sales_open"], true, "{reopened}");
    sell(&server.base, "dan", 5).await;
    drop(server);
    let restored = crate::common::db::signed(
        tresor::store::Db::open_data_dir(&behind)
            .await
            .unwrap()
            .with_secrets_key(db.secrets_key.clone()),
    )
    .await;
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

/// Whether `pid` still runs (a zombie waiting for its reaper does not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

fn signal(pid: u32, name: &str) {
    let _ = std::process::Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status();
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
    flags.extend([
        "--replicate-to".to_owned(),
        replica.display().to_string(),
        "--litestream".to_owned(),
        litestream.display().to_string(),
    ]);
    let server = Server::start(db, &flags).await;
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&replica).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "the replica's folder is {mode:o}");
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let copier = loop {
        if let Some(&pid) = children(server.pid()).first() {
            break pid;
        }
        assert!(
            Instant::now() < deadline,
            "tresor serve never started litestream"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    sell(&server.base, "ana", 3).await;
    // Litestream ships the WAL every second; then it stalls (stopped) while
    // the server sells on and keeps what it publishes.
    tokio::time::sleep(Duration::from_secs(3)).await;
    signal(copier, "STOP");
    sell(&server.base, "bea", 3).await;
    let kept = kept_file(db).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let latest = outside.path().join("latest.checkpoint");
    loop {
        // The database's own latest checkpoints, read with the server up.
        let output = run(
            db,
            &[
                "audit",
                "checkpoint",
                "--out",
                &latest.display().to_string(),
                "--data",
                &db.data_dir().unwrap().display().to_string(),
            ],
        );
        ok(output);
        if std::fs::read_to_string(&kept).ok() == std::fs::read_to_string(&latest).ok() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the server never kept its latest checkpoints in {kept:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The server is SIGKILLed: its litestream goes with it.
    server.kill();
    let deadline = Instant::now() + Duration::from_secs(5);
    while running(copier) {
        if Instant::now() > deadline {
            signal(copier, "KILL");
            panic!("litestream (pid {copier}) outlived the SIGKILLed server");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Litestream's restore: behind what the server published. A server
    // started on it, with no flag, holds sales.
    let restored = outside.path().join("restored");
    std::fs::create_dir(&restored).unwrap();
    let output = std::process::Command::new(&litestream)
        .args(["restore", "-o"])
        .arg(restored.join("tresor.db"))
        .arg(format!("file://{}", replica.display()))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", describe(&output));
    let restored_args = ["--data".to_owned(), restored.display().to_string()];
    let server = Server::start_with_args(&restored_args, db, &unthrottled_flags()).await;
    let status = status(&server.base).await;
    assert_eq!(status["closed_after_restore"], true, "{status}");
    assert_eq!(status["sales_open"], false, "{status}");
    drop(server);
    let said = ok(run(
        db,
        &["sales", "status", "--data", &restored.display().to_string()],
    ));
    let shown: Value = serde_json::from_str(&said).unwrap();
    let why = shown["closed_because"].as_str().unwrap_or_default();
    assert!(
        why.contains("checkpoints this server last published"),
        "{said}"
    );
    assert!(why.contains("restored behind what was published"), "{said}");
}
