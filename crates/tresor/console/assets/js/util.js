//! Small helpers the screens share: DOM building, euros and dates, the
//! notice line, the confirmation dialog, tables and copying to the clipboard.
//! Texts go into the page in the operator's language (i18n.js) here.

import { dataNode, errorText, locale, setAttr, setText, textNode, tr } from './i18n.js';

/** Creates an element with attributes and children (strings become text,
 * in the operator's language; inside `code`, data such as a trail record's
 * actor, shown as recorded: see `raw`). */
export function h(tag, attrs = {}, ...children) {
  const verbatim = tag === 'code';
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === false || value === null || value === undefined) continue;
    if (name === 'class') node.className = value;
    else if (name === 'text') setText(node, String(value));
    else if (['aria-label', 'alt', 'title', 'placeholder'].includes(name)) setAttr(node, name, String(value));
    else if (name.startsWith('on') && typeof value === 'function') node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : verbatim ? raw(child) : textNode(String(child)));
  }
  return node;
}

/** Data shown as it is (a username, a file name, an actor): never translated. */
export const raw = dataNode;

/** `document.querySelector`, failing loudly when the page lacks the node. */
export function $(selector, root = document) {
  const node = root.querySelector(selector);
  if (!node) throw new Error(`missing ${selector}`);
  return node;
}

/** Intl formatters in the operator's language, made once per language. */
const formatters = new Map();
function format(kind, make) {
  const key = `${locale()} ${kind}`;
  if (!formatters.has(key)) formatters.set(key, make(locale()));
  return formatters.get(key);
}
const EUROS = () => format('euros', (l) => new Intl.NumberFormat(l === 'en-GB' ? 'en-IE' : l, { style: 'currency', currency: 'EUR' }));
const COUNT = () => format('count', (l) => new Intl.NumberFormat(l));
const DATE_TIME = () => format('date', (l) => new Intl.DateTimeFormat(l, { dateStyle: 'medium', timeStyle: 'medium' }));
const TIME = () => format('time', (l) => new Intl.DateTimeFormat(l, { hour: '2-digit', minute: '2-digit' }));

/** Integer cents as euros: `€1,234.50`, `1 234,50 €`. */
export function euros(cents) {
  if (cents === null || cents === undefined) return '—';
  return EUROS().format(Number(cents) / 100);
}

/** A number with `digits` decimals in the operator's language: `0,8`,
 * `1 234,5` in French, `0.8`, `1,234.5` in English. */
export function decimal(value, digits = 1) {
  if (value === null || value === undefined || Number.isNaN(Number(value))) return '—';
  return format(`decimal${digits}`, (l) => new Intl.NumberFormat(l, { minimumFractionDigits: digits, maximumFractionDigits: digits })).format(Number(value));
}

/** A percentage with one decimal: `0,0 %` (French, a narrow no-break space), `0.0%` (English). */
export function percent(value) {
  if (value === null || value === undefined || Number.isNaN(Number(value))) return '—';
  return format('percent', (l) => new Intl.NumberFormat(l, { style: 'percent', minimumFractionDigits: 1, maximumFractionDigits: 1 })).format(Number(value) / 100);
}

/** Milliseconds with one decimal: `0,8 ms`, `0.8 ms`. */
export function millis(value) {
  return `${decimal(value, 1)}\u00a0ms`;
}

/** The placeholder of an amount in euros, as the operator types one: `10,00` or `10.00`. */
export function amountPlaceholder() {
  return decimal(10, 2);
}

/** A whole number with thousands separators. */
export function count(value) {
  if (value === null || value === undefined) return '—';
  return COUNT().format(value);
}

/** An RFC 3339 time as a local date and time, or `—`. */
export function dateTime(text) {
  if (!text) return '—';
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? String(text) : DATE_TIME().format(date);
}

/** An RFC 3339 time as a local `HH:MM`. */
export function clock(text) {
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? '' : TIME().format(date);
}

/** A `<time>` element showing `text` as a local date. */
export function timeNode(text) {
  return text ? h('time', { datetime: text }, dateTime(text)) : '—';
}

/** Euros typed by an operator (`12.5`, `12,50`) as integer cents, or null. */
export function parseEuros(text) {
  const clean = String(text).trim().replace(/\s/g, '').replace(',', '.');
  if (!/^\d+(\.\d{1,2})?$/.test(clean)) return null;
  const [whole, fraction = ''] = clean.split('.');
  return Number(whole) * 100 + Number(fraction.padEnd(2, '0'));
}

/** A short form of a long hex string, the whole in its title. */
export function shortHash(hex) {
  if (!hex) return '—';
  return h('code', { class: 'hash', title: hex }, hex.length > 20 ? `${hex.slice(0, 10)}…${hex.slice(-8)}` : hex);
}

/**
 * A table: `columns` are `[heading, cell(row) → node or text, class?]`;
 * `rowAttrs(row)` gives each row's attributes. An empty list shows `empty`.
 */
