//! Bad backups (wrong keys, other installations, folders in use) and a destination inside the
//! data folder are refused, writing nothing.

use super::*;
use crate::common::mirror::copy_dir;
use crate::common::process::{refused_at_start, serve_command};

on_sqlite!(
    bad_backups_wrong_keys_other_installations_and_folders_in_use_are_refused_writing_nothing,
    a_backup_destination_inside_the_data_folder_is_refused,
);

async fn bad_backups_wrong_keys_other_installations_and_folders_in_use_are_refused_writing_nothing(
    db: &TestDb,
) {
    let (outside, backup) = one_backup(db).await;
    let target = outside.path().join("new");
    let restore = |from: &Path, extra: &[&str]| {
        let mut args = vec![
            "restore".to_owned(),
            "--from".to_owned(),
            from.display().to_string(),
            "--data".to_owned(),
            target.display().to_string(),
        ];
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run(db, &args)
    };
    let restore_into = |data: &Path| {
        let (from, data) = (backup.display().to_string(), data.display().to_string());
        run(db, &["restore", "--from", &from, "--data", &data])
    };
    let nothing_written = |what: &str| {
        assert!(!target.exists(), "{what}: the new folder was made");
        assert_eq!(
            names(outside.path()),
            ["backups"],
            "{what}: nothing is left beside it"
        );
    };

    // A truncated backup.
    let cut = outside.path().join("cut");
    copy_dir(&backup, &cut);
    let file = cut.join("tresor.db.gz");
    let length = std::fs::metadata(&file).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(length / 2)
        .unwrap();
    refused(restore(&cut, &[]), "checksum fails");
    std::fs::remove_dir_all(&cut).unwrap();
    nothing_written("truncated");

    // An altered one: one byte changed, sizes the same.
    let altered = outside.path().join("altered");
    copy_dir(&backup, &altered);
    let file = altered.join("tresor.db.gz");
    let mut bytes = std::fs::read(&file).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x5a;
    std::fs::write(&file, bytes).unwrap();
    refused(restore(&altered, &[]), "checksum fails");
    std::fs::remove_dir_all(&altered).unwrap();
    nothing_written("altered");

    // A wrong secrets key.
    let mut command = tresor_command();
    command
        .args(["restore", "--from", &backup.display().to_string()])
        .args(["--data", &target.display().to_string()])
        .env("TRESOR_SECRETS_KEY", "ab".repeat(32));
    refused(command.output().unwrap(), "wrong secrets key");
    nothing_written("wrong key");

    // A backup of another installation: the operator names theirs, or gives
    // their published checkpoint.
    refused(
        restore(
            &backup,
            &["--installation", "0123456789abcdef0123456789abcdef"],
        ),
        "another installation",
    );
    nothing_written("another installation");
    let other = TestDb::sqlite().await;
    other.tresor_ok(&["announce", "another installation"]);
    let checkpoint = outside.path().join("other.checkpoint");
    other.tresor_ok(&[
        "audit",
        "checkpoint",
        "--out",
        &checkpoint.display().to_string(),
    ]);
    let published = checkpoint.display().to_string();
    refused(
        restore(&backup, &["--published", &published]),
        "another installation",
    );
    std::fs::remove_file(&checkpoint).unwrap();
    nothing_written("another installation's checkpoint");

    // A folder in use by a server, and a folder with data in it.
    let server = Server::start(db, &[]).await;
    let in_use = db.data_dir().unwrap();
    let before = names(&in_use);
    refused(restore_into(&in_use), "in use by a tresor server");
    assert_eq!(names(&in_use), before);
    drop(server);
    let full = outside.path().join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("notes.txt"), "mine").unwrap();
    refused(restore_into(&full), "is not empty");
    assert_eq!(names(&full), ["notes.txt"]);

    // The good backup restores.
    ok(restore(&backup, &[]));
    let restored = open_sqlite(&target, db).await;
    assert_ledger_balances(&restored).await;
    assert_trail_verifies(&restored).await;
}

async fn a_backup_destination_inside_the_data_folder_is_refused(db: &TestDb) {
    db.tresor_ok(&["emission", "list"]);
    let data = db.data_dir().unwrap();
    let inside = data.join("backups");
    let before = names(&data);
    refused(
        db.tresor(&["backup", "--to", &inside.display().to_string()]),
        "inside the data folder",
    );
    refused(
        db.tresor(&["backup", "--to", &data.join("x/../y").display().to_string()]),
        "inside the data folder",
    );
    assert_eq!(names(&data), before, "nothing written");
    // Nor does a server start with a schedule there.
    let inside = inside.display().to_string();
    let command = serve_command(db, &["--backup-dir", &inside]);
    refused(
        refused_at_start(command, "a schedule inside the data folder"),
        "inside the data folder",
    );
}
