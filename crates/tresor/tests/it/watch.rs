//! The monitor, `tresor audit watch`, against a real `tresor serve`: an
//! honest log under load passes every poll and is mirrored; a forked log, a
//! rewritten one, a shrunk one and a checkpoint signed by another key are
//! each refused with a clear message. Tampered logs are served by a tiny
//! HTTP server of the test from an altered copy of the monitor's mirror
//! (`common/mirror.rs`; built with `common/rfc9162.rs` and signed with the
//! server's key, which the test holds), or made by editing the database.

use crate::common::mirror::{copy_dir, log_seed, mirrored, serve_folder};
use crate::common::rfc9162 as r;
use crate::common::trail::fetch_text;
use crate::common::{
    Harness, Server, assert_exit, buy_and_play, cookie_client, describe, register_and_deposit,
};
use std::path::Path;
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

on_both!(
    an_honest_log_under_load_passes_every_poll,
    a_fork_a_rewrite_a_shrink_and_another_key_are_each_refused,
);

/// `tresor audit watch --once` (blocking, on a thread of its own).
async fn watch(url: &str, state: &Path, mirror: Option<&Path>, key: Option<&str>) -> Output {
    let mut args: Vec<String> = ["audit", "watch", "--once", "--url", url, "--state"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.push(state.display().to_string());
    if let Some(mirror) = mirror {
        args.push("--mirror".into());
        args.push(mirror.display().to_string());
    }
    if let Some(key) = key {
        args.push("--key".into());
        args.push(key.to_owned());
    }
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        crate::common::tresor(&args)
    })
    .await
    .unwrap()
}

fn passes(output: &Output) -> String {
    assert_exit(output, 0);
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn refused(output: &Output, words: &str) {
    assert_exit(output, 1);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(words),
        "expected «{words}»: {}",
        describe(output)
    );
}

async fn players(base: &str, prefix: &str, n: usize) -> Vec<reqwest::Client> {
    let mut clients = Vec::new();
    for i in 0..n {
        let client = cookie_client();
        register_and_deposit(&client, base, &format!("{prefix}{i}"), 100_000).await;
        clients.push(client);
    }
    clients
}

/// The latest checkpoint `base` serves of the writer `server`.
async fn served_checkpoint(base: &str) -> String {
    fetch_text(&format!("{base}/log/server/checkpoint")).await
}

/// An unthrottled server, its address, and `n` players (`prefix`…) who
/// have played `rounds` rounds on it.
async fn played(
    h: &Harness,
    prefix: &str,
    n: usize,
    rounds: usize,
) -> (Server, String, Vec<reqwest::Client>) {
    let server = h.server(&crate::common::unthrottled_flags()).await;
    let base = server.base.clone();
    let clients = players(&base, prefix, n).await;
    play_rounds(&clients, &base, rounds).await;
    (server, base, clients)
}

async fn play_rounds(clients: &[reqwest::Client], base: &str, rounds: usize) {
    for _ in 0..rounds {
        futures_util::future::join_all(clients.iter().map(|c| buy_and_play(c, base, 100))).await;
    }
}

async fn an_honest_log_under_load_passes_every_poll(h: &Harness) {
    let (_server, base, clients) = played(h, "load", 4, 2).await;
    let dir = tempfile::tempdir().unwrap();
    let (state, mirror) = (dir.path().join("state"), dir.path().join("mirror"));
    let stop = Arc::new(AtomicBool::new(false));
    let load = {
        let (stop, base) = (stop.clone(), base.clone());
        tokio::spawn(async move {
            let mut rounds = 0;
            while !stop.load(Ordering::Relaxed) {
                play_rounds(&clients, &base, 1).await;
                rounds += 1;
            }
            rounds
        })
    };
    let mut grew = 0;
    for poll in 0..6 {
        let out = passes(&watch(&base, &state, Some(&mirror), None).await);
        if poll == 0 {
            assert!(out.contains("first checkpoint kept"), "{out}");
        }
        grew += usize::from(out.contains("consistent with the"));
        // The log grows under the load before the next poll.
        let polled = served_checkpoint(&base).await;
        crate::common::wait::until_true(
            "the log growing after a poll",
            std::time::Duration::from_secs(30),
            || {
                let (base, polled) = (base.clone(), polled.clone());
                async move { served_checkpoint(&base).await != polled }
            },
        )
        .await;
    }
    stop.store(true, Ordering::Relaxed);
    let rounds = load.await.unwrap();
    assert!(rounds > 0);
    assert!(grew > 0, "the log grew between polls");
    passes(&watch(&base, &state, Some(&mirror), None).await);

    // The mirror holds the site's latest checkpoint and tiles enough to
    // check it without the site.
    let served = served_checkpoint(&base).await;
    assert_eq!(
        std::fs::read_to_string(mirror.join("server/checkpoint")).unwrap(),
        served
    );
    let vkey = std::fs::read_to_string(state.join("key")).unwrap();
    let (leaves, body) = mirrored(&mirror, &r::parse_vkey(&vkey));
    for (path, bytes) in r::tiles(&leaves) {
        assert_eq!(
            std::fs::read(mirror.join("server").join(&path)).unwrap(),
            bytes,
            "{path}"
        );
    }
    // The mirror served as a site passes too (the tampering tests' control).
    let copy = serve_folder(mirror.clone(), None).await.base;
    passes(&watch(&copy, &state, None, None).await);
    assert!(body.size > 0);
}

