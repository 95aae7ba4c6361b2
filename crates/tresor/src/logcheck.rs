//! Checking the signed transparency log from outside, with what anyone
//! holds: a verifier key ("vkey"), a checkpoint (a C2SP signed note), a
//! receipt, tiles. Nothing here reads the database or the writer's state:
//! the monitor (`tresor audit watch`), `tresor audit receipt` and the tests
//! use it on what the server published (docs/AUDIT.md, "The log").
//!
//! The formats are standard ones: the C2SP `signed-note` (Ed25519) and
//! `tlog-checkpoint`, RFC 9162 proofs (the `tlog_tiles` crate, Go's
//! `sumdb/tlog` ported), and the C2SP `tlog-tiles` paths (height 8).
//! A leaf is the contract's v2 record encoding ([`leaf_data`]). A leaf of
//! the log is the module's one thing of Tresor's own. A leaf.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};
use signed_note::{Note, StandardVerifier, Verifier, VerifierList};
use tlog_tiles::{Checkpoint, Hash};

mod cosignature;
mod listing;
mod tiles;
pub use cosignature::{
    COSIGNATURE_ALG, Witness, WitnessKey, check_cosigned, cosigned_message, split_note,
};
pub use listing::{LastSigned, ListedKey, Listing, ListingVerdict};
pub use tiles::{
    Needs, TileStore, authenticated_tile, check_consistency, over_tiles, parse_tile_path,
    tile_in_tree, tile_path, tiles_of,
};

/// The tiles' height: 2^8 = 256 hashes a full tile (C2SP tlog-tiles).
pub const TILE_HEIGHT: u8 = 8;
/// The hashes of a full tile.
pub const TILE_WIDTH: u32 = 1 << TILE_HEIGHT;

/// Why something did not check, in words a person reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CheckError(pub String);

fn fail<T>(message: impl Into<String>) -> Result<T, CheckError> {
    Err(CheckError(message.into()))
}

/// A verifier key, `<name>+<8 hex key id>+<base64(0x01 || key)>`, checked
/// (its id is the SHA-256 of the name and key, as signed-note says).
#[derive(Clone)]
pub struct VerifierKey {
    text: String,
    verifier: StandardVerifier,
}

impl std::fmt::Debug for VerifierKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("VerifierKey").field(&self.text).finish()
    }
}

impl VerifierKey {
    pub fn parse(text: &str) -> Result<VerifierKey, CheckError> {
        let text = text.trim();
        let verifier = StandardVerifier::new(text)
            .map_err(|e| CheckError(format!("not a verifier key ({e}): {text}")))?;
        Ok(VerifierKey {
            text: text.to_owned(),
            verifier,
        })
    }

    /// The key's name (`tresor/<installation>`).
    pub fn name(&self) -> &str {
        self.verifier.name()
    }

    pub fn id(&self) -> u32 {
        self.verifier.key_id()
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// A checkpoint whose signature checked: its origin, size and root.
#[derive(Debug, Clone, PartialEq)]
pub struct SignedCheckpoint {
    pub origin: String,
    pub size: u64,
    pub root: Hash,
    /// The whole note, as it was given.
    pub note: String,
}

impl SignedCheckpoint {
    /// The checkpoint `body` of the signed note `note`.
    pub fn of(body: &Checkpoint, note: &str) -> SignedCheckpoint {
        SignedCheckpoint {
            origin: body.origin().to_owned(),
            size: body.size(),
            root: *body.hash(),
            note: note.to_owned(),
        }
    }
}

/// Checks a signed note's Ed25519 signature under `key` and parses its body
/// as a C2SP checkpoint. A note signed by another key (or by none) is
/// refused, naming the key ids found.
pub fn open_checkpoint(note: &str, key: &VerifierKey) -> Result<SignedCheckpoint, CheckError> {
    let parsed = Note::from_bytes(note.as_bytes())
        .map_err(|e| CheckError(format!("not a signed note ({e})")))?;
    let known = VerifierList::new(vec![Box::new(key.verifier.clone()) as Box<dyn Verifier>]);
    if let Err(error) = parsed.verify(&known) {
        let signers: Vec<String> = note
            .rsplit_once("\n\n")
            .map(|(_, sigs)| sigs.lines().map(signer_of).collect())
            .unwrap_or_default();
        return fail(format!(
            "the checkpoint is not signed by the pinned key {} ({error}); signed by: {}",
            key.as_str(),
            if signers.is_empty() {
                "nobody".to_owned()
            } else {
                signers.join(", ")
            }
        ));
    }
    let body = Checkpoint::from_bytes(parsed.text())
        .map_err(|_| CheckError("the signed note is not a checkpoint".to_owned()))?;
    Ok(SignedCheckpoint::of(&body, note))
}

/// `name+id` of a signature line (`— name base64(id || signature)`).
fn signer_of(line: &str) -> String {
    let mut words = line.trim_start_matches('—').split_whitespace();
    let name = words.next().unwrap_or("?");
    let id = words
        .next()
        .and_then(|b| BASE64.decode(b).ok())
        .filter(|b| b.len() >= 4)
        .map(|b| hex::encode(&b[..4]))
        .unwrap_or_else(|| "?".to_owned());
    format!("{name}+{id}")
}

/// A v2 record as a receipt and the auditor's export give it (the
/// record's fields its leaf covers, with origin and index).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub at_ms: i64,
    pub actor: String,
    pub action: String,
    pub request: String,
    pub result: String,
    pub salt: String,
}

/// A play's receipt (docs/AUDIT.md, "A receipt").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipt {
    pub origin: String,
    pub index: u64,
    pub record: Record,
    /// The signed note of a checkpoint whose tree includes the record.
    pub checkpoint: String,
    /// The inclusion proof, hashes in base64.
    pub proof: Vec<String>,
    /// The verifier key that signed the checkpoint (informative).
    pub key: String,
}

