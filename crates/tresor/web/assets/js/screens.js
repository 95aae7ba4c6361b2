//! The screens around the game: log in, register, account (with the demo
//! deposit), play history, and the rules text in French and English.

import { api } from './api.js';
import { t, money, dateTime, currentLang, setText } from './i18n.js';
import { $, h, onSubmit, pagedList } from './util.js';
import { gameName, gameRoute } from './lobby.js';
import { rememberExclusion } from './free.js';

const DEMO_DEPOSIT_CENTS = 2000;

/**
 * The session is over (the account closed, the player excluded): to the
 * login screen, which shows `text` as a notice (`code`), said aloud too.
 */
export function toLoginWith(app, text, code) {
  app.loggedOut();
  location.hash = '#/login';
  const node = $('#login-error');
  node.textContent = text;
  node.dataset.kind = 'notice';
  node.dataset.code = code;
  app.say(text);
}

/** The log-in and registration forms. */
export function setupAuth(app) {
  const login = $('#login-form');
  login.addEventListener('submit', async (event) => {
    event.preventDefault();
    const error = $('#login-error');
    error.textContent = '';
    await logInBy(app, login, '#login-password', error, () =>
      api.login($('#login-username').value.trim(), $('#login-password').value),
    );
  });

  const register = $('#register-form');
  register.addEventListener('submit', async (event) => {
    event.preventDefault();
    const error = $('#register-error');
    error.textContent = '';
    const username = $('#reg-username').value.trim();
    const password = $('#reg-password').value;
    const adult = $('#reg-adult').checked;
    const accept = $('#reg-accept').checked;
    const depositLimit = euros($('#reg-deposit-limit').value);
    const stakeLimit = euros($('#reg-stake-limit').value);
    // The server checks all of this too; checking here first spares a round trip.
    let problem = null;
    if (!username) problem = [t('username'), '#reg-username'];
    else if (password.length < 10) problem = [t('password.hint'), '#reg-password'];
    else if (!adult) problem = [t('adult'), '#reg-adult'];
    else if (!accept) problem = [t('accept'), '#reg-accept'];
    else if (depositLimit === null) problem = [t('caps.invalid'), '#reg-deposit-limit'];
    else if (stakeLimit === null) problem = [t('caps.invalid'), '#reg-stake-limit'];
    if (problem) {
      error.textContent = `${t('error.generic')} ${problem[0]}`;
      $(problem[1]).focus();
      return;
    }
    await logInBy(app, register, '#reg-password', error, () =>
      api.register(username, password, adult, accept, {
        deposit_limit_cents: depositLimit,
        stake_limit_cents: stakeLimit,
      }),
    );
  });

  const rulesDialog = $('#dlg-rules');
  $('#reg-read-rules').addEventListener('click', async () => {
    rulesDialog.showModal();
    await loadRules($('#dlg-rules-text'), currentLang());
  });
  $('#dlg-rules-close').addEventListener('click', () => rulesDialog.close());
}

/**
 * Sends a form that logs the player in (log-in, registration), its button
 * disabled meanwhile: `send()` answers the player, logged in, the password
 * typed (`password`) cleared; a refusal is shown in `error`.
 */
async function logInBy(app, form, password, error, send) {
  const button = form.querySelector('button[type=submit]');
  button.disabled = true;
  try {
    const me = await send();
    $(password).value = '';
    app.loggedIn(me);
  } catch (e) {
    app.showError(e, error);
  } finally {
    button.disabled = false;
  }
}

/** Whole euros typed in a field as cents, or `null` when not a valid cap. */
function euros(text) {
  const value = Number(String(text).trim().replace(',', '.'));
  if (!Number.isInteger(value) || value < 1 || value > 100000) return null;
  return value * 100;
}

const PERIODS = ['7d', '1m', '3m', '6m', '1y'];

