//! The trail as a signed transparency log (issue 20): an insider with every
//! right on the database but not the signing key edits, removes, inserts or
//! reorders records and recomputes everything the database holds — leaf
//! hashes, stored hashes, the log's size — even deleting the checkpoints
//! past the edit; `tresor audit verify` still names the record. A monitor's
//! checkpoint file catches a log cut short. The key is refused at start when
//! missing or wrong, and a rotation is followed. Each test runs on SQLite and
//! on PostgreSQL.

pub(crate) mod browser;

use crate::common::trail::{
    audit_verify as verify, drop_guards, service_signing_with, some_activity,
};
use crate::common::{TestDb, assert_exit, describe, execute, player, tresor_command};
use sqlx::{AnyPool, Row};
use std::collections::BTreeMap;
use tresor::logkey::LogSeed;
use tresor::service::Service;
use tresor::store::Db;
use tresor::trail::{self, COLUMNS, Record, Verdict};

/// The log of the writer `server` (the test's service): id, origin.
async fn server_log(pool: &AnyPool) -> (i64, String) {
    let row = sqlx::query("SELECT id, origin FROM logs WHERE writer = 'server'")
        .fetch_one(pool)
        .await
        .expect("the server's log");
    (row.get("id"), row.get("origin"))
}

async fn log_records(pool: &AnyPool, log_id: i64) -> Vec<Record> {
    sqlx::query(&format!(
        "SELECT {COLUMNS} FROM trail WHERE log_id = $1 ORDER BY idx"
    ))
    .bind(log_id)
    .fetch_all(pool)
    .await
    .expect("read the log")
    .iter()
    .map(|row| Record::from_row(row).expect("a record"))
    .collect()
}

/// The latest checkpoint note of a log, as a monitor keeps it.
async fn latest_note(pool: &AnyPool, log_id: i64) -> String {
    sqlx::query_scalar("SELECT note FROM checkpoints WHERE log_id = $1 ORDER BY size DESC LIMIT 1")
        .bind(log_id)
        .fetch_one(pool)
        .await
        .expect("a checkpoint")
}

/// The insider rewrites a log as `records` (in this order, numbered 0, 1,
/// 2 …), recomputing every leaf hash, stored hash and the log's size, as
/// the server would have; with `cut_checkpoints_after`, the checkpoints
/// past that size go too.
async fn rewrite(
    pool: &AnyPool,
    log_id: i64,
    origin: &str,
    mut records: Vec<Record>,
    cut_checkpoints_after: Option<u64>,
) {
    // The log's records, its stored hashes and those kept by tile.
    for table in ["trail", "log_hashes", "log_tiles"] {
        execute(
            pool,
            &[&format!("DELETE FROM {table} WHERE log_id = {log_id}")],
        )
        .await;
    }
    let mut hashes: BTreeMap<u64, tlog_tiles::Hash> = BTreeMap::new();
    for (idx, record) in records.iter_mut().enumerate() {
        record.idx = Some(idx as i64);
        let leaf = record.leaf(origin).hash();
        record.hash = hex::encode(leaf.0);
        let stored = tlog_tiles::stored_hashes_for_record_hash(
            idx as u64,
            leaf,
            &trail::log::MapReader(&hashes),
        )
        .expect("stored hashes");
        let first = tlog_tiles::stored_hash_index(0, idx as u64);
        for (offset, hash) in (0u64..).zip(stored) {
            hashes.insert(first + offset, hash);
        }
        sqlx::query(
            "INSERT INTO trail (seq, at_ms, actor, action, request, result, prev_hash, hash, \
             log_id, idx, salt) VALUES ($1, $2, $3, $4, $5, $6, '', $7, $8, $9, $10)",
        )
        .bind(record.seq)
        .bind(record.at_ms)
        .bind(&record.actor)
        .bind(&record.action)
        .bind(&record.request)
        .bind(&record.result)
        .bind(&record.hash)
        .bind(log_id)
        .bind(idx as i64)
        .bind(record.salt.clone())
        .execute(pool)
        .await
        .expect("write a record back");
    }
    for (index, hash) in &hashes {
        sqlx::query("INSERT INTO log_hashes (log_id, idx, hash) VALUES ($1, $2, $3)")
            .bind(log_id)
            .bind(*index as i64)
            .bind(hash.0.to_vec())
            .execute(pool)
            .await
            .expect("write a stored hash");
    }
    sqlx::query("UPDATE logs SET size = $1 WHERE id = $2")
        .bind(records.len() as i64)
        .bind(log_id)
        .execute(pool)
        .await
        .expect("the log's size");
    if let Some(after) = cut_checkpoints_after {
        sqlx::query("DELETE FROM checkpoints WHERE log_id = $1 AND size > $2")
            .bind(log_id)
            .bind(after as i64)
            .execute(pool)
            .await
            .expect("remove the checkpoints past the edit");
    }
}