fn netstring(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(bytes.len().to_string().as_bytes());
    out.push(b':');
    out.extend_from_slice(bytes);
    out.push(b',');
}

/// A leaf's data: netstrings of `tresor-trail-v2`, the origin, the index,
/// the time, actor, action, request, result and salt, in that order.
pub fn leaf_data(origin: &str, index: u64, record: &Record) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    for field in [
        "tresor-trail-v2",
        origin,
        &index.to_string(),
        &record.at_ms.to_string(),
        &record.actor,
        &record.action,
        &record.request,
        &record.result,
        &record.salt,
    ] {
        netstring(&mut out, field.as_bytes());
    }
    out
}

/// A leaf's hash: SHA-256(0x00 || leaf data) (RFC 9162 §2.1.1).
pub fn leaf_hash(origin: &str, index: u64, record: &Record) -> Hash {
    tlog_tiles::record_hash(&leaf_data(origin, index, record))
}

fn decode_hash(text: &str) -> Result<Hash, CheckError> {
    let bytes = BASE64
        .decode(text)
        .map_err(|_| CheckError(format!("a proof hash is not base64: {text}")))?;
    let bytes: [u8; 32] = bytes
        .try_into()
        .map_err(|_| CheckError(format!("a proof hash is not 32 bytes: {text}")))?;
    Ok(Hash(bytes))
}

/// What a receipt proved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Included {
    pub origin: String,
    pub index: u64,
    pub size: u64,
}

/// Checks a receipt against the key the verifier pinned itself (never the
/// receipt's own `key` alone): the checkpoint's signature, its origin, and
/// the inclusion proof of the record's leaf at `index` (RFC 9162 §2.1.3.2).
pub fn check_receipt(receipt: &Receipt, key: &VerifierKey) -> Result<Included, CheckError> {
    if receipt.key.trim() != key.as_str() {
        return fail(format!(
            "the receipt names the key {}, not the pinned key {}",
            receipt.key,
            key.as_str()
        ));
    }
    let checkpoint = open_checkpoint(&receipt.checkpoint, key)?;
    if checkpoint.origin != receipt.origin {
        return fail(format!(
            "the checkpoint is of the log {}, the receipt of {}",
            checkpoint.origin, receipt.origin
        ));
    }
    if receipt.index >= checkpoint.size {
        return fail(format!(
            "record {} is past the checkpoint's {} records",
            receipt.index, checkpoint.size
        ));
    }
    let proof = receipt
        .proof
        .iter()
        .map(|h| decode_hash(h))
        .collect::<Result<Vec<_>, _>>()?;
    let leaf = leaf_hash(&receipt.origin, receipt.index, &receipt.record);
    tlog_tiles::check_record(
        &proof,
        checkpoint.size,
        checkpoint.root,
        receipt.index,
        leaf,
    )
    .map_err(|_| {
        CheckError(format!(
            "the inclusion proof of record {} does not lead to the checkpoint's root \
             (size {}): the record or the proof was altered",
            receipt.index, checkpoint.size
        ))
    })?;
    Ok(Included {
        origin: checkpoint.origin,
        index: receipt.index,
        size: checkpoint.size,
    })
}

