//! The checkpoints a monitor keeps are the one file every command takes; a checkpoint the log
//! does not hold names where it differs.

use super::*;

on_both!(
    the_checkpoints_a_monitor_keeps_are_the_one_file_every_command_takes,
    a_checkpoint_given_that_the_log_does_not_hold_names_where_it_differs,
);

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
        assert_intact_against(db, given);
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
    assert_intact_against(db, &out);

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
