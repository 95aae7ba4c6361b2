//! The dashboard: purchases per minute over the last hour (a live line
//! chart), stakes taken against prizes won and the 70 % expected (bars),
//! sales per stake and block with progress bars, the liability left per
//! prize level, and the writer's queue and latency. Polls
//! `/console/api/dashboard` every 2 s while the tab is visible.

import { api } from './api.js';
import { lineChart, barChart } from './chart.js';
import { $, h, euros, count, clock, dateTime, fill, table, showError, percent, millis } from './util.js';
import { locale, setText } from './i18n.js';

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
      ? barChart({
          groups: stakes.map((p) => ({
            label: euros(p.stake_cents),
            bars: [
              { name: 'Stakes taken', value: p.stakes_cents, kind: 'stakes' },
              { name: 'Prizes won', value: p.prizes_cents, kind: 'prizes' },
              { name: '70 % expected', value: p.expected_prizes_cents, kind: 'expected' },
            ],
          })),
          series: [
            { name: 'Stakes taken', kind: 'stakes' },
            { name: 'Prizes won', kind: 'prizes' },
            { name: '70 % expected', kind: 'expected' },
          ],
          title: 'Stakes taken, prizes won and 70 % expected, per stake',
          describe: `In all: ${euros(totals.stakes_cents)} taken, ${euros(totals.prizes_cents)} won, ${euros(totals.expected_prizes_cents)} expected.`,
          format: (v) => euros(v),
          shortFormat: compactEuros,
          width: chartWidth(money),
        })
      : h('p', { class: 'empty' }, 'No stake on sale.'),
  );

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
      [...blocks].sort((a, b) => a.stake_cents - b.stake_cents || a.id - b.id),
      { empty: 'No block.', rowAttrs: (b) => ({ 'data-testid': 'sales-row', 'data-block-id': b.id, 'data-sold': b.sold }), caption: 'Sales per block' },
    ),
  );

  const liability = data.liability ?? [];
  const byStake = new Map();
  for (const row of liability) {
    if (!byStake.has(row.stake_cents)) byStake.set(row.stake_cents, []);
    byStake.get(row.stake_cents).push(row);
  }
  fill(
    $('#liability'),
    liability.length
      ? h(
          'div',
          { class: 'liability-grid' },
          [...byStake.entries()].map(([stake, rows]) =>
            h(
              'section',
              { class: 'liability-stake' },
              h('h3', {}, `Stake ${euros(stake)}: ${euros(rows.reduce((sum, r) => sum + r.left_cents, 0))} left`),
              table(
                [
                  ['Level', (r) => r.level, 'num'],
                  ['Prize', (r) => euros(r.prize_cents), 'num'],
                  ['Units left', (r) => count(r.left), 'num'],
                  ['Left', (r) => euros(r.left_cents), 'num'],
                ],
                rows,
                { caption: `Liability left at stake ${euros(stake)}` },
              ),
            ),
          ),
        )
      : h('p', { class: 'empty' }, 'No liability: no block on sale.'),
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
