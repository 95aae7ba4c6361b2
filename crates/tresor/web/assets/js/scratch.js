//! The scratch card screen's controller (`#/play/ID` for a game of kind
//! `scratch`): the game's stakes and « Jouer », the card bought with its
//! foil on, the first scratch asking the server for the amounts
//! (`POST /api/plays/{id}/throws`, once), « Tout gratter », then the result
//! when every cell is uncovered: the exact prize in the congratulation
//! window, or a loss said so. It also resumes a card left unscratched and
//! shows a finished one again from the history. The scene draws; this
//! module decides.

import { api, newIdempotencyKey } from './api.js';
import { t, money } from './i18n.js';
import { ScratchScene } from './scratch-scene.js';
import { openDialog } from './game.js';
import { findGame, gameName } from './lobby.js';
import { PlayScreen } from './play-screen.js';
import { cardCovered } from './free.js';
import { $, h, sleep, duration } from './util.js';

export class ScratchGame extends PlayScreen {
  /** @param {object} app shared state and services from main.js (as `Game` takes). */
  constructor(app) {
    super(app);
    this.game = null;
    this.revealing = null;
    this.els = {
      screen: $('#screen-scratch'),
      title: $('#scratch-title'),
      rule: $('#scratch-rule'),
      grid: $('#scratch-grid'),
      stakes: $('#scratch-stakes'),
      play: $('#scratch-play'),
      all: $('#scratch-all'),
      buy: $('#scratch-buy'),
      revealBox: $('#scratch-reveal-box'),
      reason: $('#scratch-reason'),
      status: $('#scratch-status'),
      proof: $('#scratch-proof'),
      banner: $('#scratch-banner'),
      bannerText: $('#scratch-banner-text'),
      freeBar: $('#free-bar-scratch'),
      freeEntry: $('#free-entry-scratch'),
    };
    this.scene = new ScratchScene(this.els.grid, {
      onScratch: () => this.reveal(),
      onAllUncovered: () => this.finish(false),
    });
    this.els.play.addEventListener('click', () => this.buy());
    this.els.all.addEventListener('click', () => {
      if (this.mode === 'scratching') this.scene.uncoverAll();
    });
    this.els.stakes.addEventListener('change', () => this.update());
    $('#scratch-back').addEventListener('click', () => {
      location.hash = this.game ? `#/play/${encodeURIComponent(this.game.id)}` : '#/games';
    });
  }

  /** The game's rows, columns and winning count (a 3 × 3 card won by three without a scene). */
  shape() {
    const scene = this.game?.scene ?? {};
    return { rows: scene.rows ?? 3, columns: scene.columns ?? 3, identical: scene.identical ?? 3 };
  }

  /**
   * Called by the router with the game picked; resumes its card left
   * unscratched, except in the free mode (`free`, `#/free/ID`).
   */
  async enter(game, free = false) {
    const run = ++this.runId;
    this.els.banner.hidden = true;
    const switched = this.setFree(free);
    if (this.game?.id !== game.id || this.mode === 'replay' || switched) {
      this.busy = false;
      this.game = game;
      this.play = null;
      this.mode = 'idle';
      this.fillStakes();
    }
    this.els.screen.dataset.game = game.id;
    this.relabelGame();
    const current = this.free ? null : this.app.state.me?.current_play_id ?? null;
    if (current !== null && (!this.play || this.play.id !== current)) {
      try {
        const play = await api.play(current);
        if (run !== this.runId) return;
        if (play.game?.id === game.id && play.state !== 'finished') {
          this.show(play);
          this.setStatus(() => t('scratch.resumed', { id: play.id }));
          this.update();
          return;
        }
      } catch (error) {
        if (run !== this.runId) return;
        this.showError(error);
      }
    }
    if (!this.play || this.mode === 'idle') this.showIdle();
    this.update();
  }

  /** A card with its foil on, nothing bought. */
  showIdle() {
    const { rows, columns } = this.shape();
    this.mode = 'idle';
    this.play = null;
    this.revealing = null;
    delete this.els.screen.dataset.playId;
    delete this.els.screen.dataset.outcome;
    this.scene.draw(rows, columns);
    this.showProof(null);
    this.setStatus(() => t(this.free ? 'free.idle' : 'scratch.idle'));
    this.update();
  }

