//! The game screen's controller: stake choice and "Jouer", the "how to play"
//! window, "Lancer" one throw at a time, the end of a game with its
//! congratulation window, resuming a game left mid-way and replaying a
//! finished one from the history. The scene draws; this module decides.

import { api, newIdempotencyKey } from './api.js';
import { t, money } from './i18n.js';
import { Scene } from './scene.js';
import { symbolSvg } from './art.js';
import { $, h, sleep, duration } from './util.js';
import { PlayScreen } from './play-screen.js';
import { islandAfter } from './free.js';

const SYMBOLS = ['candlestick', 'monkey', 'sapphire', 'skull'];

/** The winning combinations of Article 4.4, with their prizes at a 50-cent stake. */
const COMBINATIONS = [
  [3, 'candlestick', 500000], [3, 'monkey', 25000], [3, 'sapphire', 7500], [3, 'skull', 2500],
  [2, 'candlestick', 1250], [2, 'monkey', 500], [2, 'sapphire', 150], [2, 'skull', 100],
  [1, 'candlestick', 50],
];

/** The combination a winning level reveals: levels 1–9 in the order above. */
function combinationOf(level) {
  return COMBINATIONS[level - 1] ?? null;
}

/**
 * Whether the server could not stage `play`'s scene (`{"kind":"unavailable"}`:
 * a unit of a definition that fails `tresor game check`): its outcome and
 * throws stand, shown without the walk.
 */
export function unstaged(play) {
  return play?.scenario?.kind === 'unavailable';
}

/** Opens a modal dialog and resolves when it closes (button or Escape). */
export function openDialog(dialog) {
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(), { once: true });
    if (!dialog.open) dialog.showModal();
  });
}

export class Game extends PlayScreen {
  /**
   * @param {object} app shared state and services from main.js: `state`
   *   (`status`, `island`, `me`), `refreshMe()`, `adjustBalance(cents)`,
   *   `say(text)`, `showError(error, node)`, `loggedOut()`.
   */
  constructor(app) {
    super(app);
    this.scene = new Scene(
      {
        map: $('#map'),
        compass: $('#compass'),
        steps: $('#steps'),
        found: $('#found'),
        throws: $('#pips'),
        throwsText: $('#throws-text'),
      },
      (text) => app.say(text),
    );
    this.els = {
      play: $('#play'),
      throw: $('#throw'),
      buy: $('#buy-controls'),
      throwBox: $('#throw-controls'),
      reason: $('#play-reason'),
      status: $('#game-status'),
      proof: $('#play-proof'),
      stakes: $('#stakes'),
      howto: $('#dlg-howto'),
      win: $('#dlg-win'),
      banner: $('#replay-banner'),
      bannerText: $('#replay-text'),
      screen: $('#screen-game'),
      freeBar: $('#free-bar-game'),
      freeEntry: $('#free-entry-game'),
    };
    this.els.play.addEventListener('click', () => this.buy());
    this.els.throw.addEventListener('click', () => this.throwOnce());
    this.els.stakes.addEventListener('change', () => this.update());
    $('#howto-close').addEventListener('click', () => this.els.howto.close());
    $('#win-close').addEventListener('click', () => this.els.win.close());
    $('#replay-back').addEventListener('click', () => {
      location.hash = '#/';
    });
  }

  stake() {
    const checked = this.els.stakes.querySelector('input:checked');
    return checked ? Number(checked.value) : 100;
  }

  /**
   * Called by the router whenever the game screen is shown: `free` for a
   * free game (`#/free`), which never resumes the player's real play.
   */
  async enter(free = false) {
    const switched = this.setFree(free);
    if (this.mode === 'replay' || switched) {
      this.runId++;
      this.play = null;
      this.busy = false;
      this.mode = 'idle';
      this.els.banner.hidden = true;
    }
    const current = this.free ? null : this.app.state.me?.current_play_id ?? null;
    if (current !== null && current !== undefined && (!this.play || this.play.id !== current)) {
      await this.resume(current);
    } else if (!this.play) {
      this.showIdle();
    }
    this.update();
  }

