// What every game's play screen shares (the island's `Game`, the scratch
// card's `ScratchGame`): the status line, a refused purchase, and the play's
// receipt checked in the browser. A screen sets `this.app` and `this.els`
// (`status`, `proof`, `play`) and has `buy()` and `update()`.

import { t } from './i18n.js';
import { h } from './util.js';
import { receiptState } from './proof.js';

export class PlayScreen {
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
