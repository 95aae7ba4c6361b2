//! The receipt check of the fairness page and of `tresor audit receipt
//! --log` against what `/log/` publishes (issue 42, findings 6 and 7): a
//! receipt whose checkpoint a retired log key signed past the last size that
//! key signed of its log is refused by both alike (a made-up purchase in a
//! made-up tree, signed for real with the retired key); on a site that lists
//! witnesses, a receipt whose checkpoint they have not cosigned reads "not
//! cosigned", never "checked", until they cosign it. In Chromium, in French
//! and in English, axe-core clean.

use crate::common::browser::Browser;
use crate::common::page::browser_in_turn;
use crate::common::process::{strings, tresor_async};
use crate::common::rfc9162::{self, Body, H};
use crate::common::{
    Harness, buy_and_play, cookie_client, describe, fetch_json, register_and_deposit,
};
use crate::tlog::browser::{buy, check_pasted, open_fairness, proof_text, register};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Output;

// The page is the same on either database (its PostgreSQL smoke test is
// api::plays::browser::a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake).
on_sqlite!(a_receipt_signed_by_a_retired_key_past_its_last_size_is_refused_by_the_page_and_the_command_line);
on_sqlite!(on_a_site_with_witnesses_a_receipt_they_did_not_cosign_reads_not_cosigned_until_they_do);

async fn log_index(base: &str) -> Value {
    fetch_json(&format!("{base}/log/")).await
}

async fn receipt_of(player: &reqwest::Client, base: &str, play: &Value) -> Value {
    let response = player
        .get(format!("{base}/api/plays/{}/receipt", play["id"]))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    response.json().await.unwrap()
}

/// `tresor audit receipt FILE` with `args`, the receipt written to `dir`.
async fn audit_receipt(dir: &Path, receipt: &Value, args: &[&str]) -> Output {
    let file = dir.join("receipt.json");
    std::fs::write(&file, receipt.to_string()).unwrap();
    let mut all = strings(&["audit", "receipt", &file.display().to_string()]);
    all.extend(strings(args));
    tresor_async(all).await
}

/// A receipt of a purchase that never was (play 987654, a 20,000 € win),
/// the last leaf of a made-up tree of `size` leaves of the log `origin`,
/// its checkpoint signed with the Ed25519 `seed` under the key name `name`:
/// what whoever holds a retired key can make. Its verifier key too.
fn forged_receipt(origin: &str, size: u64, name: &str, seed: &[u8; 32]) -> (Value, String) {
    let index = size - 1;
    let record = json!({
        "at_ms": 1_900_000_000_000_i64,
        "actor": "player:1:keeper",
        "action": "buy",
        "request": json!({"stake_cents": 100}).to_string(),
        "result": json!({"play_id": 987_654, "prize_cents": 2_000_000}).to_string(),
        "salt": "5a".repeat(32),
    });
    let mut leaves: Vec<H> = (0..index)
        .map(|i| rfc9162::leaf(format!("made up {i}").as_bytes()))
        .collect();
    leaves.push(rfc9162::leaf(&rfc9162::leaf_data(origin, index, &record)));
    let root = rfc9162::mth(&leaves);
    let proof: Vec<String> = rfc9162::path(index as usize, &leaves)
        .iter()
        .map(rfc9162::b64)
        .collect();
    let body = Body {
        origin: origin.to_owned(),
        size,
        root,
    };
    let (note, vkey) = rfc9162::sign_note(&body, name, seed);
    let receipt = json!({
        "origin": origin, "index": index, "record": record,
        "checkpoint": note, "proof": proof, "key": vkey,
    });
    (receipt, vkey)
}

/// What the rotation left: the server on the new key, the keys, and a
/// receipt signed with the old key before the rotation.
struct Rotated {
    server: crate::common::Server,
    old_vkey: String,
    new_vkey: String,
    honest: Value,
}

