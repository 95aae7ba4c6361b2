//! The dashboard: purchases per minute over the last hour (a live line
//! chart), stakes taken against prizes won and what the prize tables expect
//! for the units sold (bars), sales and payout by game against each table's
//! rate, sales per stake and block with progress bars, the liability left
//! per game, stake and prize level, and the writer's queue and latency. Polls
//! `/console/api/dashboard` every 2 s while the tab is visible.

import { api } from './api.js';
import { lineChart, barChart } from './chart.js';
import { $, h, euros, count, clock, dateTime, fill, table, showError, percent, millis } from './util.js';
import { locale, setText } from './i18n.js';
import { gameName, remember } from './games.js';
import { gameSheet } from './sheet.js';

const EVERY_MS = 2000;
let timer = 0;
let active = false;
let inFlight = false;
let lastError = '';
/** The last answer, drawn again when the window changes width. */
let lastData = null;
let resizeTimer = 0;

/** Euros in few characters (`€1.2K`, `1,2 k€`), for an axis. */
const compactEuros = (cents) =>
  new Intl.NumberFormat(locale() === 'en-GB' ? 'en-IE' : locale(), { style: 'currency', currency: 'EUR', notation: 'compact', maximumFractionDigits: 1 }).format(cents / 100);

function tile(label, value, attrs = {}) {
  return h('div', { class: 'tile', ...attrs }, h('span', { class: 'tile-label' }, label), h('strong', { class: 'tile-value' }, value));
}

/** The width a chart drawn in `node` gets, in CSS pixels. */
function chartWidth(node) {
  return Math.max(320, Math.round(node.clientWidth || 720));
}

function share(part, whole) {
  if (!whole) return '—';
  return percent((100 * part) / whole);
}

/**
 * Stakes taken, prizes won and the prizes the tables expect, a group of
 * three bars per stake (`per_stake` rows of the whole site or of one game).
 */
function moneyChart(stakes, { title, totals, width }) {
  return barChart({
    groups: stakes.map((p) => ({
      label: euros(p.stake_cents),
      bars: [
        { name: 'Stakes taken', value: p.stakes_cents, kind: 'stakes' },
        { name: 'Prizes won', value: p.prizes_cents, kind: 'prizes' },
        { name: 'Expected by the tables', value: p.expected_prizes_cents, kind: 'expected' },
      ],
    })),
    series: [
      { name: 'Stakes taken', kind: 'stakes' },
      { name: 'Prizes won', kind: 'prizes' },
      { name: 'Expected by the tables', kind: 'expected' },
    ],
    title,
    describe: `In all: ${euros(totals.stakes_cents)} taken, ${euros(totals.prizes_cents)} won, ${euros(totals.expected_prizes_cents)} expected.`,
    format: (v) => euros(v),
    shortFormat: compactEuros,
    width,
    groupHeading: 'Stake',
  });
}

