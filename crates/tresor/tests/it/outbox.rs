//! Issue 32, finding 5: the mail outbox (password reset links, address
//! confirmations) is private, on both databases. The reproduction: without
//! `--smtp-url`, `tresor serve` wrote mail to a shared, predictable folder
//! of the temporary folder (PostgreSQL) or the data folder's `outbox`,
//! folders 0755 and files 0644: any local user read any reset link.
//!
//! Now: the folder is 0700 and each message 0600; a folder another user
//! made first, or a symbolic link, is refused at start (exit 2, naming
//! it); with PostgreSQL and no folder named, the demo's outbox is a new
//! folder of random name; and outside demo mode the server starts only
//! with `--smtp-url` or `--mail-outbox` named (exit 2 otherwise).

use crate::common::process::{refused_at_start, serve_command};
use crate::common::wait::until;
use crate::common::{Server, TestDb, describe};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

const SECRET: &str = "8f3c2a71d94be6050a1f7c3e9d2b84f6a0c5e1d7b3f9284c6e0a5d1b7c3f9e2a";
const PAY_URL: &str = "https://pay.example/checkout?ref={deposit_id}";

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

/// A `tresor serve` process, killed when dropped.
struct Serving {
    base: String,
    /// Where it said mail goes, when no folder was named.
    said_outbox: Option<PathBuf>,
    _server: Server,
}

/// `tresor serve` on `db` with `args`, once it answers `/healthz`.
async fn serve(db: &TestDb, args: &[&str]) -> Serving {
    let mut command = serve_command(db, args);
    command.stderr(Stdio::null());
    let server = Server::spawn(command).await;
    // It says where mail goes before it says it is open.
    let said_outbox = server.printed.lines().iter().find_map(|line| {
        line.strip_prefix("mail (password resets) is written to ")
            .map(PathBuf::from)
    });
    Serving {
        base: server.base.clone(),
        said_outbox,
        _server: server,
    }
}

/// `tresor serve` on `db` with `args` exits 2 naming each of `named`,
/// without serving.
fn refused(db: &TestDb, args: &[&str], named: &[&str]) {
    let out = refused_at_start(serve_command(db, args), &format!("serve {args:?}"));
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for name in named {
        assert!(stderr.contains(name), "{args:?} names {name}: {stderr}");
    }
}

/// Opens an account with an e-mail address: its confirmation is mailed.
async fn open_with_email(base: &str, username: &str) {
    let client = crate::common::cookie_client();
    let body = json!({
        "username": username, "password": "a long password", "accept_rules": true,
        "identity": {
            "birth_name": format!("Name of {username}"), "first_names": "Test",
            "birth_date": "1990-01-01", "birth_place": "Nantes",
            "address": "1 rue de la Paix, 75002 Paris",
            "email": format!("{username}@example.org"),
        },
    });
    let (status, answer) =
        crate::common::post(&client, &format!("{base}/api/account/open"), &body, None)
            .await
            .expect("a JSON answer");
    assert_eq!(status, 201, "{answer}");
}

/// The `.eml` files of `dir`, once there are `at_least` (10 s at most).
async fn messages(dir: &Path, at_least: usize) -> Vec<PathBuf> {
    let what = format!("{at_least} messages in {dir:?}");
    until(what, Duration::from_secs(10), || {
        let found: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "eml"))
            .collect();
        async move { (found.len() >= at_least).then_some(found) }
    })
    .await
}

async fn the_demos_outbox_is_private_by_default(db: &TestDb) {
    let server = serve(db, &["--demo"]).await;
    let outbox = server
        .said_outbox
        .clone()
        .expect("the server says where mail goes");
    match db.data_dir() {
        // SQLite: the data folder's outbox.
        Some(data) => assert_eq!(outbox, data.join("outbox")),
        // PostgreSQL: a new folder of random name, not `tresor-mail`.
        None => {
            assert_eq!(outbox.parent(), Some(std::env::temp_dir().as_path()));
            let name = outbox.file_name().unwrap().to_str().unwrap();
            assert!(
                name.starts_with("tresor-outbox-") && name.len() > 30,
                "{name}"
            );
        }
    }
    open_with_email(&server.base, "mia").await;
    let found = messages(&outbox, 1).await;
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(mode(&outbox), 0o700, "{}", outbox.display());
    assert_eq!(mode(&found[0]), 0o600, "{}", found[0].display());
    assert!(
        std::fs::read_to_string(&found[0])
            .unwrap()
            .contains("mia@example.org")
    );
    drop(server);
    if db.data_dir().is_none() {
        // A second start makes a folder of its own.
        let again = serve(db, &["--demo"]).await;
        let other = again.said_outbox.clone().unwrap();
        assert_ne!(other, outbox);
        assert_eq!(mode(&other), 0o700);
        drop(again);
        let _ = std::fs::remove_dir_all(&other);
        let _ = std::fs::remove_dir_all(&outbox);
    }
}

async fn a_named_outbox_is_made_private_and_another_users_is_refused(db: &TestDb) {
    let root = tempfile::tempdir().unwrap();
    // This user's own folder, too open (an older installation's): made 0700.
    let own = root.path().join("own");
    std::fs::create_dir(&own).unwrap();
    std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o755)).unwrap();
    let own_arg = own.display().to_string();
    let server = serve(db, &["--demo", "--mail-outbox", &own_arg]).await;
    assert_eq!(server.said_outbox, None, "named: nothing to say");
    assert_eq!(mode(&own), 0o700);
    open_with_email(&server.base, "noa").await;
    let found = messages(&own, 1).await;
    assert_eq!(found.len(), 1);
    assert_eq!(mode(&found[0]), 0o600);
    drop(server);

    // A folder another user made first (anyone may write in it): refused.
    let theirs = root.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o777)).unwrap();
    if crate::common::given_to_another_user(&theirs) {
        let arg = theirs.display().to_string();
        refused(
            db,
            &["--demo", "--mail-outbox", &arg],
            &["another user", &arg],
        );
        assert_eq!(std::fs::read_dir(&theirs).unwrap().count(), 0);
    }
    // A symbolic link, even to this user's folder: refused.
    let link = root.path().join("link");
    std::os::unix::fs::symlink(&own, &link).unwrap();
    let arg = link.display().to_string();
    refused(db, &["--demo", "--mail-outbox", &arg], &["symbolic link"]);
}

async fn outside_demo_mode_mail_must_be_named(db: &TestDb) {
    // A database for real money (made by an operator's command).
    db.tresor_ok(&["emission", "list"]);
    let money = [
        "--payment-webhook-secret",
        SECRET,
        "--payment-pay-url",
        PAY_URL,
    ];
    refused(db, &money, &["--smtp-url", "--mail-outbox"]);
    // Named, it serves.
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("mail");
    let arg = dir.display().to_string();
    let server = serve(db, &[&money[..], &["--mail-outbox", &arg]].concat()).await;
    assert_eq!(mode(&dir), 0o700);
    drop(server);
}

on_both!(
    the_demos_outbox_is_private_by_default,
    a_named_outbox_is_made_private_and_another_users_is_refused,
    outside_demo_mode_mail_must_be_named,
);
