//! The console API client (docs/CONSOLE.md): JSON in and out, the session
//! cookie (HttpOnly, sent by the browser), the CSRF header on every change,
//! and refusals turned into `ApiError`s the screens show.

import { ApiError, readAnswer } from './server.js';

/** Called with every 401 `unauthorized`: the session ended. */
let onUnauthorized = () => {};
export function setUnauthorizedHandler(handler) {
  onUnauthorized = handler;
}

async function send(method, path, body) {
  const init = { method, credentials: 'same-origin', headers: { Accept: 'application/json' } };
  if (method !== 'GET') {
    init.headers['X-Requested-With'] = 'tresor-console';
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body ?? {});
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (cause) {
    throw new ApiError(0, 'network', `The server did not answer (${cause}).`);
  }
  return response;
}

async function request(method, path, body) {
  const response = await send(method, path, body);
  return readAnswer(response, (error) => {
    const failure = new ApiError(
      response.status,
      error.code || `http_${response.status}`,
      error.message || response.statusText || `HTTP ${response.status}`,
      error,
    );
    if (response.status === 401 && failure.code === 'unauthorized') onUnauthorized(failure);
    return failure;
  });
}

const q = (params) => {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') search.set(name, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
};
const id = (value) => encodeURIComponent(value);
const base = '/console/api';

export const api = {
  login: (username, password) => request('POST', `${base}/login`, { username, password }),
  code: (code) => request('POST', `${base}/login/code`, { code }),
  logout: () => request('POST', `${base}/logout`, {}),
  me: () => request('GET', `${base}/me`),
  dashboard: () => request('GET', `${base}/dashboard`),
  emissions: () => request('GET', `${base}/emissions`),
  /** The catalogue: each game, its kind and its stakes (docs/GAMES.md). */
  games: () => request('GET', `${base}/games`),
  createEmission: (game, stakeCents, blocks) => request('POST', `${base}/emissions`, { game, stake_cents: stakeCents, blocks }),
  closeEmission: (emission) => request('POST', `${base}/emissions/${id(emission)}/close`, {}),
  blocks: () => request('GET', `${base}/blocks`),
  suspendBlock: (block) => request('POST', `${base}/blocks/${id(block)}/suspend`, {}),
  resumeBlock: (block) => request('POST', `${base}/blocks/${id(block)}/resume`, {}),
  recheckBlock: (block) => request('POST', `${base}/blocks/${id(block)}/recheck`, {}),
  players: (text, limit = 50) => request('GET', `${base}/players${q({ q: text, limit })}`),
  player: (player) => request('GET', `${base}/players/${id(player)}`),
  statement: (player, cursor, limit = 20) =>
    request('GET', `${base}/players/${id(player)}/statement${q({ cursor, limit })}`),
  credit: (player, amountCents) => request('POST', `${base}/players/${id(player)}/credit`, { amount_cents: amountCents }),
  exclude: (player, period) => request('POST', `${base}/players/${id(player)}/exclude`, { period }),
  suspend: (player, reason) => request('POST', `${base}/players/${id(player)}/suspend`, { reason }),
  unsuspend: (player, reason) => request('POST', `${base}/players/${id(player)}/unsuspend`, { reason }),
  // The IBAN the operator reviewed: refused (409 iban_changed) if it changed since.
  verify: (player, iban) => request('POST', `${base}/players/${id(player)}/verify`, { iban }),
  verifyDocument: (document) => request('POST', `${base}/documents/${id(document)}/verify`, {}),
  refuseDocument: (document, reason) => request('POST', `${base}/documents/${id(document)}/refuse`, { reason }),
  trailRecords: (filter, before, limit = 50) => request('GET', `${base}/trail/records${q({ ...filter, before, limit })}`),
  accounts: (status = 'provisional') => request('GET', `${base}/accounts${q({ status })}`),
  withdrawals: (state = 'pending', cursor, limit = 100) =>
    request('GET', `${base}/withdrawals${q({ state, cursor, limit })}`),
  approve: (withdrawal) => request('POST', `${base}/withdrawals/${id(withdrawal)}/approve`, {}),
  reject: (withdrawal, reason) => request('POST', `${base}/withdrawals/${id(withdrawal)}/reject`, { reason }),
  site: () => request('GET', `${base}/site`),
  setSales: (opensAt) => request('PUT', `${base}/site/sales`, { opens_at: opensAt }),
  setAnnouncement: (message) => request('PUT', `${base}/site/announcement`, { message }),
  importBanList: (csv) => request('POST', `${base}/banlist`, { csv }),
  trail: () => request('GET', `${base}/trail`),
  /** The figures by Paris day or month (`tresor report --by`). */
  reportPeriods: (ask) => request('GET', `${base}/report/periods${q(ask)}`),
  verifyTrail: () => request('POST', `${base}/trail/verify`, {}),

  /** The trail as JSON Lines: the raw text, for the page to save. */
  async exportTrail() {
    const response = await send('GET', `${base}/trail/export`);
    if (!response.ok) {
      let error = {};
      try {
        error = (await response.json()).error ?? {};
      } catch {
        error = {};
      }
      const failure = new ApiError(response.status, error.code || `http_${response.status}`, error.message || response.statusText);
      if (response.status === 401) onUnauthorized(failure);
      throw failure;
    }
    const disposition = response.headers.get('Content-Disposition') ?? '';
    const name = /filename="?([^";]+)"?/.exec(disposition)?.[1] ?? 'tresor-trail.jsonl';
    return { name, text: await response.text() };
  },
};
