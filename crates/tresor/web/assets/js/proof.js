//! The check of a play's receipt in the browser, with WebCrypto only
//! (SHA-256 and Ed25519): the record's leaf (docs/AUDIT.md, "A leaf"), its
//! RFC 9162 inclusion proof up to the checkpoint's root, and the
//! checkpoint's signature under a key that `/log/` publishes (the receipt's
//! own `key` is never trusted alone).

const encoder = new TextEncoder();

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

function fromBase64(text) {
  const raw = atob(text);
  return Uint8Array.from(raw, (c) => c.charCodeAt(0));
}

function equal(a, b) {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

async function sha256(bytes) {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
}

function netstring(text) {
  const bytes = encoder.encode(text);
  return concat(encoder.encode(`${bytes.length}:`), bytes, encoder.encode(','));
}

/** The leaf's data: netstrings of the v2 record, in the contract's order. */
export function leafData(origin, index, record) {
  const fields = ['tresor-trail-v2', origin, String(index), String(record.at_ms), record.actor,
    record.action, record.request, record.result, record.salt];
  return concat(...fields.map(netstring));
}

/** RFC 9162 §2.1.3.2: the root an inclusion proof leads to, or null. */
async function rootFromInclusion(index, size, leaf, proof) {
  if (!(index < size)) return null;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  const odd = (x) => x % 2 === 1;
  const half = (x) => Math.floor(x / 2);
  for (const p of proof) {
    if (sn === 0) return null;
    if (odd(fn) || fn === sn) {
      r = await sha256(concat([1], p, r));
      while (!odd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      r = await sha256(concat([1], r, p));
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 ? r : null;
}

/** A vkey `name+hex id+base64(0x01 || key)`, its id checked. */
async function parseKey(vkey) {
  // The base64 of the key may hold '+' too: split on the first two only.
  const [name, id] = vkey.split('+', 2);
  const key64 = vkey.slice(name.length + id.length + 2);
  const key = fromBase64(key64);
  if (!name || !/^[0-9a-f]{8}$/.test(id) || key.length !== 33 || key[0] !== 1) throw new Error('a malformed key');
  const hash = await sha256(concat(encoder.encode(`${name}\n`), key));
  const want = Array.from(hash.slice(0, 4), (b) => b.toString(16).padStart(2, '0')).join('');
  if (want !== id) throw new Error('a key whose id does not match');
  return { name, id: hash.slice(0, 4), raw: key.slice(1) };
}

/** The checkpoint's body if one signature line verifies under `key`. */
async function openNote(note, key) {
  const split = note.lastIndexOf('\n\n');
  if (split < 0) throw new Error('not a signed note');
  const body = note.slice(0, split + 1);
  const publicKey = await crypto.subtle.importKey('raw', key.raw, { name: 'Ed25519' }, false, ['verify']);
  for (const line of note.slice(split + 2).split('\n')) {
    const match = /^\u2014 (\S+) (\S+)$/.exec(line);
    if (!match || match[1] !== key.name) continue;
    const sig = fromBase64(match[2]);
    if (sig.length !== 68 || !equal(sig.slice(0, 4), key.id)) continue;
    if (await crypto.subtle.verify({ name: 'Ed25519' }, publicKey, sig.slice(4), encoder.encode(body))) {
      const [origin, size, root] = body.split('\n');
      return { origin, size: Number(size), root: fromBase64(root) };
    }
  }
  throw new Error('no signature by the published key');
}

/** A receipt as `GET /api/plays/{id}/receipt` gives it (the fields
 * `src/logcheck.rs`'s `Receipt` reads), or null when its shape is not. */
function wellFormed(receipt) {
  const r = receipt;
  const text = (v) => typeof v === 'string';
  if (!r || typeof r !== 'object' || !text(r.origin) || !text(r.checkpoint) || !text(r.key)) return null;
  if (!Number.isSafeInteger(r.index) || r.index < 0 || !Array.isArray(r.proof) || !r.proof.every(text)) return null;
  const rec = r.record;
  if (!rec || !Number.isSafeInteger(rec.at_ms) || !['actor', 'action', 'request', 'result', 'salt'].every((f) => text(rec[f]))) return null;
  return r;
}

/**
 * Checks `receipt` as `tresor audit receipt` does (`logcheck::check_receipt`),
 * against the keys `/log/` publishes: the key is a published one, the
 * checkpoint is signed by it and is of the receipt's log, the record's index
 * is within it, and the leaf hash of the record with its inclusion proof
 * leads to the checkpoint's root. Resolves to `{ ok: true, origin, index,
 * size }`, or `{ ok: false, reason }`: `format`, `key`, `signature`,
 * `origin`, `index` or `inclusion`.
 */
export async function explainReceipt(receipt, publishedKeys) {
  const r = wellFormed(receipt);
  if (!r) return { ok: false, reason: 'format' };
  if (!publishedKeys.includes(r.key.trim())) return { ok: false, reason: 'key' };
  let key;
  try {
    key = await parseKey(r.key.trim());
  } catch {
    return { ok: false, reason: 'key' };
  }
  let checkpoint;
  try {
    checkpoint = await openNote(r.checkpoint, key);
  } catch {
    return { ok: false, reason: 'signature' };
  }
  if (checkpoint.origin !== r.origin) return { ok: false, reason: 'origin' };
  if (!(r.index < checkpoint.size)) return { ok: false, reason: 'index' };
  let proof;
  try {
    proof = r.proof.map(fromBase64);
  } catch {
    return { ok: false, reason: 'format' };
  }
  if (proof.some((p) => p.length !== 32) || checkpoint.root.length !== 32) return { ok: false, reason: 'inclusion' };
  const leaf = await sha256(concat([0], leafData(r.origin, r.index, r.record)));
  const root = await rootFromInclusion(r.index, checkpoint.size, leaf, proof);
  if (root === null || !equal(root, checkpoint.root)) return { ok: false, reason: 'inclusion' };
  return { ok: true, origin: checkpoint.origin, index: r.index, size: checkpoint.size };
}

/**
 * Checks `receipt` against the keys `/log/` publishes: resolves to true when
 * the record is in the log within a checkpoint signed by one of them, false
 * when anything does not check.
 */
export async function checkReceipt(receipt, publishedKeys) {
  try {
    return (await explainReceipt(receipt, publishedKeys)).ok;
  } catch {
    return false;
  }
}

let published = null;

/** The keys `/log/` publishes (fetched once a page load). */
export async function publishedKeys() {
  if (!published) {
    published = fetch('/log/', { headers: { Accept: 'application/json' } })
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error(`/log/ answered ${r.status}`))))
      .then((log) => [...new Set([log.key, ...(log.keys ?? []).map((k) => k.vkey)].filter(Boolean))])
      .catch((error) => {
        published = null;
        throw error;
      });
  }
  return published;
}

/** `/log/` itself (the fairness page's section). */
export async function publishedLog() {
  const r = await fetch('/log/', { headers: { Accept: 'application/json' } });
  if (!r.ok) throw new Error(`/log/ answered ${r.status}`);
  return r.json();
}

/** Checks a receipt against the published keys. */
export async function verifyReceipt(receipt) {
  try {
    return await checkReceipt(receipt, await publishedKeys());
  } catch {
    return false;
  }
}