/// A play bought on a server signing with the test key, then `tresor log
/// rotate-key` from the command line, and the server started again on the
/// new key, with one more play.
async fn rotated(h: &Harness, files: &Path) -> Rotated {
    let server = h.server(&[]).await;
    let player = cookie_client();
    register_and_deposit(&player, &server.base, "keeper", 5_000).await;
    let play = buy_and_play(&player, &server.base, 100).await;
    let honest = receipt_of(&player, &server.base, &play).await;
    let old_vkey = log_index(&server.base).await["key"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(honest["key"], old_vkey.as_str(), "{honest}");
    drop(server);

    let new_file = files.join("new.key");
    let new_file_text = new_file.display().to_string();
    let out = h.tresor_ok(&["log", "keygen", "--to", &new_file_text]);
    let new_vkey = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    h.tresor_ok(&["log", "rotate-key", "--new", &new_file_text]);
    let new_hex = std::fs::read_to_string(&new_file)
        .unwrap()
        .trim()
        .to_owned();
    let server = h.server(&["--log-key-hex".to_owned(), new_hex]).await;
    buy_and_play(&player, &server.base, 100).await;
    Rotated {
        server,
        old_vkey,
        new_vkey,
        honest,
    }
}

/// The server log's origin and its latest checkpoint's size.
async fn server_log(base: &str) -> (String, u64) {
    let index = log_index(base).await;
    let origin = index["logs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["writer"] == "server")
        .and_then(|l| l["origin"].as_str())
        .expect("the server's log")
        .to_owned();
    let note = reqwest::get(format!("{base}/log/server/checkpoint"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    (origin, note.lines().nth(1).unwrap().parse().unwrap())
}

/// The page refuses the forged receipt, saying why, in French and in
/// English; the honest receipt signed with the retired key before the
/// rotation still checks.
async fn the_page_refuses_it(browser: &Browser, base: &str, forged: &str, honest: &Value) {
    open_fairness(browser, base, "fr").await;
    let said = check_pasted(browser, forged).await;
    assert_eq!(said[0], json!("failed"), "{said}");
    assert_eq!(said[1], json!("retired"), "{said}");
    let words = said[2].as_str().unwrap();
    assert!(
        words.starts_with("Échec") && words.contains("retirée"),
        "{words}"
    );
    browser
        .assert_accessible_if_axe("the fairness page, a retired key's receipt")
        .await;
    browser.screenshot("fairness-receipt-retired-fr").await;
    let said = check_pasted(browser, &honest.to_string()).await;
    assert_eq!(said[0], json!("ok"), "{said}");
    browser.switch_language("en").await;
    let said = check_pasted(browser, forged).await;
    assert_eq!(said[1], json!("retired"), "{said}");
    let words = said[2].as_str().unwrap();
    assert!(
        words.starts_with("Failed") && words.contains("retired"),
        "{words}"
    );
}

/// The command line, given the same listing (saved, or the site's URL),
/// agrees with the page on both receipts.
async fn the_command_line_agrees(files: &Path, base: &str, rotated: &Rotated, forged: &Value) {
    let (old_vkey, honest) = (&rotated.old_vkey, &rotated.honest);
    let listing = files.join("log.json");
    std::fs::write(&listing, log_index(base).await.to_string()).unwrap();
    let listing = listing.display().to_string();
    let url = format!("{base}/log/");
    let refused = audit_receipt(files, forged, &["--key", old_vkey, "--log", &listing]).await;
    assert_eq!(refused.status.code(), Some(1), "{}", describe(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("retired"),
        "{}",
        describe(&refused)
    );
    let refused = audit_receipt(files, forged, &["--log", &url]).await;
    assert_eq!(refused.status.code(), Some(1), "{}", describe(&refused));
    let checked = audit_receipt(files, honest, &["--log", &url]).await;
    assert_eq!(checked.status.code(), Some(0), "{}", describe(&checked));
    let checked = audit_receipt(files, honest, &["--key", old_vkey, "--log", &listing]).await;
    assert_eq!(checked.status.code(), Some(0), "{}", describe(&checked));
}

/// What `/log/` says of the retired key: the last size it signed of each
/// log it signed (the server's, before the rotation; the command line's,
/// the rotation's own checkpoint), nothing of the current key.
async fn the_listing_names_its_last_sizes(base: &str, rotated: &Rotated, size_now: u64) {
    let index = log_index(base).await;
    assert_eq!(index["key"], rotated.new_vkey.as_str(), "{index}");
    let keys = index["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 2, "{index}");
    assert_eq!(keys[0]["vkey"], rotated.old_vkey.as_str());
    assert!(keys[1].get("last_signed").is_none(), "{index}");
    let last = |origin: &str| {
        keys[0]["last_signed"]
            .as_array()
            .unwrap_or_else(|| panic!("the retired key's last sizes: {index}"))
            .iter()
            .find(|l| l["origin"] == origin)
            .and_then(|l| l["size"].as_u64())
    };
    let honest = &rotated.honest;
    let honest_size: u64 = honest["checkpoint"]
        .as_str()
        .unwrap()
        .lines()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let origin = honest["origin"].as_str().unwrap();
    let server_last = last(origin).expect("the server's log");
    assert!(
        (honest_size..size_now).contains(&server_last),
        "{server_last} {index}"
    );
    let cli_origin = origin.replace("/server", "/cli");
    assert!(last(&cli_origin).is_some_and(|s| s > 0), "{index}");
}

/// Finding 6: after `tresor log rotate-key`, the retired key still verifies
/// the checkpoints it signed, but only up to the last size it signed of
/// each log, which `/log/` publishes; a made-up tree beyond it, signed with
/// it, is refused by the page and the command line alike, while an honest
/// receipt signed with it before the rotation still checks.
async fn a_receipt_signed_by_a_retired_key_past_its_last_size_is_refused_by_the_page_and_the_command_line(
    h: &Harness,
) {
    let (_turn, browser) = browser_in_turn(1280, 900).await;
    let files = tempfile::tempdir().unwrap();
    let rotated = rotated(h, files.path()).await;
    let base = rotated.server.base.clone();
    let (origin, size_now) = server_log(&base).await;

    // A made-up purchase in a made-up tree, signed with the retired key.
    let name = rotated.old_vkey.split('+').next().unwrap();
    let seed: [u8; 32] = hex::decode(crate::common::db::TEST_LOG_KEY)
        .unwrap()
        .try_into()
        .unwrap();
    let (forged, vkey) = forged_receipt(&origin, size_now + 1000, name, &seed);
    assert_eq!(
        vkey, rotated.old_vkey,
        "signed for real with the retired key"
    );

    the_page_refuses_it(&browser, &base, &forged.to_string(), &rotated.honest).await;
    browser.close().await;
    the_command_line_agrees(files.path(), &base, &rotated, &forged).await;
    the_listing_names_its_last_sizes(&base, &rotated, size_now).await;
}

/// The play's receipt as the history gives it, read by the page's session.
async fn history_receipt(browser: &Browser) -> Value {
    browser.get_json("/api/plays").await["plays"][0]["receipt"].clone()
}

/// `tresor audit witness-keygen`: the key file and the witness's vkey.
async fn witness_keygen(files: &Path) -> (String, String) {
    let key_file = files.join("witness.key").display().to_string();
    let out = tresor_async(strings(&[
        "audit",
        "witness-keygen",
        "--to",
        &key_file,
        "--name",
        "witness.test/one",
    ]))
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let witness = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (key_file, witness)
}

/// `tresor audit watch --once` as the witness: it checks and cosigns.
async fn witness_polls(files: &Path, base: &str, key_file: &str) {
    let out = tresor_async(strings(&[
        "audit",
        "watch",
        "--once",
        "--url",
        base,
        "--state",
        &files.join("state").display().to_string(),
        "--witness-key",
        key_file,
        "--witness-name",
        "witness.test/one",
    ]))
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
}

/// Beside a play just bought: in the log, not cosigned (a fresh
/// checkpoint), in French then in English.
async fn beside_the_play_not_cosigned(browser: &Browser, base: &str) {
    register(browser, base).await;
    let text = buy(browser, "uncosigned").await;
    assert!(text.contains("pas encore cosigné"), "{text}");
    browser.switch_language("en").await;
    let text = proof_text(browser, "uncosigned").await;
    assert!(text.contains("not cosigned"), "{text}");
    browser.finish_the_game().await;
}

/// On the fairness page, the receipt saved from the history: not
/// cosigned, in English then in French.
async fn on_the_fairness_page_not_cosigned(browser: &Browser, receipt: &Value) {
    browser.click("[data-testid=nav-fairness]").await;
    browser.wait_screen("fairness").await;
    let said = check_pasted(browser, &receipt.to_string()).await;
    assert_eq!(said[0], json!("failed"), "{said}");
    assert_eq!(said[1], json!("uncosigned"), "{said}");
    assert!(
        said[2].as_str().unwrap().starts_with("Not cosigned"),
        "{said}"
    );
    browser.switch_language("fr").await;
    let text = browser.wait_text_when("document.querySelector('[data-testid=receipt-result]').textContent.startsWith('Non cosigné')", "[data-testid=receipt-result]").await;
    assert!(text.contains("témoin"), "{text}");
    browser
        .assert_accessible_if_axe("the fairness page, a receipt not cosigned")
        .await;
    browser.screenshot("fairness-receipt-uncosigned-fr").await;
}

/// Finding 7: a site started with `--witness` lists its witness; a play's
/// receipt is said "not cosigned" beside the play and on the fairness page
/// (and refused by `tresor audit receipt --log`) until the witness cosigned
/// its checkpoint; then both say checked.
async fn on_a_site_with_witnesses_a_receipt_they_did_not_cosign_reads_not_cosigned_until_they_do(
    h: &Harness,
) {
    let (_turn, browser) = browser_in_turn(1280, 900).await;
    let files = tempfile::tempdir().unwrap();
    let (key_file, witness) = witness_keygen(files.path()).await;
    let server = h.server(&["--witness".to_owned(), witness.clone()]).await;
    let base = server.base.clone();
    beside_the_play_not_cosigned(&browser, &base).await;
    let receipt = history_receipt(&browser).await;
    assert!(receipt["proof"].is_array(), "{receipt}");
    on_the_fairness_page_not_cosigned(&browser, &receipt).await;
    let url = format!("{base}/log/");
    let refused = audit_receipt(files.path(), &receipt, &["--log", &url]).await;
    assert_eq!(refused.status.code(), Some(1), "{}", describe(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("no cosignature of the witness"),
        "{}",
        describe(&refused)
    );

    // The witness checks the log and cosigns: the receipt fetched again
    // carries its cosignature, and checks.
    witness_polls(files.path(), &base, &key_file).await;
    let receipt = history_receipt(&browser).await;
    let said = check_pasted(&browser, &receipt.to_string()).await;
    assert_eq!(said[0], json!("ok"), "{said}");
    assert!(
        said[2].as_str().unwrap().starts_with("Reçu vérifié"),
        "{said}"
    );
    let checked = audit_receipt(files.path(), &receipt, &["--log", &url]).await;
    assert_eq!(checked.status.code(), Some(0), "{}", describe(&checked));
    assert!(
        String::from_utf8_lossy(&checked.stdout)
            .contains(&format!("cosigned by the witness {witness}")),
        "{}",
        describe(&checked)
    );
    browser.close().await;
}
