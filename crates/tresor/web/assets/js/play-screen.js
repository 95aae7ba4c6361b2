// What every game's play screen shares (the island's `Game`, the scratch
// card's `ScratchGame`): the status line, a refused purchase, the play's
// receipt checked in the browser, and the free mode's switch, result and
// marks (the free mode's own logic is free.js's). A screen hands this constructor the app,
// sets `this.els` (`status`, `proof`, `play`) and has `buy()` and `update()`.

import { t, money } from './i18n.js';
import { h } from './util.js';
import { receiptState } from './proof.js';
import { fictitious } from './free.js';

export class PlayScreen {
  /**
   * What every game's screen starts with: the app (main.js's shared state
   * and services), no play yet, idle, nothing pending.
   */
  constructor(app) {
    this.app = app;
    this.mode = 'idle';
    this.play = null;
    this.busy = false;
    this.pending = null;
    this.runId = 0;
    /** The free mode (main.js's `FreeMode`) while this screen plays free tries, else null. */
    this.free = null;
  }

  /**
   * Puts the screen in the free mode (`free`) or back in the real one:
   * whether it changed (the screen then starts again, idle). The shared
   * windows are marked for the mode shown.
   */
  setFree(free) {
    const mode = free ? this.app.free : null;
    this.app.free?.markDialogs(Boolean(mode));
    if (mode === this.free) return false;
    this.free = mode;
    return true;
  }

  /**
   * A unit bought for real money (`stake`, not a free try): the balance
   * shown down at once, `play` the player's current one, `me` read again.
   */
  paid(stake, play) {
    this.app.adjustBalance(-stake);
    this.app.state.me.current_play_id = play.id;
    this.app.refreshMe();
  }

  /**
   * A finished game's result on the status line and aloud, its prize
   * credited unless shown again (`instant`): to the real balance shown, or
   * in the free mode to the play money, said fictitious. `noted` wraps the
   * status line (the island adds why its scene is not shown).
   */
  tellResult(prize, instant, noted = (text) => text) {
    const free = Boolean(this.free);
    this.els.screen.dataset.prize = String(prize);
    if (prize > 0) {
      if (!instant && free) this.free.credit(prize);
      else if (!instant) this.app.adjustBalance(prize);
      this.setStatus(noted(() => t(free ? 'free.won' : 'status.won', { amount: money(prize) })), 'won');
      this.app.say(t(free ? 'free.say.win' : 'say.win', { amount: money(prize) }));
    } else {
      this.setStatus(noted(() => t(free ? 'free.lost' : 'status.lost')), 'lost');
      this.app.say(t(free ? 'free.say.lose' : 'say.lose'));
    }
  }

  /** The congratulation window's amount: real money, or play money said so. */
  winAmount(prize) {
    return this.free ? fictitious(prize) : money(prize);
  }

  /**
   * The free bar (mark, play money, « Recharger », back to `realRoute`) in
   * the free mode; else the link « Essayer gratuitement » to `freeRoute`.
   */
  renderFree(realRoute, freeRoute) {
    const free = this.app.free;
    if (!free) return;
    this.els.screen.dataset.free = String(Boolean(this.free));
    free.renderBar(this.els.freeBar, Boolean(this.free), realRoute);
    free.renderEntry(this.els.freeEntry, !this.free && this.mode !== 'replay', freeRoute);
  }

  /**
   * Why no game may be bought now, whatever the stake (logged out, the
   * play-time reminder up, sales closed), or null.
   */
  closedReason() {
    const { me, status } = this.app.state;
    if (!me) return { text: t('reason.login'), link: ['#/login', t('nav.login')] };
    if (this.app.playtime?.blocking()) return { text: t('reason.reminder') };
    if (status && !status.sales_open) {
      return { text: status.opens_at ? t('reason.closed.at', { date: this.app.dateTime(status.opens_at) }) : t('reason.closed') };
    }
    return null;
  }

  /**
   * Beside the play: its receipt checked in the browser (proof.js) against
   * what `/log/` lists, in words and a sign (not colour alone): checked,
   * failed, or not cosigned yet by the witnesses the site lists.
   */
  async showProof(receipt) {
    const run = (this.proofRun = (this.proofRun ?? 0) + 1);
    this.proofState = receipt ? 'checking' : null;
    this.renderProof();
    if (!receipt) return;
    const state = await receiptState(receipt);
    if (run !== this.proofRun) return;
    this.proofState = state;
    this.renderProof();
  }

  renderProof() {
    const node = this.els.proof;
    node.hidden = !this.proofState;
    if (!this.proofState) return;
    node.dataset.state = this.proofState;
    const sign = { checking: '…', checked: '✓', uncosigned: '!', failed: '✗' }[this.proofState];
    node.replaceChildren(h('span', { 'aria-hidden': 'true' }, `${sign} `), t(`proof.${this.proofState}`));
  }

  /**
   * A purchase refused (the screen has put itself back first): sales closed
   * or sold out refresh the status; new rules in force are read and accepted,
   * then the purchase goes on; anything else is said on the status line.
   */
  async purchaseRefused(error) {
    if (error.code === 'sales_closed' || error.code === 'sales_closed_after_restore' || error.code === 'sold_out') this.app.refreshStatus();
    if (error.code === 'rules_not_accepted' && this.app.askRules) {
      this.setStatus(() => t('status.rules'));
      this.update();
      if (await this.app.askRules(error.detail?.rules_version)) {
        this.buy();
        return;
      }
    }
    this.showError(error);
    this.update();
    this.els.play.focus();
  }

  /** An error on the status line: it stays as the server worded it. */
  showError(error) {
    this.statusText = null;
    this.app.showError(error, this.els.status);
  }

  /**
   * Shows the status line. Given as a function of the current language, the
   * line is written again in the new language when the player switches.
   */
  setStatus(text, kind = '') {
    this.statusText = typeof text === 'function' ? text : null;
    this.els.status.textContent = this.statusText ? this.statusText() : text;
    this.els.status.dataset.kind = kind;
  }
}
