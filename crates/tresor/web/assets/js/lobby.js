//! The catalogue (`GET /api/games`, read once a page) and the lobby
//! (`#/games`): each game a card with its name in the page's language, its
//! kind, its stakes and each stake's payout rate. A card is picked with the
//! pointer (the whole card is the link) or the keyboard (Tab to its name,
//! Enter); `#/play/ID` then opens the game, the island as `#/` does. Each
//! card also offers « Essayer gratuitement » (`#/free/ID`, free.js).

import { api } from './api.js';
import { t, money, currentLang } from './i18n.js';
import { EMBLEM } from './art.js';
import { $, h } from './util.js';
import { cardOdds } from './odds.js';
import { freeLink } from './free.js';

let catalogue = null;

/** The games on sale, island first; asked once, again after a failure. */
export function loadGames() {
  if (!catalogue) {
    catalogue = api.games().catch((error) => {
      catalogue = null;
      throw error;
    });
  }
  return catalogue;
}

/** The game whose id is `id`, or null (unknown, or the catalogue unreachable). */
export async function findGame(id) {
  try {
    return (await loadGames()).find((game) => game.id === id) ?? null;
  } catch {
    return null;
  }
}

/**
 * A game's name in the page's language. A play or catalogue entry without
 * one (a server older than the catalogue) is the island.
 */
export function gameName(game) {
  if (!game?.name) return t('game.island');
  return game.name[currentLang()] ?? game.name.fr ?? game.id;
}

/** A payout rate the server gives as a decimal string ("70.00") in words: "70,00 %". */
export function percent(text) {
  return new Intl.NumberFormat(currentLang() === 'fr' ? 'fr-FR' : 'en-IE', {
    style: 'percent',
    minimumFractionDigits: 2,
    maximumFractionDigits: 2,
  }).format(Number(text) / 100);
}

/** Where a game is played: the island keeps the short address it always had. */
export function gameRoute(game) {
  return game?.kind === 'scratch' ? `#/play/${encodeURIComponent(game.id)}` : '#/';
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/** A card's picture: the island's emblem, or a small scratch card. */
function art(game) {
  const node = document.createElementNS(SVG_NS, 'svg');
  node.setAttribute('viewBox', '0 0 64 64');
  node.setAttribute('aria-hidden', 'true');
  node.setAttribute('focusable', 'false');
  node.setAttribute('class', 'game-art');
  if (game.kind !== 'scratch') {
    node.innerHTML = EMBLEM;
    return node;
  }
  const rows = game.scene?.rows ?? 3;
  const columns = game.scene?.columns ?? 3;
  const side = 52 / Math.max(rows, columns);
  let cells = '<rect x="2" y="2" width="60" height="60" rx="9" fill="#0f5e7d"/>';
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < columns; c++) {
      const x = 6 + c * side + (52 - columns * side) / 2;
      const y = 6 + r * side + (52 - rows * side) / 2;
      // One cell scratched off, showing a coin; the others still foil.
      const fill = r === 0 && c === 0 ? '#fbf3df' : 'url(#g-foil)';
      cells += `<rect x="${x + 1.5}" y="${y + 1.5}" width="${side - 3}" height="${side - 3}" rx="3" fill="${fill}"/>`;
      if (r === 0 && c === 0) {
        cells += `<circle cx="${x + side / 2}" cy="${y + side / 2}" r="${side / 4}" fill="#f1c232" stroke="#b8860b" stroke-width="1.5"/>`;
      }
    }
  }
  node.innerHTML = cells;
  return node;
}

function kindText(game) {
  if (game.kind === 'scratch') {
    const scene = game.scene ?? {};
    return t('lobby.kind.scratch', { rows: scene.rows, columns: scene.columns, identical: scene.identical });
  }
  return t('lobby.kind.island');
}

function card(game) {
  const name = gameName(game);
  const stakes = game.stakes ?? [];
  return h(
    'li',
    { class: 'game-card', 'data-testid': 'game-card', 'data-game': game.id, 'data-kind': game.kind },
    art(game),
    h('h2', { class: 'game-name' }, h('a', { class: 'game-link', href: gameRoute(game), 'data-testid': `game-link-${game.id}` }, name)),
    h('p', { class: 'game-kind' }, kindText(game)),
    cardOdds(game),
    h(
      'table',
      { class: 'game-stakes' },
      h('caption', { class: 'sr-only' }, t('lobby.stakes.caption', { name })),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, t('lobby.stake')), h('th', { scope: 'col' }, t('lobby.payout')))),
      h(
        'tbody',
        {},
        stakes.map((stake) =>
          h(
            'tr',
            { 'data-stake-cents': stake.cents, 'data-on-sale': String(stake.on_sale !== false) },
            h('td', {}, money(stake.cents), stake.on_sale === false ? h('span', { class: 'off-sale' }, ` ${t('lobby.off_sale')}`) : null),
            h('td', { class: 'num' }, percent(stake.payout_percent)),
          ),
        ),
      ),
    ),
    // Last, below the stakes: a click anywhere else on the card picks the
    // game itself (the card's own link covers it).
    h('p', { class: 'game-free' }, freeLink(game, name)),
  );
}

/** The lobby screen. */
export function setupLobby(app) {
  const list = $('#lobby');
  const error = $('#lobby-error');
  let games = null;

  function render() {
    if (!games) return;
    list.replaceChildren(...games.map(card));
    list.dataset.count = String(games.length);
  }

  return {
    async show() {
      error.textContent = '';
      try {
        games = await loadGames();
        render();
      } catch (e) {
        app.showError(e, error);
      }
    },
    /** Written again in the page's new language. */
    relabel: render,
  };
}