function render(data) {
  const perMinute = data.purchases_per_minute ?? [];
  const totalHour = perMinute.reduce((sum, p) => sum + p.count, 0);
  const lastMinute = perMinute.length ? perMinute[perMinute.length - 1].count : 0;
  const totals = data.totals ?? { stakes_cents: 0, prizes_cents: 0, expected_prizes_cents: 0 };
  const writer = data.writer ?? {};
  const sold = (data.per_stake ?? []).reduce((sum, p) => sum + p.sold, 0);

  $('#dash-at').textContent = dateTime(data.at);
  $('#dash-at').setAttribute('datetime', data.at ?? '');

  fill(
    $('#dash-tiles'),
    tile('Purchases, this minute', count(lastMinute), { 'data-testid': 'tile-minute', 'data-count': lastMinute }),
    tile('Purchases, last hour', count(totalHour), { 'data-testid': 'tile-hour', 'data-count': totalHour }),
    tile('Units sold', count(sold), { 'data-testid': 'tile-sold', 'data-count': sold }),
    tile('Stakes taken', euros(totals.stakes_cents), { 'data-testid': 'sales-total', 'data-cents': totals.stakes_cents }),
    tile('Prizes won', euros(totals.prizes_cents), { 'data-testid': 'prizes-total', 'data-cents': totals.prizes_cents }),
    tile('Payout', share(totals.prizes_cents, totals.stakes_cents), { 'data-testid': 'payout' }),
  );

  const points = perMinute.map((p) => ({ label: clock(p.minute), value: p.count }));
  const ppm = $('#ppm-chart');
  ppm.dataset.total = String(totalHour);
  ppm.dataset.last = String(lastMinute);
  ppm.dataset.points = String(points.length);
  const peak = Math.max(0, ...points.map((p) => p.value));
  fill(
    ppm,
    lineChart({
      points,
      title: 'Purchases per minute, last hour',
      describe: `${count(totalHour)} purchases in the last ${points.length} minutes, ${count(lastMinute)} this minute, at most ${count(peak)} in one minute.`,
      xLabel: (i) => (i % 10 === 0 || i === points.length - 1 ? points[i].label : ''),
      format: (v) => count(v),
      unit: 'Purchases',
      width: chartWidth(ppm),
    }),
  );

  const stakes = data.per_stake ?? [];
  const money = $('#money-chart');
  money.dataset.stakesCents = String(totals.stakes_cents);
  fill(
    money,
    stakes.length
      ? moneyChart(stakes, {
          title: 'Stakes taken, prizes won and expected by the tables, per stake',
          totals,
          width: chartWidth(money),
        })
      : h('p', { class: 'empty' }, 'No stake on sale.'),
  );

  renderPerGame(data.per_game ?? []);

  fill(
    $('#writer-facts'),
    h('dt', {}, 'Queue'),
    h('dd', { 'data-testid': 'writer-queue' }, count(writer.queue)),
    h('dt', {}, 'Batches'),
    h('dd', {}, count(writer.batches)),
    h('dt', {}, 'Batch latency p50'),
    h('dd', { 'data-testid': 'writer-p50' }, millis(writer.batch_p50_ms ?? 0)),
    h('dt', {}, 'Batch latency p99'),
    h('dd', { 'data-testid': 'writer-p99' }, millis(writer.batch_p99_ms ?? 0)),
  );

  const blocks = data.blocks ?? [];
  fill(
    $('#sales'),
    table(
      [
        ['Game', (b) => gameName(b.game)],
        ['Stake', (b) => euros(b.stake_cents)],
        ['Block', (b) => `#${b.id} (emission ${b.emission_id})`],
        ['State', (b) => h('span', { class: `state ${b.state}` }, b.state)],
        ['Sold', (b) => h('span', { class: 'num' }, `${count(b.sold)} / ${count(b.size)}`), 'num'],
        [
          'Progress',
          (b) =>
            h(
              'span',
              { class: 'progress-cell' },
              h('progress', { max: b.size, value: b.sold, 'aria-label': `Block ${b.id}: ${share(b.sold, b.size)} sold` }),
              h('span', { class: 'num' }, share(b.sold, b.size)),
            ),
        ],
      ],
      [...blocks].sort((a, b) => gameOrder(a.game) - gameOrder(b.game) || a.stake_cents - b.stake_cents || a.id - b.id),
      { empty: 'No block.', rowAttrs: (b) => ({ 'data-testid': 'sales-row', 'data-block-id': b.id, 'data-sold': b.sold }), caption: 'Sales per block' },
    ),
  );

  // By game and stake: two games may sell the same stake.
  const liability = data.liability ?? [];
  const byStake = new Map();
  for (const row of liability) {
    const key = `${row.game ?? ''} ${row.stake_cents}`;
    if (!byStake.has(key)) byStake.set(key, { game: row.game, stake: row.stake_cents, rows: [] });
    byStake.get(key).rows.push(row);
  }
  fill(
    $('#liability'),
    liability.length
      ? h(
          'div',
          { class: 'liability-grid' },
          [...byStake.values()].map(({ game, stake, rows }) =>
            h(
              'section',
              { class: 'liability-stake', 'data-game': game ?? '', 'data-stake-cents': stake },
              h(
                'h3',
                {},
                game
                  ? `${gameName(game).textContent}, stake ${euros(stake)}: ${euros(rows.reduce((sum, r) => sum + r.left_cents, 0))} left`
                  : `Stake ${euros(stake)}: ${euros(rows.reduce((sum, r) => sum + r.left_cents, 0))} left`,
              ),
              table(
                [
                  ['Level', (r) => r.level, 'num'],
                  ['Prize', (r) => euros(r.prize_cents), 'num'],
                  ['Units left', (r) => count(r.left), 'num'],
                  ['Left', (r) => euros(r.left_cents), 'num'],
                ],
                rows,
                { caption: game ? `Liability left of ${gameName(game).textContent} at stake ${euros(stake)}` : `Liability left at stake ${euros(stake)}` },
              ),
            ),
          ),
        )
      : h('p', { class: 'empty' }, 'No liability: no block on sale.'),
  );
}

/** The games in the order the server lists them (the catalogue's). */
let order = [];
const gameOrder = (id) => {
  const at = order.indexOf(id);
  return at < 0 ? order.length : at;
};