  /** Draws a bought card: covered, or uncovered at once when its amounts are known. */
  show(play) {
    const { rows, columns } = play.scenario;
    this.play = play;
    this.revealing = null;
    this.els.screen.dataset.playId = String(play.id ?? 'free');
    delete this.els.screen.dataset.outcome;
    this.scene.draw(rows ?? this.shape().rows, columns ?? this.shape().columns);
    this.showProof(play.receipt ?? null);
    if (play.scenario.cells) {
      this.mode = 'finished';
      this.scene.showAll(play.scenario.cells);
      this.scene.markWinners(play.outcome?.prize_cents ?? 0);
    } else {
      this.mode = 'scratching';
    }
  }

  /** Shows a finished card from the history, every cell uncovered. */
  async replay(play, game) {
    ++this.runId;
    this.setFree(false);
    this.game = game ?? this.game;
    this.relabelGame();
    this.mode = 'replay';
    this.play = play;
    this.els.banner.hidden = false;
    this.els.bannerText.textContent = t('replay.banner', { id: play.id, stake: money(play.stake_cents) });
    this.scene.draw(play.scenario.rows, play.scenario.columns);
    this.els.screen.dataset.playId = String(play.id);
    this.showProof(null);
    if (play.scenario.cells) {
      this.scene.showAll(play.scenario.cells);
      const prize = play.outcome?.prize_cents ?? 0;
      this.scene.markWinners(prize);
      this.setStatus(() => (prize > 0 ? t('status.won', { amount: money(prize) }) : t('status.lost')), prize > 0 ? 'won' : 'lost');
    } else {
      this.setStatus(() => t('scratch.unscratched'));
    }
    this.update();
  }

  stake() {
    const checked = this.els.stakes.querySelector('input:checked');
    return checked ? Number(checked.value) : null;
  }

  /** One radio button per stake on sale; the one chosen before stays chosen. */
  fillStakes() {
    const before = this.stake();
    const onSale = (this.game?.stakes ?? []).filter((s) => s.on_sale !== false);
    const legend = this.els.stakes.querySelector('legend');
    const choices = onSale.map((s) =>
      h(
        'label',
        { class: 'stake' },
        h('input', { type: 'radio', name: 'scratch-stake', value: s.cents, 'data-testid': `scratch-stake-${s.cents}` }),
        h('span', {}, money(s.cents)),
      ),
    );
    this.els.stakes.replaceChildren(legend, ...choices);
    const keep = this.els.stakes.querySelector(`input[value="${before}"]`) ?? this.els.stakes.querySelector('input');
    if (keep) keep.checked = true;
  }

  /**
   * « Jouer »: buys a card of this game at the chosen stake; in the free
   * mode, draws a free try (free.js), shown under its foil the same way.
   */
  async buy() {
    if (this.busy || this.reason()) return;
    const stake = this.stake();
    const gameId = this.game.id;
    // A retry after a network error reuses the key: the server answers with
    // the first purchase instead of debiting a second one.
    const key = this.pending && this.pending.stake === stake && this.pending.game === gameId ? this.pending.key : newIdempotencyKey();
    this.pending = { stake, key, game: gameId };
    this.busy = true;
    this.mode = 'buying';
    this.runId++;
    this.setStatus(() => t('status.buying'));
    this.showProof(null);
    this.update();
    try {
      const free = this.free;
      if (free) this.freeAnswer = await free.draw(gameId, stake);
      const play = free ? cardCovered(this.freeAnswer) : await api.buy(stake, key, gameId);
      this.pending = null;
      if (!free) this.paid(stake, play);
      this.busy = false;
      this.show(play);
      this.setStatus(() => t('scratch.ready'));
      this.update();
      this.scene.cells[0]?.node.focus();
    } catch (error) {
      if (error.code !== 'network') this.pending = null;
      this.busy = false;
      this.mode = this.play ? 'finished' : 'idle';
      await this.purchaseRefused(error);
    }
  }

  /**
   * The first scratch: asks the server to reveal the card (once; a second
   * call waits for the first). The amounts then go under the foil.
   */
  reveal() {
    if (this.revealing || !this.play || this.mode !== 'scratching') return this.revealing;
    const play = this.play;
    this.setStatus(() => t('scratch.revealing'));
    this.revealing = (async () => {
      let next;
      if (this.free) {
        // A free card's amounts came with it.
        next = this.freeAnswer;
      } else {
        try {
          next = await api.throwOnce(play.id);
        } catch (error) {
          // The reveal may have been made though its answer was lost: the play says.
          if (error.code !== 'network' && error.code !== 'play_finished') throw error;
          next = await api.play(play.id);
        }
      }
      if (this.play !== play) return;
      this.play = next;
      this.setStatus(() => t('scratch.ready'));
      this.scene.setCells(next.scenario.cells);
    })().catch((error) => {
      this.revealing = null;
      this.showError(error);
    });
    return this.revealing;
  }

