//! « Rapports » (role `dashboard`, read-only): the operator's figures by
//! Europe/Paris day or month, as `tresor report --by` prints them — per
//! period and game the units, stakes, prizes and gross gaming yield, per
//! period the deposits, withdrawals paid and the balances at its end —
//! with a chart of stakes, prizes and yield, and the same report as a CSV
//! file. The server reconciles it with the ledger before it answers
//! (docs/CONSOLE.md, "Rapports"). The screen builds its own link and
//! section, so that it is one file and one line in main.js.

import { api } from './api.js';
import { barChart } from './chart.js';
import { $, h, euros, count, fill, table, showingErrors } from './util.js';

function build() {
  $('#nav').append(h('a', { href: '#/reports', 'data-route': 'reports', 'data-needs': 'dashboard', 'data-testid': 'nav-reports' }, 'Reports'));
  const field = (id, label, input) => h('div', { class: 'field' }, h('label', { for: id }, label), input);
  $('#main').append(
    h(
      'section',
      { class: 'screen', 'data-screen': 'reports', id: 'screen-reports', 'aria-labelledby': 'reports-title', hidden: true },
      h('div', { class: 'screen-head' }, h('h1', { id: 'reports-title', tabindex: '-1' }, 'Reports')),
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'reports-ask-title' },
        h('h2', { id: 'reports-ask-title' }, 'Figures by period'),
        h('p', {}, 'Europe/Paris days and months, daylight saving included; reconciled with the ledger.'),
        h(
          'form',
          { id: 'reports-form', class: 'row wrap', novalidate: true, 'data-testid': 'reports-form' },
          field('reports-by', 'Period', h('select', { id: 'reports-by', 'data-testid': 'reports-by' }, h('option', { value: 'day' }, 'By day'), h('option', { value: 'month' }, 'By month'))),
          field('reports-from', 'From', h('input', { id: 'reports-from', type: 'date', 'data-testid': 'reports-from' })),
          field('reports-to', 'To (included)', h('input', { id: 'reports-to', type: 'date', 'data-testid': 'reports-to' })),
          h('button', { type: 'submit', class: 'primary', 'data-testid': 'reports-show' }, 'Show'),
          h('a', { id: 'reports-csv', class: 'button', href: '/console/api/report/periods?format=csv', download: '', 'data-testid': 'reports-csv' }, 'Download CSV'),
        ),
      ),
      h('div', { id: 'reports-chart', 'data-testid': 'reports-chart' }),
      h('section', { class: 'card', 'aria-labelledby': 'reports-sales-title' }, h('h2', { id: 'reports-sales-title' }, 'Sales by period and game'), h('div', { id: 'reports-sales', 'data-testid': 'reports-sales' })),
      h('section', { class: 'card', 'aria-labelledby': 'reports-money-title' }, h('h2', { id: 'reports-money-title' }, 'Money by period'), h('div', { id: 'reports-money', 'data-testid': 'reports-money' })),
    ),
  );
}

/** What the form asks for. */
function asked() {
  return { by: $('#reports-by').value, from: $('#reports-from').value, to: $('#reports-to').value };
}

function csvLink(ask) {
  const search = new URLSearchParams({ format: 'csv' });
  for (const [name, value] of Object.entries(ask)) if (value) search.set(name, value);
  $('#reports-csv').href = `/console/api/report/periods?${search}`;
}

function salesRows(report) {
  const rows = [];
  for (const period of report.periods) {
    rows.push({ period: period.period, game: null, sales: period.sales });
    for (const game of period.games) rows.push({ period: period.period, game: game.game, sales: game });
  }
  rows.push({ period: 'Total', game: null, sales: report.totals.sales });
  return rows;
}

function render(report) {
  const names = new Map(report.games.map((g) => [g.game, g]));
  const gameName = (id) => (id === null ? h('strong', {}, 'All games') : h('span', { lang: 'fr' }, names.get(id)?.name_fr ?? id));
  fill(
    $('#reports-chart'),
    report.periods.length
      ? barChart({
          groups: report.periods.map((p) => ({
            label: p.period,
            bars: [
              { name: 'Stakes', value: p.sales.stakes_cents, kind: 'stakes' },
              { name: 'Prizes won', value: p.sales.prizes_cents, kind: 'prizes' },
              { name: 'Gross gaming yield', value: Math.max(0, p.sales.gross_gaming_yield_cents), kind: 'expected' },
            ],
          })),
          series: [
            { name: 'Stakes', kind: 'stakes' },
            { name: 'Prizes won', kind: 'prizes' },
            { name: 'Gross gaming yield', kind: 'expected' },
          ],
          title: 'Stakes, prizes and yield by period',
          describe: 'For each period, the stakes taken, the prizes won and the gross gaming yield, in euros.',
          format: euros,
          width: Math.max(420, 90 * report.periods.length),
        })
      : null,
  );
  fill(
    $('#reports-sales'),
    table(
      [
        ['Period', (r) => r.period],
        ['Game', (r) => gameName(r.game)],
        ['Units', (r) => count(r.sales.units), 'num'],
        ['Stakes', (r) => euros(r.sales.stakes_cents), 'num'],
        ['Prizes won', (r) => euros(r.sales.prizes_cents), 'num'],
        ['Gross gaming yield', (r) => euros(r.sales.gross_gaming_yield_cents), 'num'],
      ],
      salesRows(report),
      { empty: 'Nothing sold in this range.', caption: 'Sales by period and game', rowAttrs: (r) => ({ 'data-testid': 'reports-sales-row', 'data-period': r.period, 'data-game': r.game ?? '', 'data-units': r.sales.units, 'data-stakes': r.sales.stakes_cents }) },
    ),
  );
  const money = report.periods.map((p) => ({ period: p.period, money: p.money })).concat([{ period: 'Total', money: report.totals.money }]);
  fill(
    $('#reports-money'),
    table(
      [
        ['Period', (r) => r.period],
        ['Deposits', (r) => euros(r.money.deposits_cents), 'num'],
        ['Withdrawals paid', (r) => euros(r.money.withdrawals_paid_cents), 'num'],
        ['Prizes paid', (r) => euros(r.money.prizes_credited_cents), 'num'],
        ["Players' balances at the end", (r) => euros(r.money.player_balances_cents), 'num'],
        ['Withdrawals due at the end', (r) => euros(r.money.withdrawals_pending_cents), 'num'],
        ['Reserve of closed accounts', (r) => euros(r.money.reserves_cents), 'num'],
      ],
      money,
      { caption: 'Money by period', rowAttrs: (r) => ({ 'data-testid': 'reports-money-row', 'data-period': r.period, 'data-balances': r.money.player_balances_cents }) },
    ),
  );
  // A wide table scrolls sideways in its card: reachable from the keyboard.
  for (const [wrap, title] of [['#reports-sales', 'reports-sales-title'], ['#reports-money', 'reports-money-title']]) {
    const box = $(`${wrap} .table-wrap`);
    if (box) Object.entries({ tabindex: '0', role: 'region', 'aria-labelledby': title }).forEach(([k, v]) => box.setAttribute(k, v));
  }
  $('#screen-reports').dataset.periods = String(report.periods.length);
}

async function load() {
  const ask = asked();
  csvLink(ask);
  render(await api.reportPeriods(ask));
}

export const reports = {
  setup() {
    build();
    $('#reports-form').addEventListener('submit', async (event) => {
      event.preventDefault();
      await showingErrors(load);
    });
  },

  show() {
    return showingErrors(load);
  },
};