/// Each tampering as a test of its own:
/// `name => check(tamper, checkpoints_cut)`.
macro_rules! tamperings {
    ($($name:ident => $check:ident($tamper:ident, $cut:expr);)*) => {
        $(async fn $name(db: &TestDb) {
            $check(db, Tamper::$tamper, $cut).await;
        })*
    };
}

#[derive(Debug, Clone, Copy)]
enum Tamper {
    Edit,
    Remove,
    Insert,
    Reorder,
}

/// One tampering, recomputed throughout; `cut`: the checkpoints past the
/// edit are removed too. Verify must name the record now at the edited leaf.
/// The insider's `tamper` at the log's last credit, recomputed
/// throughout (with `cut`, the checkpoints past it removed too): the log's
/// id and origin, the leaf tampered with and the record now there.
async fn tampered(
    db: &TestDb,
    pool: &AnyPool,
    tamper: Tamper,
    cut: bool,
) -> (i64, String, usize, i64) {
    let (log_id, origin) = server_log(pool).await;
    let mut records = log_records(pool, log_id).await;
    // A credit is a transaction of its own: one record between two
    // checkpoints, so the audit can name it exactly.
    let i = records
        .iter()
        .rposition(|r| r.action == "credit")
        .expect("a credit");
    assert!(i + 1 < records.len(), "not the last record");
    match tamper {
        Tamper::Edit => {
            records[i].result = records[i]
                .result
                .replace("\"balance_cents\":", "\"balance_cents\":9");
        }
        Tamper::Remove => {
            records.remove(i);
        }
        Tamper::Insert => {
            let mut forged = records[i].clone();
            forged.seq = 1_000_000;
            forged.request = r#"{"amount_cents":1000000,"player_id":1}"#.to_owned();
            forged.salt = Some("ab".repeat(32));
            records.insert(i, forged);
        }
        Tamper::Reorder => records.swap(i, i + 1),
    }
    let named = records[i].seq;
    drop_guards(pool, db.backend).await;
    rewrite(pool, log_id, &origin, records, cut.then_some(i as u64)).await;
    (log_id, origin, i, named)
}

async fn the_insider_is_caught(db: &TestDb, tamper: Tamper, cut: bool) {
    let (service, _clock) = db.service().await;
    some_activity(&service, true).await;
    let pool = service.db.pool.clone();
    let (code, out) = verify(db, &[]);
    assert_eq!(code, Some(0), "an untouched trail verifies: {out}");
    let (_, _, i, named) = tampered(db, &pool, tamper, cut).await;
    let (code, out) = verify(db, &[]);
    assert_eq!(code, Some(1), "{tamper:?} caught: {out}");
    assert!(
        out.contains(&format!("broken at record {named}:")) && out.contains(&format!("leaf {i}")),
        "{tamper:?}: names record {named} (leaf {i}): {out}"
    );
    let verdict = trail::verify(&pool, |_| {}).await.expect("verify");
    assert!(
        matches!(&verdict, Verdict::Broken { seq, .. } if *seq == named),
        "{verdict:?}"
    );
}

