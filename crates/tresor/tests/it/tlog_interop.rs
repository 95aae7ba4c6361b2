//! Interoperability of the transparency log: the real server's published
//! checkpoints, tiles and receipts checked with a verifier the log does not
//! use to write (`common/rfc9162.rs`: RFC 9162's pseudo-code, `sha2`,
//! `ed25519-dalek`, the note's key id and the tile layout by hand).

use crate::common::rfc9162::{self as r, H};
use crate::common::trail::fetch_text;
use crate::common::{
    Harness, assert_exit, buy_and_play, cookie_client, get_json, header, register_and_deposit,
};
use serde_json::Value;

on_both!(
    real_checkpoints_and_tiles_verify_with_an_independent_verifier,
    tresor_audit_receipt_checks_a_real_record_offline,
    real_receipts_verify_with_an_independent_verifier,
);

#[test]
fn the_independent_proofs_agree_with_each_other() {
    let leaves: Vec<H> = (0..300u32).map(|i| r::leaf(&i.to_be_bytes())).collect();
    for n in [1usize, 2, 3, 7, 8, 255, 256, 257, 300] {
        let root = r::mth(&leaves[..n]);
        for m in [0, n / 2, n - 1] {
            let proof = r::path(m, &leaves[..n]);
            assert!(r::verify_inclusion(
                m as u64, n as u64, &leaves[m], &proof, &root
            ));
            let other = &leaves[(m + 1) % 300];
            assert!(!r::verify_inclusion(
                m as u64, n as u64, other, &proof, &root
            ));
        }
        for m in 1..=n {
            let proof = r::consistency(m, &leaves[..n]);
            let first = r::mth(&leaves[..m]);
            assert!(
                r::verify_consistency(m as u64, n as u64, &first, &root, &proof),
                "{m} {n}"
            );
            if m < n {
                let wrong = r::mth(&leaves[1..=m]);
                assert!(!r::verify_consistency(
                    m as u64, n as u64, &wrong, &root, &proof
                ));
            }
        }
    }
    assert_eq!(r::tile_path(0, 1234, 7), "tile/0/x001/234.p/7");
    assert_eq!(r::tile_path(1, 5, 256), "tile/1/005");
}

/// RFC 6962's reference vectors (the Certificate Transparency project's
/// Merkle tree tests): the roots of the trees of the first 1 to 8 of these
/// leaves. The independent verifier and the log's own library (`tlog_tiles`)
/// must both give them: a verifier checked only against itself would agree
/// with a wrong one.
#[test]
fn the_roots_are_rfc_6962s_known_answers() {
    let inputs = CT_LEAVES;
    let roots = [
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
        "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
        "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
        "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
        "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
        "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
    ];
    let leaves: Vec<H> = inputs.iter().map(|data| r::leaf(data)).collect();
    let mut stored = std::collections::BTreeMap::new();
    for (n, expected) in roots.iter().enumerate() {
        let size = n + 1;
        assert_eq!(
            hex::encode(r::mth(&leaves[..size])),
            *expected,
            "the independent verifier's root of {size} leaves"
        );
        let hash = tlog_tiles::record_hash(inputs[n]);
        let hashes = tlog_tiles::stored_hashes_for_record_hash(
            n as u64,
            hash,
            &tresor::trail::log::MapReader(&stored),
        )
        .expect("stored hashes");
        let first = tlog_tiles::stored_hash_index(0, n as u64);
        for (offset, h) in (0u64..).zip(hashes) {
            stored.insert(first + offset, h);
        }
        let root = tlog_tiles::tree_hash(size as u64, &tresor::trail::log::MapReader(&stored))
            .expect("a root");
        assert_eq!(
            hex::encode(root.0),
            *expected,
            "the log's root of {size} leaves"
        );
    }
}

/// RFC 6962's eight reference leaves (the Certificate Transparency
/// project's Merkle tree tests).
const CT_LEAVES: [&[u8]; 8] = [
    b"",
    b"\x00",
    b"\x10",
    b"\x20\x21",
    b"\x30\x31",
    b"\x40\x41\x42\x43",
    b"\x50\x51\x52\x53\x54\x55\x56\x57",
    b"\x60\x61\x62\x63\x64\x65\x66\x67\x68\x69\x6a\x6b\x6c\x6d\x6e\x6f",
];

