//! Small helpers shared by the modules: DOM building, timing and the
//! animation speed (normal, fast for tests, or none for reduced motion).

/** Creates an HTML element with attributes and children (strings become text). */
export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === false || value === null || value === undefined) continue;
    if (name === 'class') node.className = value;
    else if (name === 'text') node.textContent = value;
    else if (name.startsWith('on') && typeof value === 'function') node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** `document.querySelector`, failing loudly when the page lacks the node. */
export function $(selector, root = document) {
  const node = root.querySelector(selector);
  if (!node) throw new Error(`missing ${selector}`);
  return node;
}

const params = new URLSearchParams(location.search);
const fastFlag = params.get('fast') === '1' || safeStorage('tresor.fast') === '1';
const reducedMotion = matchMedia('(prefers-reduced-motion: reduce)');

function safeStorage(key) {
  try {
    return localStorage.getItem(key);
  } catch {
    return null;
  }
}

/**
 * How long an animation of nominal length `ms` lasts now: a tenth when the
 * page runs fast (`?fast=1` or localStorage `tresor.fast=1`), none at all
 * when the player asked the system for reduced motion.
 */
export function duration(ms) {
  return reducedMotion.matches ? 0 : period(ms);
}

/**
 * How often a check of nominal period `ms` runs: a tenth when the page runs
 * fast (the tests' speed, as the animations), so that a test waits seconds
 * for what a player sees within a minute.
 */
export function period(ms) {
  return fastFlag ? Math.round(ms / 10) : ms;
}

/** Whether movement is animated at all. */
export function animated() {
  return !reducedMotion.matches;
}

if (fastFlag) document.documentElement.classList.add('fast');

/** Resolves after `ms` milliseconds (at once for 0). */
export function sleep(ms) {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}

/** Resolves on the next animation frame, so a style change gets painted. */
export function nextFrame() {
  return new Promise((resolve) => requestAnimationFrame(() => resolve()));
}

let clockOffsetMs = 0;

/**
 * The page's one clock for elapsed time (milliseconds, monotonic): the time
 * played and the reminders read it and nothing else. In test mode
 * (`?fast=1`) `window.tresorClock.advance(ms)` moves it forward, so that a
 * test can make an hour pass without waiting for it; nothing else changes.
 */
export function clock() {
  return performance.now() + clockOffsetMs;
}

if (fastFlag) {
  window.tresorClock = {
    advance(ms) {
      clockOffsetMs += Math.max(0, Number(ms) || 0);
      window.dispatchEvent(new Event('tresor-clock'));
    },
  };
}

/** Whole euros or euros and cents typed by a player ("12", "12,50", "12.5") as cents, or `null`. */
export function parseEuros(text) {
  const clean = String(text).trim().replace(/\s/g, '').replace('€', '').replace(',', '.');
  if (!/^\d+(\.\d{1,2})?$/.test(clean)) return null;
  const [whole, fraction = ''] = clean.split('.');
  return Number(whole) * 100 + Number(fraction.padEnd(2, '0'));
}

/**
 * Opens a modal dialog, moving the focus into it and back where it was when
 * it closes; resolves on close. `blocking` dialogs ignore Escape: they close
 * only by their own buttons.
 */
export function showDialog(dialog, { blocking = false } = {}) {
  const before = document.activeElement;
  return new Promise((resolve) => {
    const onCancel = (event) => {
      if (blocking) event.preventDefault();
    };
    dialog.addEventListener('cancel', onCancel);
    dialog.addEventListener(
      'close',
      () => {
        dialog.removeEventListener('cancel', onCancel);
        if (before && before.isConnected && typeof before.focus === 'function') before.focus();
        resolve(dialog.returnValue);
      },
      { once: true },
    );
    if (!dialog.open) {
      dialog.returnValue = '';
      dialog.showModal();
    }
  });
}

/**
 * Hands the submission of the page's form `#NAME-form` to `send`, its lines
 * `#NAME-error` and `#NAME-notice` cleared first and given to `send` as
 * `{ error, notice }`. A failure `send` throws is shown in the error line as
 * `refused` words it: by default as the server does (`app.showError`).
 */
export function onSubmit(app, name, send, refused = (failure, line) => app.showError(failure, line)) {
  $(`#${name}-form`).addEventListener('submit', async (event) => {
    event.preventDefault();
    const error = $(`#${name}-error`);
    const notice = $(`#${name}-notice`);
    error.textContent = '';
    notice.textContent = '';
    try {
      await send({ error, notice });
    } catch (failure) {
      refused(failure, error);
    }
  });
}

/**
 * A list the server gives page by page: `fetch(cursor)` answers the page
 * after `cursor` (the first for null), its rows under `key` and the next
 * page's cursor as `next_cursor`. `load(next)` reads the first page again,
 * or appends the next one to `items`, and answers the page read; a failure
 * is shown in `#NAME-error` and answers null.
 */
export function pagedList(app, name, key, fetch) {
  const list = { items: [], cursor: null };
  list.load = async (next) => {
    const error = $(`#${name}-error`);
    error.textContent = '';
    try {
      const page = await fetch(next ? list.cursor : null);
      list.items = next ? list.items.concat(page[key]) : page[key];
      list.cursor = page.next_cursor;
      return page;
    } catch (e) {
      app.showError(e, error);
      return null;
    }
  };
  return list;
}
