//! Free tries (issue 45; docs/GAMES.md, "Free tries"): « Essayer
//! gratuitement » plays any game of the catalogue at a chosen stake with
//! play money, with or without an account (`#/free/ID`, the island at
//! `#/free` too). The outcome comes from the server's free route
//! (`POST /api/free/plays`, drawn at the real table's odds, never from a
//! real block, nothing written); the scene is staged by the game's own
//! screen (game.js, scratch.js) and scene code, as a real unit's is.
//!
//! What is the free mode's alone lives here: the play money (20,00 €
//! fictifs, refilled on request, kept in the browser's session and shown
//! apart from the real balance), the mark on every screen of a free game
//! (« Partie gratuite — aucun gain réel »: the game's screen, the « how to
//! play » and congratulation windows), the link into the free mode from
//! each game's screen, and the free answer laid out as a real play's view
//! step by step (the island's throws one at a time, the card under its foil).

import { api } from './api.js';
import { t, money, dateTime, currentLang } from './i18n.js';
import { h } from './util.js';

const STORE_KEY = 'tresor.free.balance';
/**
 * The end of the exclusion a player asked on this browser: the exclusion
 * ends the session and takes its cookie, so the server can no longer tell;
 * the page still refuses free tries until then (a free try is still
 * gambling advertising).
 */
const EXCLUDED_KEY = 'tresor.excluded_until';

/** Remembers, on this browser, the end of an exclusion just asked. */
export function rememberExclusion(until) {
  try {
    if (until) localStorage.setItem(EXCLUDED_KEY, until);
  } catch {
    // Not remembered: the server still refuses while the cookie is there.
  }
}

/** The end of an exclusion asked on this browser, while it runs; else null. */
function excludedUntil() {
  try {
    const until = localStorage.getItem(EXCLUDED_KEY);
    return until && Date.parse(until) > Date.now() ? until : null;
  } catch {
    return null;
  }
}

/** The play money a visitor starts with, and gets back on « Recharger ». */
export const FREE_START_CENTS = 2000;

/** Play money in words, always with its cents: « 20,00 € fictifs », "€20.00 play money". */
export function fictitious(cents) {
  const amount = new Intl.NumberFormat(currentLang() === 'fr' ? 'fr-FR' : 'en-IE', {
    style: 'currency',
    currency: 'EUR',
    minimumFractionDigits: 2,
    maximumFractionDigits: 2,
  }).format(cents / 100);
  return t('free.money', { amount });
}

/**
 * The island's free try as it stands after `done` of its throws: the free
 * answer holds all four, a real play shows them one « Lancer » at a time.
 */
export function islandAfter(answer, done) {
  const throws = answer.scenario.throws;
  const finished = done >= throws.length;
  return {
    ...answer,
    state: finished ? 'finished' : 'playing',
    throws_left: throws.length - Math.min(done, throws.length),
    scenario: { ...answer.scenario, throws: throws.slice(0, done) },
  };
}

/** A free scratch card as bought: its amounts still under the foil. */
export function cardCovered(answer) {
  return { ...answer, state: 'playing', throws_left: 1, scenario: { ...answer.scenario, cells: null } };
}

/** The play money and the marks of the free mode, shared by both game screens. */
export class FreeMode {
  /** @param {object} app main.js's shared state and services (`say`, `game`, `scratch`). */
  constructor(app) {
    this.app = app;
    /** The balance when the browser keeps no session storage. */
    this.memory = FREE_START_CENTS;
    /** Each screen's bar, built once: `{ node, balance, refill, real }`. */
    this.bars = new Map();
  }

  /** The play money left, in cents. */
  balance() {
    try {
      const kept = sessionStorage.getItem(STORE_KEY);
      const cents = Number(kept);
      return kept === null || !Number.isSafeInteger(cents) || cents < 0 ? FREE_START_CENTS : cents;
    } catch {
      return this.memory;
    }
  }