/// The known inclusion proofs over [`CT_LEAVES`]: (leaf index, tree size,
/// proof), from the same tests (transparency-dev/merkle,
/// `proof/verify_test.go`, whose leaves count from 1).
const CT_INCLUSION: [(usize, usize, &[&str]); 4] = [
    (
        0,
        8,
        &[
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        5,
        8,
        &[
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (
        2,
        3,
        &["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"],
    ),
    (
        1,
        5,
        &[
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
];

/// The known consistency proofs over [`CT_LEAVES`]: (old size, new size,
/// proof), from the same tests.
const CT_CONSISTENCY: [(usize, usize, &[&str]); 4] = [
    (
        1,
        8,
        &[
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        6,
        8,
        &[
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (
        2,
        5,
        &[
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
    (
        6,
        7,
        &[
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
];

/// The reference tree's leaf hashes, and its stored hashes as the log's
/// own library (`tlog_tiles`, which makes the receipts' and the monitor's
/// proofs) keeps them.
fn ct_tree() -> (Vec<H>, std::collections::BTreeMap<u64, tlog_tiles::Hash>) {
    let leaves: Vec<H> = CT_LEAVES.iter().map(|data| r::leaf(data)).collect();
    let mut stored = std::collections::BTreeMap::new();
    for (n, data) in CT_LEAVES.iter().enumerate() {
        let hashes =
            tlog_tiles::stored_hashes(n as u64, data, &tresor::trail::log::MapReader(&stored))
                .expect("stored hashes");
        let first = tlog_tiles::stored_hash_index(0, n as u64);
        for (offset, h) in (0u64..).zip(hashes) {
            stored.insert(first + offset, h);
        }
    }
    (leaves, stored)
}

fn hexes(proof: &[H]) -> Vec<String> {
    proof.iter().map(hex::encode).collect()
}

fn known(proof: &[&str]) -> Vec<H> {
    proof
        .iter()
        .map(|h| hex::decode(h).unwrap().try_into().unwrap())
        .collect()
}

/// `proof` with one bit of its `k`th hash flipped.
fn flipped(proof: &[H], k: usize) -> Vec<H> {
    let mut proof = proof.to_vec();
    proof[k][0] ^= 8;
    proof
}

fn tlog(proof: &[H]) -> Vec<tlog_tiles::Hash> {
    proof.iter().map(|h| tlog_tiles::Hash(*h)).collect()
}

/// The known inclusion proofs of RFC 6962's reference tree: the
/// independent verifier makes exactly them and accepts them (and not with
/// a bit flipped), and so does the log's own library. A generator and a
/// verifier checked only against each other could agree on a wrong proof.
#[test]
fn the_inclusion_proofs_are_rfc_6962s_known_answers() {
    let (leaves, stored) = ct_tree();
    let reader = tresor::trail::log::MapReader(&stored);
    for (index, size, proof) in CT_INCLUSION {
        let proof = known(proof);
        let (i, n) = (index as u64, size as u64);
        let root = r::mth(&leaves[..size]);
        assert_eq!(
            hexes(&r::path(index, &leaves[..size])),
            hexes(&proof),
            "PATH({index}, {size})"
        );
        assert!(r::verify_inclusion(i, n, &leaves[index], &proof, &root));
        for k in 0..proof.len() {
            assert!(!r::verify_inclusion(
                i,
                n,
                &leaves[index],
                &flipped(&proof, k),
                &root
            ));
        }
        let made = tlog_tiles::prove_record(n, i, &reader).unwrap();
        let made: Vec<H> = made.iter().map(|h| h.0).collect();
        assert_eq!(
            hexes(&made),
            hexes(&proof),
            "the log's proof of leaf {index} in {size}"
        );
        tlog_tiles::check_record(
            &tlog(&proof),
            n,
            tlog_tiles::Hash(root),
            i,
            tlog_tiles::Hash(leaves[index]),
        )
        .expect("the log checks the known proof");
    }
}

/// The known consistency proofs of RFC 6962's reference tree, made and
/// checked by both, as above.
#[test]
fn the_consistency_proofs_are_rfc_6962s_known_answers() {
    let (leaves, stored) = ct_tree();
    let reader = tresor::trail::log::MapReader(&stored);
    for (old, new, proof) in CT_CONSISTENCY {
        let proof = known(proof);
        let (m, n) = (old as u64, new as u64);
        let (first, second) = (r::mth(&leaves[..old]), r::mth(&leaves[..new]));
        assert_eq!(
            hexes(&r::consistency(old, &leaves[..new])),
            hexes(&proof),
            "PROOF({old}, {new})"
        );
        assert!(r::verify_consistency(m, n, &first, &second, &proof));
        for k in 0..proof.len() {
            assert!(!r::verify_consistency(
                m,
                n,
                &first,
                &second,
                &flipped(&proof, k)
            ));
        }
        let made = tlog_tiles::prove_tree(n, m, &reader).unwrap();
        let made: Vec<H> = made.iter().map(|h| h.0).collect();
        assert_eq!(
            hexes(&made),
            hexes(&proof),
            "the log's proof of {old} in {new}"
        );
        tlog_tiles::check_tree(
            &tlog(&proof),
            n,
            tlog_tiles::Hash(second),
            m,
            tlog_tiles::Hash(first),
        )
        .expect("the log checks the known proof");
    }
}

/// Every leaf hash of the tree of `size` leaves, read from the level-0
/// tiles the site serves (each checked for its cache header).
async fn leaves_of(client: &reqwest::Client, tiles: &str, size: u64) -> Vec<H> {
    let mut leaves = Vec::new();
    for k in 0..size.div_ceil(256) {
        let width = (size - k * 256).min(256);
        let url = format!("{tiles}{}", &r::tile_path(0, k, width)["tile/".len()..]);
        let response = client.get(&url).send().await.unwrap();
        assert_eq!(response.status(), 200, "{url}");
        let cache = header(&response, "cache-control").to_owned();
        if width == 256 {
            assert_eq!(cache, "public, max-age=31536000, immutable", "{url}");
        } else {
            assert_eq!(cache, "public, max-age=5", "{url}");
        }
        let bytes = response.bytes().await.unwrap();
        assert_eq!(bytes.len() as u64, width * 32, "{url}");
        leaves.extend(bytes.chunks(32).map(|c| <H>::try_from(c).unwrap()));
    }
    leaves
}

/// A receipt checked by hand against the pinned key and the leaves.
fn check_receipt(receipt: &Value, key: &r::Vkey, vkey: &str, leaves: &[H]) {
    assert_eq!(receipt["key"].as_str(), Some(vkey), "{receipt}");
    let body = r::open_note(receipt["checkpoint"].as_str().unwrap(), key)
        .unwrap_or_else(|| panic!("the receipt's checkpoint verifies: {receipt}"));
    let origin = receipt["origin"].as_str().unwrap();
    assert_eq!(body.origin, origin);
    let index = receipt["index"].as_u64().unwrap();
    let leaf = r::leaf(&r::leaf_data(origin, index, &receipt["record"]));
    assert_eq!(leaf, leaves[index as usize], "the leaf the tiles publish");
    let proof: Vec<H> = receipt["proof"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| r::unb64(p.as_str().unwrap()))
        .collect();
    assert!(
        r::verify_inclusion(index, body.size, &leaf, &proof, &body.root),
        "RFC 9162 inclusion of {index} in {}: {receipt}",
        body.size
    );
    assert_eq!(
        proof,
        r::path(index as usize, &leaves[..body.size as usize])
    );
    // One byte of the record changed: the proof no longer leads to the root.
    let mut altered = receipt["record"].clone();
    let result = altered["result"].as_str().unwrap().replacen('1', "2", 1);
    altered["result"] = Value::String(result.clone());
    if result != receipt["record"]["result"].as_str().unwrap() {
        let leaf = r::leaf(&r::leaf_data(origin, index, &altered));
        assert!(!r::verify_inclusion(
            index, body.size, &leaf, &proof, &body.root
        ));
    }
}

/// A real server after 64 plays by four players, the plays' answers, and
/// checkpoints of its log read along the way.
struct Played {
    server: crate::common::Server,
    clients: Vec<reqwest::Client>,
    answers: Vec<Value>,
    earlier: Vec<String>,
}

async fn play(h: &Harness) -> Played {
    let server = h.server(&crate::common::unthrottled_flags()).await;
    let base = server.base.clone();
    let mut clients = Vec::new();
    for i in 0..4 {
        let client = cookie_client();
        register_and_deposit(&client, &base, &format!("interop{i}"), 100_000).await;
        clients.push(client);
    }
    let mut answers = Vec::new();
    let mut earlier = Vec::new();
    // Enough plays for a full tile and a level-1 tile (five records each).
    for round in 0..16 {
        let plays =
            futures_util::future::join_all(clients.iter().map(|c| buy_and_play(c, &base, 100)))
                .await;
        answers.extend(plays);
        if round % 5 == 0 {
            let note = fetch_text(&format!("{base}/log/server/checkpoint")).await;
            earlier.push(note);
        }
    }
    Played {
        server,
        clients,
        answers,
        earlier,
    }
}

/// The published key, and the server log's checkpoint and leaves, each
/// checked by hand.
async fn server_log(base: &str) -> (String, r::Vkey, r::Body, Vec<H>) {
    let site = reqwest::Client::new();
    let index = get_json(&site, &format!("{base}/log/")).await;
    let vkey = index["key"].as_str().expect("the current key").to_owned();
    let key = r::parse_vkey(&vkey);
    let note = fetch_text(&format!("{base}/log/server/checkpoint")).await;
    let body = r::open_note(&note, &key).expect("the checkpoint verifies by hand");
    let leaves = leaves_of(&site, &format!("{base}/log/server/tile/"), body.size).await;
    assert_eq!(r::mth(&leaves), body.root);
    (vkey, key, body, leaves)
}

async fn real_receipts_verify_with_an_independent_verifier(h: &Harness) {
    let played = play(h).await;
    let base = played.server.base.clone();
    let (vkey, key, _, leaves) = server_log(&base).await;
    for answer in &played.answers {
        check_receipt(&answer["receipt"], &key, &vkey, &leaves);
    }
    // The receipt endpoint and the history carry one too.
    let id = played.answers[0]["id"].as_i64().unwrap();
    let receipt = get_json(
        &played.clients[0],
        &format!("{base}/api/plays/{id}/receipt"),
    )
    .await;
    let receipt = receipt.get("receipt").cloned().unwrap_or(receipt);
    check_receipt(&receipt, &key, &vkey, &leaves);
    let history = get_json(&played.clients[0], &format!("{base}/api/plays?limit=5")).await;
    let rows = history["plays"]
        .as_array()
        .or(history["items"].as_array())
        .expect("history rows");
    for row in rows {
        check_receipt(&row["receipt"], &key, &vkey, &leaves);
    }
}

async fn real_checkpoints_and_tiles_verify_with_an_independent_verifier(h: &Harness) {
    let played = play(h).await;
    let base = played.server.base.clone();
    let site = reqwest::Client::new();
    let earlier = played.earlier;
    let index = get_json(&site, &format!("{base}/log/")).await;
    let vkey = index["key"].as_str().expect("the current key").to_owned();
    let key = r::parse_vkey(&vkey);
    assert!(
        index["keys"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["vkey"] == vkey)
    );
    let mut checked_full_tile = false;
    for log in crate::common::items(&index["logs"], "logs") {
        let writer = log["writer"].as_str().unwrap();
        let response = site
            .get(format!("{base}{}", log["checkpoint"].as_str().unwrap()))
            .send()
            .await
            .unwrap();
        assert_eq!(response.headers()["cache-control"], "no-cache");
        assert!(header(&response, "content-type").starts_with("text/plain"));
        let note = response.text().await.unwrap();
        let body = r::open_note(&note, &key).expect("the checkpoint verifies by hand");
        assert_eq!(body.origin, log["origin"].as_str().unwrap());
        assert_eq!(body.origin, format!("{}/{writer}", key.name));
        let tiles = format!("{base}{}", log["tiles"].as_str().unwrap());
        let leaves = leaves_of(&site, &tiles, body.size).await;
        assert_eq!(
            r::mth(&leaves),
            body.root,
            "the tiles' leaves hash to the root"
        );
        // Every tile, every level, as built by hand from the leaves.
        for (path, bytes) in r::tiles(&leaves) {
            let served = site
                .get(format!("{tiles}{}", &path["tile/".len()..]))
                .send()
                .await
                .unwrap();
            assert_eq!(served.status(), 200, "{path}");
            assert_eq!(served.bytes().await.unwrap().to_vec(), bytes, "{path}");
            checked_full_tile |= path.starts_with("tile/1/");
        }
        // Past the end of the tree, and the entries, are not there.
        let past = r::tile_path(0, body.size / 256 + 1, 1);
        for path in [&past[..], "tile/data/000", "tile/0/000.p/0", "tile/x"] {
            let url = format!("{tiles}{}", &path["tile/".len().min(path.len())..]);
            assert_eq!(site.get(&url).send().await.unwrap().status(), 404, "{url}");
        }
        // Consistency from each earlier checkpoint, proved by hand.
        for old in earlier.iter().filter(|_| writer == "server") {
            let old = r::open_note(old, &key).expect("an earlier checkpoint verifies");
            let proof = r::consistency(old.size as usize, &leaves);
            assert!(r::verify_consistency(
                old.size, body.size, &old.root, &body.root, &proof
            ));
            assert_eq!(old.root, r::mth(&leaves[..old.size as usize]));
        }
    }
    assert!(checked_full_tile, "a level-1 tile was checked");
    assert_eq!(played.answers.len(), 64);
}

/// `tresor audit receipt` on a receipt made by hand from a real record
/// (read from the database, as the auditor's export gives it), the site's
/// checkpoint and an inclusion proof computed from its tiles: it checks;
/// one byte of the record changed, or another key pinned, it is refused.
async fn tresor_audit_receipt_checks_a_real_record_offline(h: &Harness) {
    let server = h.server(&crate::common::unthrottled_flags()).await;
    let base = server.base.clone();
    let client = cookie_client();
    register_and_deposit(&client, &base, "offline", 10_000).await;
    for _ in 0..3 {
        buy_and_play(&client, &base, 100).await;
    }
    let (vkey, _, body, leaves) = server_log(&base).await;
    let note = fetch_text(&format!("{base}/log/server/checkpoint")).await;
    let db = h.connect().await;
    let (index, at_ms, actor, action, request, result, salt): (
        i64,
        i64,
        String,
        String,
        String,
        String,
        String,
    ) = sqlx::query_as(
        "SELECT t.idx, t.at_ms, t.actor, t.action, t.request, t.result, t.salt \
             FROM trail t JOIN logs l ON l.id = t.log_id \
             WHERE l.writer = 'server' AND t.action = 'buy' ORDER BY t.idx LIMIT 1",
    )
    .fetch_one(&db.pool)
    .await
    .expect("a buy record in the server's log");
    assert!((index as u64) < body.size);
    let proof: Vec<String> = r::path(index as usize, &leaves)
        .iter()
        .map(r::b64)
        .collect();
    let receipt = serde_json::json!({
        "origin": body.origin, "index": index,
        "record": {"at_ms": at_ms, "actor": actor, "action": action, "request": request,
                   "result": result, "salt": salt},
        "checkpoint": note, "proof": proof, "key": vkey,
    });
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("receipt.json");
    let check = |receipt: &Value, key: &str| {
        std::fs::write(&file, receipt.to_string()).unwrap();
        crate::common::tresor(&["audit", "receipt", file.to_str().unwrap(), "--key", key])
    };
    let output = check(&receipt, &vkey);
    assert_exit(&output, 0);
    assert!(String::from_utf8_lossy(&output.stdout).contains("the receipt checks"));
    // Within a whole answer too.
    let output = check(&serde_json::json!({"id": 1, "receipt": receipt}), &vkey);
    assert_exit(&output, 0);

    let mut altered = receipt.clone();
    let salt = altered["record"]["salt"].as_str().unwrap().to_owned();
    let flipped = if salt.starts_with('0') { "1" } else { "0" };
    altered["record"]["salt"] = Value::String(format!("{flipped}{}", &salt[1..]));
    let output = check(&altered, &vkey);
    assert_exit(&output, 1);
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("does not lead to the checkpoint's root")
    );

    let (_, other) = r::sign_note(&body, &r::parse_vkey(&vkey).name, &[9; 32]);
    let output = check(&receipt, &other);
    assert_exit(&output, 1);
    assert!(String::from_utf8_lossy(&output.stderr).contains("not the pinned key"));

    let output = check(&receipt, "not a key");
    assert_exit(&output, 2);
}
