//! The catalogue as the console shows it (`GET /console/api/games`, read
//! once a page): a game's name in the operator's language — data, shown as
//! the definition spells it — and the games and stakes the emission form
//! offers.

import { api } from './api.js';
import { currentLang } from './i18n.js';
import { raw } from './util.js';

let catalogue = null;
/** Names by game id, from the catalogue and every game reference seen. */
const names = new Map();

/** The catalogue, island first; asked once, again after a failure. */
export function loadGames() {
  if (!catalogue) {
    catalogue = api.games().then(
      (games) => {
        for (const game of games) remember(game);
        return games;
      },
      (failure) => {
        catalogue = null;
        throw failure;
      },
    );
  }
  return catalogue;
}

/** Keeps a game reference's names (`{id, name: {fr, en}}`) for its id. */
export function remember(game) {
  if (game?.id && game.name) names.set(game.id, game.name);
}

/** A game (a reference, or its id) by name in the operator's language, as data. */
export function gameName(game) {
  if (!game) return raw('—');
  const id = typeof game === 'string' ? game : game.id;
  if (typeof game !== 'string') remember(game);
  const name = names.get(id);
  return raw(name ? (name[currentLang()] ?? name.fr) : id);
}
