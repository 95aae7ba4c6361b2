//! The real-money account on the page: opening an account with an identity
//! (the register screen), the account screen's status, deposits through the
//! payment provider, the IBAN, withdrawals, closing, the statement screen
//! with its CSV, and the window that asks to accept new rules before a
//! purchase. docs/ACCOUNT.md describes the endpoints used here.

import { api } from './api.js';
import { t, money, dateTime, currentLang, setText } from './i18n.js';
import { loadRules, toLoginWith } from './screens.js';
import { wrongPassword } from './security.js';
import { gameName } from './lobby.js';
import { $, h, onSubmit, pagedList, parseEuros, showDialog, sleep } from './util.js';

/** The fields of the opening form, in the order they appear (for the focus). */
const OPEN_FIELDS = [
  'birth_name', 'first_names', 'birth_date', 'birth_place', 'address', 'email',
  'username', 'password', 'deposit_limit_cents', 'stake_limit_cents', 'iban', 'accept_rules',
];

const MIN_DEPOSIT_CENTS = 100;
const MAX_DEPOSIT_CENTS = 100000000;

/** "14/07/1990", "14-07-1990", "14.07.1990" or "1990-07-14" as "1990-07-14", or `null`. */
export function isoDate(text) {
  const value = String(text).trim();
  let y;
  let m;
  let d;
  let match = /^(\d{4})-(\d{1,2})-(\d{1,2})$/.exec(value);
  if (match) [, y, m, d] = match;
  else {
    match = /^(\d{1,2})[/.-](\d{1,2})[/.-](\d{4})$/.exec(value);
    if (!match) return null;
    [, d, m, y] = match;
  }
  const date = new Date(Date.UTC(Number(y), Number(m) - 1, Number(d)));
  if (date.getUTCFullYear() !== Number(y) || date.getUTCMonth() !== Number(m) - 1 || date.getUTCDate() !== Number(d)) return null;
  return `${y}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`;
}

/** Whole euros of a cap field as cents; `undefined` when empty, `null` when invalid. */
function capCents(text) {
  const value = String(text).trim();
  if (!value) return undefined;
  const n = Number(value.replace(',', '.'));
  if (!Number.isInteger(n) || n < 1 || n > 100000) return null;
  return n * 100;
}

/** The field an API refusal of the opening is about, from its code or its message's "field:" prefix. */
function fieldOf(error) {
  if (error.code === 'minor') return 'birth_date';
  if (error.code === 'banned') return 'birth_name';
  if (error.code === 'username_taken') return 'username';
  if (error.code === 'validation') {
    const name = /^([a-z_]+):/.exec(error.message || '')?.[1];
    if (name === 'adult') return null;
    if (OPEN_FIELDS.includes(name)) return name;
  }
  return null;
}

/** The opening form (identity) on the register screen, and the demo's quick form beside it. */
export function setupOpening(app) {
  const form = $('#open-form');
  const input = (field) => form.querySelector(`[data-field="${field}"]`);

  function clearErrors() {
    for (const field of OPEN_FIELDS) {
      const node = $(`#open-${field}-error`);
      node.textContent = '';
      input(field).removeAttribute('aria-invalid');
    }
    $('#open-error').textContent = '';
  }

  /** Shows each problem under its field and puts the focus on the first one. */
  function showProblems(problems) {
    let first = null;
    for (const field of OPEN_FIELDS) {
      if (!problems[field]) continue;
      $(`#open-${field}-error`).textContent = problems[field];
      input(field).setAttribute('aria-invalid', 'true');
      first ??= field;
    }
    if (first) {
      $('#open-error').textContent = t('open.err.summary');
      input(first).focus();
    }
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearErrors();
    const value = (field) => input(field).value.trim();
    const problems = {};
    for (const field of ['birth_name', 'first_names', 'birth_place', 'address', 'username']) {
      if (!value(field)) problems[field] = t(`open.err.${field}`);
    }
    const birthDate = isoDate(value('birth_date'));
    if (!birthDate) problems.birth_date = t('open.err.birth_date');
    const email = value('email');
    if (email && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) problems.email = t('open.err.email');
    const password = input('password').value;
    if (password.length < 10) problems.password = t('open.err.password');
    const depositLimit = capCents(value('deposit_limit_cents'));
    const stakeLimit = capCents(value('stake_limit_cents'));
    if (depositLimit === null) problems.deposit_limit_cents = t('caps.invalid');
    if (stakeLimit === null) problems.stake_limit_cents = t('caps.invalid');
    const accept = input('accept_rules').checked;
    if (!accept) problems.accept_rules = t('open.err.accept_rules');
    if (Object.keys(problems).length) {
      showProblems(problems);
      return;
    }
    const iban = value('iban');
    const body = {
      username: value('username'),
      password,
      accept_rules: true,
      marketing_consent: $('#open-marketing').checked,
      identity: {
        birth_name: value('birth_name'),
        first_names: value('first_names'),
        birth_date: birthDate,
        birth_place: value('birth_place'),
        address: value('address'),
        ...(email ? { email } : {}),
      },
      ...(iban ? { iban } : {}),
      ...(depositLimit ? { deposit_limit_cents: depositLimit } : {}),
      ...(stakeLimit ? { stake_limit_cents: stakeLimit } : {}),
    };
    const button = $('#open-form button[type=submit]');
    button.disabled = true;
    try {
      const me = await api.openAccount(body);
      input('password').value = '';
      form.reset();
      app.setMe(me);
      location.hash = '#/account';
      setText($('#account-notice'), 'open.done');
      app.say(t('open.done'));
    } catch (error) {
      const field = fieldOf(error);
      if (field) {
        const key = error.code === 'validation' ? `open.err.${field}` : `open.err.${error.code}`;
        showProblems({ [field]: t(key) });
        if (error.code === 'banned') $('#open-error').textContent = t('open.err.banned');
      } else {
        app.showError(error, $('#open-error'));
        button.focus();
      }
    } finally {
      button.disabled = false;
    }
  });

  const rulesDialog = $('#dlg-rules');
  $('#open-read-rules').addEventListener('click', async () => {
    showDialog(rulesDialog);
    await loadRules($('#dlg-rules-text'), currentLang());
  });

  return {
    render() {
      $('#quick-box').hidden = !app.state.status?.demo;
    },
  };
}

