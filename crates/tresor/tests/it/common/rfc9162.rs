//! A short verifier of the transparency log written apart from the one the
//! server writes with (no `tlog_tiles`, no `signed_note`, nothing of the
//! `tresor` crate): RFC 9162 hashing, §2.1.3 inclusion and §2.1.4
//! consistency proofs from the RFC's own pseudo-code, SHA-256 with `sha2`,
//! the C2SP signed note checked with `ed25519-dalek` directly and its key id
//! computed by hand, the C2SP tile layout by hand. The tests check the real
//! server's checkpoints, tiles and receipts with it, and make tampered
//! copies of them (signed with a key they hold) for the monitor.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use ed25519_dalek::{Signer, SigningKey, Verifier, VerifyingKey};
use sha2::{Digest, Sha256};

pub type H = [u8; 32];

fn sha(parts: &[&[u8]]) -> H {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// RFC 9162 §2.1.1: a leaf's hash.
pub fn leaf(data: &[u8]) -> H {
    sha(&[&[0], data])
}

/// RFC 9162 §2.1.1: an interior node's hash.
pub fn node(left: &H, right: &H) -> H {
    sha(&[&[1], left, right])
}

/// The largest power of two smaller than `n` (n > 1).
fn split(n: usize) -> usize {
    let mut k = 1;
    while k * 2 < n {
        k *= 2;
    }
    k
}

/// RFC 9162 §2.1.1: MTH(D[n]) over leaf hashes.
pub fn mth(leaves: &[H]) -> H {
    match leaves.len() {
        0 => sha(&[]),
        1 => leaves[0],
        n => {
            let k = split(n);
            node(&mth(&leaves[..k]), &mth(&leaves[k..]))
        }
    }
}

/// RFC 9162 §2.1.3.1: PATH(m, D[n]).
pub fn path(m: usize, leaves: &[H]) -> Vec<H> {
    let n = leaves.len();
    if n <= 1 {
        return Vec::new();
    }
    let k = split(n);
    let (mut proof, sibling) = if m < k {
        (path(m, &leaves[..k]), mth(&leaves[k..]))
    } else {
        (path(m - k, &leaves[k..]), mth(&leaves[..k]))
    };
    proof.push(sibling);
    proof
}

/// RFC 9162 §2.1.3.2: verifying an inclusion proof.
pub fn verify_inclusion(index: u64, size: u64, leaf_hash: &H, proof: &[H], root: &H) -> bool {
    if index >= size {
        return false;
    }
    let (mut fnode, mut snode) = (index, size - 1);
    let mut r = *leaf_hash;
    for p in proof {
        if snode == 0 {
            return false;
        }
        r = if climb(&mut fnode, &mut snode) {
            node(p, &r)
        } else {
            node(&r, p)
        };
    }
    snode == 0 && r == *root
}

/// The step both verifications take per proof node (RFC 9162 §2.1.3.2
/// and §2.1.4.2): whether the node goes on the left (LSB(fn) set, or fn
/// equal to sn), then `fn` and `sn` moved up — right-shifted until LSB(fn)
/// is set or fn is 0 when the node went left from an even fn, then once.
fn climb(fnode: &mut u64, snode: &mut u64) -> bool {
    let left = *fnode & 1 == 1 || *fnode == *snode;
    if left && *fnode & 1 == 0 {
        while *fnode & 1 == 0 && *fnode != 0 {
            *fnode >>= 1;
            *snode >>= 1;
        }
    }
    *fnode >>= 1;
    *snode >>= 1;
    left
}

/// RFC 9162 §2.1.4.1: PROOF(m, D[n]) = SUBPROOF(m, D[n], true).
pub fn consistency(m: usize, leaves: &[H]) -> Vec<H> {
    fn subproof(m: usize, leaves: &[H], whole: bool) -> Vec<H> {
        let n = leaves.len();
        if m == n {
            return if whole { Vec::new() } else { vec![mth(leaves)] };
        }
        let k = split(n);
        if m <= k {
            let mut proof = subproof(m, &leaves[..k], whole);
            proof.push(mth(&leaves[k..]));
            proof
        } else {
            let mut proof = subproof(m - k, &leaves[k..], false);
            proof.push(mth(&leaves[..k]));
            proof
        }
    }
    subproof(m, leaves, true)
}

/// RFC 9162 §2.1.4.2: verifying a consistency proof.
pub fn verify_consistency(
    first: u64,
    second: u64,
    first_root: &H,
    second_root: &H,
    proof: &[H],
) -> bool {
    if first == second {
        return proof.is_empty() && first_root == second_root;
    }
    if first == 0 || first > second || proof.is_empty() && !first.is_power_of_two() {
        return false;
    }
    let mut path: Vec<H> = proof.to_vec();
    if first.is_power_of_two() {
        path.insert(0, *first_root);
    }
    let (mut fnode, mut snode) = (first - 1, second - 1);
    while fnode & 1 == 1 {
        fnode >>= 1;
        snode >>= 1;
    }
    let (mut fr, mut sr) = (path[0], path[0]);
    for c in &path[1..] {
        if snode == 0 {
            return false;
        }
        if climb(&mut fnode, &mut snode) {
            fr = node(c, &fr);
            sr = node(c, &sr);
        } else {
            sr = node(&sr, c);
        }
    }
    fr == *first_root && sr == *second_root && snode == 0
}

/// A verifier key `name+id+base64(0x01 || key)`, its id checked by hand:
/// the first four bytes of SHA-256(name || "\n" || 0x01 || key).
#[derive(Debug, Clone)]
pub struct Vkey {
    pub name: String,
    pub id: [u8; 4],
    pub key: VerifyingKey,
}

pub fn key_id(name: &str, public: &[u8; 32]) -> [u8; 4] {
    let hash = sha(&[name.as_bytes(), b"\n", &[1], public]);
    hash[..4].try_into().unwrap()
}

pub fn parse_vkey(text: &str) -> Vkey {
    let mut parts = text.trim().splitn(3, '+');
    let (name, id, key) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let key = B64.decode(key).expect("base64 key");
    assert_eq!(key.len(), 33, "an Ed25519 vkey");
    assert_eq!(key[0], 1, "algorithm 1, Ed25519");
    let public: [u8; 32] = key[1..].try_into().unwrap();
    let want = key_id(name, &public);
    assert_eq!(hex::encode(want), id, "the key id of {text}");
    Vkey {
        name: name.to_owned(),
        id: want,
        key: VerifyingKey::from_bytes(&public).expect("a public key"),
    }
}

/// A checkpoint's body: origin, size, root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Body {
    pub origin: String,
    pub size: u64,
    pub root: H,
}