tamperings! {
    an_edited_record_is_named => the_insider_is_caught(Edit, false);
    an_edited_record_is_named_with_the_later_checkpoints_removed => the_insider_is_caught(Edit, true);
    a_removed_record_is_named => the_insider_is_caught(Remove, false);
    a_removed_record_is_named_with_the_later_checkpoints_removed => the_insider_is_caught(Remove, true);
    an_inserted_record_is_named => the_insider_is_caught(Insert, false);
    an_inserted_record_is_named_with_the_later_checkpoints_removed => the_insider_is_caught(Insert, true);
    two_reordered_records_are_named => the_insider_is_caught(Reorder, false);
    two_reordered_records_are_named_with_the_later_checkpoints_removed => the_insider_is_caught(Reorder, true);
}

/// Issue 32, finding 13: the insider edits a log, recomputes what the
/// database holds and (with `cut`) deletes the checkpoints that no longer
/// hold, then restarts the installation. Nothing signs a checkpoint over
/// the rewritten log: a command that writes refuses to start (exit 3), a
/// writer refuses to extend it, and plain `audit verify` still says broken.
async fn a_rewritten_log_is_never_signed_again(db: &TestDb, tamper: Tamper, cut: bool) {
    let (service, _clock) = db.service().await;
    some_activity(&service, true).await;
    let pool = service.db.pool.clone();
    drop(service);
    let (log_id, origin, _, _) = tampered(db, &pool, tamper, cut).await;
    let (code, out) = verify(db, &[]);
    assert_eq!(code, Some(1), "broken before the restart: {out}");

    // The next start: a command that writes (as `tresor serve` does).
    let output = db.tresor(&["emission", "list"]);
    let text = describe(&output);
    assert_eq!(
        output.status.code(),
        Some(3),
        "{tamper:?}, cut {cut}: {text}"
    );
    assert!(
        text.contains(&format!("the log {origin} does not hold"))
            && text.contains("tresor audit verify"),
        "{text}"
    );
    // A writer taking the log (a server started without the check) refuses
    // to extend it from its first transaction on, and nothing is written.
    let size: i64 = sqlx::query_scalar("SELECT size FROM logs WHERE id = $1")
        .bind(log_id)
        .fetch_one(&pool)
        .await
        .expect("the size");
    let service = Service::new(
        db.connect().await,
        std::sync::Arc::new(tresor::service::ManualClock::new(crate::common::START_MS)),
        Default::default(),
    );
    let refused = match service.open_secrets().await {
        Err(error) => error,
        Ok(_) => service
            .set_announcement(Some("Après".to_owned()))
            .await
            .expect_err("the writer refuses the rewritten log"),
    };
    assert!(
        matches!(refused, tresor::error::Error::LogDoesNotHold(_)),
        "{refused:?}"
    );
    drop(service);
    let after: i64 = sqlx::query_scalar("SELECT size FROM logs WHERE id = $1")
        .bind(log_id)
        .fetch_one(&pool)
        .await
        .expect("the size");
    assert_eq!(after, size, "nothing was appended");
    let (code, out) = verify(db, &[]);
    assert_eq!(code, Some(1), "still broken after: {out}");
}

tamperings! {
    an_edited_log_is_never_signed_again => a_rewritten_log_is_never_signed_again(Edit, false);
    an_edited_log_with_its_checkpoints_removed_is_never_signed_again => a_rewritten_log_is_never_signed_again(Edit, true);
    a_log_with_a_record_removed_is_never_signed_again => a_rewritten_log_is_never_signed_again(Remove, true);
    a_log_with_a_record_inserted_is_never_signed_again => a_rewritten_log_is_never_signed_again(Insert, true);
    a_reordered_log_is_never_signed_again => a_rewritten_log_is_never_signed_again(Reorder, true);
}

