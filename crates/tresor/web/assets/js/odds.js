//! Each game's odds (issue 45; docs/GAMES.md, "The odds sheet"), as the
//! server computed them from the definition its open emission pinned
//! (`GET /api/games`, each game's `sheet`): nothing here is computed from
//! guesses, only formatted. A card of the lobby and each game's screen say
//! « 1 chance sur 3,76 · 70 % redistribués » for the stake chosen; the
//! screen's « Règles et chances » panel gives each stake's table.

import { t, money, currentLang, onLangChange } from './i18n.js';
import { h } from './util.js';

const ISLAND = 'ile-au-tresor';

const locale = () => (currentLang() === 'fr' ? 'fr-FR' : 'en-IE');

/** A number with at most `digits` decimals, in the page's language. */
function number(value, digits = 2) {
  return new Intl.NumberFormat(locale(), { maximumFractionDigits: digits }).format(value);
}

/** A share (0.7) as a percent with at most two decimals: « 70 % ». */
function percent(value, digits = 2) {
  return new Intl.NumberFormat(locale(), { style: 'percent', maximumFractionDigits: digits }).format(value);
}

/** The sheet of `game`'s stake `cents`, else its first stake's. */
function stakeSheet(game, cents) {
  const stakes = game?.sheet?.stakes ?? [];
  return stakes.find((s) => s.stake_cents === cents) ?? stakes[0] ?? null;
}

/** « 1 chance sur 3,76 · 70 % redistribués » for one stake's sheet. */
export function oddsText(sheet) {
  return t('odds.line', { one_in: number(sheet.win.one_in), payout: percent(sheet.payout.value) });
}

/**
 * A card's line: one for the game when its stakes share their odds (the
 * island's), else one per stake, led by the stake.
 */
export function cardOdds(game) {
  const stakes = game?.sheet?.stakes ?? [];
  if (!stakes.length) return null;
  const texts = stakes.map(oddsText);
  const lines = new Set(texts).size === 1 ? [texts[0]] : stakes.map((s, i) => t('odds.stake_line', { stake: money(s.stake_cents), line: texts[i] }));
  return h('p', { class: 'game-odds', 'data-testid': 'game-odds' }, lines.join(' — '));
}

/** One stake's table: each level's prize, units per block and odds. */
function stakeTable(sheet) {
  const rows = sheet.levels.map((level) =>
    h(
      'tr',
      { 'data-level': level.level },
      h('th', { scope: 'row' }, level.level === 0 ? t('odds.level.none') : t('odds.level', { level: level.level })),
      h('td', { class: 'num' }, money(level.prize_cents)),
      h('td', { class: 'num' }, number(level.units_per_block, 0)),
      h('td', { class: 'num', 'data-testid': 'odds-one-in' }, t('odds.one_in', { n: number(level.chance.one_in) })),
    ),
  );
  const ten = sheet.buys.find((b) => b.units === 10);
  const facts = [
    [t('odds.win'), oddsText(sheet)],
    [t('odds.largest'), t('odds.largest.value', { n: number(sheet.largest_multiple.value, 2) })],
    [t('odds.back'), t('odds.one_in', { n: number(sheet.back_stake.one_in) })],
    ten ? [t('odds.ten'), percent(ten.any_win.value, 2)] : null,
  ].filter(Boolean);
  return h(
    'div',
    { class: 'odds-stake', 'data-testid': 'odds-stake', 'data-stake-cents': sheet.stake_cents },
    h(
      'div',
      { class: 'table-scroll' },
      h(
        'table',
        { class: 'odds-table' },
        h('caption', {}, t('odds.caption', { stake: money(sheet.stake_cents), units: number(sheet.units_per_block, 0) })),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            [t('odds.col.level'), t('odds.col.prize'), t('odds.col.units'), t('odds.col.odds')].map((c) => h('th', { scope: 'col' }, c)),
          ),
        ),
        h('tbody', {}, rows),
      ),
    ),
    h('dl', { class: 'odds-facts' }, facts.flatMap(([term, value]) => [h('dt', {}, term), h('dd', {}, value)])),
  );
}

/** The « Règles et chances » panel's content for `game`. */
function panel(game) {
  const stakes = game?.sheet?.stakes ?? [];
  return [
    h('summary', { 'data-testid': 'odds-summary' }, t('odds.panel')),
    h('p', { class: 'hint' }, t('odds.rules', { units: number(stakes[0]?.units_per_block ?? 0, 0) })),
    stakes.map(stakeTable),
  ];
}

/** The game of the screen showing now: the island's, or `#/play/ID`'s. */
function screenGame(games, screen) {
  if (screen === 'scratch') {
    const id = decodeURIComponent((location.hash.match(/^#\/play\/([^/?]+)/) ?? [])[1] ?? '');
    return games.find((g) => g.id === id) ?? null;
  }
  return games.find((g) => g.id === ISLAND) ?? null;
}

/**
 * Keeps each game screen's odds line and panel in step with the game, the
 * stake chosen and the language; `loadGames` gives the catalogue (lobby.js).
 */
export function setupOdds(loadGames) {
  const screens = [
    { screen: 'game', line: 'game-odds', panel: 'game-sheet', radios: 'stake' },
    { screen: 'scratch', line: 'scratch-odds', panel: 'scratch-sheet', radios: 'scratch-stake' },
  ];
  let games = null;
  const render = () => {
    if (!games) return;
    for (const s of screens) {
      const line = document.getElementById(s.line);
      const node = document.getElementById(s.panel);
      if (!line || !node) continue;
      const game = screenGame(games, s.screen);
      const chosen = Number(document.querySelector(`input[name="${s.radios}"]:checked`)?.value);
      const sheet = stakeSheet(game, chosen);
      line.hidden = !sheet;
      line.textContent = sheet ? oddsText(sheet) : '';
      line.dataset.stakeCents = sheet ? String(sheet.stake_cents) : '';
      node.hidden = !sheet;
      const open = node.open;
      node.replaceChildren(...(sheet ? panel(game).flat() : []));
      node.open = open;
      node.dataset.game = game?.id ?? '';
    }
  };
  const load = () =>
    loadGames().then(
      (list) => {
        games = list;
        render();
      },
      () => {},
    );
  document.addEventListener('change', (event) => {
    if (screens.some((s) => event.target?.name === s.radios)) render();
  });
  window.addEventListener('hashchange', () => load());
  onLangChange(render);
  // The scratch screen writes its stakes anew for each game.
  const stakes = document.getElementById('scratch-stakes');
  if (stakes) new MutationObserver(render).observe(stakes, { childList: true });
  load();
}