  setBalance(cents) {
    this.memory = Math.max(0, cents);
    try {
      sessionStorage.setItem(STORE_KEY, String(this.memory));
    } catch {
      // Kept in memory for this page only.
    }
    for (const screen of [this.app.game, this.app.scratch]) screen?.update();
  }

  /** « Recharger »: the play money back to its start. */
  refill() {
    this.setBalance(FREE_START_CENTS);
    this.app.say(t('free.refilled', { amount: fictitious(FREE_START_CENTS) }));
  }

  /**
   * One free try of `gameId` (the island without one) at `stake` cents:
   * the server's answer, the stake taken from the play money once it came.
   * A refusal (403 `excluded`, `stake_limit_reached`; 429) takes nothing.
   */
  async draw(gameId, stake) {
    const answer = await api.freePlay(stake, gameId);
    if (answer?.free !== true) throw new Error('not a free try');
    this.setBalance(this.balance() - stake);
    return answer;
  }

  /** A free win: the real game's prize, added to the play money alone. */
  credit(prize) {
    this.setBalance(this.balance() + prize);
  }

  /** Why « Jouer gratuitement » cannot be pressed now, or null when it can. */
  reason(stake) {
    const excluded = excludedUntil();
    if (excluded) return { text: t('free.excluded', { date: dateTime(excluded) }) };
    if (this.app.playtime?.blocking()) return { text: t('reason.reminder') };
    if (stake === null) return { text: t('scratch.none_on_sale') };
    if (this.balance() < stake) return { text: t('free.funds', { stake: money(stake) }) };
    return null;
  }

  /**
   * A game screen's free bar (`node`): shown in the free mode with the mark,
   * the play money and « Recharger », and a way back to the real game at
   * `realRoute`; hidden otherwise.
   */
  renderBar(node, on, realRoute) {
    node.hidden = !on;
    if (!on) return;
    let bar = this.bars.get(node);
    if (!bar) {
      bar = {
        mark: h('p', { class: 'free-mark', 'data-testid': 'free-mark' }),
        label: h('span', { class: 'free-label' }),
        balance: h('strong', { 'data-testid': 'free-balance' }),
        refill: h('button', { type: 'button', class: 'ghost small', 'data-testid': 'free-refill', onclick: () => this.refill() }),
        real: h('a', { class: 'free-real', 'data-testid': 'free-real' }),
      };
      node.replaceChildren(bar.mark, h('p', { class: 'free-money' }, bar.label, ' ', bar.balance), h('div', { class: 'free-actions' }, bar.refill, bar.real));
      this.bars.set(node, bar);
    }
    const cents = this.balance();
    bar.mark.textContent = t('free.mark');
    bar.label.textContent = t('free.balance');
    bar.balance.textContent = fictitious(cents);
    bar.balance.dataset.cents = String(cents);
    bar.refill.textContent = t('free.refill');
    bar.refill.setAttribute('aria-label', t('free.refill.label', { amount: fictitious(FREE_START_CENTS) }));
    bar.real.textContent = t('free.real');
    bar.real.href = realRoute;
  }

  /** Under a real game's screen: « Essayer gratuitement » into its free mode. */
  renderEntry(node, on, freeRoute) {
    node.hidden = !on;
    if (!on) return;
    const link = node.firstElementChild ?? node.appendChild(h('a', { class: 'button ghost-link', 'data-testid': 'free-entry' }));
    link.href = freeRoute;
    link.textContent = t('free.try');
  }

  /** The « how to play » and congratulation windows marked for a free game, or not. */
  markDialogs(on) {
    for (const node of document.querySelectorAll('[data-free-mark]')) node.hidden = !on;
    for (const node of document.querySelectorAll('[data-real-mark]')) node.hidden = on;
  }
}

/** The lobby card's « Essayer gratuitement » link for `game` (named for screen readers). */
export function freeLink(game, name) {
  return h(
    'a',
    {
      class: 'button ghost-link small free-link',
      href: `#/free/${encodeURIComponent(game.id)}`,
      'data-testid': `free-link-${game.id}`,
      'aria-label': t('free.try.label', { name }),
    },
    t('free.try'),
  );
}