/** The account screen: who, how much, the demo deposit, the caps and self-exclusion. */
export function setupAccount(app) {
  let capsShownFor = null;

  function capRow(kind, cap) {
    const pending = cap.pending
      ? t('caps.pending.at', { amount: money(cap.pending.limit_cents), date: dateTime(cap.pending.effective_at) })
      : t('caps.none');
    return h(
      'tr',
      { 'data-testid': `cap-${kind}`, 'data-limit-cents': cap.limit_cents, 'data-left-cents': cap.left_cents },
      h('th', { scope: 'row' }, t(`caps.row.${kind}`)),
      h('td', { class: 'money' }, money(cap.limit_cents)),
      h('td', { class: 'money' }, money(cap.used_cents)),
      h('td', { class: 'money' }, money(cap.left_cents)),
      h('td', { 'data-testid': `cap-${kind}-pending` }, pending),
    );
  }

  function renderCaps(limits) {
    const box = $('#caps-box');
    if (!limits || !limits.deposit || !limits.stake) {
      box.hidden = true;
      return;
    }
    box.hidden = false;
    $('#caps-rows').replaceChildren(capRow('deposit', limits.deposit), capRow('stake', limits.stake));
    // Fill the form once per player, so typing is not overwritten by a refresh.
    const me = app.state.me;
    if (capsShownFor !== me.username) {
      capsShownFor = me.username;
      $('#caps-deposit').value = String(Math.round((limits.deposit.pending?.limit_cents ?? limits.deposit.limit_cents) / 100));
      $('#caps-stake').value = String(Math.round((limits.stake.pending?.limit_cents ?? limits.stake.limit_cents) / 100));
    }
  }

  onSubmit(app, 'caps', async ({ error, notice }) => {
    const deposit = euros($('#caps-deposit').value);
    const stake = euros($('#caps-stake').value);
    if (deposit === null || stake === null) {
      error.textContent = t('caps.invalid');
      $(deposit === null ? '#caps-deposit' : '#caps-stake').focus();
      return;
    }
    const button = $('#caps-form button[type=submit]');
    button.disabled = true;
    try {
      const limits = await api.changeLimits({ deposit_limit_cents: deposit, stake_limit_cents: stake });
      if (app.state.me) app.state.me.limits = limits;
      renderCaps(limits);
      notice.textContent = t('caps.saved');
      app.say(t('caps.saved'));
    } catch (e) {
      app.showError(e, error);
    } finally {
      button.disabled = false;
    }
  });

  const dialog = $('#dlg-exclude');
  $('#exclude-form').addEventListener('submit', (event) => {
    event.preventDefault();
    $('#exclude-error').textContent = '';
    const select = $('#exclude-period');
    const period = PERIODS.includes(select.value) ? select.value : '7d';
    $('#dlg-exclude-text').textContent = t('exclude.confirm.text', { period: t(`exclude.${period}`) });
    dialog.dataset.period = period;
    dialog.showModal();
  });
  $('#dlg-exclude-cancel').addEventListener('click', () => dialog.close());
  $('#dlg-exclude-ok').addEventListener('click', async () => {
    const ok = $('#dlg-exclude-ok');
    ok.disabled = true;
    try {
      const answer = await api.exclude(dialog.dataset.period);
      rememberExclusion(answer.excluded_until);
      dialog.close();
      toLoginWith(app, t('exclude.done', { date: dateTime(answer.excluded_until) }), 'excluded');
    } catch (e) {
      dialog.close();
      app.showError(e, $('#exclude-error'));
    } finally {
      ok.disabled = false;
    }
  });

  const deposit = $('#deposit');
  deposit.addEventListener('click', async () => {
    deposit.disabled = true;
    $('#account-error').textContent = '';
    $('#account-notice').textContent = '';
    try {
      const me = await api.demoDeposit(DEMO_DEPOSIT_CENTS);
      app.setMe(me);
      setText($('#account-notice'), 'account.deposited', { amount: money(DEMO_DEPOSIT_CENTS) });
    } catch (e) {
      app.showError(e, $('#account-error'));
    } finally {
      deposit.disabled = false;
    }
  });
  return {
    render() {
      const me = app.state.me;
      if (!me) return;
      $('#account-user').textContent = me.username;
      $('#account-balance').textContent = money(me.balance_cents);
      $('#account-balance').dataset.cents = String(me.balance_cents);
      const demo = Boolean(me.demo || app.state.status?.demo);
      $('#demo-box').hidden = !demo;
      deposit.textContent = t('account.deposit', { amount: money(DEMO_DEPOSIT_CENTS) });
      renderCaps(me.limits);
    },
  };
}