export function table(columns, rows, { empty = 'Nothing here.', rowAttrs = () => ({}), caption } = {}) {
  if (!rows.length) return h('p', { class: 'empty' }, empty);
  return h(
    'div',
    { class: 'table-wrap stack' },
    h(
      'table',
      { role: 'table' },
      caption ? h('caption', { class: 'sr-only' }, caption) : null,
      h('thead', {}, h('tr', { role: 'row' }, columns.map(([heading, , cls]) => h('th', { scope: 'col', role: 'columnheader', class: cls }, heading)))),
      h(
        'tbody',
        {},
        rows.map((row) => h('tr', { role: 'row', ...rowAttrs(row) }, columns.map(([heading, cell, cls]) => h('td', { role: 'cell', class: cls, 'data-label': heading }, cell(row))))),
      ),
    ),
  );
}

/** An IBAN as it is read aloud and checked by eye: groups of four. */
export function groupIban(iban) {
  return iban ? iban.replace(/\s+/g, '').replace(/(.{4})(?=.)/g, '$1 ') : iban;
}

/** Replaces the children of `node`. */
export function fill(node, ...children) {
  node.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
}

/** Says `text` to screen readers. */
export function say(text) {
  const live = document.getElementById('live');
  if (!live) return;
  live.append(h('p', {}, text));
  while (live.children.length > 5) live.firstElementChild.remove();
}

let noticeTimer = 0;

/** Shows a short line under the bar: `kind` is `ok` or `error`. */
export function notice(text, kind = 'ok', code = '') {
  const node = $('#notice');
  setText(node, text);
  node.dataset.kind = kind;
  node.dataset.code = code;
  node.hidden = false;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => {
    node.hidden = true;
  }, kind === 'error' ? 12000 : 6000);
  say(text);
}

/** Shows an API error in the operator's language (from its code: see
 * `errorText`), the server's own message in the title, and its code for
 * the tests. */
export function showError(error) {
  if (error && error.status === 401) return;
  const extra = error?.detail?.permission ? tr(` (needs the “${error.detail.permission}” permission)`) : '';
  notice(`${errorText(error)}${extra}`, 'error', error?.code ?? 'error');
  $('#notice').title = error?.message ?? '';
}

/**
 * Asks before a dangerous action. `action` runs when confirmed (with the
 * reason typed, when `reason` asks for one); its error shows in the dialog,
 * which stays open. Resolves with the action's result, or null if cancelled.
 */
export function confirmAction({ title, text, ok = 'Confirm', reason = false, action }) {
  const dialog = $('#confirm');
  const reasonBox = $('#confirm-reason-box');
  const reasonInput = $('#confirm-reason');
  const error = $('#confirm-error');
  const okButton = $('#confirm-ok');
  setText($('#confirm-title'), title);
  setText($('#confirm-text'), text);
  setText(okButton, ok);
  reasonBox.hidden = !reason;
  reasonInput.value = '';
  reasonInput.required = Boolean(reason);
  error.hidden = true;
  const opener = document.activeElement;
  return new Promise((resolve) => {
    let busy = false;
    const close = (value) => {
      form.removeEventListener('submit', submit);
      cancel.removeEventListener('click', onCancel);
      dialog.removeEventListener('cancel', onCancel);
      dialog.close();
      if (opener && opener.isConnected && typeof opener.focus === 'function') opener.focus();
      resolve(value);
    };
    const form = $('#confirm-form');
    const cancel = $('#confirm-cancel');
    const onCancel = (event) => {
      event.preventDefault();
      if (!busy) close(null);
    };
    const submit = async (event) => {
      event.preventDefault();
      if (busy) return;
      const why = reasonInput.value.trim();
      if (reason && !why) {
        setText(error, 'Give a reason.');
        error.hidden = false;
        reasonInput.focus();
        return;
      }
      busy = true;
      okButton.disabled = true;
      try {
        const result = await action(why);
        close(result ?? true);
      } catch (failure) {
        error.textContent = errorText(failure);
        error.title = failure?.message ?? '';
        error.dataset.code = failure?.code ?? '';
        error.hidden = false;
      } finally {
        busy = false;
        okButton.disabled = false;
      }
    };
    form.addEventListener('submit', submit);
    cancel.addEventListener('click', onCancel);
    dialog.addEventListener('cancel', onCancel);
    dialog.showModal();
    (reason ? reasonInput : cancel).focus();
  });
}

/** Copies `text` to the clipboard; says whether it could. */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // Without the clipboard API (or its permission), select a copy and ask
    // the browser to copy the selection.
    const area = h('textarea', { class: 'sr-only', readonly: true });
    area.value = text;
    document.body.append(area);
    area.select();
    let done = false;
    try {
      done = document.execCommand('copy');
    } catch {
      done = false;
    }
    area.remove();
    return done;
  }
}

/**
 * Runs `work`, a failure shown as an error rather than thrown: what a
 * screen's show and its buttons' handlers do. Resolves with what `work`
 * gave, or undefined when it failed.
 */
export async function showingErrors(work) {
  try {
    return await work();
  } catch (failure) {
    showError(failure);
    return undefined;
  }
}

/**
 * Hands every click on a `button[data-action]` inside `root` to `act`
 * (the button), a failure shown as an error.
 */
export function onActions(root, act) {
  root.addEventListener('click', async (event) => {
    const button = event.target.closest('button[data-action]');
    if (!button) return;
    await showingErrors(() => act(button));
  });
}

/** Disables `button` while `work` runs. */
export async function busy(button, work) {
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  try {
    return await work();
  } finally {
    button.disabled = false;
    button.removeAttribute('aria-busy');
  }
}
