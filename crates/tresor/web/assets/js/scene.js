//! The game scene of Article 4: the island map with its squares, the totem
//! and the chests, the compass at the left with its counter of squares, the
//! column of found symbols at the right and the counter of throws below.
//! It knows nothing of the server: it draws a scenario and animates throws.

import { svg, DEFS, CHEST_CLOSED, CHEST_OPEN, TOTEM, NEEDLE, compassRose, contentArt, symbolSvg } from './art.js';
import { duration, sleep, nextFrame, h } from './util.js';
import { t } from './i18n.js';

/** The size of one square in the map's SVG units. */
const S = 100;
const PAD = 60;

const ANGLES = { N: 0, NE: 45, E: 90, SE: 135, S: 180, SW: 225, W: 270, NW: 315 };

/** Adds the shared gradients to the page, once. */
export function installDefs() {
  if (document.getElementById('art-defs')) return;
  const holder = svg('svg', { id: 'art-defs', width: 0, height: 0, 'aria-hidden': 'true', focusable: 'false', class: 'defs' });
  holder.innerHTML = DEFS;
  document.body.prepend(holder);
}

const key = ([x, y]) => `${x},${y}`;

export class Scene {
  /**
   * @param {object} els the page's nodes: map (svg), compass (svg), steps,
   *   found (ol), throws (ol), throwsText
   * @param {(text: string) => void} announce speaks to screen readers
   */
  constructor(els, announce) {
    this.els = els;
    this.announce = announce;
    this.needleAngle = 0;
    this.chestNodes = [];
    this.mapKey = '';
    this.drawCompass();
    this.setThrowsUsed(0, false);
  }

  /** Draws the sea, the island, its beach and the grid of squares. */
  drawMap(map) {
    const mapKey = JSON.stringify(map);
    if (mapKey === this.mapKey) return;
    this.mapKey = mapKey;
    const { width, height } = map;
    const land = new Set(map.land.map(key));
    const root = this.els.map;
    root.setAttribute('viewBox', `${-PAD} ${-PAD - 30} ${width * S + 2 * PAD} ${height * S + 2 * PAD + 30}`);
    root.setAttribute('aria-label', t('map.label', { w: width, h: height }));
    root.parentElement.style.setProperty('--map-aspect', String((width * S + 2 * PAD) / (height * S + 2 * PAD + 30)));
    root.replaceChildren();

    const sea = svg('g', { class: 'sea' });
    sea.append(
      svg('rect', { x: -PAD - 200, y: -PAD - 230, width: width * S + 2 * PAD + 400, height: height * S + 2 * PAD + 430, fill: 'url(#g-sea)' }),
    );
    const waves = svg('rect', { class: 'waves', x: -PAD - 240, y: -PAD - 240, width: width * S + 2 * PAD + 480, height: height * S + 2 * PAD + 480, fill: 'url(#p-waves)' });
    sea.append(waves);

    const coast = svg('g', { class: 'coast' });
    const ground = svg('g', { class: 'ground' });
    const grid = svg('g', { class: 'grid' });
    const tufts = svg('g', { class: 'tufts' });
    const isLand = (x, y) => land.has(`${x},${y}`);
    for (const [x, y] of map.land) {
      const px = x * S;
      const py = y * S;
      coast.append(svg('rect', { x: px - 26, y: py - 26, width: S + 52, height: S + 52, rx: 46, fill: '#e8fbff', opacity: 0.28 }));
      coast.append(svg('rect', { x: px - 12, y: py - 12, width: S + 24, height: S + 24, rx: 30, fill: '#d9b76e' }));
      // Grass where the square's four sides touch land; beach along the sea.
      const inland = isLand(x, y - 1) && isLand(x + 1, y) && isLand(x, y + 1) && isLand(x - 1, y);
      ground.append(svg('rect', { x: px - 0.5, y: py - 0.5, width: S + 1, height: S + 1, fill: inland ? 'url(#g-grass)' : 'url(#g-sand)' }));
      grid.append(svg('rect', { x: px + 3, y: py + 3, width: S - 6, height: S - 6, rx: 8, class: inland ? 'cell cell-grass' : 'cell cell-sand' }));
      // A few grass tufts or shells, placed by a hash of the square so the
      // island looks the same in every game.
      const hash = (x * 73856093) ^ (y * 19349663);
      if ((hash & 3) === 0) {
        const tx = px + 18 + (hash >>> 3) % 60;
        const ty = py + 22 + (hash >>> 7) % 56;
        tufts.append(
          svg('path', {
            d: inland ? `M${tx} ${ty} l-5 -9 M${tx} ${ty} l0 -11 M${tx} ${ty} l5 -9` : `M${tx - 5} ${ty} a5 5 0 0 1 10 0 z`,
            class: inland ? 'tuft' : 'shell',
          }),
        );
      }
    }
    this.layers = {
      chests: svg('g', { class: 'chests' }),
      totem: svg('g', { class: 'totem' }),
    };
    const totemInner = svg('g', { class: 'totem-body' });
    totemInner.innerHTML = TOTEM;
    const totemScale = svg('g', { transform: 'translate(12 8) scale(0.76)' });
    totemScale.append(totemInner);
    this.layers.totem.append(totemScale);
    this.totemBody = totemInner;
    this.layers.totem.setAttribute('data-testid', 'totem');
    root.append(sea, coast, ground, tufts, grid, this.layers.chests, this.layers.totem);
    this.chestNodes = [];
  }

