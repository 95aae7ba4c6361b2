//! The one check that a database's trail verifies from end to end (every
//! log against every checkpoint, as `tresor audit verify` does).

use tresor::store::Db;
use tresor::trail::{self, Verdict};

/// Verifies `db`'s trail, failing the test with the record where it
/// breaks; gives the number of records checked.
pub async fn assert_trail_verifies(db: &Db) -> i64 {
    match trail::verify(&db.pool, |_| {})
        .await
        .expect("verify the trail")
    {
        Verdict::Intact { records, .. } => records,
        Verdict::Broken { seq, reason } => panic!("the trail breaks at record {seq}: {reason}"),
    }
}

/// Waits (10 s at most) until the file `kept`, where a server keeps the
/// checkpoints it published, holds the database's latest ones, as
/// `write_latest(file)` writes them (`tresor audit checkpoint --out file`):
/// the server keeps them within a moment of their signing.
pub async fn until_kept(kept: &std::path::Path, write_latest: impl Fn(&std::path::Path)) {
    let outside = tempfile::tempdir().expect("a temporary folder");
    let latest = outside.path().join("latest.checkpoint");
    let what = format!("the server keeping its latest checkpoints in {kept:?}");
    super::wait::until_true(what, std::time::Duration::from_secs(10), || {
        write_latest(&latest);
        let same = std::fs::read_to_string(kept).ok() == std::fs::read_to_string(&latest).ok();
        async move { same }
    })
    .await;
}

/// The file where this test binary's servers keep the checkpoints they
/// published of `db`'s installation (`--kept-checkpoints`).
pub async fn kept_file(db: &Db) -> std::path::PathBuf {
    let installation: String =
        sqlx::query_scalar("SELECT value FROM settings WHERE key = 'installation_id'")
            .fetch_one(&db.pool)
            .await
            .expect("the installation's id");
    super::kept_checkpoints_dir().join(format!("tresor-{installation}.checkpoints"))
}

/// Gives the trail a few dozen records of every kind: an emission, two
/// players who log in, are credited and play three games each (with
/// `credit_after`, each is credited again after their games: a record
/// alone between two checkpoints), and an announcement last.
pub async fn some_activity(service: &tresor::service::Service, credit_after: bool) {
    service
        .create_emission("Test", &tresor_game::Stake::ALL, 1)
        .await
        .expect("create an emission");
    for name in ["alice", "bruno"] {
        let player = super::player(service, name).await;
        service.open_session(player.id).await.expect("login");
        service.credit(&player, 10_000).await.expect("credit");
        for game in 0..3 {
            let bought = service
                .buy(&player, super::purchase(100, &format!("{name}-{game}")))
                .await
                .expect("buy");
            for _ in 0..game + 1 {
                service.throw(&player, bought.play_id).await.expect("throw");
            }
        }
        if credit_after {
            service.credit(&player, 500).await.expect("credit");
        }
    }
    service
        .set_announcement(Some("Bonne chance".to_owned()))
        .await
        .expect("announce");
}

/// Lets the test edit the trail as an insider with every right would: the
/// append-only triggers go first.
pub async fn drop_guards(pool: &sqlx::AnyPool, backend: tresor::store::Backend) {
    use tresor::store::Backend;
    let statements: &[&str] = match backend {
        Backend::Sqlite => &[
            "DROP TRIGGER trail_no_update",
            "DROP TRIGGER trail_no_delete",
        ],
        Backend::Postgres => &[
            "DROP TRIGGER trail_append_only ON trail",
            "DROP TRIGGER trail_no_truncate ON trail",
        ],
    };
    for statement in statements {
        sqlx::query(statement)
            .execute(pool)
            .await
            .expect("drop a trigger");
    }
}

/// `tresor audit verify` with `args` on `db`: (exit code, stdout + stderr).
pub fn audit_verify(db: &super::TestDb, args: &[&str]) -> (Option<i32>, String) {
    let output = db.tresor(&[&["audit", "verify"][..], args].concat());
    (output.status.code(), super::describe(&output))
}

/// A service on `db` signing with `seed` (a key rotated to), its key
/// registered as the current one, its clock at [`super::START_MS`].
pub async fn service_signing_with(
    db: &super::TestDb,
    seed: &tresor::logkey::LogSeed,
) -> tresor::service::Service {
    let store = Db::connect(&db.url)
        .await
        .expect("connect")
        .with_secrets_key(db.secrets_key.clone())
        .with_log_seed(seed)
        .await
        .expect("named");
    store
        .register_log_key(0)
        .await
        .expect("the new key is current");
    let service = tresor::service::Service::new(
        store,
        std::sync::Arc::new(tresor::service::ManualClock::new(super::START_MS)),
        Default::default(),
    );
    service.open_secrets().await.expect("secrets");
    service
}

/// The text a site serves at `url` (a checkpoint, a tile), whatever its
/// status.
pub async fn fetch_text(url: &str) -> String {
    reqwest::get(url)
        .await
        .expect("the site answers")
        .text()
        .await
        .expect("a text")
}