  /** The island alone, the totem on its default square: nothing bought yet. */
  showIdle() {
    this.mode = 'idle';
    this.play = null;
    this.showProof(null);
    this.showIsland();
    this.scene.resetInstruments();
    this.setStatus(() => t(this.free ? 'free.idle' : 'status.idle'));
    this.update();
  }

  /** The island with no chest, its totem on its default square. */
  showIsland() {
    const island = this.app.state.island;
    delete this.els.screen.dataset.scene;
    if (island) {
      this.scene.drawMap(island);
      this.scene.placeTotem(island.start ?? island.land[0], false);
    }
    this.scene.clearChests();
  }

  /**
   * A play whose scene cannot be shown: the bare island, the throws
   * counted, and the status line says why (`noted`).
   */
  showUnstaged(play) {
    this.showIsland();
    this.els.screen.dataset.scene = 'unavailable';
    this.scene.setThrowsUsed(4 - (play.throws_left ?? 0), play.state !== 'finished');
  }

  /** `text` (a function of the language), and why the scene is not shown when it is not. */
  noted(text) {
    const play = this.play;
    return () => (unstaged(play) ? `${text()} ${t('scene.unavailable')}` : text());
  }

  /** The throws of `play` the scene has played. */
  thrown(play) {
    return unstaged(play) ? [] : play.scenario.throws;
  }

  /** Draws a play's map, start square and chests, with no throw made yet. */
  setupPlay(play, animateChests) {
    this.play = play;
    this.els.screen.dataset.playId = String(play.id ?? 'free');
    if (unstaged(play)) {
      this.scene.resetInstruments();
      this.showUnstaged(play);
      return Promise.resolve();
    }
    delete this.els.screen.dataset.scene;
    this.scene.drawMap(play.scenario.map);
    this.scene.placeTotem(play.scenario.start, false);
    this.scene.resetInstruments();
    this.scene.setThrowsUsed(0, true);
    return this.scene.showChests(play.scenario.chests, animateChests);
  }

  /** Resumes a game left mid-way: its throws so far land at once, then play goes on. */
  async resume(playId) {
    const run = ++this.runId;
    try {
      const play = await api.play(playId);
      if (run !== this.runId) return;
      if (play.scenario?.kind === 'scratch') {
        // A scratch card left unscratched waits on its own screen.
        this.showIdle();
        location.hash = `#/play/${encodeURIComponent(play.game?.id ?? '')}`;
        return;
      }
      await this.setupPlay(play, false);
      for (const [i, th] of this.thrown(play).entries()) await this.scene.playThrow(th, i + 1, true);
      if (play.state === 'finished' || play.throws_left === 0) {
        await this.finish(true);
      } else {
        this.mode = 'playing';
        this.setStatus(this.noted(() => t('status.resumed', { id: play.id })));
      }
    } catch (error) {
      this.showError(error);
      this.showIdle();
    }
    this.update();
  }

  /** Replays a finished game from the history, throw by throw. */
  async replay(playId) {
    const run = ++this.runId;
    this.setFree(false);
    this.mode = 'replay';
    this.update();
    try {
      const play = await api.play(playId);
      if (run !== this.runId) return;
      this.els.banner.hidden = false;
      this.els.bannerText.textContent = t('replay.banner', { id: play.id, stake: money(play.stake_cents) });
      this.setStatus('');
      await this.setupPlay(play, true);
      for (const [i, th] of this.thrown(play).entries()) {
        if (run !== this.runId) return;
        this.scene.spin();
        await sleep(duration(500));
        if (run !== this.runId) return;
        await this.scene.playThrow(th, i + 1, false);
        await sleep(duration(400));
      }
      if (run !== this.runId) return;
      const prize = play.outcome?.prize_cents ?? play.scenario.outcome.prize_cents;
      this.setStatus(this.noted(() => (prize > 0 ? t('status.won', { amount: money(prize) }) : t('status.lost'))), prize > 0 ? 'won' : 'lost');
    } catch (error) {
      this.showError(error);
    }
  }

