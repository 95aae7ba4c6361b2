//! Block secrets at rest: sealed under a key kept outside the database, on
//! SQLite and on PostgreSQL, through the real `tresor` binary. No secret is
//! stored in clear (not in the file's bytes, not in the table, not in the
//! trail); an older database's clear secrets are sealed at its first start; a
//! wrong key is refused and changes nothing; a rotation re-seals every secret
//! under the new key and leaves every outcome as it was.

use crate::common::{
    TestDb, assert_exit, block_secrets, describe, execute, player, purchase, texts,
};
use serde_json::Value;
use std::process::Output;
use tresor::seal::SecretsKey;
use tresor_game::{BlockSecret, block_outcomes};

/// Runs `tresor` on `db` with `key` instead of the database's own.
fn tresor_with_key(db: &TestDb, key: &str, args: &[&str]) -> Output {
    let mut command = crate::common::tresor_command();
    command.args(args).args(db.db_args());
    db.env(&mut command);
    command.env("TRESOR_SECRETS_KEY", key);
    command.output().expect("run the tresor binary")
}

/// The published secrets of every block, from `tresor emission list --json`.
fn published_secrets(db: &TestDb) -> Vec<BlockSecret> {
    let out = db.tresor_ok(&["emission", "list", "--json"]);
    let emissions: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    emissions
        .as_array()
        .expect("emissions")
        .iter()
        .flat_map(|e| e["blocks"].as_array().expect("blocks").clone())
        .map(|b| BlockSecret::parse_hex(b["secret"].as_str().expect("published")).expect("hex"))
        .collect()
}

/// Every byte the database keeps: the SQLite files, or on PostgreSQL the
/// blocks, settings and trail tables as text.
async fn stored_bytes(db: &TestDb) -> Vec<u8> {
    match db.data_dir() {
        Some(dir) => {
            let mut bytes = Vec::new();
            for entry in std::fs::read_dir(dir).expect("the data folder") {
                let path = entry.expect("an entry").path();
                if path.is_file() {
                    bytes.extend(std::fs::read(&path).expect("a database file"));
                }
            }
            bytes
        }
        None => {
            let store = db.connect().await;
            let mut text = String::new();
            for table in ["blocks", "settings", "trail"] {
                let rows: Vec<String> =
                    sqlx::query_scalar(&format!("SELECT CAST(t.* AS TEXT) FROM {table} t"))
                        .fetch_all(&store.pool)
                        .await
                        .expect("a table as text");
                text.push_str(&rows.join("\n"));
            }
            store.pool.close().await;
            text.into_bytes()
        }
    }
}

/// Whether `haystack` holds `secret`, raw or in hex (either case).
fn holds(haystack: &[u8], secret: &BlockSecret) -> bool {
    let raw = secret.as_bytes();
    let hex_lower = hex::encode(raw);
    let hex_upper = hex::encode_upper(raw);
    haystack.windows(32).any(|w| w == raw)
        || [hex_lower.as_bytes(), hex_upper.as_bytes()]
            .iter()
            .any(|h| haystack.windows(64).any(|w| w == *h))
}

async fn no_block_secret_is_stored_in_clear(db: &TestDb) {
    db.tresor_ok(&["emission", "create", "--blocks", "2"]);
    {
        let (service, _) = db.service().await;
        let ana = player(&service, "ana").await;
        service.credit(&ana, 1_000).await.expect("credit");
        service.buy(&ana, purchase(100, "k1")).await.expect("buy");
        service.db.pool.close().await;
    }
    db.tresor_ok(&["emission", "close", "1"]);
    let secrets = published_secrets(db);
    assert_eq!(secrets.len(), 6);
    let stored = stored_bytes(db).await;
    assert!(!stored.is_empty());
    for secret in &secrets {
        assert!(!holds(&stored, secret), "a block secret is stored in clear");
    }
    let store = db.connect().await;
    let clear: Vec<Vec<u8>> = sqlx::query_scalar("SELECT secret FROM blocks")
        .fetch_all(&store.pool)
        .await
        .unwrap();
    assert!(clear.iter().all(Vec::is_empty), "the clear column is empty");
    // Published, each secret still matches its commitment.
    let published = block_secrets(&store).await;
    assert!(!secrets.is_empty(), "blocks to compare");
    assert_eq!(published.len(), secrets.len(), "every block's secret");
    for ((id, secret), shown) in published.iter().zip(&secrets) {
        assert_eq!(secret.as_bytes(), shown.as_bytes(), "block {id}");
    }
}