  /** Every cell uncovered: the result, the prize credited, the window for a win. */
  async finish(instant) {
    const play = this.play;
    if (!play || this.mode !== 'scratching') return;
    this.mode = 'finished';
    if (this.app.state.me && !this.free) this.app.state.me.current_play_id = null;
    const prize = play.outcome?.prize_cents ?? 0;
    this.els.screen.dataset.outcome = prize > 0 ? 'won' : 'lost';
    this.scene.markWinners(prize);
    this.tellResult(prize, instant);
    // A visitor's free game asks nothing of the account.
    if (!this.free) this.app.refreshMe();
    this.update();
    if (prize > 0 && !instant) {
      await sleep(duration(400));
      this.fillWin(prize);
      await openDialog($('#dlg-win'));
    }
    this.update();
    if (this.mode === 'finished') this.els.play.focus();
  }

  fillWin(prize) {
    $('#win-amount').textContent = this.winAmount(prize);
    const { identical } = this.shape();
    $('#win-art').replaceChildren(...Array.from({ length: identical }, () => h('span', { class: 'mini-cell' }, money(prize))));
  }

  /** Why « Jouer » cannot be pressed now, or null when it can. */
  reason() {
    if (this.free) return this.free.reason(this.stake());
    const closed = this.closedReason();
    if (closed) return closed;
    const { me } = this.app.state;
    const stake = this.stake();
    if (stake === null) return { text: t('scratch.none_on_sale') };
    if (me.balance_cents < stake) {
      return { text: t('reason.funds', { stake: money(stake) }), link: ['#/account', t('reason.deposit')] };
    }
    return null;
  }

  /** Shows the controls that fit the moment. */
  update() {
    const { play, all, buy, revealBox, reason: reasonNode, stakes, screen } = this.els;
    const scratching = this.mode === 'scratching';
    const replaying = this.mode === 'replay';
    buy.hidden = scratching || replaying;
    revealBox.hidden = !scratching;
    screen.dataset.mode = this.mode;
    const blocked = Boolean(this.app.playtime?.blocking());
    this.scene.setEnabled(scratching && !blocked);
    all.disabled = blocked;
    const reason = this.mode === 'idle' || this.mode === 'finished' ? this.reason() : null;
    play.disabled = Boolean(reason) || this.busy;
    stakes.disabled = this.busy;
    reasonNode.replaceChildren();
    if (reason && !buy.hidden) {
      reasonNode.append(reason.text);
      if (reason.link) reasonNode.append(' ', h('a', { href: reason.link[0] }, reason.link[1]));
    }
    if (!replaying) this.els.banner.hidden = true;
    play.textContent = t(this.free ? 'free.play' : 'play');
    const id = encodeURIComponent(this.game?.id ?? '');
    this.renderFree(`#/play/${id}`, `#/free/${id}`);
  }

  /** The game's name and rule in the page's language. */
  relabelGame() {
    if (!this.game) return;
    const { rows, columns, identical } = this.shape();
    this.els.title.textContent = gameName(this.game);
    this.els.rule.textContent = t('scratch.rule', { cells: rows * columns, identical });
  }

  /** Re-renders words after a language change. */
  relabel() {
    this.relabelGame();
    for (const input of this.els.stakes.querySelectorAll('input')) input.nextElementSibling.textContent = money(Number(input.value));
    this.scene.relabel();
    if (this.statusText) this.els.status.textContent = this.statusText();
    if (this.mode === 'replay' && this.play) {
      this.els.bannerText.textContent = t('replay.banner', { id: this.play.id, stake: money(this.play.stake_cents) });
    }
    this.renderProof();
    this.update();
  }

  /** Logged out: the card bought is no longer this visitor's. */
  reset() {
    this.runId++;
    if (this.game) this.showIdle();
  }
}

/** The game a play belongs to, for the router: its catalogue entry when known. */
export async function gameOfPlay(play) {
  return (play.game?.id && (await findGame(play.game.id))) || play.game || null;
}