async fn a_fork_a_rewrite_a_shrink_and_another_key_are_each_refused(h: &Harness) {
    let seed = log_seed();
    let (_server, base, clients) = played(h, "fork", 3, 3).await;
    let dir = tempfile::tempdir().unwrap();
    let (state, mirror) = (dir.path().join("state"), dir.path().join("mirror"));
    passes(&watch(&base, &state, Some(&mirror), None).await);
    let old_state = dir.path().join("state-old");
    copy_dir(&state, &old_state);
    play_rounds(&clients, &base, 3).await;
    passes(&watch(&base, &state, Some(&mirror), None).await);

    let vkey = std::fs::read_to_string(state.join("key")).unwrap();
    let pinned = r::parse_vkey(&vkey);
    let (leaves, body) = mirrored(&mirror, &pinned);
    let old = r::open_note(
        &std::fs::read_to_string(old_state.join("server.checkpoint")).unwrap(),
        &pinned,
    )
    .unwrap();
    assert!(old.size < body.size);
    // The key the server signs with is the test's (the vkey pinned from
    // /log/ is the one the seed makes).
    assert_eq!(r::sign_note(&body, &pinned.name, &seed).1, vkey.trim());

    let tampered = |name: &str| {
        let folder = dir.path().join(name);
        copy_dir(&mirror, &folder);
        folder
    };
    let write_note = |folder: &Path, note: &str| {
        std::fs::write(folder.join("server/checkpoint"), note).unwrap();
    };

    // Another key: the very checkpoint, signed by a key of the same name.
    let folder = tampered("another-key");
    let mut other = [0u8; 32];
    getrandom::fill(&mut other).unwrap();
    write_note(&folder, &r::sign_note(&body, &pinned.name, &other).0);
    let site = serve_folder(folder, None).await.base;
    refused(
        &watch(&site, &state, None, None).await,
        "not signed by the pinned key",
    );

    // A fork: a checkpoint of the same size, another root, signed by the key.
    let folder = tampered("fork");
    let mut forked = body.clone();
    forked.root = r::mth(&leaves[1..]);
    write_note(&folder, &r::sign_note(&forked, &pinned.name, &seed).0);
    let site = serve_folder(folder, None).await.base;
    refused(&watch(&site, &state, None, None).await, "forked");

    // A rewrite: one early leaf changed, every tile and the root recomputed
    // and signed by the key; a monitor that kept the older checkpoint sees
    // that the new tree does not extend it.
    let folder = tampered("rewrite");
    let mut rewritten = leaves.clone();
    rewritten[1][0] ^= 1;
    for (path, bytes) in r::tiles(&rewritten) {
        std::fs::write(folder.join("server").join(path), bytes).unwrap();
    }
    let mut new = body.clone();
    new.root = r::mth(&rewritten);
    write_note(&folder, &r::sign_note(&new, &pinned.name, &seed).0);
    let site = serve_folder(folder.clone(), None).await.base;
    refused(&watch(&site, &old_state, None, None).await, "rewritten");
    // The same tampered copy passes a monitor with no memory: what catches
    // the rewrite is the checkpoint it kept.
    let fresh = dir.path().join("state-fresh");
    passes(&watch(&site, &fresh, None, Some(vkey.trim())).await);

    // A shrink, by editing the database: its newer checkpoints deleted (a
    // restored backup, a rollback), the site serves an older one.
    let db = h.connect().await;
    sqlx::query(&format!(
        "DELETE FROM checkpoints WHERE size > {}",
        old.size
    ))
    .execute(&db.pool)
    .await
    .expect("an insider deletes the newer checkpoints");
    refused(&watch(&base, &state, None, None).await, "shrank");

    // And the honest site still passes a monitor that kept the older one.
    passes(&watch(&base, &old_state, None, None).await);
}
