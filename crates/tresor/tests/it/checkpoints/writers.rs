//! Servers with no writer name append to logs of their own; a demo log key lives beside the
//! secrets key.

use super::*;

on_postgres!(
    two_servers_with_no_writer_name_append_to_logs_of_their_own_and_a_shared_name_is_warned
);

on_sqlite!(
    a_demo_log_key_lives_beside_the_secrets_key_and_an_old_one_is_moved_out_of_the_data_folder
);

/// `tresor serve` on `db` with no writer name (the harness's `Server` gives
/// one): the printed lines say what it warned of before it served.
async fn serve_unnamed(db: &TestDb, extra: &[&str]) -> Server {
    let mut flags: Vec<String> = extra.iter().map(|s| (*s).to_owned()).collect();
    flags.extend(unthrottled_flags());
    let mut command = Server::demo_command(db, &flags);
    command.env_remove("TRESOR_WRITER");
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
    assert_intact_against(db, &state);
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