  /**
   * "Jouer": buys a unit at the chosen stake, showing "how to play" at once;
   * in the free mode, draws a free try (free.js) and stages it the same way.
   */
  async buy() {
    if (this.busy || this.reason()) return;
    const stake = this.stake();
    // A retry after a network error reuses the key, so that the server
    // answers with the first purchase instead of debiting a second one.
    const key = this.pending && this.pending.stake === stake ? this.pending.key : newIdempotencyKey();
    this.pending = { stake, key };
    this.busy = true;
    this.mode = 'buying';
    this.runId++;
    this.scene.clearChests();
    this.scene.resetInstruments();
    this.setStatus(() => t('status.buying'));
    this.showProof(null);
    this.update();
    this.fillHowto(stake);
    const closed = openDialog(this.els.howto);
    try {
      const free = this.free;
      if (free) this.freeAnswer = await free.draw(undefined, stake);
      const play = free ? islandAfter(this.freeAnswer, 0) : await api.buy(stake, key);
      this.pending = null;
      if (!free) this.paid(stake, play);
      this.play = play;
      this.els.screen.dataset.playId = String(play.id ?? 'free');
      this.showProof(play.receipt);
      if (unstaged(play)) {
        this.showUnstaged(play);
      } else {
        delete this.els.screen.dataset.scene;
        this.scene.drawMap(play.scenario.map);
        this.scene.placeTotem(play.scenario.start, false);
        this.scene.setThrowsUsed(0, true);
      }
      this.setStatus('');
      await closed;
      if (!unstaged(play)) await this.scene.showChests(play.scenario.chests, true);
      this.mode = 'playing';
      this.setStatus(this.noted(() => (unstaged(play) ? t('throws.left', { n: play.throws_left }) : t('status.ready'))));
      this.busy = false;
      this.update();
      this.els.throw.focus();
    } catch (error) {
      if (error.code !== 'network') this.pending = null;
      if (this.els.howto.open) this.els.howto.close();
      this.busy = false;
      this.mode = 'idle';
      await this.purchaseRefused(error);
    }
  }

  /** "Lancer": asks the server for the next throw and plays it out. */
  async throwOnce() {
    if (this.busy || !this.play || this.mode !== 'playing' || this.app.playtime?.blocking()) return;
    this.busy = true;
    this.update();
    const before = this.thrown(this.play).length;
    this.scene.spin();
    this.setStatus(() => t('status.throwing'));
    try {
      let next;
      if (this.free) {
        // A free try's throws are all in its answer: shown one at a time.
        await sleep(duration(400));
        next = islandAfter(this.freeAnswer, before + 1);
      } else {
        try {
          next = await api.throwOnce(this.play.id);
        } catch (error) {
          // The throw may have been made even though its answer was lost, or
          // all four may already be done: the play itself says where it stands.
          if (error.code !== 'network' && error.code !== 'play_finished') throw error;
          next = await api.play(this.play.id);
        }
      }
      this.play = next;
      this.setStatus('');
      const throws = this.thrown(next);
      if (unstaged(next)) {
        // No walk to show: the counter alone moves.
        this.scene.needle.classList.remove('spinning');
        this.scene.setThrowsUsed(4 - next.throws_left, true);
      } else if (throws.length === before) this.scene.pointTo(this.scene.direction ?? 'N', false);
      for (let i = before; i < throws.length; i++) {
        await this.scene.playThrow(throws[i], i + 1, false);
      }
      if (next.state === 'finished' || next.throws_left === 0) {
        await this.finish(false);
      } else {
        this.setStatus(this.noted(() => t('throws.left', { n: next.throws_left })));
      }
    } catch (error) {
      this.scene.needle.classList.remove('spinning');
      this.showError(error);
    } finally {
      this.busy = false;
      this.update();
      // The next thing to press: "Lancer" again, or "Jouer" for a new game.
      if (this.mode === 'playing') this.els.throw.focus();
      else if (this.mode === 'finished') this.els.play.focus();
    }
  }

