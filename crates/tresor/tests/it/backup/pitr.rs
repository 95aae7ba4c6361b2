//! PostgreSQL recovered to a chosen time has everything acknowledged before it.

use super::*;

on_postgres!(postgresql_recovered_to_a_chosen_time_has_everything_acknowledged_before_it);

/// `tresor` with `args` on the PostgreSQL database at `url`, which must
/// succeed: what it printed.
fn on_url(url: &str, args: &[&str]) -> String {
    ok(tresor_command()
        .args(args)
        .args(["--database-url", url])
        .output()
        .expect("run tresor"))
}

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
    let load = sell(&server.base, 6).await;
    // More than the 20 the test asks for before the base backup.
    load.acknowledges(30).await;
    let base = root.join("base");
    let took = Instant::now();
    tokio::task::block_in_place(|| cluster.base_backup(&base, &[]));
    eprintln!("pg_basebackup mid-load took {:?}", took.elapsed());
    // Purchases after the base backup: only the archive has them.
    load.acknowledges(20).await;
    let before: Vec<Purchase> = load.stop().await.concat();
    // The time to recover to, as the server's clock says, once every
    // purchase above was answered; then more purchases after it.
    let target = cluster.psql(false, "SELECT clock_timestamp()");
    // The target time must lie in the past of every later commit, by a
    // margin the recovery's timestamp comparison cannot blur: a fixed time
    // is the point here, no event marks it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let load = sell(&server.base, 3).await;
    load.acknowledges(10).await;
    let after: Vec<Purchase> = load.stop().await.concat();
    // What the server published, it keeps outside the database (its
    // --kept-checkpoints, the test binary's folder): within a moment, the
    // database's latest checkpoints.
    let kept_by_server = kept_file(&Db::connect(&url).await.unwrap()).await;
    until_kept(&kept_by_server, |latest| {
        on_url(
            &url,
            &[
                "audit",
                "checkpoint",
                "--out",
                &latest.display().to_string(),
            ],
        );
    })
    .await;
    drop(server);
    // The checkpoints a monitor kept, taken last.
    let kept = root.join("kept.checkpoint");
    on_url(
        &url,
        &["audit", "checkpoint", "--out", &kept.display().to_string()],
    );

    // The segment in progress is archived (archive_timeout does this in
    // production), then the machine is lost.
    let segment = cluster.psql(false, "SELECT pg_walfile_name(pg_switch_wal())");
    until_true(
        format!("the archiver archiving {segment}"),
        Duration::from_secs(30),
        || {
            let archived =
                cluster.psql(false, "SELECT last_archived_wal FROM pg_stat_archiver") >= segment;
            async move { archived }
        },
    )
    .await;
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
    until_true(
        "the recovered server leaving recovery",
        Duration::from_secs(60),
        || {
            let promoted = cluster.psql_at(port, "SELECT pg_is_in_recovery()") == "f";
            async move { promoted }
        },
    )
    .await;
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
    on_url(&new_url, &["audit", "consistency"]);

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
    let said = on_url(&new_url, &["sales", "status"]);
    assert!(
        said.contains("checkpoints this server last published")
            && said.contains("restored behind what was published"),
        "{said}"
    );
    on_url(&new_url, &["sales", "open", "--after-restore"]);
    let client = cookie_client();
    register_and_deposit(&client, &server.base, "dora", 10_000).await;
    let (code, body) = buy(&client, &server.base, "after-pitr").await;
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
