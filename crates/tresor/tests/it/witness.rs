//! Monitors as witnesses (issue 32, finding 14; docs/AUDIT.md,
//! "Witnesses"): a real `tresor serve --witness`, a real `tresor audit
//! watch --once --witness-key` cosigning what it checked (C2SP
//! tlog-cosignature), the cosigned checkpoint published, a player's receipt
//! carrying the cosignature and `tresor audit receipt --witness` accepting
//! it and refusing another witness; an unknown witness's and a forged
//! cosignature refused with nothing stored; a line sent again changes
//! nothing, an older one is refused, and the endpoint is throttled per
//! address (issue 42, finding 8). Shown a forked or a rewritten log
//! (served by the test from a tampered copy of a mirror), the witness
//! refuses it and sends no cosignature.

use crate::common::mirror::{copy_dir, log_seed, mirrored, serve_folder};
use crate::common::process::{strings, tresor_async};
use crate::common::rfc9162 as r;
use crate::common::{
    Harness, Server, assert_exit, buy_and_play, cookie_client, describe, fetch_json,
    register_and_deposit,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Output;
use tresor::logcheck::{self, VerifierKey, Witness, WitnessKey};

on_both!(
    a_witness_cosigns_what_it_checked_and_receipts_carry_it,
    an_unknown_or_forged_cosignature_is_refused_and_nothing_stored,
    a_cosignature_sent_again_writes_nothing_and_an_older_one_is_refused,
    cosignatures_are_throttled_per_address,
    a_witness_cosigns_no_forked_or_rewritten_log,
);

fn passes(output: &Output) -> String {
    assert_exit(output, 0);
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `tresor serve`, unthrottled, that takes cosignatures from `vkey`'s
/// witness, and a player `username` on it with money: the server and the
/// player's client.
async fn server_witnessed_by(h: &Harness, vkey: &str, username: &str) -> (Server, reqwest::Client) {
    let mut flags = crate::common::unthrottled_flags();
    flags.extend(["--witness".to_owned(), vkey.to_owned()]);
    let server = h.server(&flags).await;
    let client = cookie_client();
    register_and_deposit(&client, &server.base, username, 100_000).await;
    (server, client)
}

/// `tresor audit witness-keygen`: the key file and the printed vkey.
async fn keygen(dir: &Path, name: &str) -> (PathBuf, String) {
    let file = dir.join(format!("{}.key", name.replace('/', "_")));
    let out = passes(
        &tresor_async(strings(&[
            "audit",
            "witness-keygen",
            "--to",
            &file.display().to_string(),
            "--name",
            name,
        ]))
        .await,
    );
    let vkey = out.trim().to_owned();
    WitnessKey::parse(&vkey).expect("witness-keygen prints a witness verifier key");
    (file, vkey)
}

async fn text(url: &str) -> (u16, String) {
    let response = reqwest::get(url).await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

async fn cosignatures_stored(h: &Harness) -> i64 {
    let db = h.connect().await;
    sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM cosignatures")
        .fetch_one(&db.pool)
        .await
        .unwrap()
}

async fn a_witness_cosigns_what_it_checked_and_receipts_carry_it(h: &Harness) {
    let dir = tempfile::tempdir().unwrap();
    let (key_file, vkey) = keygen(dir.path(), "witness.test/one").await;
    let (_, other_vkey) = keygen(dir.path(), "witness.test/two").await;
    let (server, client) = server_witnessed_by(h, &vkey, "witnessed").await;
    let base = server.base.clone();
    let first = buy_and_play(&client, &base, 100).await;
    let index = fetch_json(&format!("{base}/log/")).await;
    assert_eq!(index["witnesses"], json!([vkey]), "{index}");
    assert_eq!(
        index["logs"][0]["cosigned"], "/log/server/cosigned",
        "{index}"
    );
    let log_key = VerifierKey::parse(index["key"].as_str().unwrap()).unwrap();
    assert_eq!(text(&format!("{base}/log/server/cosigned")).await.0, 404);

    // The witness checks the log and cosigns the checkpoint it checked.
    let state = dir.path().join("state");
    let out = passes(
        &tresor_async(strings(&[
            "audit",
            "watch",
            "--once",
            "--url",
            &base,
            "--state",
            &state.display().to_string(),
            "--witness-key",
            &key_file.display().to_string(),
            "--witness-name",
            "witness.test/one",
        ]))
        .await,
    );
    assert!(out.contains("cosigned at"), "{out}");
    assert_eq!(cosignatures_stored(h).await, 1);

    // The site publishes it: the checkpoint with the witness's line, which
    // verifies, and the operator's signature still does.
    let (_, checkpoint) = text(&format!("{base}/log/server/checkpoint")).await;
    let (status, cosigned) = text(&format!("{base}/log/server/cosigned")).await;
    assert_eq!(status, 200, "{cosigned}");
    assert!(cosigned.starts_with(&checkpoint), "{cosigned}");
    assert!(cosigned.len() > checkpoint.len(), "{cosigned}");
    let witness = WitnessKey::parse(&vkey).unwrap();
    logcheck::check_cosigned(&cosigned, &witness).expect("the cosignature verifies");
    let opened = logcheck::open_checkpoint(&cosigned, &log_key).expect("still the log's note");
    assert!(logcheck::check_cosigned(&cosigned, &WitnessKey::parse(&other_vkey).unwrap()).is_err());

    // The log grows: `/checkpoint` moves on, `/cosigned` stays.
    let second = buy_and_play(&client, &base, 100).await;
    let (_, later) = text(&format!("{base}/log/server/checkpoint")).await;
    assert_ne!(later, checkpoint);
    assert_eq!(
        text(&format!("{base}/log/server/cosigned")).await.1,
        cosigned
    );

    // The first play's receipt carries the cosigned checkpoint.
    let receipt_of = |play: &Value| {
        let (client, url) = (
            client.clone(),
            format!("{base}/api/plays/{}/receipt", play["id"]),
        );
        async move {
            let response = client.get(url).send().await.unwrap();
            assert_eq!(response.status().as_u16(), 200);
            response.json::<Value>().await.unwrap()
        }
    };
    let receipt = receipt_of(&first).await;
    assert_eq!(receipt["checkpoint"], cosigned.as_str(), "{receipt}");
    let history: Value = client
        .get(format!("{base}/api/plays"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let row = history["plays"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == first["id"])
        .expect("the first play in the history");
    assert_eq!(row["receipt"]["checkpoint"], cosigned.as_str(), "{row}");

    let file = dir.path().join("receipt.json");
    std::fs::write(&file, receipt.to_string()).unwrap();
    let check = |witnesses: &[&str]| {
        let mut args = strings(&[
            "audit",
            "receipt",
            &file.display().to_string(),
            "--key",
            log_key.as_str(),
        ]);
        for w in witnesses {
            args.extend(["--witness".to_owned(), w.to_string()]);
        }
        tresor_async(args)
    };
    let out = passes(&check(&[&vkey]).await);
    assert!(
        out.contains(&format!("cosigned by the witness {vkey}")),
        "{out}"
    );
    let refused = check(&[&vkey, &other_vkey]).await;
    assert_exit(&refused, 1);
    assert!(
        String::from_utf8_lossy(&refused.stderr)
            .contains(&format!("no cosignature of the witness {other_vkey}")),
        "{}",
        describe(&refused)
    );

    // The second play is past the cosigned checkpoint: its receipt is as
    // before (the latest signed checkpoint), which no witness cosigned yet.
    let receipt = receipt_of(&second).await;
    assert!(
        receipt["index"].as_u64().unwrap() >= opened.size,
        "{receipt}"
    );
    assert_eq!(receipt["checkpoint"], later.as_str(), "{receipt}");
    std::fs::write(&file, receipt.to_string()).unwrap();
    passes(&check(&[]).await);
    assert_eq!(check(&[&vkey]).await.status.code(), Some(1));
}

async fn post_cosignature(base: &str, size: u64, line: &str) -> (u16, String) {
    let response = reqwest::Client::new()
        .post(format!("{base}/log/server/cosignature"))
        .json(&json!({ "size": size, "cosignature": line }))
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

async fn an_unknown_or_forged_cosignature_is_refused_and_nothing_stored(h: &Harness) {
    let known = Witness::new("witness.test/one", &[1; 32]).unwrap();
    let (server, client) = server_witnessed_by(h, known.vkey().as_str(), "forger").await;
    let base = server.base.clone();
    buy_and_play(&client, &base, 100).await;
    let (_, note) = text(&format!("{base}/log/server/checkpoint")).await;
    let (body, _) = logcheck::split_note(&note).unwrap();
    let size: u64 = body.lines().nth(1).unwrap().parse().unwrap();
    let now = 1_800_000_000;

    // Another key under the known witness's very name: unknown.
    let stranger = Witness::new("witness.test/one", &[2; 32]).unwrap();
    let (status, answer) = post_cosignature(&base, size, &stranger.cosign(&body, now)).await;
    assert_eq!(status, 422, "{answer}");
    assert!(answer.contains("unknown_witness"), "{answer}");
    // The known witness's name and key id over another checkpoint, or with
    // its time changed: forged.
    let other_body = body.replacen(&format!("\n{size}\n"), &format!("\n{}\n", size + 1), 1);
    let (status, answer) = post_cosignature(&base, size, &known.cosign(&other_body, now)).await;
    assert_eq!(status, 422, "{answer}");
    assert!(answer.contains("bad_cosignature"), "{answer}");
    let honest = known.cosign(&body, now);
    let (prefix, encoded) = honest.rsplit_once(' ').unwrap();
    let retimed = format!("{prefix} {}", tamper_time(encoded));
    let (status, answer) = post_cosignature(&base, size, &retimed).await;
    assert_eq!(status, 422, "{answer}");
    // A good line for a size with no checkpoint; not a line at all.
    let (status, answer) = post_cosignature(&base, size + 50, &honest).await;
    assert_eq!(status, 422, "{answer}");
    assert!(answer.contains("no_checkpoint"), "{answer}");
    let (status, _) = post_cosignature(&base, size, "hello").await;
    assert_eq!(status, 422);
    assert_eq!(cosignatures_stored(h).await, 0, "nothing stored");
    assert_eq!(text(&format!("{base}/log/server/cosigned")).await.0, 404);

    // The honest one is taken.
    let (status, answer) = post_cosignature(&base, size, &honest).await;
    assert_eq!(status, 204, "{answer}");
    assert_eq!(cosignatures_stored(h).await, 1);
    let (_, cosigned) = text(&format!("{base}/log/server/cosigned")).await;
    assert_eq!(cosigned, format!("{note}{honest}\n"));
}

/// The base64 of a cosignature with one bit of its time flipped.
fn tamper_time(encoded: &str) -> String {
    use base64::Engine as _;
    let engine = base64::engine::general_purpose::STANDARD;
    let mut bytes = engine.decode(encoded).unwrap();
    bytes[11] ^= 1;
    engine.encode(bytes)
}

/// The stored cosignature of `size` (its line and when it was written).
async fn stored_cosignature(h: &Harness, size: u64) -> (String, i64) {
    let db = h.connect().await;
    sqlx::query_as::<_, (String, i64)>("SELECT line, at_ms FROM cosignatures WHERE size = $1")
        .bind(size as i64)
        .fetch_one(&db.pool)
        .await
        .unwrap()
}

/// A server taking the cosignatures of `witness`, one play bought: its
/// base, and the body and size of its latest checkpoint.
async fn witnessed_server(
    h: &Harness,
    witness: &Witness,
    throttled: bool,
) -> (crate::common::Server, String, u64) {
    let mut flags = if throttled {
        Vec::new()
    } else {
        crate::common::unthrottled_flags()
    };
    flags.extend(["--witness".to_owned(), witness.vkey().as_str().to_owned()]);
    let server = h.server(&flags).await;
    let client = cookie_client();
    register_and_deposit(&client, &server.base, "witnessed", 100_000).await;
    buy_and_play(&client, &server.base, 100).await;
    let (_, note) = text(&format!("{}/log/server/checkpoint", server.base)).await;
    let (body, _) = logcheck::split_note(&note).unwrap();
    let size: u64 = body.lines().nth(1).unwrap().parse().unwrap();
    (server, body, size)
}

/// Finding 8: the same line sent again is taken (204) and changes nothing
/// (the row is not written again); a cosignature of that checkpoint older
/// than the one kept is refused (409 `cosignature_not_newer`) and the newer
/// one stays published.
async fn a_cosignature_sent_again_writes_nothing_and_an_older_one_is_refused(h: &Harness) {
    let witness = Witness::new("witness.test/one", &[1; 32]).unwrap();
    let (server, body, size) = witnessed_server(h, &witness, false).await;
    let base = server.base.clone();
    let older = witness.cosign(&body, 1_800_000_000);
    let newer = witness.cosign(&body, 1_800_000_060);

    let (status, answer) = post_cosignature(&base, size, &newer).await;
    assert_eq!(status, 204, "{answer}");
    let kept = stored_cosignature(h, size).await;
    assert_eq!(kept.0, newer);
    for _ in 0..3 {
        // The clock moved past the kept one's time: a cosignature written
        // again would show a later `at_ms`.
        let after = kept.1;
        crate::common::wait::until_true(
            "the clock past the kept cosignature's time",
            std::time::Duration::from_secs(5),
            || async move { crate::common::now_ms() > after },
        )
        .await;
        let (status, answer) = post_cosignature(&base, size, &newer).await;
        assert_eq!(status, 204, "{answer}");
        assert_eq!(stored_cosignature(h, size).await, kept, "not written again");
    }

    let (status, answer) = post_cosignature(&base, size, &older).await;
    assert_eq!(status, 409, "{answer}");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["error"]["code"], "cosignature_not_newer", "{answer}");
    assert_eq!(
        stored_cosignature(h, size).await,
        kept,
        "the newer one kept"
    );
    let (_, cosigned) = text(&format!("{base}/log/server/cosigned")).await;
    assert!(cosigned.ends_with(&format!("{newer}\n")), "{cosigned}");
    assert!(!cosigned.contains(&older), "{cosigned}");
    assert_eq!(cosignatures_stored(h).await, 1);
}

/// Finding 8: anyone may post a cosignature, so one address is throttled:
/// 100 posts at once from one address are mostly answered 429
/// `rate_limited` with a `Retry-After`, before anything is read or written.
async fn cosignatures_are_throttled_per_address(h: &Harness) {
    let witness = Witness::new("witness.test/one", &[1; 32]).unwrap();
    let (server, body, size) = witnessed_server(h, &witness, true).await;
    let line = witness.cosign(&body, 1_800_000_000);
    let client = reqwest::Client::new();
    let url = format!("{}/log/server/cosignature", server.base);
    let posts = (0..100).map(|_| {
        client
            .post(&url)
            .json(&json!({ "size": size, "cosignature": line }))
            .send()
    });
    let started = std::time::Instant::now();
    let answers = futures_util::future::join_all(posts).await;
    let elapsed_s = started.elapsed().as_secs_f64();
    let (mut taken, mut throttled) = (0_u32, 0_u32);
    for answer in answers {
        let answer = answer.unwrap();
        match answer.status().as_u16() {
            204 => taken += 1,
            429 => {
                assert!(answer.headers().contains_key("retry-after"));
                let body: Value = answer.json().await.unwrap();
                assert_eq!(body["error"]["code"], "rate_limited", "{body}");
                throttled += 1;
            }
            other => panic!("{other}: {}", answer.text().await.unwrap()),
        }
    }
    // A burst of 60, then one a second.
    assert!(
        taken >= 1 && f64::from(taken) <= 61.0 + elapsed_s,
        "{taken} taken, {throttled} throttled in {elapsed_s:.2} s"
    );
    assert_eq!(taken + throttled, 100);
    assert_eq!(cosignatures_stored(h).await, 1);
}

/// `tresor audit watch --once` of `url` keeping `state`, mirroring into
/// `mirror`, as the witness of `witness` (its key file) if given.
async fn watch(url: &str, state: &Path, mirror: Option<&Path>, witness: Option<&Path>) -> Output {
    let mut args = strings(&["audit", "watch", "--once", "--url", url, "--state"]);
    args.push(state.display().to_string());
    if let Some(mirror) = mirror {
        args.extend(["--mirror".to_owned(), mirror.display().to_string()]);
    }
    if let Some(key) = witness {
        args.extend(["--witness-key".to_owned(), key.display().to_string()]);
        args.extend(["--witness-name".to_owned(), "witness.test/one".to_owned()]);
    }
    tresor_async(args).await
}

/// Refused: exit 1, `words` said, and no cosignature sent to the site.
fn refused_unsent(output: &Output, words: &str, site: &crate::common::mirror::Site) {
    assert_eq!(
        site.posts(),
        0,
        "a cosignature was sent: {}",
        describe(output)
    );
    assert_exit(output, 1);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(words), "«{words}»: {}", describe(output));
}

/// A witness is shown a fork (a checkpoint of the size it kept, another
/// root, signed with the log's key) and a rewrite (an early leaf changed,
/// tiles and root recomputed and signed): it exits 1, sends no
/// cosignature, and the server stores and publishes none. The same sites
/// pass POSTs on to the server: shown the honest copy, the witness's
/// cosignature goes through and is published.
async fn a_witness_cosigns_no_forked_or_rewritten_log(h: &Harness) {
    let dir = tempfile::tempdir().unwrap();
    let (key_file, vkey) = keygen(dir.path(), "witness.test/one").await;
    let (server, client) = server_witnessed_by(h, &vkey, "shown").await;
    let base = server.base.clone();
    buy_and_play(&client, &base, 100).await;
    buy_and_play(&client, &base, 100).await;
    // The witness's memory of the log, first as a plain monitor: the older
    // checkpoint, then the latest one and its mirror.
    let (state, mirror) = (dir.path().join("state"), dir.path().join("mirror"));
    passes(&watch(&base, &state, None, None).await);
    let old_state = dir.path().join("state-old");
    copy_dir(&state, &old_state);
    buy_and_play(&client, &base, 100).await;
    buy_and_play(&client, &base, 100).await;
    passes(&watch(&base, &state, Some(&mirror), None).await);
    let pinned = r::parse_vkey(&std::fs::read_to_string(state.join("key")).unwrap());
    let (leaves, body) = mirrored(&mirror, &pinned);
    let seed = log_seed();
    let tampered = |name: &str, leaves: &[r::H], root: r::H| {
        let folder = dir.path().join(name);
        copy_dir(&mirror, &folder);
        for (path, bytes) in r::tiles(leaves) {
            std::fs::write(folder.join("server").join(path), bytes).unwrap();
        }
        let mut note = body.clone();
        note.root = root;
        let signed = r::sign_note(&note, &pinned.name, &seed).0;
        std::fs::write(folder.join("server/checkpoint"), signed).unwrap();
        folder
    };

    // A fork: the size the witness kept, another root.
    let fork = tampered("fork", &leaves, r::mth(&leaves[1..]));
    let site = serve_folder(fork, Some(base.clone())).await;
    let out = watch(&site.base, &state, None, Some(&key_file)).await;
    refused_unsent(&out, "forked", &site);
    // A rewrite, shown to the witness that kept the older checkpoint.
    let mut rewritten = leaves.clone();
    rewritten[1][0] ^= 1;
    let rewrite = tampered("rewrite", &rewritten, r::mth(&rewritten));
    let site = serve_folder(rewrite, Some(base.clone())).await;
    let out = watch(&site.base, &old_state, None, Some(&key_file)).await;
    refused_unsent(&out, "rewritten", &site);
    assert_eq!(cosignatures_stored(h).await, 0, "nothing stored");
    assert_eq!(text(&format!("{base}/log/server/cosigned")).await.0, 404);

    // The control: the honest copy, served the same way.
    let honest = serve_folder(mirror.clone(), Some(base.clone())).await;
    let out = passes(&watch(&honest.base, &state, None, Some(&key_file)).await);
    assert!(out.contains("cosigned at"), "{out}");
    assert_eq!(honest.posts(), 1);
    assert_eq!(cosignatures_stored(h).await, 1);
    assert_eq!(text(&format!("{base}/log/server/cosigned")).await.0, 200);
}