/// The insider empties `log_keys`: the installation's key would otherwise
/// be listed again as the first of a database that was signed long ago.
async fn an_emptied_key_list_is_refused_at_start(db: &TestDb) {
    let (service, _clock) = db.service().await;
    some_activity(&service, true).await;
    let pool = service.db.pool.clone();
    drop(service);
    execute(&pool, &["DELETE FROM log_keys"]).await;
    let output = db.tresor(&["emission", "list"]);
    let text = describe(&output);
    assert_eq!(output.status.code(), Some(2), "{text}");
    assert!(text.contains("names no log key"), "{text}");
    let listed: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM log_keys")
        .fetch_one(&pool)
        .await
        .expect("the list");
    assert_eq!(listed, 0, "no key was listed");
}

/// Records cut from the end, with their checkpoints: the database is then
/// consistent with itself, and only a checkpoint kept outside catches it.
async fn a_log_cut_short_is_caught_by_a_kept_checkpoint(db: &TestDb) {
    let (service, _clock) = db.service().await;
    some_activity(&service, true).await;
    let pool = service.db.pool.clone();
    let (log_id, origin) = server_log(&pool).await;
    let kept = tempfile::NamedTempFile::new().expect("a file");
    std::fs::write(kept.path(), latest_note(&pool, log_id).await).expect("keep the checkpoint");
    let mut records = log_records(&pool, log_id).await;
    let size = records.len() - 3;
    records.truncate(size);
    drop_guards(&pool, db.backend).await;
    rewrite(&pool, log_id, &origin, records, Some(size as u64)).await;
    let (code, out) = verify(db, &[]);
    assert_eq!(
        code,
        Some(0),
        "without an outside checkpoint, a clean cut is not seen: {out}"
    );
    let path = kept.path().display().to_string();
    let (code, out) = verify(db, &["--checkpoint", &path]);
    assert_eq!(code, Some(1), "the kept checkpoint catches it: {out}");
    assert!(out.contains("shrank"), "{out}");
    assert!(out.contains(&format!("leaves {size}..")), "{out}");
}

/// The insider signs new checkpoints with a key of their own and lists it:
/// no rotation record signed with the installation's key announces it.
async fn checkpoints_signed_with_another_key_are_refused(db: &TestDb) {
    let (service, _clock) = db.service().await;
    some_activity(&service, true).await;
    let pool = service.db.pool.clone();
    let (log_id, origin) = server_log(&pool).await;
    let real_vkey: String = sqlx::query_scalar("SELECT vkey FROM log_keys ORDER BY id LIMIT 1")
        .fetch_one(&pool)
        .await
        .expect("the key");
    let mut records = log_records(&pool, log_id).await;
    let i = records.len() - 4;
    records[i].result = "{}".to_owned();
    drop_guards(&pool, db.backend).await;
    rewrite(&pool, log_id, &origin, records.clone(), Some(i as u64)).await;
    // The insider's own key signs every size from the edit on.
    let installation = origin.split('/').nth(1).expect("tresor/<id>/server");
    let theirs = LogSeed::generate().named(installation);
    let hashes = trail::log::read_hashes(
        &mut service.db.conn().await.expect("a connection"),
        log_id,
        &(0..tlog_tiles::stored_hash_index(0, records.len() as u64)).collect::<Vec<_>>(),
    )
    .await
    .expect("the stored hashes");
    for size in i + 1..=records.len() {
        let root =
            tlog_tiles::tree_hash(size as u64, &trail::log::MapReader(&hashes)).expect("a root");
        sqlx::query("INSERT INTO checkpoints (log_id, size, at_ms, note) VALUES ($1, $2, 0, $3)")
            .bind(log_id)
            .bind(size as i64)
            .bind(theirs.sign_checkpoint(&origin, size as u64, root))
            .execute(&pool)
            .await
            .expect("a forged checkpoint");
    }
    let listed = format!(
        "INSERT INTO log_keys (vkey, since_ms) VALUES ('{}', 0)",
        theirs.vkey()
    );
    execute(&pool, &[&listed]).await;
    let (code, out) = verify(db, &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("announced by no record"), "{out}");
    // Listing it first instead (renamed, the first key replaced by it, the
    // others dropped): the verifier's pinned key refuses it.
    let vkey = theirs.vkey();
    execute(
        &pool,
        &[
            &format!("UPDATE log_keys SET vkey = '{vkey}x' WHERE vkey = '{vkey}'"),
            &format!("UPDATE log_keys SET vkey = '{vkey}' WHERE vkey = '{real_vkey}'"),
            &format!("DELETE FROM log_keys WHERE vkey <> '{vkey}'"),
        ],
    )
    .await;
    let (code, out) = verify(db, &["--key", &real_vkey]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("not the key given"), "{out}");
}