async fn the_clear_secrets_of_an_older_database_are_sealed_at_its_first_start(db: &TestDb) {
    // A database as it was before sealing: secrets in clear, no key check.
    let secrets = {
        let (service, _) = db.service_selling("Old").await;
        let secrets = block_secrets(&service.db).await;
        for (id, secret) in &secrets {
            sqlx::query("UPDATE blocks SET secret = $1, sealed_secret = NULL WHERE id = $2")
                .bind(secret.as_bytes().to_vec())
                .bind(*id)
                .execute(&service.db.pool)
                .await
                .unwrap();
        }
        execute(
            &service.db.pool,
            &["DELETE FROM settings WHERE key = 'secrets_key_check'"],
        )
        .await;
        service.db.pool.close().await;
        secrets
    };
    // The first start with a key seals them.
    db.tresor_ok(&["emission", "list"]);
    let stored = stored_bytes(db).await;
    for (id, secret) in &secrets {
        assert!(
            !holds(&stored, secret),
            "block {id}'s secret is still in clear"
        );
    }
    let store = db.connect().await;
    let sealed = block_secrets(&store).await;
    assert_same_secrets(&secrets, &sealed);
    let actions = texts(
        &store.pool,
        "SELECT action FROM trail WHERE action = 'secrets_sealed'",
    )
    .await;
    assert_eq!(actions.len(), 1, "the sealing is in the trail once");
    store.pool.close().await;
    // A second start has nothing left to seal.
    db.tresor_ok(&["emission", "list"]);
    let store = db.connect().await;
    let count: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM trail WHERE action = 'secrets_sealed'")
            .fetch_one(&store.pool)
            .await
            .unwrap();
    assert_eq!(count, 1);
}

/// The blocks and the trail, to compare before and after a refused command.
async fn snapshot(db: &TestDb) -> (Vec<(i64, Vec<u8>, String)>, i64) {
    let store = db.connect().await;
    let blocks: Vec<(i64, Vec<u8>, String)> =
        sqlx::query_as("SELECT id, sealed_secret, state FROM blocks ORDER BY id")
            .fetch_all(&store.pool)
            .await
            .unwrap();
    let trail: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM trail")
        .fetch_one(&store.pool)
        .await
        .unwrap();
    store.pool.close().await;
    (blocks, trail)
}

async fn a_wrong_key_is_refused_with_a_clear_error_and_changes_nothing(db: &TestDb) {
    db.tresor_ok(&["emission", "create", "--blocks", "1"]);
    let before = snapshot(db).await;
    let wrong = SecretsKey::generate().to_hex();
    for args in [
        &["emission", "list"][..],
        &["emission", "close", "1"],
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
        ],
    ] {
        let out = tresor_with_key(db, &wrong, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", describe(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("wrong secrets key"), "{args:?}: {stderr}");
    }
    // A key file that is not there is not replaced by a new key.
    let missing = tempfile::tempdir().unwrap();
    let path = missing.path().join("none.key");
    let mut command = crate::common::tresor_command();
    command.args(["emission", "list"]).args(db.db_args());
    db.env(&mut command);
    command
        .env_remove("TRESOR_SECRETS_KEY")
        .arg("--secrets-key-file")
        .arg(&path);
    let out = command.output().unwrap();
    assert_exit(&out, 1);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no secrets key at"));
    assert!(!path.exists(), "no new key was made for a sealed database");
    assert_eq!(snapshot(db).await, before, "nothing changed");
}

