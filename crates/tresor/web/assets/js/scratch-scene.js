//! The scratch card scene: a grid of cells, each an amount under a foil.
//! The foil comes off under the pointer (a drag over a cell: once more than
//! half of it is scratched the cell uncovers), with the keyboard (each cell
//! is a button: Enter or Space uncovers it) or all at once. It knows nothing
//! of the server: the first scratch calls `onScratch`, whose answer gives the
//! amounts (`setCells`); a cell scratched before then uncovers when they come.

import { t, money } from './i18n.js';
import { h, sleep, duration, animated } from './util.js';

/** A cell's foil is tracked as SUB × SUB squares; this many scratched uncover it. */
const SUB = 5;
const ENOUGH = Math.ceil((SUB * SUB) / 2);
/** The brush's radius, as a share of a cell's width. */
const BRUSH = 0.17;

export class ScratchScene {
  /**
   * @param {HTMLElement} grid the card's node (a `role=group`)
   * @param {object} hooks `onScratch()` at every scratch while the amounts
   *   are unknown, `onUncover(index)`, `onAllUncovered()`
   */
  constructor(grid, hooks) {
    this.grid = grid;
    this.hooks = hooks;
    this.cells = [];
    this.amounts = null;
    this.enabled = false;
    this.dragging = null;
    this.rects = [];
    this.resize = new ResizeObserver((entries) => {
      for (const entry of entries) {
        const cell = this.cells.find((c) => c.foil === entry.target);
        if (cell) this.paint(cell);
      }
    });
    grid.addEventListener('pointerdown', (event) => this.pointerDown(event));
    grid.addEventListener('pointermove', (event) => this.pointerMove(event));
    for (const type of ['pointerup', 'pointercancel', 'lostpointercapture']) {
      grid.addEventListener(type, () => {
        this.dragging = null;
        this.last = null;
      });
    }
    // A click with no pointer behind it (`detail` 0) is Enter or Space on a
    // cell, or an assistive technology's activation: the whole cell comes
    // off. A pointer's click is left to the drag, which scratches by itself.
    grid.addEventListener('click', (event) => {
      const node = event.target.closest('.scratch-cell');
      if (!node || event.detail !== 0 || !this.enabled) return;
      const index = Number(node.dataset.index);
      if (this.cells[index].uncovered) return;
      this.scratched();
      this.uncover(index, true);
    });
  }

  /** A new card of `rows` × `columns` cells, every one covered, amounts unknown. */
  draw(rows, columns) {
    for (const cell of this.cells) this.resize.unobserve(cell.foil);
    this.rows = rows;
    this.columns = columns;
    this.amounts = null;
    this.dragging = null;
    this.grid.style.setProperty('--columns', String(columns));
    this.grid.style.setProperty('--rows', String(rows));
    this.cells = [];
    for (let i = 0; i < rows * columns; i++) {
      const amount = h('span', { class: 'cell-amount', 'aria-hidden': 'true' });
      const foil = h('canvas', { class: 'foil', 'aria-hidden': 'true' });
      const node = h(
        'button',
        { type: 'button', class: 'scratch-cell', 'data-testid': 'scratch-cell', 'data-index': i, 'data-state': 'covered' },
        amount,
        foil,
      );
      const cell = { node, amount, foil, touched: new Set(), uncovered: false, wanted: false };
      this.cells.push(cell);
      this.resize.observe(foil);
    }
    this.grid.replaceChildren(...this.cells.map((c) => c.node));
    this.grid.dataset.state = 'covered';
    this.relabel();
    this.setEnabled(false);
  }

  /** Whether scratching is allowed now (a card bought and not yet uncovered). */
  setEnabled(on) {
    this.enabled = on;
    this.grid.dataset.enabled = String(on);
    for (const cell of this.cells) cell.node.disabled = !on;
  }