/// A rotation: the new key is announced by a record the old key signs;
/// verify follows it, and later checkpoints carry the new key.
async fn a_rotated_key_is_followed(db: &TestDb) {
    let (service, _clock) = db.service().await;
    some_activity(&service, true).await;
    let new = LogSeed::generate();
    let vkey = service
        .rotate_log_key(tresor::trail::Actor::Operator, &new)
        .await
        .expect("rotate");
    drop(service);
    // The old key is no longer the installation's: refused.
    let stale = Db::connect(&db.url)
        .await
        .expect("connect")
        .with_log_seed(&crate::common::db::test_log_seed())
        .await
        .expect("named");
    assert!(
        stale.register_log_key(0).await.is_err(),
        "the old key is refused"
    );
    let service = service_signing_with(db, &new).await;
    let alice = player(&service, "carla").await;
    service.credit(&alice, 100).await.expect("credit");
    let pool = service.db.pool.clone();
    let (log_id, _) = server_log(&pool).await;
    let note = latest_note(&pool, log_id).await;
    assert!(
        trail::audit::open_note(&note, &[&vkey]).is_ok(),
        "signed with the new key"
    );
    let old = crate::common::db::test_log_seed().named(
        vkey.split('/')
            .nth(1)
            .and_then(|s| s.split('+').next())
            .expect("id"),
    );
    assert!(
        trail::audit::open_note(&note, &[old.vkey()]).is_err(),
        "not the old one"
    );
    let (code, out) = verify(db, &["--key", old.vkey()]);
    assert_eq!(code, Some(0), "the rotation is followed: {out}");
}

/// Outside demo mode, a missing key or another key is refused at start.
async fn a_missing_or_wrong_key_is_refused_at_start(db: &TestDb) {
    let (service, _clock) = db.service().await;
    some_activity(&service, true).await;
    let run = |key: Option<&str>| {
        let mut command = tresor_command();
        command.env_remove("TRESOR_LOG_KEY");
        if let Some(key) = key {
            command.env("TRESOR_LOG_KEY", key);
        }
        command
            .args(["emission", "list"])
            .args(db.db_args())
            .current_dir(std::env::temp_dir());
        db.env(&mut command);
        command.output().expect("run tresor")
    };
    let output = run(None);
    assert_exit(&output, 2);
    let text = describe(&output);
    assert!(
        text.contains("--log-key") && text.contains("TRESOR_LOG_KEY"),
        "{text}"
    );
    let output = run(Some(&"77".repeat(32)));
    assert_exit(&output, 2);
    assert!(describe(&output).contains("not the installation's current one"));
    let output = run(Some(crate::common::db::TEST_LOG_KEY));
    assert_exit(&output, 0);
}

/// The installation's current verifier key, as `GET /log/` publishes it.
async fn published_vkey(pool: &AnyPool) -> String {
    sqlx::query_scalar("SELECT vkey FROM log_keys ORDER BY id DESC LIMIT 1")
        .fetch_one(pool)
        .await
        .expect("the key")
}

