//! The HTTP API client: JSON in and out, the session cookie, the CSRF header
//! on every POST and PUT, and errors turned into `ApiError` values the screens show.

import { ApiError, readAnswer } from './server.js';

async function request(method, path, body, headers = {}) {
  const init = { method, credentials: 'same-origin', headers: { Accept: 'application/json', ...headers } };
  if (method === 'POST' || method === 'PUT') {
    init.headers['X-Requested-With'] = 'tresor';
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body ?? {});
  }
  return send(path, init);
}

/**
 * Sends an identity document: the file itself is the body (its type is read
 * from its bytes on the server), its kind and name in the query.
 */
async function upload(kind, file) {
  const path = `/api/account/documents?kind=${encodeURIComponent(kind)}&name=${encodeURIComponent(file.name)}`;
  return send(path, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { Accept: 'application/json', 'X-Requested-With': 'tresor', 'Content-Type': 'application/octet-stream' },
    body: file,
  });
}

/**
 * Sends one request and reads its answer: the JSON body (null when there is
 * none), or an `ApiError` (`network` when the server could not be reached).
 */
async function send(path, init) {
  let response;
  try {
    response = await fetch(path, init);
  } catch (cause) {
    // The request may or may not have reached the server: callers that must
    // not repeat an effect retry with the same idempotency key.
    throw new ApiError(0, 'network', String(cause));
  }
  return readAnswer(
    response,
    (error) => new ApiError(response.status, error.code || `http_${response.status}`, error.message || response.statusText, error),
  );
}

/** A fresh idempotency key for one click on "Jouer". */
export function newIdempotencyKey() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

export const api = {
  status: () => request('GET', '/api/status'),
  island: () => request('GET', '/api/island'),
  me: () => request('GET', '/api/me'),
  register: (username, password, adult, acceptRules, limits = {}) =>
    request('POST', '/api/register', { username, password, adult, accept_rules: acceptRules, ...limits }),
  limits: () => request('GET', '/api/limits'),
  changeLimits: (limits) => request('POST', '/api/limits', limits),
  exclude: (period) => request('POST', '/api/exclusion', { period }),
  login: (username, password) => request('POST', '/api/login', { username, password }),
  logout: () => request('POST', '/api/logout', {}),
  demoDeposit: (amountCents) => request('POST', '/api/demo/deposit', { amount_cents: amountCents }),
  /** The catalogue: every game on sale, island first (docs/GAMES.md). */
  games: () => request('GET', '/api/games'),
  /** Buys a unit of `game` (an id; the island without one). */
  buy: (stakeCents, key, game) =>
    request('POST', '/api/plays', game ? { stake_cents: stakeCents, game } : { stake_cents: stakeCents }, { 'Idempotency-Key': key }),
  /** A free try of `game` (an id; the island without one): nothing bought (docs/GAMES.md, "Free tries"). */
  freePlay: (stakeCents, game) =>
    request('POST', '/api/free/plays', game ? { stake_cents: stakeCents, game } : { stake_cents: stakeCents }),
  throwOnce: (playId) => request('POST', `/api/plays/${encodeURIComponent(playId)}/throws`, {}),
  play: (playId) => request('GET', `/api/plays/${encodeURIComponent(playId)}`),
  /** The play's receipt in the signed log (docs/AUDIT.md, "Receipts"). */
  receipt: (playId) => request('GET', `/api/plays/${encodeURIComponent(playId)}/receipt`),
  blocks: () => request('GET', '/api/blocks'),
  openAccount: (body) => request('POST', '/api/account/open', body),
  account: () => request('GET', '/api/account'),
  acceptRules: (version) => request('POST', '/api/account/rules', { version }),
  changePassword: (current, next) =>
    request('POST', '/api/account/password', { current_password: current, new_password: next }),
  setEmail: (email, current) => request('PUT', '/api/account/email', { email, current_password: current }),
  undoEmail: (token) => request('POST', '/api/email/undo', { token }),
  askReset: (email) => request('POST', '/api/password/reset', { email }),
  resetPassword: (token, password) => request('POST', '/api/password/reset/confirm', { token, new_password: password }),
  confirmEmail: (token) => request('POST', '/api/email/confirm', { token }),
  sessions: () => request('GET', '/api/account/sessions'),
  /** 204 while this session holds; read without keeping it alive. */
  sessionCheck: () => request('GET', '/api/session'),
  endSession: (id) => request('POST', `/api/account/sessions/${encodeURIComponent(id)}/end`, {}),
  endOtherSessions: () => request('POST', '/api/account/sessions/end-others', {}),
  setMarketing: (consent) => request('PUT', '/api/account/marketing', { consent }),
  setReminder: (everyMinutes) => request('PUT', '/api/account/reminder', { every_minutes: everyMinutes }),
  setIban: (iban, current) => request('PUT', '/api/account/iban', { iban, current_password: current }),
  documents: () => request('GET', '/api/account/documents'),
  uploadDocument: upload,
  closeAccount: () => request('POST', '/api/account/close', { confirm: true }),
  askDeposit: (amountCents) => request('POST', '/api/account/deposits', { amount_cents: amountCents }),
  deposit: (id) => request('GET', `/api/account/deposits/${encodeURIComponent(id)}`),
  askWithdrawal: (amountCents) => request('POST', '/api/account/withdrawals', { amount_cents: amountCents }),
  withdrawals: () => request('GET', '/api/account/withdrawals'),
  cancelWithdrawal: (id) => request('POST', `/api/account/withdrawals/${encodeURIComponent(id)}/cancel`, {}),
  statement: (cursor, limit = 20) =>
    request('GET', `/api/account/statement?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`),
  /** The CSV file's address, for a download link. */
  statementCsvUrl: '/api/account/statement.csv',
  plays: (cursor, limit = 20) =>
    request('GET', `/api/plays?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`),
};