  /** The amounts the server sent, row by row; cells scratched enough uncover now. */
  setCells(cells) {
    this.amounts = cells.slice();
    for (const [i, cell] of this.cells.entries()) {
      cell.amount.textContent = money(this.amounts[i]);
      cell.node.dataset.cents = String(this.amounts[i]);
    }
    for (const [i, cell] of this.cells.entries()) if (cell.wanted) this.uncover(i, true);
  }

  /** Uncovers one cell: its foil fades (or goes at once, motion reduced). */
  uncover(index, animate) {
    const cell = this.cells[index];
    if (!cell || cell.uncovered) return;
    if (!this.amounts) {
      // Scratched before the amounts came: it uncovers when they do.
      cell.wanted = true;
      cell.node.dataset.state = 'waiting';
      return;
    }
    cell.uncovered = true;
    cell.node.dataset.state = 'uncovered';
    if (animate && animated()) {
      cell.foil.classList.add('gone');
      cell.foil.addEventListener('transitionend', () => (cell.foil.hidden = true), { once: true });
    } else {
      cell.foil.hidden = true;
    }
    this.label(index);
    this.hooks.onUncover?.(index);
    if (this.cells.every((c) => c.uncovered)) {
      this.grid.dataset.state = 'uncovered';
      this.hooks.onAllUncovered?.();
    }
  }

  /** "Reveal all": the cells still covered come off one after another. */
  async uncoverAll() {
    this.scratched();
    for (const [i, cell] of this.cells.entries()) {
      if (cell.uncovered) continue;
      this.uncover(i, true);
      await sleep(duration(90));
    }
  }

  /** A finished card shown again: every amount at once, no foil. */
  showAll(cells) {
    this.setCells(cells);
    for (const i of this.cells.keys()) this.uncover(i, false);
  }

  /** Marks the cells showing the winning amount. */
  markWinners(cents) {
    for (const [i, cell] of this.cells.entries()) {
      const winner = cents > 0 && this.amounts?.[i] === cents;
      cell.node.classList.toggle('winner', winner);
      cell.winner = winner;
      this.label(i);
    }
  }

  /** Words again in the page's language. */
  relabel() {
    if (!this.cells.length) return;
    this.grid.setAttribute('aria-label', t('scratch.card.label', { rows: this.rows, columns: this.columns }));
    for (const [i, cell] of this.cells.entries()) {
      if (this.amounts) cell.amount.textContent = money(this.amounts[i]);
      this.label(i);
    }
  }

  label(index) {
    const cell = this.cells[index];
    const where = { n: index + 1, row: Math.floor(index / this.columns) + 1, column: (index % this.columns) + 1 };
    let text;
    if (!cell.uncovered) text = t('scratch.cell.covered', where);
    else if (cell.winner) text = t('scratch.cell.winner', { ...where, amount: money(this.amounts[index]) });
    else text = t('scratch.cell.shown', { ...where, amount: money(this.amounts[index]) });
    cell.node.setAttribute('aria-label', text);
  }

  scratched() {
    if (!this.amounts) this.hooks.onScratch?.();
  }

  // ---- The pointer ----

  pointerDown(event) {
    if (!this.enabled || (event.pointerType === 'mouse' && event.button !== 0)) return;
    event.preventDefault();
    this.dragging = event.pointerId;
    this.last = null;
    this.rects = this.cells.map((c) => c.node.getBoundingClientRect());
    this.grid.setPointerCapture?.(event.pointerId);
    this.scratchAt(event.clientX, event.clientY);
  }

  pointerMove(event) {
    if (this.dragging !== event.pointerId || !this.enabled) return;
    const points = event.getCoalescedEvents ? event.getCoalescedEvents() : [];
    for (const p of points.length ? points : [event]) this.scratchAt(p.clientX, p.clientY);
  }