/** A payout rate given as a decimal string ("65.00") or a share of two amounts. */
const rate = (text) => (text === null || text === undefined ? '—' : percent(Number(text)));

/**
 * Sales and payout by game: for each game its stakes taken and prizes won,
 * the payout so far beside its table's rate, and per stake the same with
 * the prizes the table expects for the units sold.
 */
function renderPerGame(games) {
  order = games.map((g) => g.game?.id);
  for (const g of games) remember(g.game);
  const perGame = $('#per-game');
  fill(
    perGame,
    games.length
      ? games.map((g) => {
          const stakes = g.per_stake ?? [];
          const rates = [...new Set(stakes.map((s) => s.table_payout_percent).filter(Boolean))];
          const name = gameName(g.game).textContent;
          const expected = stakes.reduce((sum, s) => sum + (s.expected_prizes_cents ?? 0), 0);
          return h(
            'section',
            { class: 'per-game', 'data-testid': 'per-game-row', 'data-game': g.game?.id, 'data-stakes-cents': g.stakes_cents, 'data-prizes-cents': g.prizes_cents },
            h('h3', {}, `${name}: ${euros(g.stakes_cents)} taken, ${euros(g.prizes_cents)} won, payout ${share(g.prizes_cents, g.stakes_cents)} (the table's ${rates.map(rate).join(', ') || '—'})`),
            // Bars once the game has sold: before that its table says it all.
            g.stakes_cents > 0 && stakes.length
              ? h(
                  'div',
                  { class: 'chart', 'data-testid': 'per-game-chart', 'data-game': g.game?.id },
                  moneyChart(stakes, {
                    title: `${name}: stakes taken, prizes won and expected by its table, per stake`,
                    totals: { stakes_cents: g.stakes_cents, prizes_cents: g.prizes_cents, expected_prizes_cents: expected },
                    width: chartWidth(perGame),
                  }),
                )
              : null,
            table(
              [
                ['Stake', (s) => euros(s.stake_cents), 'num'],
                ['Units sold', (s) => count(s.sold), 'num'],
                ['Stakes taken', (s) => euros(s.stakes_cents), 'num'],
                ['Prizes won', (s) => euros(s.prizes_cents), 'num'],
                ['Payout', (s) => share(s.prizes_cents, s.stakes_cents), 'num'],
                ['Table\'s rate', (s) => rate(s.table_payout_percent), 'num'],
                ['Expected by the table', (s) => euros(s.expected_prizes_cents), 'num'],
              ],
              stakes,
              {
                rowAttrs: (s) => ({
                  'data-testid': 'per-game-stake',
                  'data-game': g.game?.id,
                  'data-stake-cents': s.stake_cents,
                  'data-sold': s.sold,
                  'data-stakes-cents': s.stakes_cents,
                  'data-prizes-cents': s.prizes_cents,
                  'data-table-percent': s.table_payout_percent ?? '',
                }),
                caption: `Sales and payout of ${name} per stake`,
              },
            ),
            gameSheet(g.game?.id, chartWidth(perGame)),
          );
        })
      : h('p', { class: 'empty' }, 'No game sold yet.'),
  );
}

async function poll() {
  if (!active || inFlight) return;
  inFlight = true;
  try {
    const data = await api.dashboard();
    if (!active) return;
    lastData = data;
    render(data);
    lastError = '';
    setText($('#dash-state'), 'Live');
    $('#dash-state').dataset.state = 'live';
    document.body.dataset.dashboardPolls = String(Number(document.body.dataset.dashboardPolls ?? 0) + 1);
  } catch (failure) {
    setText($('#dash-state'), 'Not updating');
    $('#dash-state').dataset.state = 'error';
    if (failure.message !== lastError) showError(failure);
    lastError = failure.message;
  } finally {
    inFlight = false;
  }
}

function schedule() {
  clearInterval(timer);
  timer = 0;
  if (active && !document.hidden) {
    timer = setInterval(poll, EVERY_MS);
  } else if (active) {
    setText($('#dash-state'), 'Paused while the tab is hidden');
    $('#dash-state').dataset.state = 'paused';
  }
}

export const dashboard = {
  setup() {
    window.addEventListener('resize', () => {
      clearTimeout(resizeTimer);
      resizeTimer = setTimeout(() => {
        if (active && lastData) render(lastData);
      }, 120);
    });
    document.addEventListener('visibilitychange', () => {
      if (!active) return;
      schedule();
      if (!document.hidden) poll();
    });
  },
  async show() {
    active = true;
    schedule();
    await poll();
  },
  hide() {
    active = false;
    clearInterval(timer);
    timer = 0;
  },
};
