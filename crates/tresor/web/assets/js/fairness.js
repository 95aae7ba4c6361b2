//! The fairness page (« Équité »): every block of game units with its game,
//! its units, its game's definition (SHA-256), its commitment and what the
//! commitment is the hash of, published before the block goes on sale, and
//! its secret once published, with the command that re-checks a closed
//! block (another game's with its definition file, checked); the log's key
//! and checkpoints; and a receipt pasted or saved from the history checked
//! in the browser, with no account (proof.js).

import { api } from './api.js';
import { t, money, currentLang } from './i18n.js';
import { $, h } from './util.js';
import { explainWithSite, publishedLog } from './proof.js';
import { findGame, gameName, loadGames } from './lobby.js';

/**
 * What a checked purchase's record says was bought: its play, its stake and
 * its game (the record's `game`, the island when it names none), or null
 * for a record of anything else.
 */
async function purchaseOf(receipt) {
  if (receipt?.record?.action !== 'buy') return null;
  try {
    const request = JSON.parse(receipt.record.request);
    const result = JSON.parse(receipt.record.result);
    const game = request.game ? ((await findGame(request.game)) ?? { id: request.game, name: { fr: request.game, en: request.game } }) : null;
    return { play: result.play_id, stake: request.stake_cents, game };
  } catch {
    return null;
  }
}

/**
 * The island's id: its commitment is sha256(secret), it has one definition
 * (built into the program) and its blocks are re-checked without a file.
 */
const ISLAND = 'ile-au-tresor';

/**
 * The command that re-checks a block whose secret is published: another
 * game's block with its definition file, which its commitment covers, the
 * file's SHA-256 checked first against the block's definition
 * (docs/AUDIT.md, 3b).
 */
export function verifyCommand(block) {
  const verify = `tresor block verify --secret ${block.secret} --commitment ${block.commitment} --stake ${block.stake_cents}`;
  if (!block.game || block.game === ISLAND) return verify;
  const file = `games/${block.game}.toml`;
  const checked = block.game_sha256 ? `echo "${block.game_sha256}  ${file}" | sha256sum --check && ` : '';
  return `${checked}${verify} --game ${file}`;
}

/** A block's game by name, from the catalogue (its id when the catalogue no longer has it). */
function blockGame(block, games) {
  const game = games.find((g) => g.id === (block.game ?? ISLAND));
  return game ? gameName(game) : block.game;
}

/** A count in the page's language: "450 000", "450,000". */
function count(n) {
  return Number(n).toLocaleString(currentLang() === 'fr' ? 'fr-FR' : 'en-GB');
}

function row(block, games) {
  const published = typeof block.secret === 'string' && block.secret.length > 0;
  return h(
    'tr',
    { 'data-testid': 'block-row', 'data-block-id': block.id, 'data-state': block.state },
    h('td', { class: 'num' }, String(block.id)),
    h('td', { class: 'num' }, String(block.emission)),
    h(
      'td',
      {},
      h('span', { 'data-testid': 'block-game' }, blockGame(block, games)),
      h('p', { class: 'verify-label' }, t('fair.definition')),
      h('code', { class: 'hash', 'data-testid': 'block-definition' }, block.game_sha256 ?? '—'),
    ),
    h('td', { class: 'money' }, money(block.stake_cents)),
    h('td', {}, h('span', { class: `tag ${block.state}` }, t(`block.state.${block.state}`))),
    h(
      'td',
      { class: 'num units', 'data-testid': 'block-units' },
      // Units sold are not shown while a block is on sale (the API gives
      // null): with the prizes paid they would tell where top prizes remain.
      t('fair.sold', {
        sold: block.units_sold == null ? '—' : count(block.units_sold),
        total: count(block.units_per_block),
      }),
    ),
    h(
      'td',
      {},
      h('p', { class: 'verify-label' }, h('code', { 'data-testid': 'block-commitment-form' }, block.commitment_form ?? '')),
      h('code', { class: 'hash', 'data-testid': 'block-commitment' }, block.commitment),
    ),
    h(
      'td',
      {},
      published
        ? [
            h('code', { class: 'hash', 'data-testid': 'block-secret' }, block.secret),
            h('p', { class: 'verify-label' }, t('fair.verify')),
            h('pre', { class: 'verify-command', 'data-testid': 'block-verify' }, verifyCommand(block)),
          ]
        : h('span', { class: 'muted' }, t('fair.secret.pending')),
    ),
  );
}

