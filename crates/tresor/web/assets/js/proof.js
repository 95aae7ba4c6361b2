//! The check of a play's receipt in the browser, with WebCrypto only
//! (SHA-256 and Ed25519): the record's leaf (docs/AUDIT.md, "A leaf"), its
//! RFC 9162 inclusion proof up to the checkpoint's root, the checkpoint's
//! signature under a key that `/log/` lists (the receipt's own `key` is
//! never trusted alone; a retired key only up to the last size it signed of
//! that log), and the cosignature of every witness `/log/` lists (C2SP
//! tlog-cosignature). `tresor audit receipt --log` makes the same checks
//! (`src/logcheck/listing.rs`).

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

/**
 * A vkey `name+hex id+base64(alg || key)`, its id checked: a log's key
 * (algorithm 0x01, Ed25519) or a witness's (0x04, cosignature/v1).
 */
async function parseKey(vkey, alg = 1) {
  // The base64 of the key may hold '+' too: split on the first two only.
  const [name, id] = vkey.split('+', 2);
  if (!name || id === undefined) throw new Error('a malformed key');
  const key64 = vkey.slice(name.length + id.length + 2);
  const key = fromBase64(key64);
  if (!/^[0-9a-f]{8}$/.test(id) || key.length !== 33 || key[0] !== alg) throw new Error('a malformed key');
  const hash = await sha256(concat(encoder.encode(`${name}\n`), key));
  const want = Array.from(hash.slice(0, 4), (b) => b.toString(16).padStart(2, '0')).join('');
  if (want !== id) throw new Error('a key whose id does not match');
  return { name, id: hash.slice(0, 4), raw: key.slice(1) };
}

/** A signed note's body (up to the blank line) and its signature lines. */
function splitNote(note) {
  const split = note.lastIndexOf('\n\n');
  if (split < 0) throw new Error('not a signed note');
  return { body: note.slice(0, split + 1), lines: note.slice(split + 2).split('\n') };
}

/** The signature lines of `note` named `key.name` whose bytes start with its id. */
function linesOf(lines, key) {
  return lines.flatMap((line) => {
    const match = /^\u2014 (\S+) (\S+)$/.exec(line);
    if (!match || match[1] !== key.name) return [];
    const sig = fromBase64(match[2]);
    return equal(sig.slice(0, 4), key.id) ? [sig] : [];
  });
}

async function ed25519(raw, sig, message) {
  const publicKey = await crypto.subtle.importKey('raw', raw, { name: 'Ed25519' }, false, ['verify']);
  return crypto.subtle.verify({ name: 'Ed25519' }, publicKey, sig, encoder.encode(message));
}

/** The checkpoint's body if one signature line verifies under `key`. */
async function openNote(note, key) {
  const { body, lines } = splitNote(note);
  for (const sig of linesOf(lines, key)) {
    if (sig.length === 68 && (await ed25519(key.raw, sig.slice(4), body))) {
      const [origin, size, root] = body.split('\n');
      return { origin, size: Number(size), root: fromBase64(root) };
    }
  }
  throw new Error('no signature by the published key');
}

/**
 * Whether `witness` (a parsed witness key) cosigned the note's body: true
 * when one of its lines verifies (`cosignature/v1\ntime T\n` and the body,
 * T the line's 8-byte time), false when the note carries none of it;
 * throws when it carries only bad ones.
 */