  /** Scratches at a point of the screen, from the last point when in the same cell. */
  scratchAt(x, y) {
    const index = this.rects.findIndex((r) => x >= r.left && x < r.right && y >= r.top && y < r.bottom);
    const cell = this.cells[index];
    if (!cell || cell.uncovered) {
      this.last = null;
      return;
    }
    this.scratched();
    const rect = this.rects[index];
    const point = { index, u: (x - rect.left) / rect.width, v: (y - rect.top) / rect.height };
    const from = this.last && this.last.index === index ? this.last : point;
    this.last = point;
    this.erase(cell, from, point);
    if (cell.touched.size >= ENOUGH) this.uncover(index, true);
    else if (cell.node.dataset.state === 'covered') cell.node.dataset.state = 'scratching';
  }

  /** Takes the foil off along a stroke, and counts the squares under it. */
  erase(cell, from, to) {
    const steps = Math.max(1, Math.ceil(Math.hypot(to.u - from.u, to.v - from.v) / (BRUSH / 2)));
    for (let s = 0; s <= steps; s++) {
      const u = from.u + ((to.u - from.u) * s) / steps;
      const v = from.v + ((to.v - from.v) * s) / steps;
      for (let i = 0; i < SUB; i++) {
        for (let j = 0; j < SUB; j++) {
          if (Math.hypot((i + 0.5) / SUB - u, (j + 0.5) / SUB - v) <= BRUSH + 0.5 / SUB) cell.touched.add(j * SUB + i);
        }
      }
    }
    const ctx = cell.foil.getContext('2d');
    const { width, height } = cell.foil;
    ctx.save();
    ctx.globalCompositeOperation = 'destination-out';
    ctx.lineCap = 'round';
    ctx.lineJoin = 'round';
    ctx.lineWidth = 2 * BRUSH * width;
    ctx.beginPath();
    ctx.moveTo(from.u * width, from.v * height);
    ctx.lineTo(to.u * width + 0.01, to.v * height);
    ctx.stroke();
    ctx.restore();
  }

  /** Paints a cell's foil at its size on screen, scratches already made taken off again. */
  paint(cell) {
    const box = cell.foil.getBoundingClientRect();
    if (!box.width || !box.height) return;
    const ratio = window.devicePixelRatio || 1;
    const width = Math.round(box.width * ratio);
    const height = Math.round(box.height * ratio);
    cell.foil.width = width;
    cell.foil.height = height;
    const ctx = cell.foil.getContext('2d');
    const sheen = ctx.createLinearGradient(0, 0, width, height);
    sheen.addColorStop(0, '#eef1f4');
    sheen.addColorStop(0.45, '#a9b3be');
    sheen.addColorStop(0.55, '#c7ced6');
    sheen.addColorStop(1, '#dde3e9');
    ctx.fillStyle = sheen;
    ctx.fillRect(0, 0, width, height);
    ctx.strokeStyle = 'rgba(255, 255, 255, .35)';
    ctx.lineWidth = Math.max(1, width * 0.03);
    for (let d = -height; d < width; d += width / 6) {
      ctx.beginPath();
      ctx.moveTo(d, height);
      ctx.lineTo(d + height, 0);
      ctx.stroke();
    }
    // A gold coin with a question mark: what is under it is not known yet.
    const r = Math.min(width, height) * 0.2;
    ctx.fillStyle = '#f1c232';
    ctx.strokeStyle = '#b8860b';
    ctx.lineWidth = r * 0.18;
    ctx.beginPath();
    ctx.arc(width / 2, height / 2, r, 0, Math.PI * 2);
    ctx.fill();
    ctx.stroke();
    ctx.fillStyle = '#7a4f00';
    ctx.font = `700 ${Math.round(r * 1.3)}px Georgia, serif`;
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    ctx.fillText('?', width / 2, height / 2 + r * 0.05);
    ctx.save();
    ctx.globalCompositeOperation = 'destination-out';
    for (const square of cell.touched) {
      const u = ((square % SUB) + 0.5) / SUB;
      const v = (Math.floor(square / SUB) + 0.5) / SUB;
      ctx.beginPath();
      ctx.arc(u * width, v * height, (BRUSH * width) / 1.2, 0, Math.PI * 2);
      ctx.fill();
    }
    ctx.restore();
  }
}