  /** Puts the totem on `square`, gliding there when `animate`. */
  placeTotem([x, y], animate = false) {
    const node = this.layers.totem;
    node.classList.toggle('instant', !animate);
    node.style.transform = `translate(${x * S}px, ${y * S}px)`;
    node.dataset.square = `${x},${y}`;
  }

  /** Removes the chests (a new game, or the idle island). */
  clearChests() {
    if (!this.layers) return;
    this.layers.chests.replaceChildren();
    this.chestNodes = [];
  }

  /** Sets the nine closed chests on their squares, popping in one by one. */
  async showChests(chests, animate) {
    this.clearChests();
    chests.forEach(([x, y], i) => {
      const node = svg('g', { class: 'chest', 'data-testid': `chest-${i}`, 'data-state': 'closed' });
      node.style.transform = `translate(${x * S}px, ${y * S}px)`;
      const body = svg('g', { class: 'chest-body' });
      body.innerHTML = CHEST_CLOSED;
      node.append(body);
      if (animate) {
        node.classList.add('appear');
        node.style.animationDelay = `${duration(70) * i}ms`;
      }
      this.layers.chests.append(node);
      this.chestNodes.push(node);
    });
    if (animate) await sleep(duration(70) * chests.length + duration(400));
  }

  drawCompass() {
    const c = this.els.compass;
    c.setAttribute('viewBox', '-100 -100 200 200');
    const letters = { N: t('dirshort.N'), E: t('dirshort.E'), S: t('dirshort.S'), W: t('dirshort.W') };
    const rose = svg('g', { class: 'rose' });
    rose.innerHTML = compassRose(letters);
    const needle = svg('g', { class: 'needle', 'data-testid': 'needle' });
    needle.innerHTML = NEEDLE;
    c.replaceChildren(rose, needle);
    this.needle = needle;
    this.setNeedle(this.needleAngle, false);
  }

  /** Redraws the words of the scene after a language change. */
  relabel() {
    this.drawCompass();
    if (this.direction) this.els.compass.setAttribute('aria-label', t('compass.label', { dir: t(`dir.${this.direction}`) }));
    else this.els.compass.setAttribute('aria-label', t('compass.idle'));
    this.setThrowsUsed(this.throwsUsed ?? 0, false);
    for (const li of this.els.found.querySelectorAll('li[data-symbol]')) {
      li.querySelector('.label').textContent = t(`sym.${li.dataset.symbol}`);
    }
  }

  setNeedle(angle, animate) {
    this.needleAngle = angle;
    this.needle.classList.toggle('instant', !animate);
    this.needle.style.transform = `rotate(${angle}deg)`;
  }

  /** Spins the needle while a throw's answer is awaited. */
  spin() {
    this.needle.classList.add('spinning');
    this.setSteps(null);
  }

  /** Turns the needle to `direction`, always forward, a turn and more when animated. */
  async pointTo(direction, animate) {
    this.needle.classList.remove('spinning');
    const target = ANGLES[direction];
    const current = ((this.needleAngle % 360) + 360) % 360;
    const turn = animate ? 360 + ((target - current + 360) % 360) : (target - current + 360) % 360;
    this.setNeedle(this.needleAngle + turn, animate);
    this.direction = direction;
    this.els.compass.dataset.direction = direction;
    this.els.compass.setAttribute('aria-label', t('compass.label', { dir: t(`dir.${direction}`) }));
    if (animate) await sleep(duration(900));
  }

  /** Shows `steps` in the counter under the compass (a dash for none). */
  setSteps(steps) {
    const out = this.els.steps;
    out.textContent = steps === null || steps === undefined ? '–' : String(steps);
    out.dataset.steps = steps ?? '';
    out.classList.remove('bump');
    if (steps !== null && steps !== undefined) {
      void out.offsetWidth;
      out.classList.add('bump');
    }
  }

