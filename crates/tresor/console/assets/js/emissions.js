//! Emissions and blocks: the lists (each with its game), creating an
//! emission of a game of the catalogue and closing one,
//! suspending and resuming a block (role `emissions`), each block's
//! commitment and, once published, its secret; re-checking a published
//! block against its commitment (role `trail`).

import { api } from './api.js';
import { $, h, euros, count, fill, table, timeNode, shortHash, notice, showError, confirmAction, busy, onActions, showingErrors } from './util.js';
import { loadGames, gameName } from './games.js';
import { currentLang } from './i18n.js';

let appRef = null;

const blockEmission = (b) => b.emission_id ?? b.emission;
const blockSold = (b) => b.sold ?? b.units_sold ?? 0;
const blockSize = (b) => b.size ?? b.units_per_block ?? 0;

function emissionRows(emissions, blocks) {
  return table(
    [
      ['Emission', (e) => `#${e.id}${e.name ? ` ${e.name}` : ''}`],
      ['Game', (e) => h('span', { 'data-testid': 'emission-game' }, gameName(e.game))],
      ['State', (e) => h('span', { class: `state ${e.state}` }, e.state)],
      ['Created', (e) => timeNode(e.created_at)],
      [
        'Stakes',
        (e) => {
          const own = blocks.filter((b) => blockEmission(b) === e.id);
          const stakes = [...new Set(own.map((b) => b.stake_cents))].sort((a, b) => a - b);
          return stakes.map(euros).join(', ') || '—';
        },
      ],
      ['Blocks', (e) => count(blocks.filter((b) => blockEmission(b) === e.id).length), 'num'],
      [
        '',
        (e) =>
          appRef.can('emissions') && e.state !== 'closed'
            ? h('button', { type: 'button', class: 'small danger-quiet', 'data-action': 'close-emission', 'data-testid': `close-emission-${e.id}`, 'data-id': e.id }, 'Close…')
            : '',
        'actions',
      ],
    ],
    emissions,
    {
      empty: 'No emission yet.',
      rowAttrs: (e) => ({ 'data-testid': 'emission-row', 'data-emission-id': e.id, 'data-state': e.state, 'data-game': e.game?.id ?? '' }),
      caption: 'Emissions',
    },
  );
}

function blockActions(b) {
  const buttons = [];
  if (appRef.can('emissions')) {
    if (b.state === 'open') {
      buttons.push(h('button', { type: 'button', class: 'small', 'data-action': 'suspend', 'data-id': b.id, 'data-testid': `suspend-${b.id}` }, 'Suspend…'));
    } else if (b.state === 'suspended') {
      buttons.push(h('button', { type: 'button', class: 'small', 'data-action': 'resume', 'data-id': b.id, 'data-testid': `resume-${b.id}` }, 'Resume…'));
    }
  }
  if (appRef.can('trail') && b.secret) {
    buttons.push(h('button', { type: 'button', class: 'small', 'data-action': 'recheck', 'data-id': b.id, 'data-testid': `recheck-${b.id}` }, 'Re-check'));
  }
  return buttons.length ? h('span', { class: 'buttons' }, buttons) : '';
}

function blockRows(blocks) {
  return table(
    [
      ['Block', (b) => `#${b.id}`],
      ['Emission', (b) => `#${blockEmission(b)}`],
      ['Game', (b) => gameName(b.game)],
      ['Stake', (b) => euros(b.stake_cents), 'num'],
      ['State', (b) => h('span', { class: `state ${b.state}`, 'data-testid': 'block-state' }, b.state)],
      [
        'Sold',
        (b) =>
          h(
            'span',
            { class: 'progress-cell' },
            h('progress', { max: blockSize(b), value: blockSold(b), 'aria-label': `Block ${b.id}: ${count(blockSold(b))} of ${count(blockSize(b))} sold` }),
            h('span', { class: 'num' }, `${count(blockSold(b))} / ${count(blockSize(b))}`),
          ),
      ],
      ['Commitment', (b) => shortHash(b.commitment)],
      ['Secret', (b) => (b.secret ? shortHash(b.secret) : h('span', { class: 'muted' }, 'not published'))],
      ['Actions', blockActions, 'actions'],
    ],
    blocks,
    { empty: 'No block.', rowAttrs: (b) => ({ 'data-testid': 'block-row', 'data-block-id': b.id, 'data-state': b.state, 'data-game': b.game ?? '' }), caption: 'Blocks' },
  );
}

/** The form's games, and the stakes of the one chosen (the island's 0,50 €, 1 € and 2 € until the catalogue comes). */
let games = [];

