//! A game's odds sheet in the console (issue 45; docs/GAMES.md, "The odds
//! sheet"), beside its live figures on the dashboard: per stake, each
//! level's prize, units per block and exact odds, the chance to win, the
//! payout rate, a unit's mean prize and deviation, and a chart of the prize
//! distribution (each level's share of the winning units and of the prize
//! money). The figures are the server's (`GET /console/api/games`, each
//! game's `sheet`, computed from the definition its open emission pinned):
//! only formatted here.

import { barChart } from './chart.js';
import { h, euros, count, decimal, fill, table, percent } from './util.js';
import { loadGames } from './games.js';

/** « 1 in 3.76 » from a figure's `one_in`. */
const oneIn = (figure) => (figure?.one_in ? `1 in ${decimal(figure.one_in, 2)}` : '—');

/** Each winning level's share of the winning units and of the prize money. */
function distribution(sheet, width) {
  const winning = sheet.levels.filter((l) => l.level > 0);
  const units = winning.reduce((sum, l) => sum + l.units_per_block, 0) || 1;
  const money = winning.reduce((sum, l) => sum + l.units_per_block * l.prize_cents, 0) || 1;
  return barChart({
    groups: winning.map((l) => ({
      label: `L${l.level}`,
      bars: [
        { name: 'Share of the winning units', value: (100 * l.units_per_block) / units, kind: 'stakes' },
        { name: 'Share of the prize money', value: (100 * l.units_per_block * l.prize_cents) / money, kind: 'prizes' },
      ],
    })),
    series: [
      { name: 'Share of the winning units', kind: 'stakes' },
      { name: 'Share of the prize money', kind: 'prizes' },
    ],
    title: `Prize distribution at stake ${euros(sheet.stake_cents)}`,
    describe: `Each level's share of a block's winning units and of its prize money, in percent.`,
    format: (v) => percent(v),
    width,
    groupHeading: 'Level',
  });
}

/** One stake's sheet: its facts, its levels' table and its chart. */
function stakeSheet(sheet, width) {
  const ten = sheet.buys.find((b) => b.units === 10);
  const facts = [
    ['Chance to win', [oneIn(sheet.win), ` (${percent(100 * sheet.win.value)})`]],
    ['Payout rate', percent(100 * sheet.payout.value)],
    ['Mean prize', euros(Math.round(sheet.mean_cents.value))],
    ['Standard deviation', euros(Math.round(sheet.sd_cents))],
    ['Top prize', `${decimal(sheet.largest_multiple.value, 0)} × the stake`],
    ['Stake back', oneIn(sheet.back_stake)],
    ten ? ['A win in 10 units', percent(100 * ten.any_win.value)] : null,
  ].filter(Boolean);
  return h(
    'section',
    { class: 'sheet-stake', 'data-testid': 'sheet-stake', 'data-stake-cents': sheet.stake_cents, 'data-win-one-in': sheet.win.one_in, 'data-payout': sheet.payout.exact },
    h('h4', {}, `Stake ${euros(sheet.stake_cents)}:`, ' ', oneIn(sheet.win), ', ', `payout ${percent(100 * sheet.payout.value)}`),
    h('dl', { class: 'sheet-facts' }, facts.map(([term, value]) => [h('dt', {}, term), h('dd', {}, value)])),
    table(
      [
        ['Level', (l) => (l.level === 0 ? 'Losing' : String(l.level)), 'num'],
        ['Prize', (l) => euros(l.prize_cents), 'num'],
        ['Units per block', (l) => count(l.units_per_block), 'num'],
        ['Odds', (l) => oneIn(l.chance), 'num'],
        ['Exact', (l) => h('code', {}, l.chance.exact), 'num'],
      ],
      sheet.levels,
      { rowAttrs: (l) => ({ 'data-testid': 'sheet-level', 'data-level': l.level }), caption: `Odds at stake ${euros(sheet.stake_cents)}` },
    ),
    h('div', { class: 'chart', 'data-testid': 'sheet-chart' }, distribution(sheet, width)),
  );
}

/** The sheets drawn, by game and chart width: a poll moves them, not redraws. */
const drawn = new Map();

/**
 * The sheet of game `id`, filled in once the catalogue is read (it is read
 * once a page); `width` is the chart's.
 */
export function gameSheet(id, width) {
  const key = `${id} ${width}`;
  if (drawn.has(key)) return drawn.get(key);
  const node = h('div', { class: 'game-sheet', 'data-testid': 'game-sheet', 'data-game': id ?? '' });
  drawn.set(key, node);
  loadGames().then(
    (games) => {
      const game = games.find((g) => g.id === id);
      const stakes = game?.sheet?.stakes ?? [];
      if (!stakes.length) return;
      node.dataset.sha256 = game.sheet.sha256;
      fill(node, h('h3', {}, 'Odds sheet, from the definition on sale'), stakes.map((s) => stakeSheet(s, width)));
    },
    () => {},
  );
  return node;
}