/// Checks a receipt (JSON, as the API gives it) by hand, with the crates
/// alone: the leaf recomputed from its fields, the RFC 6962 inclusion proof
/// with `tlog_tiles::check_record`, the note with `signed_note` and the
/// published key.
fn check_receipt_by_hand(receipt: &serde_json::Value, vkey: &str) -> Result<(), String> {
    use base64::Engine as _;
    let record = &receipt["record"];
    let text = |v: &serde_json::Value| v.as_str().expect("text").to_owned();
    let leaf = tresor::trail::leaf::Leaf {
        origin: &text(&receipt["origin"]),
        idx: receipt["index"].as_u64().expect("index"),
        at_ms: record["at_ms"].as_i64().expect("at_ms"),
        actor: &text(&record["actor"]),
        action: &text(&record["action"]),
        request: &text(&record["request"]),
        result: &text(&record["result"]),
        salt: &text(&record["salt"]),
    }
    .hash();
    let note = signed_note::Note::from_bytes(text(&receipt["checkpoint"]).as_bytes())
        .map_err(|e| e.to_string())?;
    let verifier = signed_note::StandardVerifier::new(vkey).map_err(|e| e.to_string())?;
    note.verify(&signed_note::VerifierList::new(vec![Box::new(verifier)]))
        .map_err(|e| format!("signature: {e}"))?;
    let checkpoint = tlog_tiles::Checkpoint::from_bytes(note.text()).map_err(|e| e.to_string())?;
    let proof: Vec<tlog_tiles::Hash> = receipt["proof"]
        .as_array()
        .expect("a proof")
        .iter()
        .map(|h| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(h.as_str().expect("base64"))
                .expect("base64");
            tlog_tiles::Hash(bytes.try_into().expect("32 bytes"))
        })
        .collect();
    tlog_tiles::check_record(
        &proof,
        checkpoint.size(),
        *checkpoint.hash(),
        receipt["index"].as_u64().expect("index"),
        leaf,
    )
    .map_err(|e| format!("proof: {e}"))
}

/// A purchase's answer, its history row and its receipt endpoint carry a
/// receipt that checks with the published key; an altered one does not.
async fn every_play_carries_a_receipt_that_checks(app: crate::common::TestApp) {
    app.player("ana", 10_000).await;
    let mut bought = Vec::new();
    for _ in 0..5 {
        let (status, play) = app.buy(100).await;
        assert_eq!(status.as_u16(), 201, "{play}");
        bought.push(play);
    }
    let vkey = published_vkey(&app.service.db.pool).await;
    for play in &bought {
        let receipt = &play["receipt"];
        assert_eq!(receipt["record"]["action"], "buy", "{play}");
        assert!(
            receipt["record"]["result"]
                .as_str()
                .expect("result")
                .contains(&format!("\"play_id\":{}", play["id"]))
        );
        assert_eq!(receipt["key"], vkey.as_str());
        check_receipt_by_hand(receipt, &vkey).expect("the answer's receipt checks");
        let parsed: trail::Receipt = serde_json::from_value(receipt.clone()).expect("a receipt");
        parsed
            .check(&vkey)
            .expect("and with the server's own check");
        let mut altered = receipt.clone();
        altered["record"]["result"] = serde_json::Value::String(
            receipt["record"]["result"]
                .as_str()
                .expect("text")
                .replace("\"prize_cents\":", "\"prize_cents\":1"),
        );
        assert!(
            check_receipt_by_hand(&altered, &vkey).is_err(),
            "altered in transit"
        );
        let other = LogSeed::generate().named("x");
        assert!(
            check_receipt_by_hand(receipt, other.vkey()).is_err(),
            "another key"
        );
        let (status, again) = app.get(&format!("/api/plays/{}/receipt", play["id"])).await;
        assert_eq!(status.as_u16(), 200, "{again}");
        assert_eq!(again["index"], receipt["index"]);
        check_receipt_by_hand(&again, &vkey).expect("the endpoint's receipt checks");
    }
    let (status, history) = app.history("").await;
    assert_eq!(status.as_u16(), 200, "{history}");
    let rows = history["plays"].as_array().expect("rows");
    assert_eq!(rows.len(), bought.len());
    for row in rows {
        check_receipt_by_hand(&row["receipt"], &vkey).expect("a history row's receipt checks");
    }
    let (status, _) = app.get("/api/plays/999999/receipt").await;
    assert_eq!(status.as_u16(), 404);
}