pub fn parse_body(body: &str) -> Body {
    let lines: Vec<&str> = body.split('\n').collect();
    assert!(
        lines.len() >= 4 && body.ends_with('\n'),
        "a checkpoint body: {body:?}"
    );
    Body {
        origin: lines[0].to_owned(),
        size: lines[1].parse().expect("a size"),
        root: B64
            .decode(lines[2])
            .expect("a base64 root")
            .try_into()
            .expect("32 bytes"),
    }
}

/// The body of `note` when one of its signature lines is `key`'s and
/// verifies (Ed25519 over the body's bytes), else `None`.
pub fn open_note(note: &str, key: &Vkey) -> Option<Body> {
    let at = note.rfind("\n\n")?;
    let body = &note[..=at];
    for line in note[at + 2..].lines() {
        let rest = line.strip_prefix("\u{2014} ")?;
        let (name, sig) = rest.split_once(' ')?;
        let sig = B64.decode(sig).ok()?;
        if name != key.name || sig.len() != 68 || sig[..4] != key.id {
            continue;
        }
        let signature = ed25519_dalek::Signature::from_bytes(&sig[4..].try_into().ok()?);
        if key.key.verify(body.as_bytes(), &signature).is_ok() {
            return Some(parse_body(body));
        }
    }
    None
}

/// A note of `body` signed by the Ed25519 `seed` under `name`; and its vkey.
pub fn sign_note(body: &Body, name: &str, seed: &[u8; 32]) -> (String, String) {
    let signing = SigningKey::from_bytes(seed);
    let public = signing.verifying_key().to_bytes();
    let id = key_id(name, &public);
    let text = format!(
        "{}\n{}\n{}\n",
        body.origin,
        body.size,
        B64.encode(body.root)
    );
    let sig = signing.sign(text.as_bytes()).to_bytes();
    let line = B64.encode([&id[..], &sig[..]].concat());
    let vkey = format!(
        "{name}+{}+{}",
        hex::encode(id),
        B64.encode([&[1u8][..], &public[..]].concat())
    );
    (format!("{text}\n\u{2014} {name} {line}\n"), vkey)
}

fn netstring(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(format!("{}:", text.len()).as_bytes());
    out.extend_from_slice(text.as_bytes());
    out.push(b',');
}

/// A v2 leaf's data from a receipt's `origin`, `index` and `record`.
pub fn leaf_data(origin: &str, index: u64, record: &serde_json::Value) -> Vec<u8> {
    let mut out = Vec::new();
    netstring(&mut out, "tresor-trail-v2");
    netstring(&mut out, origin);
    netstring(&mut out, &index.to_string());
    netstring(
        &mut out,
        &record["at_ms"].as_i64().expect("at_ms").to_string(),
    );
    for field in ["actor", "action", "request", "result", "salt"] {
        netstring(
            &mut out,
            record[field].as_str().unwrap_or_else(|| panic!("{field}")),
        );
    }
    out
}

/// A C2SP tile path: `tile/L/N[.p/W]`, N in groups of three digits.
pub fn tile_path(level: u32, index: u64, width: u64) -> String {
    let mut groups = vec![format!("{:03}", index % 1000)];
    let mut n = index / 1000;
    while n > 0 {
        groups.push(format!("x{:03}", n % 1000));
        n /= 1000;
    }
    groups.reverse();
    let partial = if width == 256 {
        String::new()
    } else {
        format!(".p/{width}")
    };
    format!("tile/{level}/{}{partial}", groups.join("/"))
}

/// Every tile of a tree over `leaves` (levels 0, 1, 2…), by path, built by
/// hand: entry j of level L is MTH of leaves [j·256^L, (j+1)·256^L).
pub fn tiles(leaves: &[H]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut span = 1usize;
    for level in 0.. {
        let entries = leaves.len() / span;
        if entries == 0 {
            break;
        }
        let hashes: Vec<H> = (0..entries)
            .map(|j| mth(&leaves[j * span..(j + 1) * span]))
            .collect();
        for (k, chunk) in hashes.chunks(256).enumerate() {
            out.push((
                tile_path(level, k as u64, chunk.len() as u64),
                chunk.concat(),
            ));
        }
        span *= 256;
    }
    out
}

/// The base64 of a hash.
pub fn b64(hash: &H) -> String {
    B64.encode(hash)
}

pub fn unb64(text: &str) -> H {
    B64.decode(text)
        .expect("base64")
        .try_into()
        .expect("32 bytes")
}
