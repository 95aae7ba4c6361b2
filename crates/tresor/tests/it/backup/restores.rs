//! A restore behind the published checkpoint opens with sales closed; scheduled backups are made
//! and pruned while the server sells.

use super::*;

on_sqlite!(
    a_restore_behind_the_published_checkpoint_opens_with_sales_closed_until_the_operator_reopens,
    scheduled_backups_are_made_and_pruned_while_the_server_sells,
);

async fn a_restore_behind_the_published_checkpoint_opens_with_sales_closed_until_the_operator_reopens(
    db: &TestDb,
) {
    let (outside, backup) = one_backup(db).await;
    // The checkpoint as the backup has it: a restore holds it, sales open.
    let kept = outside.path().join("kept.checkpoint");
    db.tresor_ok(&["audit", "checkpoint", "--out", &kept.display().to_string()]);
    let kept_arg = kept.display().to_string();
    let published_kept = ["--published", kept_arg.as_str()];
    let said = db.restore(&backup, &outside.path().join("current"), &published_kept);
    assert!(said.contains("sales are open"), "{said}");

    // More is sold and the checkpoint published after the backup...
    let server = Server::start(db, &unthrottled_flags()).await;
    let client = cookie_client();
    register_and_deposit(&client, &server.base, "bea", 10_000).await;
    drop(server);
    db.tresor_ok(&["audit", "checkpoint", "--out", &kept.display().to_string()]);
    let published = std::fs::read_to_string(&kept).unwrap();

    // ...so a restore of the backup is behind it.
    let behind = outside.path().join("behind");
    let said = db.restore(&backup, &behind, &published_kept);
    assert!(
        said.contains("sales are closed: restored behind what was published"),
        "{said}"
    );
    let behind_args = ["--data".to_owned(), behind.display().to_string()];
    let mut flags = unthrottled_flags();
    flags.extend([
        "--published-checkpoint".to_owned(),
        kept.display().to_string(),
    ]);
    let server = Server::start_with_args(&behind_args, db, &flags).await;
    let status = get_json(&cookie_client(), &format!("{}/api/status", server.base)).await;
    assert_eq!(status["sales_open"], false, "{status}");
    assert_eq!(status["closed_after_restore"], true, "{status}");
    let client = cookie_client();
    register_and_deposit(&client, &server.base, "carl", 10_000).await;
    let (code, body) = buy(&client, &server.base, "after-restore-1").await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["error"]["code"], "sales_closed_after_restore",
        "{body}"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("restored from a backup"),
        "{body}"
    );
    let sales = ok(run(
        db,
        &[
            &["sales", "status"][..],
            &behind_args.iter().map(String::as_str).collect::<Vec<_>>(),
        ]
        .concat(),
    ));
    assert!(sales.contains("\"closed_after_restore\": true"), "{sales}");

    // The operator reopens (in the trail); the next purchase is sold, and
    // the server restarted with the same published checkpoint keeps them open.
    let args: Vec<&str> = [
        &["sales", "open", "--after-restore"][..],
        &behind_args.iter().map(String::as_str).collect::<Vec<_>>(),
    ]
    .concat();
    let said = ok(run(db, &args));
    assert!(said.contains("sales are open again"), "{said}");
    refused(run(db, &args), "not closed after a restore");
    let (code, body) = buy(&client, &server.base, "after-restore-2").await;
    assert_eq!(code, 201, "{body}");
    // Sales open, the server keeps the restored history's checkpoints in
    // the installation's file, over those the first server kept (a moment
    // later: the restart below reads that file, which must be this one's).
    let servers_kept = kept_file(&db.connect().await).await;
    until_kept(&servers_kept, |latest| {
        let out = [
            "audit",
            "checkpoint",
            "--out",
            &latest.display().to_string(),
        ];
        let behind: Vec<&str> = behind_args.iter().map(String::as_str).collect();
        ok(run(db, &[&out[..], &behind].concat()));
    })
    .await;
    drop(server);
    let restored = open_sqlite(&behind, db).await;
    let actions: Vec<String> = sqlx::query_scalar("SELECT action FROM trail ORDER BY seq")
        .fetch_all(&restored.pool)
        .await
        .unwrap();
    for action in [
        "restored",
        "sales_held_after_restore",
        "sales_opened_after_restore",
    ] {
        assert!(
            actions.iter().any(|a| a == action),
            "{action} in {actions:?}"
        );
    }
    assert_trail_verifies(&restored).await;
    drop(restored);
    // Restarted with the same kept checkpoint (which its trail, another
    // history from the backup on, does not hold), it does not close sales
    // again: the operator has acknowledged that one.
    let server = Server::start_with_args(&behind_args, db, &flags).await;
    let status = get_json(&cookie_client(), &format!("{}/api/status", server.base)).await;
    assert_eq!(status["closed_after_restore"], false, "{status}");
    assert_eq!(status["sales_open"], true, "{status}");
    assert!(published.contains("\n\n— "), "signed notes: {published}");
}

async fn scheduled_backups_are_made_and_pruned_while_the_server_sells(db: &TestDb) {
    let outside = tempfile::tempdir().unwrap();
    let backups = outside.path().join("backups");
    let mut flags = unthrottled_flags();
    flags.extend(
        [
            "--backup-dir",
            &backups.display().to_string(),
            "--backup-every",
            "1s",
            "--backup-keep",
            "2",
        ]
        .map(str::to_owned),
    );
    let server = Server::start(db, &flags).await;
    let load = sell(&server.base, 2).await;
    let mut seen = std::collections::BTreeSet::new();
    // A new backup is complete before the oldest goes: three are there for
    // the moment between, never more; then two again.
    let mut kept_two = false;
    until_true(
        "four backups made, then two kept",
        Duration::from_secs(60),
        || {
            if backups.exists() {
                let now = tresor::backup::list(&backups).unwrap();
                assert!(now.len() <= 3, "{now:?}");
                kept_two |= seen.len() >= 4 && now.len() == 2;
                seen.extend(now);
            }
            let done = seen.len() >= 4 && kept_two;
            async move { done }
        },
    )
    .await;
    for sold in load.stop().await {
        assert!(sold.iter().any(|p| p.status == 201));
    }
    let newest = tresor::backup::list(&backups).unwrap().pop().unwrap();
    db.restore(&newest, &outside.path().join("restored"), &[]);
    drop(server);
}