/// The in-process cost of a purchase's proof and of a checkpoint's
/// signature (printed; run with --nocapture).
async fn the_proof_and_the_signature_cost_little(db: &TestDb) {
    let (service, _clock) = db.service().await;
    some_activity(&service, true).await;
    let key = crate::common::db::test_log_seed().named("x");
    let started = std::time::Instant::now();
    for size in 1..=1000u64 {
        let _ = key.sign_checkpoint("tresor/x/server", size, tlog_tiles::Hash([size as u8; 32]));
    }
    let sign = started.elapsed() / 1000;
    let pool = service.db.pool.clone();
    let (log_id, _) = server_log(&pool).await;
    let size: i64 = sqlx::query_scalar("SELECT size FROM logs WHERE id = $1")
        .bind(log_id)
        .fetch_one(&pool)
        .await
        .expect("size");
    let hashes = trail::log::read_hashes(
        &mut service.db.conn().await.expect("a connection"),
        log_id,
        &(0..tlog_tiles::stored_hash_index(0, size as u64)).collect::<Vec<_>>(),
    )
    .await
    .expect("hashes");
    let started = std::time::Instant::now();
    for idx in 0..size as u64 {
        tlog_tiles::prove_record(size as u64, idx, &trail::log::MapReader(&hashes))
            .expect("a proof");
    }
    let prove = started.elapsed() / size as u32;
    println!(
        "signing a checkpoint: {sign:?}; an inclusion proof from memory ({size} leaves): {prove:?}"
    );
    assert!(sign < std::time::Duration::from_millis(5));
}

/// A key rotated out signs nothing after its rotation: a writer that goes
/// on signing with it in the log that announced the rotation (as a stolen
/// old key would) is refused by verify, which names the checkpoint.
async fn a_rotated_out_key_signing_after_its_rotation_is_refused(db: &TestDb) {
    let (service, _clock) = db.service().await;
    some_activity(&service, true).await;
    service
        .rotate_log_key(tresor::trail::Actor::Operator, &LogSeed::generate())
        .await
        .expect("rotate");
    let (code, out) = verify(db, &[]);
    assert_eq!(
        code,
        Some(0),
        "the rotation's own checkpoint is trusted: {out}"
    );
    // The same writer goes on with the old key.
    let late = player(&service, "late").await;
    service.credit(&late, 100).await.expect("credit");
    drop(service);
    let (code, out) = verify(db, &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("signs nothing after its rotation"), "{out}");
    assert!(out.contains("log server: the checkpoint at size"), "{out}");
}

on_both!(
    a_rotated_out_key_signing_after_its_rotation_is_refused,
    every_play_carries_a_receipt_that_checks,
    the_proof_and_the_signature_cost_little,
    an_edited_record_is_named,
    an_edited_record_is_named_with_the_later_checkpoints_removed,
    a_removed_record_is_named,
    a_removed_record_is_named_with_the_later_checkpoints_removed,
    an_inserted_record_is_named,
    an_inserted_record_is_named_with_the_later_checkpoints_removed,
    two_reordered_records_are_named,
    two_reordered_records_are_named_with_the_later_checkpoints_removed,
    a_log_cut_short_is_caught_by_a_kept_checkpoint,
    checkpoints_signed_with_another_key_are_refused,
    a_rotated_key_is_followed,
    a_missing_or_wrong_key_is_refused_at_start,
    an_edited_log_is_never_signed_again,
    an_edited_log_with_its_checkpoints_removed_is_never_signed_again,
    a_log_with_a_record_removed_is_never_signed_again,
    a_log_with_a_record_inserted_is_never_signed_again,
    a_reordered_log_is_never_signed_again,
    an_emptied_key_list_is_refused_at_start,
);
