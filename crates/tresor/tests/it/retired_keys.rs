//! A retired log key's last size per log (issue 42, finding 6;
//! docs/AUDIT.md, "Keys: custody and rotation"): `GET /log/` lists it with
//! the key; the writer records it when it first signs a log whose last
//! checkpoint the retired key signed; a database rotated before the record
//! existed has it found once by a scan of its checkpoints (asked for by
//! migration 0025), to the same sizes. Each test on SQLite and PostgreSQL.

mod browser;

use crate::common::{START_MS, TestDb, execute, player};
use serde_json::{Value, json};
use tresor::logkey::LogSeed;
use tresor::service::Service;
use tresor::store::Db;

on_both!(
    a_writer_records_the_last_size_of_a_retired_key_and_a_scan_finds_the_same,
    migration_0025_asks_for_the_scan_only_where_a_key_was_rotated,
);

/// What `/log/` lists of the keys.
async fn listed_keys(service: &Service) -> Value {
    let index = service.log_index().await.expect("the listing");
    json!({ "key": index.key, "keys": index.keys })
}

async fn backfill_due(db: &Db) -> bool {
    sqlx::query_scalar::<_, String>(
        "SELECT value FROM settings WHERE key = 'log_key_ends_backfill'",
    )
    .fetch_optional(&db.pool)
    .await
    .expect("read the settings")
    .is_some()
}

async fn a_writer_records_the_last_size_of_a_retired_key_and_a_scan_finds_the_same(db: &TestDb) {
    let (service, _clock) = db.service().await;
    let ann = player(&service, "ann").await;
    service.credit(&ann, 100).await.expect("credit");
    let old = service
        .db
        .log_key
        .as_ref()
        .expect("signed")
        .vkey()
        .to_owned();
    let new = LogSeed::generate();
    let new_vkey = service
        .rotate_log_key(tresor::trail::Actor::Operator, &new)
        .await
        .expect("rotate");
    let (origin, rotated): (String, i64) = sqlx::query_as(
        "SELECT l.origin, MAX(c.size) FROM checkpoints c JOIN logs l ON l.id = c.log_id \
         GROUP BY l.origin",
    )
    .fetch_one(&service.db.pool)
    .await
    .expect("the one log");
    // Its server not started again yet: the old key's last size is the
    // latest checkpoint, the rotation's own.
    let expected = json!({"key": new_vkey, "keys": [
        {"vkey": old, "since_ms": START_MS, "last_signed": [{"origin": origin, "size": rotated}]},
        {"vkey": new_vkey, "since_ms": START_MS},
    ]});
    assert_eq!(listed_keys(&service).await, expected);
    drop(service);

    // Started again with the new key: the writer records the old key's end
    // as it takes its log, then signs past it with the new key.
    let service = crate::common::trail::service_signing_with(db, &new).await;
    service.credit(&ann, 100).await.expect("credit");
    let recorded: Vec<(String, i64)> = sqlx::query_as("SELECT vkey, size FROM log_key_ends")
        .fetch_all(&service.db.pool)
        .await
        .expect("the ends");
    assert_eq!(recorded, vec![(old.clone(), rotated)]);
    assert_eq!(listed_keys(&service).await, expected);

    // As a database rotated before the ends were recorded: none kept, the
    // scan asked for. It finds the same, once.
    execute(&service.db.pool, &["DELETE FROM log_key_ends"]).await;
    execute(
        &service.db.pool,
        &["INSERT INTO settings (key, value) VALUES ('log_key_ends_backfill', 'due')"],
    )
    .await;
    tresor::trail::retired::backfill(&service.db)
        .await
        .expect("the scan");
    assert_eq!(listed_keys(&service).await, expected);
    assert!(!backfill_due(&service.db).await, "done once");
}

async fn migration_0025_asks_for_the_scan_only_where_a_key_was_rotated(db: &TestDb) {
    let pool = db.migrated_before(25).await;
    for (vkey, since_ms) in [("tresor/a+00000000+AQ", 1_i64), ("tresor/a+11111111+AQ", 2)] {
        sqlx::query("INSERT INTO log_keys (vkey, since_ms) VALUES ($1, $2)")
            .bind(vkey)
            .bind(since_ms)
            .execute(&pool)
            .await
            .expect("a key");
    }
    drop(pool);
    assert!(
        backfill_due(&db.connect().await).await,
        "two keys: a rotation"
    );
    let fresh = TestDb::new(db.backend).await.expect("another database");
    assert!(!backfill_due(&fresh.connect().await).await, "no key yet");
}