  /** Resets the compass, counters and found symbols for a new game. */
  resetInstruments() {
    this.needle.classList.remove('spinning');
    this.direction = null;
    delete this.els.compass.dataset.direction;
    this.els.compass.setAttribute('aria-label', t('compass.idle'));
    this.setNeedle(0, false);
    this.setSteps(null);
    this.els.found.replaceChildren();
    this.els.found.dataset.count = '0';
    this.setThrowsUsed(0, false);
  }

  /** Colours the counter of throws: used ones quiet, those left in red. */
  setThrowsUsed(used, active = true) {
    this.throwsUsed = used;
    const pips = this.els.throws;
    pips.replaceChildren();
    for (let i = 0; i < 4; i++) {
      const li = h('li', { class: i < used ? 'used' : active ? 'left' : 'idle', 'aria-hidden': 'true' }, String(i + 1));
      pips.append(li);
    }
    pips.dataset.used = String(used);
    this.els.throwsText.textContent = t('throws.left', { n: 4 - used });
  }

  /**
   * Plays one throw: the needle turns, the counter shows the steps, the
   * totem walks the path square by square and each chest it enters opens.
   * With `instant`, everything lands at once (resuming a game).
   */
  async playThrow(throwData, number, instant) {
    const animate = !instant && duration(1000) > 0;
    await this.pointTo(throwData.direction, !instant);
    this.setSteps(throwData.steps);
    if (!instant) {
      this.announce(t('say.throw', { n: number, dir: t(`dir.${throwData.direction}`), steps: throwData.steps }));
    }
    const opened = new Map();
    for (const o of throwData.opened) opened.set(key(o.square), o);
    for (const square of throwData.path) {
      this.placeTotem(square, animate);
      if (animate) {
        this.totemBody.classList.remove('hop');
        void this.totemBody.getBoundingClientRect();
        this.totemBody.classList.add('hop');
      }
      await sleep(instant ? 0 : duration(380));
      const o = opened.get(key(square));
      if (o) await this.openChest(o, instant);
    }
    this.setThrowsUsed(number);
  }

  /** Opens a chest: a cross for an empty one, or its symbol, which joins the column. */
  async openChest(o, instant) {
    const node = this.chestNodes[o.chest];
    if (!node || node.dataset.state === 'open') return;
    node.dataset.state = 'open';
    node.dataset.content = o.content;
    const body = node.querySelector('.chest-body');
    body.innerHTML = CHEST_OPEN;
    const reveal = svg('g', { class: o.content === 'empty' ? 'reveal cross' : 'reveal symbol' });
    if (o.content === 'empty') {
      reveal.setAttribute('transform', 'translate(20 24) scale(0.6)');
    } else {
      const glow = svg('circle', { cx: 50, cy: 34, r: 46, fill: 'url(#g-glow)', class: 'glow' });
      node.insertBefore(glow, body);
      reveal.setAttribute('transform', 'translate(19 -6) scale(0.62)');
    }
    const art = svg('g', { class: instant ? '' : 'pop' });
    art.innerHTML = contentArt(o.content);
    reveal.append(art);
    node.append(reveal);
    if (!instant) {
      node.classList.add('opening');
      this.announce(t('say.chest', { what: t(`sym.${o.content}`) }));
    }
    if (o.content !== 'empty') {
      await this.addFound(o.content, art, instant);
    } else if (!instant) {
      await sleep(duration(350));
    }
  }

  /** Adds a symbol to the column at the right, flying it there from the chest. */
  async addFound(content, from, instant) {
    const list = this.els.found;
    const li = h('li', { 'data-symbol': content, 'data-testid': 'found-symbol' }, symbolSvg(content), h('span', { class: 'label' }, t(`sym.${content}`)));
    list.append(li);
    list.dataset.count = String(list.children.length);
    if (instant || duration(600) === 0) return;
    li.classList.add('incoming');
    await sleep(duration(380));
    const start = from.getBoundingClientRect();
    const end = li.querySelector('svg').getBoundingClientRect();
    const flyer = h('div', { class: 'flyer', 'aria-hidden': 'true' }, symbolSvg(content));
    flyer.style.left = `${start.left}px`;
    flyer.style.top = `${start.top}px`;
    flyer.style.width = `${start.width}px`;
    flyer.style.height = `${start.height}px`;
    document.body.append(flyer);
    await nextFrame();
    await nextFrame();
    const scale = end.width / Math.max(start.width, 1);
    flyer.style.transitionDuration = `${duration(650)}ms`;
    flyer.style.transform = `translate(${end.left - start.left}px, ${end.top - start.top}px) scale(${scale})`;
    await sleep(duration(650));
    flyer.remove();
    li.classList.remove('incoming');
    li.classList.add('landed');
  }
}
