//! What a new database is (issue 44): one without a schema, or one whose
//! schema nothing was written into (`Db::fresh`). A PostgreSQL test
//! database starts migrated (a copy of a template), and a demo server
//! started on it must still make the demo's emissions, as on a database it
//! creates; an operator's database, once anything was written into it,
//! must never be taken for a new one (a demo server would make its
//! emissions in it, and `--demo` would switch demo money on).

use crate::common::{Server, TestDb};
use tresor::store::Db;

on_both!(
    a_migrated_database_nothing_was_written_into_is_new,
    an_operators_database_is_never_taken_for_a_new_one,
);

/// Whether a connection to `url` finds a new database.
async fn fresh(url: &str) -> bool {
    let db = Db::connect(url).await.expect("connect");
    let fresh = db.fresh;
    db.pool.close().await;
    fresh
}

async fn a_migrated_database_nothing_was_written_into_is_new(db: &TestDb) {
    assert!(fresh(&db.url).await, "a test database is new");
    assert!(fresh(&db.url).await, "migrated, nothing written: still new");
    let server = Server::start(db, &[]).await;
    let status: serde_json::Value = reqwest::get(format!("{}/api/status", server.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(status["demo"], true, "{status}");
    drop(server);
    assert!(!fresh(&db.url).await, "served once: not new");
    let (service, _) = db.service().await;
    let emissions = service.emissions().await.unwrap();
    assert!(
        emissions.iter().any(|e| e.name == "Démo"),
        "the demo's emissions were made: {emissions:?}"
    );
}

/// One thing an operator's first use writes, by itself, in SQL.
const MARKS: [(&str, &str); 5] = [
    (
        "a log key",
        "INSERT INTO log_keys (vkey, since_ms) VALUES ('k', 1)",
    ),
    (
        "the secrets' key check",
        "INSERT INTO settings (key, value) VALUES ('secrets_key_check', 'c')",
    ),
    (
        "a record of the trail",
        "INSERT INTO trail (seq, at_ms, actor, action, request, result, prev_hash, hash) \
             VALUES (1, 1, 'system', 'a', '{}', '{}', 'p', 'h')",
    ),
    (
        "a player",
        "INSERT INTO players (id, username, username_key, password_hash, account_id, \
             adult_declared_at_ms, rules_accepted_at_ms, created_at_ms) \
             VALUES (1, 'p', 'p', 'h', 1, 1, 1, 1)",
    ),
    (
        "an emission",
        "INSERT INTO emissions (id, name, state, created_at_ms) VALUES (1, 'e', 'open', 1)",
    ),
];

async fn an_operators_database_is_never_taken_for_a_new_one(db: &TestDb) {
    // The operator's first command opens it to write (its log key listed).
    db.tresor_ok(&["emission", "list"]);
    assert!(!fresh(&db.url).await, "opened by the operator: not new");
    db.assert_demo_refused();
    // Each thing a first use writes, alone, makes a database not new.
    for (what, insert) in MARKS {
        let other = TestDb::new(db.backend).await.expect("another database");
        assert!(fresh(&other.url).await, "{what}: new before");
        let conn = Db::connect(&other.url).await.expect("connect");
        sqlx::raw_sql(insert)
            .execute(&conn.pool)
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        conn.pool.close().await;
        assert!(!fresh(&other.url).await, "{what}: taken for a new database");
    }
}
