//! Issue 42, findings 4 and 5: the checkpoints a server keeps of what it
//! published (`--kept-checkpoints`, `backup/keeper.rs`).
//!
//! Before: a copy of the data folder started after its kept file was
//! deleted sold play 4 again, behind what was published, and said nothing;
//! the file was written under a predictable name with `File::create`,
//! through any link planted there, in any folder. Now: a database whose
//! checkpoints were kept knows where, and holds sales when the file is gone
//! (the reason in `tresor sales status`); the operator reopens after
//! checking, or names the folder the file moved to. The file is made new
//! under a random name (never through a link) and renamed; a kept folder
//! that is a link, another user's, or writable by group or others stops the
//! server at start, naming `--kept-checkpoints`.

use crate::common::process::{refused_at_start, serve_command};
use crate::common::{
    Server, TestDb, assert_exit, buy_and_play, cookie_client, describe, get_json, post,
    register_and_deposit, unthrottled_flags,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

on_both!(
    an_old_copy_started_without_its_kept_checkpoints_holds_sales_until_the_operator_reopens,
    a_kept_file_moved_with_its_folder_and_named_again_keeps_sales_open,
);
on_sqlite!(
    a_loose_foreign_or_linked_kept_folder_is_refused_at_start_naming_the_setting,
    a_link_planted_at_a_partial_name_is_never_written_through,
);

/// Sells `n` units to a new player `name`: the play ids.
async fn sell(base: &str, name: &str, n: usize) -> Vec<i64> {
    let client = cookie_client();
    register_and_deposit(&client, base, name, 10_000).await;
    let mut ids = Vec::new();
    for _ in 0..n {
        ids.push(
            buy_and_play(&client, base, 100).await["id"]
                .as_i64()
                .unwrap(),
        );
    }
    ids
}

/// Waits until `kept` holds `db`'s latest signed checkpoints (the server
/// keeps them within a moment of their signing).
pub(crate) async fn until_kept(db: &TestDb, kept: &Path) {
    crate::common::trail::until_kept(kept, |latest| {
        db.tresor_ok(&[
            "audit",
            "checkpoint",
            "--out",
            &latest.display().to_string(),
        ]);
    })
    .await;
}

/// `tresor sales status` on `db`: its JSON.
fn sales_status(db: &TestDb) -> Value {
    let output = db.tresor_ok(&["sales", "status"]);
    serde_json::from_slice(&output.stdout).unwrap()
}

async fn an_old_copy_started_without_its_kept_checkpoints_holds_sales_until_the_operator_reopens(
    db: &TestDb,
) {
    // Sold, stopped, copied.
    let server = Server::start(db, &unthrottled_flags()).await;
    let kept = crate::checkpoints::kept_file(db).await;
    assert_eq!(sell(&server.base, "ana", 3).await, [1, 2, 3]);
    until_kept(db, &kept).await;
    drop(server);
    let copy = db.copy().await;
    // Three more sold and published (kept), stopped.
    let server = Server::start(db, &unthrottled_flags()).await;
    assert_eq!(sell(&server.base, "bea", 3).await, [4, 5, 6]);
    until_kept(db, &kept).await;
    drop(server);

    // The copy put back, the kept file deleted: the copy is behind what was
    // published, and nothing outside it says so but what it knows itself.
    std::fs::remove_file(&kept).unwrap();
    let server = Server::start(&copy, &unthrottled_flags()).await;
    let client = cookie_client();
    register_and_deposit(&client, &server.base, "carl", 10_000).await;
    let (status, answer) = post(
        &client,
        &format!("{}/api/plays", server.base),
        &json!({"stake_cents": 100}),
        Some("0123456789abcdef0123456789abcdef"),
    )
    .await
    .unwrap();
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (403, Some("sales_closed_after_restore")),
        "the old copy sold again: {status} {answer}"
    );
    let shown = get_json(&client, &format!("{}/api/status", server.base)).await;
    assert_eq!(shown["closed_after_restore"], true, "{shown}");
    drop(server);
    let status = sales_status(&copy);
    let why = status["closed_because"].as_str().unwrap_or_default();
    for said in [
        "held after a restore",
        "kept",
        &kept.display().to_string(),
        "tresor sales open --after-restore",
        "--kept-checkpoints",
    ] {
        assert!(why.contains(said), "{said:?} not in {status}");
    }
    let held: Vec<String> = {
        let conn = copy.connect().await;
        sqlx::query_scalar("SELECT result FROM trail WHERE action = 'sales_held_after_restore'")
            .fetch_all(&conn.pool)
            .await
            .unwrap()
    };
    assert!(
        held.len() == 1 && held[0].contains("missing"),
        "the hold is in the trail: {held:?}"
    );

    // The operator checked and reopens: the copy's own checkpoints are kept
    // from now on, and a restart does not hold sales again.
    let reopened = copy.tresor_ok(&["sales", "open", "--after-restore"]);
    assert!(
        String::from_utf8_lossy(&reopened.stdout).contains("sales are open again"),
        "{}",
        describe(&reopened)
    );
    assert!(kept.exists(), "the reopening keeps the copy's checkpoints");
    let server = Server::start(&copy, &unthrottled_flags()).await;
    let shown = get_json(&cookie_client(), &format!("{}/api/status", server.base)).await;
    assert_eq!(shown["sales_open"], true, "{shown}");
    // It sells again, from where it is (PostgreSQL may skip an id).
    assert_eq!(sell(&server.base, "dan", 1).await.len(), 1);
}

