//! The fairness page (« Équité »): every block of game units with its
//! commitment, published before the block goes on sale, and its secret once
//! published, with the command that re-checks a closed block.

import { api } from './api.js';
import { t, money } from './i18n.js';
import { $, h } from './util.js';

/** The command that re-checks a block whose secret is published. */
export function verifyCommand(block) {
  return `tresor block verify --secret ${block.secret} --commitment ${block.commitment} --stake ${block.stake_cents}`;
}

function row(block) {
  const published = typeof block.secret === 'string' && block.secret.length > 0;
  return h(
    'tr',
    { 'data-testid': 'block-row', 'data-block-id': block.id, 'data-state': block.state },
    h('td', { class: 'num' }, String(block.id)),
    h('td', { class: 'num' }, String(block.emission)),
    h('td', { class: 'money' }, money(block.stake_cents)),
    h('td', {}, h('span', { class: `tag ${block.state}` }, t(`block.state.${block.state}`))),
    h(
      'td',
      { class: 'num' },
      // Units sold are not shown while a block is on sale (the API gives
      // null): with the prizes paid they would tell where top prizes remain.
      block.units_sold == null
        ? '—'
        : t('fair.sold', {
            sold: block.units_sold.toLocaleString(),
            total: (block.units_per_block ?? 450000).toLocaleString(),
          }),
    ),
    h('td', {}, h('code', { class: 'hash', 'data-testid': 'block-commitment' }, block.commitment)),
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

  function render() {
    rows.replaceChildren(...blocks.map(row));
    $('#blocks-empty').hidden = blocks.length > 0;
  }

  async function show() {
    $('#blocks-error').textContent = '';
    try {
      const answer = await api.blocks();
      blocks = answer.blocks ?? [];
      render();
    } catch (e) {
      app.showError(e, $('#blocks-error'));
    }
  }

  return { show, render };
}
