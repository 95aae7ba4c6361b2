//! PostgreSQL recovered to a chosen time has everything acknowledged before it.

use super::*;

on_postgres!(postgresql_recovered_to_a_chosen_time_has_everything_acknowledged_before_it);

/// The recovered server of the PITR drill, stopped when dropped.
struct Recovered<'a> {
    cluster: &'a Cluster,
    data: PathBuf,
}

impl Drop for Recovered<'_> {
    fn drop(&mut self) {
        self.cluster.stop_quietly(&self.data);
    }
}

async fn postgresql_recovered_to_a_chosen_time_has_everything_acknowledged_before_it(_h: &Harness) {
    // A primary of the test's own with WAL archiving into {root}/archive.
    let Some(cluster) = Cluster::primary_with(
        "archive_mode = on\n\
         archive_command = 'test ! -f {root}/archive/%f && cp %p {root}/archive/%f'\n",
    ) else {
        return;
    };
    let root = cluster.root().to_owned();
    let url = cluster.url("read-write");
    let flags = unthrottled_flags();
    let server = Server::start_on_url(&url, &flags).await;

    // Sell; take the base backup mid-load; sell on.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let tasks = sell(&server.base, 6, stop.clone()).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let base = root.join("base");
    let took = Instant::now();
    tokio::task::block_in_place(|| {
        cluster.run(
            "pg_basebackup",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &cluster.primary.port.to_string(),
                "-U",
                "postgres",
                "-D",
                &base.display().to_string(),
                "-X",
                "stream",
                "--checkpoint=fast",
                "--no-sync",
            ],
        )
    });
    eprintln!("pg_basebackup mid-load took {:?}", took.elapsed());
    tokio::time::sleep(Duration::from_millis(1000)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut before = Vec::new();
    for task in tasks {
        before.extend(task.await.unwrap());
    }
    // The time to recover to, as the server's clock says, once every
    // purchase above was answered; then more purchases after it.
    let target = cluster.psql(false, "SELECT clock_timestamp()");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let tasks = sell(&server.base, 3, stop.clone()).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut after = Vec::new();
    for task in tasks {
        after.extend(task.await.unwrap());
    }
    // What the server published, it keeps outside the database (its
    // --kept-checkpoints, the test binary's folder): within a moment, the
    // database's latest checkpoints.
    let kept_by_server = {
        let db = Db::connect(&url).await.unwrap();
        let installation: String =
            sqlx::query_scalar("SELECT value FROM settings WHERE key = 'installation_id'")
                .fetch_one(&db.pool)
                .await
                .unwrap();
        crate::common::kept_checkpoints_dir().join(format!("tresor-{installation}.checkpoints"))
    };
    let latest = root.join("latest.checkpoint");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut command = tresor_command();
        command.args([
            "audit",
            "checkpoint",
            "--out",
            &latest.display().to_string(),
        ]);
        command.args(["--database-url", &url]);
        ok(command.output().unwrap());
        if std::fs::read_to_string(&kept_by_server).ok() == std::fs::read_to_string(&latest).ok() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the server never kept its latest checkpoints in {kept_by_server:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(server);
    // The checkpoints a monitor kept, taken last.
    let kept = root.join("kept.checkpoint");
    let mut command = tresor_command();
    command.args([
        "audit",
        "checkpoint",
        "--out",
        &kept.display().to_string(),
        "--database-url",
        &url,
    ]);
    ok(command.output().unwrap());

    // The segment in progress is archived (archive_timeout does this in
    // production), then the machine is lost.
    let segment = cluster.psql(false, "SELECT pg_walfile_name(pg_switch_wal())");
    let deadline = Instant::now() + Duration::from_secs(30);
    while cluster.psql(false, "SELECT last_archived_wal FROM pg_stat_archiver") < segment {
        assert!(
            Instant::now() < deadline,
            "the archiver never archived {segment}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::task::block_in_place(|| cluster.kill(false));

    // Recovery: the base backup, the archive, the target time.
    let started = Instant::now();
    // PostgreSQL takes no port 0 to report back: a free one is probed.
    let port = free_port();
    {
        use std::io::Write;
        let mut conf = std::fs::OpenOptions::new()
            .append(true)
            .open(base.join("postgresql.conf"))
            .unwrap();
        write!(
            conf,
            "\nport = {port}\nrestore_command = 'cp {root}/archive/%f %p'\n\
             recovery_target_time = '{target}'\nrecovery_target_action = 'promote'\n",
            root = root.display()
        )
        .unwrap();
        std::fs::write(base.join("recovery.signal"), "").unwrap();
        cluster.give(&base);
    }
    let recovered = Recovered {
        cluster: &cluster,
        data: base.clone(),
    };
    tokio::task::block_in_place(|| {
        cluster.run(
            "pg_ctl",
            &[
                "-D",
                &base.display().to_string(),
                "-l",
                &root.join("recovered.log").display().to_string(),
                "-w",
                "-t",
                "60",
                "start",
            ],
        )
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while cluster.psql_at(port, "SELECT pg_is_in_recovery()") != "f" {
        assert!(
            Instant::now() < deadline,
            "the recovered server never left recovery"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let promoted = started.elapsed();
    let new_url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
    let db = Db::connect(&new_url).await.unwrap();
    let found = play_ids(&db).await;
    let acknowledged_before: Vec<i64> = before
        .iter()
        .filter(|p| p.status == 201)
        .map(|p| p.play_id.unwrap())
        .collect();
    let acknowledged_after: Vec<i64> = after
        .iter()
        .filter(|p| p.status == 201)
        .map(|p| p.play_id.unwrap())
        .collect();
    assert!(acknowledged_before.len() > 20 && !acknowledged_after.is_empty());
    let lost: Vec<&i64> = acknowledged_before
        .iter()
        .filter(|id| !found.contains(id))
        .collect();
    assert!(
        lost.is_empty(),
        "acknowledged before the target time, not recovered: {lost:?}"
    );
    let past: Vec<&i64> = acknowledged_after
        .iter()
        .filter(|id| found.contains(id))
        .collect();
    assert!(
        past.is_empty(),
        "bought after the target time, yet recovered: {past:?}"
    );
    assert_ledger_balances(&db).await;
    assert_trail_verifies(&db).await;
    drop(db);
    let mut command = tresor_command();
    command.args(["audit", "consistency", "--database-url", &new_url]);
    ok(command.output().unwrap());

    // The auditor, given the kept checkpoints, sees the log shrank.
    let mut command = tresor_command();
    command.args([
        "audit",
        "verify",
        "--checkpoint",
        &kept.display().to_string(),
    ]);
    command.args(["--database-url", &new_url]);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("the log shrank"),
        "{}",
        describe(&output)
    );

    // Behind what the server published: started with no flag, it holds
    // sales on its own (from the checkpoints it kept).
    let server = Server::start_on_url(&new_url, &flags).await;
    let serving = started.elapsed();
    let status = get_json(&cookie_client(), &format!("{}/api/status", server.base)).await;
    assert_eq!(status["closed_after_restore"], true, "{status}");
    let mut command = tresor_command();
    command.args(["sales", "status", "--database-url", &new_url]);
    let said = ok(command.output().unwrap());
    assert!(
        said.contains("checkpoints this server last published")
            && said.contains("restored behind what was published"),
        "{said}"
    );
    let mut command = tresor_command();
    command.args([
        "sales",
        "open",
        "--after-restore",
        "--database-url",
        &new_url,
    ]);
    ok(command.output().unwrap());
    let client = cookie_client();
    register_and_deposit(&client, &server.base, "dora", 10_000).await;
    let (code, body) = post(
        &client,
        &format!("{}/api/plays", server.base),
        &json!({"stake_cents": 50}),
        Some("after-pitr"),
    )
    .await
    .unwrap();
    assert_eq!(code, 201, "{body}");
    eprintln!(
        "PITR: {} purchases acknowledged before the target time (all recovered), {} after it (none recovered); \
         recovered and promoted in {promoted:?}, tresor serving in {serving:?}",
        acknowledged_before.len(),
        acknowledged_after.len()
    );
    drop(server);
    drop(recovered);
}