/** The history: every play, newest first, with a replay or resume button. */
export function setupHistory(app) {
  const rows = $('#history-rows');
  const more = $('#history-more');
  const plays = pagedList(app, 'history', 'plays', (cursor) => api.plays(cursor));

  function row(play) {
    const prize = play.outcome?.prize_cents ?? 0;
    const finished = play.state === 'finished';
    const action = finished
      ? h('a', { class: 'button small', href: `#/replay/${play.id}`, 'data-testid': 'history-replay' }, t('history.replay'))
      : h('a', { class: 'button small primary', href: gameRoute(play.game), 'data-testid': 'history-resume' }, t('history.resume'));
    return h(
      'tr',
      {
        'data-testid': 'history-row',
        'data-play-id': play.id,
        'data-state': play.state,
        'data-prize-cents': prize,
        'data-game': play.game?.id ?? '',
      },
      h('td', { class: 'num' }, String(play.id)),
      h('td', {}, h('time', { datetime: play.created_at }, dateTime(play.created_at))),
      h('td', { class: 'game', 'data-testid': 'history-game' }, gameName(play.game)),
      h('td', { class: 'unit' }, t('history.unit.ref', { e: play.unit.emission, b: play.unit.block, i: play.unit.index })),
      h('td', { class: 'money' }, money(play.stake_cents)),
      h('td', {}, h('span', { class: `tag ${play.state}` }, t(`state.${play.state}`))),
      h(
        'td',
        { class: prize > 0 ? 'outcome won' : 'outcome' },
        prize > 0 ? t('outcome.win', { amount: money(prize) }) : t('outcome.lose'),
      ),
      h(
        'td',
        { class: 'history-actions' },
        action,
        ' ',
        h('button', { type: 'button', class: 'ghost small', 'data-receipt': play.id, 'data-testid': 'history-receipt', 'aria-label': t('history.receipt.label', { id: play.id }) }, t('history.receipt')),
      ),
    );
  }

  /** Saves the play's receipt as a JSON file, which the fairness page checks. */
  async function saveReceipt(id) {
    $('#history-error').textContent = '';
    try {
      const receipt = await api.receipt(id);
      const url = URL.createObjectURL(new Blob([JSON.stringify(receipt, null, 2)], { type: 'application/json' }));
      const link = h('a', { href: url, download: `tresor-receipt-${id}.json`, hidden: true });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    } catch (e) {
      app.showError(e, $('#history-error'));
    }
  }

  rows.addEventListener('click', (event) => {
    const button = event.target.closest('button[data-receipt]');
    if (button) saveReceipt(button.dataset.receipt);
  });

  function render() {
    rows.replaceChildren(...plays.items.map(row));
    $('#history-empty').hidden = plays.items.length > 0;
    more.hidden = !plays.cursor;
  }

  async function load(next) {
    if (await plays.load(next)) render();
  }

  more.addEventListener('click', () => load(true));
  return { show: () => load(false), render };
}

const rulesCache = new Map();

/** Loads the rules text in `lang` into `container`, tables and headings included. */
export async function loadRules(container, lang) {
  container.dataset.lang = lang;
  container.lang = lang;
  if (!rulesCache.has(lang)) {
    container.replaceChildren(h('p', {}, t('rules.loading')));
    const url = new URL(`../rules/${lang}.txt`, import.meta.url);
    const response = await fetch(url);
    rulesCache.set(lang, await response.text());
  }
  if (container.dataset.lang !== lang) return;
  container.replaceChildren(...renderRules(rulesCache.get(lang), container.dataset.heading));
}

/**
 * Turns the rules' plain text into HTML: "Article N" lines and the title
 * after them become headings, paragraphs stay paragraphs, and the
 * pipe-separated tables (one table per paragraph) become real tables.
 * Articles are `heading`s: `h2` under the rules screen's `h1`, `h3` (the
 * default) in a window titled by an `h2`.
 */
export function renderRules(text, heading = 'h3') {
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  const nodes = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (!line.trim()) continue;
    if (/^Article \d+/.test(line)) {
      const title = lines[i + 1] && lines[i + 1].trim() ? lines[++i] : '';
      nodes.push(h(heading, {}, line.trim(), title ? h('span', { class: 'article-title' }, ` — ${title.trim()}`) : null));
    } else if (line.startsWith('|')) {
      let block = line;
      while (i + 1 < lines.length && lines[i + 1].trim()) block += `\n${lines[++i]}`;
      nodes.push(renderTable(block));
    } else {
      nodes.push(h('p', {}, line));
    }
  }
  return nodes;
}

function renderTable(block) {
  const tokens = block.split('|').slice(1, -1);
  const dash = tokens.findIndex((cell) => /^-+$/.test(cell.trim()));
  const columns = dash - 1;
  if (dash < 2) return h('pre', {}, block);
  const rows = [];
  for (let at = 0; at + columns <= tokens.length; at += columns + 1) {
    rows.push(tokens.slice(at, at + columns).map((c) => c.trim()));
  }
  const [head, , ...body] = rows;
  const table = h('table', { class: 'rules-table' });
  table.append(h('thead', {}, h('tr', {}, head.map((c) => h('th', { scope: 'col' }, c)))));
  table.append(h('tbody', {}, body.map((r) => h('tr', {}, r.map((c) => h('td', {}, c))))));
  return h('div', { class: 'table-wrap' }, table);
}