/** The movement of a statement line in words. */
function movementWords(m) {
  const text = t(`mv.${m.movement}`);
  if (m.play_id) return `${text} · ${t('mv.play', { id: m.play_id })}${m.game ? ` · ${gameName(m.game)}` : ''}`;
  if (m.deposit_id) return `${text} · ${t('mv.deposit.ref', { id: m.deposit_id })}`;
  if (m.withdrawal_id) return `${text} · ${t('mv.withdrawal.ref', { id: m.withdrawal_id })}`;
  return text;
}

/** A signed amount: "+20 €", "−1 €". */
function signed(cents) {
  if (cents > 0) return `+${money(cents)}`;
  if (cents < 0) return `−${money(-cents)}`;
  return money(0);
}

/**
 * The account screen's money part and the statement screen. `render()`
 * draws from the last account read; `refresh()` reads it again.
 */
export function setupMoney(app) {
  let withdrawals = [];
  let watching = null;
  let lastOutcome = null;

  function view() {
    return app.state.account;
  }

  async function refresh() {
    if (!app.state.me) return null;
    try {
      const account = await api.account();
      app.setAccount(account);
      return account;
    } catch (error) {
      app.showError(error, $('#account-error'));
      return null;
    }
  }

  async function loadWithdrawals() {
    const account = view();
    if (!account?.has_identity) {
      withdrawals = [];
      renderWithdrawals();
      return;
    }
    try {
      withdrawals = (await api.withdrawals()).withdrawals;
    } catch (error) {
      app.showError(error, $('#withdraw-error'));
    }
    renderWithdrawals();
  }

  function statusOf(account) {
    if (account.closed_at || account.status === 'closed') return 'closed';
    if (!account.has_identity) return 'demo';
    return account.status;
  }

  function statusText(account) {
    const status = statusOf(account);
    if (status === 'closed') return t('status.closed.text', { date: dateTime(account.closed_at) });
    // Suspended by the operator: read-only, the reason never shown.
    if (account.suspended) return t('status.suspended.text');
    if (status === 'demo') return t('status.demo.text');
    if (status === 'verified') return t('status.verified.text', { date: dateTime(account.verified_at) });
    if (account.provisional_until && Date.parse(account.provisional_until) < Date.now()) {
      return t('status.provisional.over', { date: dateTime(account.provisional_until) });
    }
    return t('status.provisional.text', { date: dateTime(account.provisional_until) });
  }

  /** Why a capability is off, in words; null when it is on. */
  function whyNot(account, what) {
    if (account[`can_${what}`]) return null;
    const status = statusOf(account);
    if (status === 'closed') return t('why.closed');
    if (account.banned) return t('why.banned');
    if (account.suspended) return t('why.suspended');
    if (app.state.me?.excluded_until) return t('why.excluded', { date: dateTime(app.state.me.excluded_until) });
    if (what === 'deposit') return status === 'demo' ? t('why.deposit.demo') : t('why.generic');
    if (what === 'withdraw') {
      if (status === 'demo') return t('why.withdraw.demo');
      if (status === 'provisional') return t('why.withdraw.provisional');
      return t('why.generic');
    }
    if (account.rules_version_accepted < account.rules_version_current) return t('why.stake.rules');
    if (status === 'provisional') return t('why.stake.verification');
    return t('why.generic');
  }

  function renderCan(account) {
    const items = ['deposit', 'stake', 'withdraw'].map((what) => {
      const why = whyNot(account, what);
      return h(
        'li',
        { class: why ? 'can no' : 'can yes', 'data-testid': `can-${what}`, 'data-ok': why ? 'false' : 'true' },
        h('span', { class: 'can-mark', 'aria-hidden': 'true' }, why ? '–' : '✓'),
        h('span', {}, h('strong', {}, t(`can.${what}`)), ' ', why ? why : t('can.yes')),
      );
    });
    $('#account-can').replaceChildren(...items);
  }

  function renderWithdrawals() {
    const list = $('#withdrawals');
    list.replaceChildren(
      ...withdrawals.map((w) =>
        h(
          'li',
          { class: 'withdrawal', 'data-testid': 'withdrawal', 'data-id': w.id, 'data-state': w.state, 'data-amount-cents': w.amount_cents },
          h('span', { class: 'w-amount' }, money(w.amount_cents)),
          h('span', { class: `tag w-${w.state}` }, t(`wstate.${w.state}`)),
          h('span', { class: 'w-when' }, t('withdraw.asked', { date: dateTime(w.requested_at), iban: w.iban })),
          w.reason ? h('span', { class: 'w-reason' }, t('withdraw.reason', { reason: w.reason })) : null,
          w.state === 'pending' && !w.closing
            ? h('button', { type: 'button', class: 'ghost small', 'data-testid': 'withdrawal-cancel', onclick: () => cancelWithdrawal(w.id) }, t('withdraw.cancel'))
            : null,
        ),
      ),
    );
  }

  async function cancelWithdrawal(id) {
    $('#withdraw-error').textContent = '';
    try {
      await api.cancelWithdrawal(id);
      app.say(t('withdraw.cancelled'));
      setText($('#account-notice'), 'withdraw.cancelled');
    } catch (error) {
      app.showError(error, $('#withdraw-error'));
    }
    await Promise.all([refresh(), app.refreshMe()]);
    await loadWithdrawals();
    $('#withdraw-amount').focus();
  }

  function closeText(account) {
    const balance = account.balance_cents;
    if (balance <= 0) return t('close.nothing');
    if (account.status === 'verified' && account.iban) return t('close.paid', { amount: money(balance), iban: account.iban });
    return t('close.reserve', { amount: money(balance) });
  }

  function renderOutcome() {
    const box = $('#deposit-outcome');
    if (!lastOutcome) {
      box.hidden = true;
      return;
    }
    const d = lastOutcome;
    box.hidden = false;
    box.dataset.state = d.state;
    box.dataset.id = String(d.id);
    const reason = d.reason ? t(`refund.${d.reason}`) : t('refund.unknown');
    box.replaceChildren(
      h('strong', {}, t(`dstate.${d.state}`)),
      ' ',
      t(`deposit.${d.state}`, { amount: money(d.amount_cents), reason }),
    );
  }

  function render() {
    const account = view();
    const me = app.state.me;
    if (!account || !me) return;
    const status = statusOf(account);
    const tag = $('#account-status');
    tag.className = `tag status-${status}`;
    tag.dataset.status = status;
    tag.textContent = t(`status.${status}`);
    $('#account-status-text').textContent = statusText(account);
    renderCan(account);
    $('#pay-box').hidden = !(account.has_identity && status !== 'closed');
    $('#pay-form').hidden = !account.can_deposit;
    $('#iban-box').hidden = !(account.has_identity && status === 'provisional');
    $('#iban-current').textContent = account.iban ? t('iban.current', { iban: account.iban }) : t('iban.none');
    const canWithdraw = account.can_withdraw;
    $('#withdraw-form').hidden = !canWithdraw;
    const why = canWithdraw ? '' : whyNot(account, 'withdraw');
    $('#withdraw-why').textContent = why.charAt(0).toUpperCase() + why.slice(1);
    $('#withdraw-why').hidden = canWithdraw;
    $('#withdraw-iban').textContent = account.iban ? t('withdraw.to', { iban: account.iban }) : '';
    $('#close-box').hidden = status === 'closed';
    $('#close-text').textContent = closeText(account);
    $('#reminder-every').value = account.reminder_every_minutes ? String(account.reminder_every_minutes) : '';
    $('#marketing-box').hidden = !account.has_identity;
    $('#marketing-consent').checked = Boolean(account.marketing_consent);
    renderWithdrawals();
    renderOutcome();
  }

  /** Watches a deposit back from the provider until it is settled (or 30 s pass). */
  async function watchDeposit(id) {
    const run = Symbol('watch');
    watching = run;
    const deadline = Date.now() + 30000;
    for (;;) {
      let deposit;
      try {
        deposit = await api.deposit(id);
      } catch (error) {
        app.showError(error, $('#account-error'));
        return;
      }
      if (watching !== run) return;
      lastOutcome = deposit;
      renderOutcome();
      if (deposit.state !== 'pending' || Date.now() > deadline) break;
      await sleep(500);
    }
    app.say($('#deposit-outcome').textContent);
    await Promise.all([refresh(), app.refreshMe()]);
  }

  $('#pay-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const error = $('#pay-amount-error');
    error.textContent = '';
    const cents = parseEuros($('#pay-amount').value);
    if (cents === null || cents < MIN_DEPOSIT_CENTS || cents > MAX_DEPOSIT_CENTS) {
      error.textContent = t('pay.invalid');
      $('#pay-amount').setAttribute('aria-invalid', 'true');
      $('#pay-amount').focus();
      return;
    }
    $('#pay-amount').removeAttribute('aria-invalid');
    const button = $('#pay-form button[type=submit]');
    button.disabled = true;
    try {
      const deposit = await api.askDeposit(cents);
      // The provider's page comes back to #/account/deposit/ID.
      location.assign(deposit.pay_url);
    } catch (e) {
      app.showError(e, error);
      button.disabled = false;
    }
  });

  $('#iban-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const error = $('#iban-error');
    error.textContent = '';
    $('#iban-notice').textContent = '';
    const iban = $('#iban-input').value.trim();
    if (!iban) {
      error.textContent = t('open.err.iban');
      $('#iban-input').focus();
      return;
    }
    try {
      app.setAccount(await api.setIban(iban, $('#iban-password').value));
      $('#iban-input').value = '';
      $('#iban-password').value = '';
      setText($('#iban-notice'), 'iban.saved');
      app.say(t('iban.saved'));
    } catch (e) {
      if (wrongPassword(e)) setText(error, 'password.wrong');
      else if (e.code === 'validation') error.textContent = t('open.err.iban');
      else app.showError(e, error);
      $('#iban-input').focus();
    }
  });

  $('#withdraw-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const error = $('#withdraw-error');
    error.textContent = '';
    const cents = parseEuros($('#withdraw-amount').value);
    if (cents === null || cents <= 0) {
      error.textContent = t('withdraw.invalid');
      $('#withdraw-amount').focus();
      return;
    }
    if (cents > (view()?.balance_cents ?? 0)) {
      error.textContent = t('withdraw.over', { amount: money(view()?.balance_cents ?? 0) });
      $('#withdraw-amount').focus();
      return;
    }
    const button = $('#withdraw-form button[type=submit]');
    button.disabled = true;
    try {
      const w = await api.askWithdrawal(cents);
      // The amount leaves the balance at once.
      app.adjustBalance(-w.amount_cents);
      $('#withdraw-amount').value = '';
      setText($('#account-notice'), 'withdraw.done', { amount: money(w.amount_cents) });
      app.say($('#account-notice').textContent);
    } catch (e) {
      app.showError(e, error);
    } finally {
      button.disabled = false;
    }
    await Promise.all([refresh(), app.refreshMe()]);
    await loadWithdrawals();
  });

  onSubmit(app, 'reminder', async ({ notice }) => {
    const value = $('#reminder-every').value;
    const account = await api.setReminder(value ? Number(value) : null);
    app.setAccount(account, { reminderChanged: true });
    if (value) setText(notice, 'reminder.saved', { n: value });
    else setText(notice, 'reminder.saved.off');
    app.say(notice.textContent);
  });

  onSubmit(app, 'marketing', async ({ notice }) => {
    const consent = $('#marketing-consent').checked;
    app.setAccount(await api.setMarketing(consent));
    setText(notice, consent ? 'marketing.saved.on' : 'marketing.saved.off');
    app.say(notice.textContent);
  });

  const closeDialog = $('#dlg-close');
  $('#close-account').addEventListener('click', () => {
    const account = view();
    if (!account) return;
    $('#dlg-close-text').textContent = closeText(account);
    showDialog(closeDialog);
  });
  $('#dlg-close-cancel').addEventListener('click', () => closeDialog.close());
  $('#dlg-close-ok').addEventListener('click', async () => {
    const ok = $('#dlg-close-ok');
    ok.disabled = true;
    try {
      const closed = await api.closeAccount();
      closeDialog.close();
      let text = t('close.done');
      if (closed.withdrawal_id) text += ` ${t('close.done.paid', { amount: money(closed.balance_cents) })}`;
      else if (closed.reserved_cents > 0) text += ` ${t('close.done.reserve', { amount: money(closed.reserved_cents) })}`;
      toLoginWith(app, text, 'account_closed');
    } catch (e) {
      closeDialog.close();
      app.showError(e, $('#close-error'));
    } finally {
      ok.disabled = false;
    }
  });

  // ---- The statement screen ----
  const movements = pagedList(app, 'statement', 'movements', (cursor) => api.statement(cursor));
  let statementBalance;

  function statementRow(m) {
    return h(
      'tr',
      {
        'data-testid': 'statement-row',
        'data-id': m.id,
        'data-movement': m.movement,
        'data-delta-cents': m.delta_cents,
        'data-balance-cents': m.balance_cents,
      },
      h('td', {}, h('time', { datetime: m.at }, dateTime(m.at))),
      h('td', {}, movementWords(m)),
      h(
        'td',
        { class: `money ${m.delta_cents > 0 ? 'credit' : m.delta_cents < 0 ? 'debit' : ''}` },
        m.delta_cents === 0 ? t('mv.already', { amount: money(m.amount_cents) }) : signed(m.delta_cents),
      ),
      h('td', { class: 'money' }, money(m.balance_cents)),
    );
  }

  function renderStatement(balance) {
    $('#statement-rows').replaceChildren(...movements.items.map(statementRow));
    $('#statement-empty').hidden = movements.items.length > 0;
    $('#statement-more').hidden = !movements.cursor;
    if (balance !== undefined) statementBalance = balance;
    if (statementBalance !== undefined) {
      $('#statement-balance').textContent = money(statementBalance);
      $('#statement-balance').dataset.cents = String(statementBalance);
    }
  }

  async function loadStatement(next) {
    const page = await movements.load(next);
    if (!page) return;
    renderStatement(page.balance_cents);
    document.querySelector('#screen-statement').dataset.loaded = String(movements.items.length);
  }

  $('#statement-more').addEventListener('click', async () => {
    const count = movements.items.length;
    await loadStatement(true);
    // The first new line takes the focus, so the keyboard goes on from there.
    const row = $('#statement-rows').children[count];
    if (row) {
      row.tabIndex = -1;
      row.focus();
    }
  });

  /** The rules window before a purchase: resolves true once the player has accepted `version`. */
  async function askRules(version) {
    const dialog = $('#dlg-accept');
    $('#dlg-accept-error').textContent = '';
    $('#dlg-accept-text').textContent = t('accept.text', { version });
    let accepted = false;
    const ok = $('#dlg-accept-ok');
    const onOk = async () => {
      ok.disabled = true;
      try {
        app.setAccount(await api.acceptRules(version));
        accepted = true;
        dialog.close();
      } catch (e) {
        app.showError(e, $('#dlg-accept-error'));
      } finally {
        ok.disabled = false;
      }
    };
    const onCancel = () => dialog.close();
    ok.addEventListener('click', onOk);
    $('#dlg-accept-cancel').addEventListener('click', onCancel);
    const closed = showDialog(dialog);
    loadRules($('#dlg-accept-rules'), currentLang());
    await closed;
    ok.removeEventListener('click', onOk);
    $('#dlg-accept-cancel').removeEventListener('click', onCancel);
    return accepted;
  }

  return {
    render,
    refresh,
    askRules,
    /** The account screen is shown; `arg` is "deposit/ID" when the provider sent the player back. */
    async show(rest) {
      const [what, id] = rest;
      render();
      if (what === 'deposit' && /^\d+$/.test(id ?? '')) {
        history.replaceState(null, '', `${location.pathname}${location.search}#/account`);
        await refresh();
        await loadWithdrawals();
        await watchDeposit(Number(id));
        return;
      }
      await refresh();
      await loadWithdrawals();
    },
    showStatement: () => loadStatement(false),
    relabel() {
      render();
      if (!$('#screen-statement').hidden) renderStatement();
    },
  };
}