async fn a_rotation_reseals_every_secret_under_the_new_key_and_keeps_every_outcome(db: &TestDb) {
    let (service, _) = db.service_selling("Rot").await;
    let ana = player(&service, "ana").await;
    service.credit(&ana, 10_000).await.expect("credit");
    // A player's identity document, sealed under the same key.
    let mut registration =
        tresor::service::Registration::parse("bea", "a long password", true, true).unwrap();
    registration.opening = Some(tresor::service::Opening {
        identity: tresor::account::Identity::parse(
            "Durand",
            "Bea",
            "1990-01-01",
            "Lyon",
            "1 rue de la Paix, 75002 Paris",
            None,
        )
        .unwrap(),
        marketing_consent: false,
        iban: None,
    });
    let bea = service.register(registration).await.expect("bea opens");
    let document = service
        .upload_document(
            &bea,
            tresor::account::documents::DocumentKind::Identity,
            "id.jpg",
            crate::common::opening::JPEG.to_vec(),
        )
        .await
        .expect("a document");
    let before = block_secrets(&service.db).await;
    for n in 0..3 {
        service
            .buy(&ana, purchase(100, &format!("b{n}")))
            .await
            .expect("buy");
    }
    service.db.pool.close().await;
    drop(service);

    let folder = tempfile::tempdir().unwrap();
    let new_file = folder.path().join("new.key");
    let path = new_file.to_str().unwrap();
    let out = db.tresor_ok(&["secrets", "rotate", "--new-key-file", path]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("re-sealed 3 block secrets"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&new_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the new key file is the owner's only");
    }
    let new_key = std::fs::read_to_string(&new_file).unwrap();

    // The old key is refused from now on; the new one opens the same secrets.
    let out = db.tresor(&["emission", "list"]);
    assert_exit(&out, 1);
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrong secrets key"));
    let out = tresor_with_key(db, new_key.trim(), &["emission", "list"]);
    assert_exit(&out, 0);

    let store = tresor::store::Db::connect(&db.url)
        .await
        .unwrap()
        .with_secrets_key(SecretsKey::parse_hex(&new_key).unwrap());
    let after = block_secrets(&store).await;
    assert_same_secrets(&before, &after);
    let rotated: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM trail WHERE action = 'secrets_rotated'")
            .fetch_one(&store.pool)
            .await
            .unwrap();
    assert_eq!(rotated, 1, "the rotation is in the trail");
    let result: String =
        sqlx::query_scalar("SELECT result FROM trail WHERE action = 'secrets_rotated'")
            .fetch_one(&store.pool)
            .await
            .unwrap();
    assert!(result.contains("\"documents_resealed\":1"), "{result}");
    // Units sold after the rotation still come from the same shuffle.
    let service = tresor::service::Service::new(
        store,
        std::sync::Arc::new(tresor::service::ManualClock::new(crate::common::START_MS)),
        tresor::service::Settings::default(),
    );
    service.open_secrets().await.expect("the new key opens");
    // The identity document opens under the new key, the same file.
    let (_, file) = service
        .document_file(document.id)
        .await
        .expect("the document opens after the rotation");
    assert_eq!(file, crate::common::opening::JPEG);
    service
        .buy(&ana, purchase(100, "after"))
        .await
        .expect("buy after the rotation");
    let plays: Vec<(i64, i64, i64)> =
        sqlx::query_as("SELECT block_id, unit_index, level FROM plays ORDER BY id")
            .fetch_all(&service.db.pool)
            .await
            .unwrap();
    assert_eq!(plays.len(), 4);
    for (block, index, level) in plays {
        let secret = &after.iter().find(|(id, _)| *id == block).unwrap().1;
        assert_eq!(
            i64::from(block_outcomes(secret)[index as usize].get()),
            level,
            "unit {index} of block {block}"
        );
    }
}

on_both!(
    no_block_secret_is_stored_in_clear,
    the_clear_secrets_of_an_older_database_are_sealed_at_its_first_start,
    a_wrong_key_is_refused_with_a_clear_error_and_changes_nothing,
    a_rotation_reseals_every_secret_under_the_new_key_and_keeps_every_outcome,
);

/// The same blocks (some) with the same secrets, read before and after.
fn assert_same_secrets(before: &[(i64, BlockSecret)], after: &[(i64, BlockSecret)]) {
    assert!(!before.is_empty(), "blocks to compare");
    assert_eq!(
        after.iter().map(|(id, _)| id).collect::<Vec<_>>(),
        before.iter().map(|(id, _)| id).collect::<Vec<_>>(),
        "the same blocks"
    );
    for ((id, a), (_, b)) in before.iter().zip(after) {
        assert_eq!(a.as_bytes(), b.as_bytes(), "block {id} keeps its secret");
    }
}