function fillStakes() {
  const select = $('#emission-stake');
  const game = games.find((g) => g.id === $('#emission-game').value);
  if (!game) return;
  const before = Number(select.value);
  select.replaceChildren(...game.stakes.map((s) => h('option', { value: s.cents }, euros(s.cents))));
  select.value = String(game.stakes.some((s) => s.cents === before) ? before : game.stakes[0]?.cents ?? '');
}

async function fillForm() {
  try {
    games = await loadGames();
  } catch {
    return;
  }
  const select = $('#emission-game');
  const before = select.value;
  select.replaceChildren(...games.map((g) => h('option', { value: g.id }, gameName(g))));
  select.value = games.some((g) => g.id === before) ? before : games[0]?.id ?? '';
  fillStakes();
}

async function load() {
  await fillForm();
  const [{ emissions }, { blocks }] = await Promise.all([api.emissions(), api.blocks()]);
  const sortedBlocks = [...blocks].sort((a, b) => b.id - a.id);
  fill($('#emission-list'), emissionRows([...emissions].sort((a, b) => b.id - a.id), blocks));
  fill($('#block-list'), blockRows(sortedBlocks));
}

async function act(button) {
  const id = Number(button.dataset.id);
  const action = button.dataset.action;
  let done = null;
  if (action === 'close-emission') {
    done = await confirmAction({
      title: `Close emission #${id}?`,
      text: 'Its sales stop for good and the secrets of its blocks are published. This cannot be undone.',
      ok: 'Close the emission',
      action: () => api.closeEmission(id),
    });
    if (done) notice(`Emission #${id} is closed.`);
  } else if (action === 'suspend') {
    done = await confirmAction({
      title: `Suspend block #${id}?`,
      text: 'Players can no longer buy units of this block until it is resumed.',
      ok: 'Suspend',
      action: () => api.suspendBlock(id),
    });
    if (done) notice(`Block #${id} is suspended.`);
  } else if (action === 'resume') {
    done = await confirmAction({
      title: `Resume block #${id}?`,
      text: 'Its units go on sale again.',
      ok: 'Resume',
      action: () => api.resumeBlock(id),
    });
    if (done) notice(`Block #${id} is on sale again.`);
  } else if (action === 'recheck') {
    const result = await busy(button, () => api.recheckBlock(id));
    const plays = result.plays_checked === undefined ? '' : `, ${count(result.plays_checked)} units sold checked`;
    const what = `${count(result.units)} units${plays}`;
    if (result.ok) notice(`Block #${id} re-checked: the secret matches its commitment, the table and the units sold (${what}).`, 'ok', 'recheck_ok');
    else
      notice(
        `Block #${id} FAILED its re-check: commitment ${result.commitment_ok ? 'matches' : 'does not match'}, table ${result.table_ok ? 'matches' : 'does not match'}${result.plays_ok === false ? ', units sold at other levels than the shuffle gives' : ''}.`,
        'error',
        'recheck_failed',
      );
    return;
  }
  if (!done) return;
  // The lists are drawn again: keep the focus on the same control.
  const testid = button.dataset.testid;
  await load();
  const again =
    (testid && document.querySelector(`[data-testid="${testid}"]`)) ||
    document.querySelector(`[data-testid=block-row][data-block-id="${id}"] button`);
  if (again && (document.activeElement === document.body || !document.activeElement)) again.focus();
}

export const emissions = {
  setup(app) {
    appRef = app;
    onActions($('#screen-emissions'), act);
    $('#emission-game').addEventListener('change', fillStakes);
    $('#emission-form').addEventListener('submit', async (event) => {
      event.preventDefault();
      const game = $('#emission-game').value || undefined;
      const stake = Number($('#emission-stake').value);
      const blocks = Number($('#emission-blocks').value);
      if (!Number.isInteger(blocks) || blocks < 1) {
        notice('Give a whole number of blocks, at least 1.', 'error', 'validation');
        return;
      }
      try {
        const chosen = games.find((g) => g.id === game);
        const what = chosen ? (chosen.name?.[currentLang()] ?? chosen.id) : 'L\'Ile au Trésor';
        const created = await confirmAction({
          title: 'Create an emission?',
          text: `${blocks} block${blocks === 1 ? '' : 's'} of ${what} at ${euros(stake)}, each with a fresh secret; the commitments are public at once.`,
          ok: 'Create',
          action: () => api.createEmission(game, stake, blocks),
        });
        if (created) {
          notice(`Emission #${created.id ?? ''} is created.`);
          await load();
        }
      } catch (failure) {
        showError(failure);
      }
    });
  },
  show() {
    return showingErrors(load);
  },
};