async fn a_kept_file_moved_with_its_folder_and_named_again_keeps_sales_open(db: &TestDb) {
    let server = Server::start(db, &unthrottled_flags()).await;
    let kept = crate::checkpoints::kept_file(db).await;
    sell(&server.base, "ana", 2).await;
    until_kept(db, &kept).await;
    drop(server);
    // The operator moves the file to a folder of its own and names it.
    let elsewhere = tempfile::tempdir().unwrap();
    let moved = elsewhere.path().join(kept.file_name().unwrap());
    std::fs::rename(&kept, &moved).unwrap();
    let mut flags = unthrottled_flags();
    flags.extend([
        "--kept-checkpoints".to_owned(),
        elsewhere.path().display().to_string(),
    ]);
    let server = Server::start(db, &flags).await;
    let shown = get_json(&cookie_client(), &format!("{}/api/status", server.base)).await;
    assert_eq!(shown["sales_open"], true, "{shown}");
    assert_eq!(shown["closed_after_restore"], false, "{shown}");
    sell(&server.base, "bea", 1).await;
    until_kept(db, &moved).await;
}

/// `tresor serve` on `db` with `kept` as `--kept-checkpoints`: it must stop
/// at once (exit 2) naming the setting and the folder, and write nothing
/// there.
fn refused(db: &TestDb, kept: &Path, folder: &Path, why: &str) {
    let before = listing(folder);
    let kept = kept.display().to_string();
    let command = serve_command(db, &["--demo", "--kept-checkpoints", &kept]);
    let output = refused_at_start(command, &format!("--kept-checkpoints {kept}"));
    assert_exit(&output, 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    for said in ["--kept-checkpoints", &folder.display().to_string(), why] {
        assert!(stderr.contains(said), "{said:?}: {}", describe(&output));
    }
    assert_eq!(listing(folder), before, "nothing written in {folder:?}");
}

fn listing(folder: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(folder)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    found.sort();
    found
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

async fn a_loose_foreign_or_linked_kept_folder_is_refused_at_start_naming_the_setting(db: &TestDb) {
    let root = tempfile::tempdir().unwrap();
    // Writable by the group, or by anyone: refused, left as it is.
    for (name, mode) in [("group", 0o770), ("others", 0o703), ("anyone", 0o777)] {
        let loose = root.path().join(name);
        std::fs::create_dir(&loose).unwrap();
        chmod(&loose, mode);
        refused(db, &loose, &loose, "writable by");
        // Named as the file in it, too.
        refused(db, &loose.join("kept.checkpoints"), &loose, "writable by");
        use std::os::unix::fs::PermissionsExt;
        let now = std::fs::metadata(&loose).unwrap().permissions().mode() & 0o777;
        assert_eq!(now, mode, "the operator's folder is not changed");
    }
    // A symbolic link to a folder of this user's: refused.
    let own = root.path().join("own");
    std::fs::create_dir(&own).unwrap();
    chmod(&own, 0o700);
    let link = root.path().join("link");
    std::os::unix::fs::symlink(&own, &link).unwrap();
    refused(db, &link, &link, "symbolic link");
    refused(db, &link.join("kept.checkpoints"), &link, "symbolic link");
    assert_eq!(listing(&own), Vec::<PathBuf>::new());
    // Another user's (the tests run as root when they can give it away).
    let theirs = root.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    chmod(&theirs, 0o755);
    if crate::common::given_to_another_user(&theirs) {
        refused(db, &theirs, &theirs, "another user");
    }
    // This user's own private folder serves, and the file is made 0600.
    let mut flags = unthrottled_flags();
    flags.extend(["--kept-checkpoints".to_owned(), own.display().to_string()]);
    let server = Server::start(db, &flags).await;
    sell(&server.base, "ana", 1).await;
    let kept = own.join(crate::checkpoints::kept_file(db).await.file_name().unwrap());
    until_kept(db, &kept).await;
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the kept file is {mode:o}");
}

async fn a_link_planted_at_a_partial_name_is_never_written_through(db: &TestDb) {
    let folder = tempfile::tempdir().unwrap();
    let victim_dir = tempfile::tempdir().unwrap();
    let victim = victim_dir.path().join("copy-of-the-secrets.key");
    std::fs::write(&victim, "the server user's secret\n").unwrap();
    let kept = folder.path().join("kept.checkpoints");
    let mut flags = unthrottled_flags();
    flags.extend(["--kept-checkpoints".to_owned(), kept.display().to_string()]);
    let server = Server::start(db, &flags).await;
    sell(&server.base, "ana", 1).await;
    until_kept(db, &kept).await;
    drop(server);
    // Restarted: its file holds the latest, it writes again at the next
    // sale. Links wait at the names its writes used to take.
    let server = Server::start(db, &flags).await;
    for n in 0..64 {
        let name = format!("kept.partial.{}.{n}", server.pid());
        std::os::unix::fs::symlink(&victim, folder.path().join(name)).unwrap();
    }
    sell(&server.base, "bea", 2).await;
    until_kept(db, &kept).await;
    drop(server);
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "the server user's secret\n",
        "the keeper wrote through a planted link"
    );
    // The kept file is a file of its own; only the links planted are beside.
    let meta = std::fs::symlink_metadata(&kept).unwrap();
    assert!(meta.file_type().is_file(), "{meta:?}");
    for path in listing(folder.path()) {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert!(
            path == kept || meta.file_type().is_symlink(),
            "left behind: {path:?}"
        );
    }
}