/// The root's hash as base64 (as in a checkpoint).
pub fn base64_hash(hash: &Hash) -> String {
    BASE64.encode(hash.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tlog_tiles::Tile;

    #[test]
    fn tile_paths_are_c2sp_ones() {
        let tile = Tile::new(TILE_HEIGHT, 0, 1234, 7, false);
        assert_eq!(tile_path(&tile), "tile/0/x001/234.p/7");
        assert_eq!(parse_tile_path("tile/0/x001/234.p/7"), Some(tile));
        let full = Tile::new(TILE_HEIGHT, 1, 5, TILE_WIDTH, false);
        assert_eq!(tile_path(&full), "tile/1/005");
        assert_eq!(parse_tile_path("tile/1/005"), Some(full));
        assert_eq!(parse_tile_path("tile/1/5"), None);
        assert_eq!(parse_tile_path("tile/data/000"), None);
        assert_eq!(parse_tile_path("tile/8/0/000"), None);
        // What a client may send, refused without a panic.
        for bad in [
            "tile/0/000.p/0",
            "tile/0/000.p/256",
            "tile/0/000.p/007",
            "tile/64/000",
            "tile/9/000",
            "tile/0/x000/001",
            "tile/0/x999/x999/x999/x999/x999/x999/x999/999",
            "tile/0/-01",
            "tile/0/",
            "tile/x",
        ] {
            assert_eq!(parse_tile_path(bad), None, "{bad}");
        }
    }

    #[test]
    fn tiles_exist_only_within_the_tree() {
        let t = |l, n, w| Tile::new(TILE_HEIGHT, l, n, w, false);
        assert_eq!(tile_in_tree(&t(0, 0, 256), 256), Some(true));
        assert_eq!(tile_in_tree(&t(0, 0, 10), 256), Some(false));
        assert_eq!(tile_in_tree(&t(0, 1, 1), 256), None);
        assert_eq!(tile_in_tree(&t(1, 0, 1), 256), Some(false));
        assert_eq!(tile_in_tree(&t(1, 0, 2), 256), None);
        assert_eq!(tiles_of(300).len(), 3);
        // Indexes whose hashes are past 2^64 (issue 32): no tile, no overflow.
        let last = (1u64 << 56) - 1;
        assert_eq!(tile_in_tree(&t(0, last, 256), u64::MAX), None);
        assert_eq!(tile_in_tree(&t(0, last, 255), 1 << 40), None);
        assert_eq!(tile_in_tree(&t(7, last, 256), u64::MAX), None);
        assert_eq!(tile_in_tree(&t(0, last - 1, 256), u64::MAX), Some(true));
    }

    #[test]
    fn leaf_data_is_netstrings_in_the_contracts_order() {
        let record = Record {
            at_ms: 5,
            actor: "a".into(),
            action: "buy".into(),
            request: "{}".into(),
            result: "é".into(),
            salt: "00".into(),
        };
        assert_eq!(
            leaf_data("o/w", 12, &record),
            "15:tresor-trail-v2,3:o/w,2:12,1:5,1:a,3:buy,2:{},2:é,2:00,".as_bytes()
        );
    }

    /// A log of `n` records in memory: their stored hashes, a signed
    /// checkpoint, and a receipt for record `index`.
    fn log_of(n: u64, index: u64, seed: u8) -> (Receipt, String, Vec<Hash>) {
        use signed_note::{Signer, StandardSigner};
        let origin = "tresor/test/server";
        let record = |i: u64| Record {
            at_ms: i as i64,
            actor: "player:1:ann".into(),
            action: "buy".into(),
            request: format!("{{\"n\":{i}}}"),
            result: "{}".into(),
            salt: format!("{i:064x}"),
        };
        struct Mem(std::cell::RefCell<Vec<Hash>>);
        impl tlog_tiles::HashReader for Mem {
            fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<Hash>, tlog_tiles::Error> {
                Ok(indexes
                    .iter()
                    .map(|&i| self.0.borrow()[i as usize])
                    .collect())
            }
        }
        let mem = Mem(std::cell::RefCell::new(Vec::new()));
        for i in 0..n {
            let data = leaf_data(origin, i, &record(i));
            let new = tlog_tiles::stored_hashes(i, &data, &mem).unwrap();
            mem.0.borrow_mut().extend(new);
        }
        let root = tlog_tiles::tree_hash(n, &mem).unwrap();
        let proof = tlog_tiles::prove_record(n, index, &mem).unwrap();
        let signing = ed25519_dalek::SigningKey::from_bytes(&[seed; 32]);
        let vkey = signed_note::new_ed25519_verifier_key("tresor/test", &signing.verifying_key());
        let skey = format!(
            "PRIVATE+KEY+tresor/test+{}+{}",
            vkey.split('+').nth(1).unwrap(),
            BASE64.encode([&[1u8][..], &[seed; 32][..]].concat())
        );
        let signer = StandardSigner::new(&skey).unwrap();
        let body = Checkpoint::new(origin, n, root, "").unwrap().to_bytes();
        let mut note = Note::new(&body, &[]).unwrap();
        note.add_sigs(&[&signer as &dyn Signer]).unwrap();
        let receipt = Receipt {
            origin: origin.into(),
            index,
            record: record(index),
            checkpoint: String::from_utf8(note.to_bytes()).unwrap(),
            proof: proof.iter().map(base64_hash).collect(),
            key: vkey.clone(),
        };
        let stored = mem.0.borrow().clone();
        (receipt, vkey, stored)
    }

    #[test]
    fn a_receipt_checks_and_one_altered_byte_or_another_key_does_not() {
        for (n, index) in [(1, 0), (2, 1), (300, 0), (300, 137), (300, 299)] {
            let (receipt, vkey, _) = log_of(n, index, 7);
            let key = VerifierKey::parse(&vkey).unwrap();
            let included = check_receipt(&receipt, &key).unwrap();
            assert_eq!((included.index, included.size), (index, n));

            let mut altered = receipt.clone();
            altered.record.result = "{ }".into();
            let error = check_receipt(&altered, &key).unwrap_err();
            assert!(
                error.0.contains("does not lead to the checkpoint's root"),
                "{error}"
            );

            let mut moved = receipt.clone();
            moved.index = (index + 1) % n.max(2);
            assert!(check_receipt(&moved, &key).is_err());

            let (_, other, _) = log_of(1, 0, 9);
            let other = VerifierKey::parse(&other).unwrap();
            let error = check_receipt(&receipt, &other).unwrap_err();
            assert!(error.0.contains("not the pinned key"), "{error}");
            // The receipt claiming the other key does not help it.
            let mut claimed = receipt.clone();
            claimed.key = other.as_str().to_owned();
            let error = check_receipt(&claimed, &other).unwrap_err();
            assert!(error.0.contains("not signed by the pinned key"), "{error}");
        }
    }

    #[test]
    fn consistency_is_built_from_tiles_and_a_rewrite_fails_it() {
        let (old, vkey, _) = log_of(100, 0, 3);
        let (new, _, stored) = log_of(700, 0, 3);
        let key = VerifierKey::parse(&vkey).unwrap();
        let old = open_checkpoint(&old.checkpoint, &key).unwrap();
        let new = open_checkpoint(&new.checkpoint, &key).unwrap();
        let reader = |i: u64| stored[i as usize];
        let mut store = TileStore::default();
        let mut fetched = 0;
        loop {
            match check_consistency(&store, old.size, old.root, new.size, new.root).unwrap() {
                Needs::Done(()) => break,
                Needs::Tiles(tiles) => {
                    for tile in tiles {
                        let level = tile.level() * TILE_HEIGHT;
                        let start = tile.level_index() << TILE_HEIGHT;
                        let data: Vec<u8> = (0..u64::from(tile.width()))
                            .flat_map(|i| reader(tlog_tiles::stored_hash_index(level, start + i)).0)
                            .collect();
                        store.tiles.insert(tile, data);
                        fetched += 1;
                    }
                }
            }
        }
        assert!(fetched > 0);
        // Another history of 100 records is not extended by this one.
        let (forged, _, _) = log_of(100, 0, 3);
        let mut forged = open_checkpoint(&forged.checkpoint, &key).unwrap();
        forged.root.0[0] ^= 1;
        let error =
            check_consistency(&store, forged.size, forged.root, new.size, new.root).unwrap_err();
        assert!(error.0.contains("rewritten"), "{error}");
        // Any tile altered: refused (it does not hash to the root, or the
        // proof built from it does not lead there).
        let tiles: Vec<Tile> = store.tiles.keys().copied().collect();
        for tile in tiles {
            let mut altered = TileStore {
                tiles: store.tiles.clone(),
                ..TileStore::default()
            };
            let data = altered.tiles.get_mut(&tile).unwrap();
            let last = data.len() - 1;
            data[last] ^= 1;
            let error =
                check_consistency(&altered, old.size, old.root, new.size, new.root).unwrap_err();
            assert!(
                error.0.contains("do not hash") || error.0.contains("rewritten"),
                "{error}"
            );
        }
    }
}