/** The fairness screen: loads `/api/blocks` each time it is shown. */
export function setupFairness(app) {
  const rows = $('#blocks-rows');
  let blocks = [];
  let games = [];

  function render() {
    rows.replaceChildren(...blocks.map((block) => row(block, games)));
    $('#blocks-empty').hidden = blocks.length > 0;
  }

  let log = null;

  /** The public log's key and each log's latest signed checkpoint. */
  function renderLog() {
    $('#log-key').textContent = log?.key ?? '—';
    $('#log-checkpoints').replaceChildren(
      ...(log?.checkpoints ?? []).map(({ origin, note }) => {
        const size = note.split('\n')[1] ?? '?';
        return h(
          'div',
          { class: 'log-checkpoint', 'data-testid': 'log-checkpoint', 'data-origin': origin },
          h('p', {}, t('log.checkpoint', { origin, size })),
          h('pre', { class: 'verify-command' }, note),
        );
      }),
    );
  }

  async function showLog() {
    $('#log-error').textContent = '';
    try {
      const index = await publishedLog();
      const checkpoints = await Promise.all(
        (index.logs ?? []).map(async (l) => {
          const r = await fetch(l.checkpoint, { cache: 'no-cache' });
          return { origin: l.origin, note: r.ok ? await r.text() : '' };
        }),
      );
      log = { key: index.key, checkpoints: checkpoints.filter((c) => c.note) };
      renderLog();
    } catch (e) {
      app.showError(e, $('#log-error'));
    }
  }

  async function show() {
    showLog();
    $('#blocks-error').textContent = '';
    try {
      const [answer, catalogue] = await Promise.all([api.blocks(), loadGames().catch(() => [])]);
      blocks = answer.blocks ?? [];
      games = catalogue;
      render();
    } catch (e) {
      app.showError(e, $('#blocks-error'));
    }
  }

  // The receipt check: what was said last, written again on a language switch.
  const result = $('#receipt-result');
  let said = null;
  function say(answer) {
    said = answer;
    if (!answer) {
      result.textContent = '';
      delete result.dataset.result;
      delete result.dataset.reason;
      return;
    }
    const number = (n) => Number(n).toLocaleString(currentLang() === 'fr' ? 'fr-FR' : 'en-GB');
    const bought = answer.purchase
      ? ` ${t('receipt.purchase', { play: answer.purchase.play, game: gameName(answer.purchase.game), stake: money(answer.purchase.stake) })}`
      : '';
    result.textContent = answer.ok
      ? t('receipt.ok', { index: number(answer.index), origin: answer.origin, size: number(answer.size) }) + bought
      : answer.reason === 'checking'
        ? t('receipt.checking')
        : t(`receipt.fail.${answer.reason}`);
    result.dataset.result = answer.ok ? 'ok' : answer.reason === 'checking' ? 'checking' : 'failed';
    result.dataset.reason = answer.ok ? '' : answer.reason;
    result.classList.toggle('ok', Boolean(answer.ok));
    result.classList.toggle('error', !answer.ok && answer.reason !== 'checking');
  }

  async function checkPasted() {
    const text = $('#receipt-text').value.trim();
    if (!text) return say({ ok: false, reason: 'empty' });
    let receipt;
    try {
      receipt = JSON.parse(text);
    } catch {
      return say({ ok: false, reason: 'json' });
    }
    say({ ok: false, reason: 'checking' });
    let answer;
    try {
      answer = await explainWithSite(receipt);
    } catch {
      return say({ ok: false, reason: 'network' });
    }
    if (answer.ok) answer.purchase = await purchaseOf(receipt);
    say(answer);
  }

  $('#receipt-form').addEventListener('submit', (event) => {
    event.preventDefault();
    checkPasted();
  });
  // A saved receipt's file is read here, in the page, and checked at once.
  $('#receipt-file').addEventListener('change', async (event) => {
    const file = event.target.files?.[0];
    if (!file) return;
    $('#receipt-text').value = await file.text();
    checkPasted();
  });

  return {
    show,
    render: () => {
      render();
      renderLog();
      say(said);
    },
  };
}