async function cosigned(note, witness) {
  const { body, lines } = splitNote(note);
  const sigs = linesOf(lines, witness);
  for (const sig of sigs) {
    if (sig.length !== 76) continue;
    const time = new DataView(sig.buffer, sig.byteOffset + 4, 8).getBigUint64(0);
    if (await ed25519(witness.raw, sig.slice(12), `cosignature/v1\ntime ${time}\n${body}`)) return true;
  }
  if (sigs.length > 0) throw new Error('a cosignature that does not verify');
  return false;
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
 * The key `vkey` as `/log/` lists it: `{ current }` for the key that signs
 * now, `{ current: false, lastSigned }` for a retired one (the last size it
 * signed of each log), or null when the listing does not list it.
 */
function listedKey(listing, vkey) {
  const current = typeof listing?.key === 'string' && listing.key.trim() === vkey;
  const entry = (listing?.keys ?? []).find((k) => typeof k?.vkey === 'string' && k.vkey.trim() === vkey);
  if (!current && !entry) return null;
  return { current, lastSigned: current ? [] : (entry?.last_signed ?? []) };
}

/** A retired key's checkpoint: no larger than the last it signed of its log. */
function withinRetired(listed, checkpoint) {
  const sizes = listed.lastSigned.filter((l) => l?.origin === checkpoint.origin).map((l) => Number(l.size));
  return sizes.length > 0 && checkpoint.size <= Math.max(...sizes);
}

/** Every witness `/log/` lists cosigned the note: 'ok', 'uncosigned' or 'cosignature'. */
async function witnessed(note, listing) {
  for (const vkey of listing?.witnesses ?? []) {
    let witness;
    try {
      witness = await parseKey(String(vkey).trim(), 4);
    } catch {
      return 'uncosigned';
    }
    try {
      if (!(await cosigned(note, witness))) return 'uncosigned';
    } catch {
      return 'cosignature';
    }
  }
  return 'ok';
}

/**
 * Checks `receipt` as `tresor audit receipt --log` does
 * (`logcheck::Listing::check_receipt`), against `/log/`'s listing: the key
 * is one listed, the checkpoint is signed by it and is of the receipt's
 * log, a retired key's checkpoint is no larger than the last it signed of
 * that log, the record's index is within it, the leaf hash of the record
 * with its inclusion proof leads to the checkpoint's root, and every
 * witness listed cosigned the checkpoint. Resolves to `{ ok: true, origin,
 * index, size }`, or `{ ok: false, reason }`: `format`, `key`, `signature`,
 * `origin`, `retired`, `index`, `inclusion`, `cosignature` (a witness's
 * line that does not verify) or `uncosigned` (in the log, signed by the
 * site, but not cosigned by its witnesses: never "checked").
 */
export async function explainReceipt(receipt, listing) {
  const r = wellFormed(receipt);
  if (!r) return { ok: false, reason: 'format' };
  const listed = listedKey(listing, r.key.trim());
  if (!listed) return { ok: false, reason: 'key' };
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
  if (!listed.current && !withinRetired(listed, checkpoint)) return { ok: false, reason: 'retired' };
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
  const witnesses = await witnessed(r.checkpoint, listing);
  if (witnesses !== 'ok') return { ok: false, reason: witnesses };
  return { ok: true, origin: checkpoint.origin, index: r.index, size: checkpoint.size };
}

let published = null;

/** What `/log/` lists (fetched once a page load, again when `fresh`). */
function publishedListing(fresh = false) {
  if (!published || fresh) {
    published = fetch('/log/', { headers: { Accept: 'application/json' }, cache: 'no-cache' })
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error(`/log/ answered ${r.status}`))))
      .catch((error) => {
        published = null;
        throw error;
      });
  }
  return published;
}

/**
 * Checks `receipt` against what the site's `/log/` lists now (read again
 * once when the key is not listed or is retired in the copy kept: a
 * rotation since the page was loaded). Rejects when `/log/` cannot be read.
 */
export async function explainWithSite(receipt) {
  const answer = await explainReceipt(receipt, await publishedListing());
  if (answer.ok || !['key', 'retired'].includes(answer.reason)) return answer;
  return explainReceipt(receipt, await publishedListing(true));
}

/** `/log/` itself (the fairness page's section). */
export async function publishedLog() {
  const r = await fetch('/log/', { headers: { Accept: 'application/json' } });
  if (!r.ok) throw new Error(`/log/ answered ${r.status}`);
  return r.json();
}

/**
 * A receipt's state beside its play: 'checked', 'uncosigned' (in the log,
 * not cosigned by the witnesses `/log/` lists) or 'failed'.
 */
export async function receiptState(receipt) {
  try {
    const answer = await explainWithSite(receipt);
    if (answer.ok) return 'checked';
    return answer.reason === 'uncosigned' ? 'uncosigned' : 'failed';
  } catch {
    return 'failed';
  }
}