  /** The end of a game: credit shown, congratulations for a win, then a new game. */
  async finish(instant) {
    const play = this.play;
    this.mode = 'finished';
    if (this.app.state.me && !this.free) this.app.state.me.current_play_id = null;
    const prize = play.outcome?.prize_cents ?? play.scenario.outcome.prize_cents;
    this.els.screen.dataset.outcome = prize > 0 ? 'won' : 'lost';
    this.tellResult(prize, instant, this.noted.bind(this));
    // A visitor's free game asks nothing of the account.
    if (!this.free) this.app.refreshMe();
    this.update();
    if (prize > 0 && !instant) {
      await sleep(duration(500));
      this.fillWin(play, prize);
      await openDialog(this.els.win);
    }
    this.update();
  }

  fillHowto(stake) {
    const art = $('#howto-art');
    art.replaceChildren(...SYMBOLS.map((s) => symbolSvg(s, 'sym sym-lg')));
    const table = $('#howto-prizes');
    table.replaceChildren(h('tbody', {},
      ...COMBINATIONS.map(([count, symbol, cents]) =>
        h(
          'tr',
          {},
          h('td', { class: 'icons' }, Array.from({ length: count }, () => symbolSvg(symbol, 'sym tiny'))),
          h('td', {}, t(`combo.${count}`, { sym: t(`sym.${symbol}`) })),
          h('td', { class: 'amount' }, money((cents * stake) / 50)),
        ),
      ),
    ));
  }

  fillWin(play, prize) {
    $('#win-amount').textContent = this.winAmount(prize);
    const combination = combinationOf(play.outcome?.level ?? play.scenario?.outcome?.level);
    const art = $('#win-art');
    art.replaceChildren(...(combination ? Array.from({ length: combination[0] }, () => symbolSvg(combination[1], 'sym sym-lg')) : []));
  }

  /** Why "Jouer" cannot be pressed now, or null when it can. */
  reason() {
    if (this.free) return this.free.reason(this.stake());
    const closed = this.closedReason();
    if (closed) return closed;
    const { me } = this.app.state;
    if (me.balance_cents < this.stake()) {
      return { text: t('reason.funds', { stake: money(this.stake()) }), link: ['#/account', t('reason.deposit')] };
    }
    return null;
  }

  /** Shows the controls that fit the moment; keeps labels in the current language. */
  update() {
    const { play, throw: throwButton, buy, throwBox, reason: reasonNode, stakes } = this.els;
    for (const input of stakes.querySelectorAll('input')) {
      input.nextElementSibling.textContent = money(Number(input.value));
    }
    const replaying = this.mode === 'replay';
    const playing = this.mode === 'playing';
    buy.hidden = playing || replaying;
    throwBox.hidden = !playing;
    this.els.screen.dataset.mode = this.mode;
    // Article 4.1 names the button « Jouer », before a game as after one.
    play.textContent = t(this.free ? 'free.play' : 'play');
    this.renderFree('#/', '#/free');
    const reason = this.mode === 'idle' || this.mode === 'finished' ? this.reason() : null;
    play.disabled = Boolean(reason) || this.busy;
    stakes.disabled = this.busy;
    throwButton.disabled = this.busy;
    reasonNode.replaceChildren();
    if (reason && !buy.hidden) {
      reasonNode.append(reason.text);
      if (reason.link) reasonNode.append(' ', h('a', { href: reason.link[0] }, reason.link[1]));
    }
    if (!this.play || this.mode === 'idle') this.scene.setThrowsUsed(0, false);
    if (this.mode !== 'replay') this.els.banner.hidden = true;
  }

  /** Re-renders words after a language change. */
  relabel() {
    this.scene.relabel();
    if (this.statusText) this.els.status.textContent = this.statusText();
    this.renderProof();
    this.update();
  }
}
