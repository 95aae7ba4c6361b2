//! The queues: provisional accounts waiting for their identity check
//! (role `players`: verify, naming the IBAN reviewed; an IBAN changed since
//! the opening is marked), and pending withdrawals, oldest first, a page at
//! a time (role `withdrawals`: approve, or reject with a reason the player
//! sees). Each asks first.

import { api } from './api.js';
import { $, h, euros, fill, groupIban, table, timeNode, notice, showError, confirmAction } from './util.js';

let appRef = null;

/** A time the API gives as RFC 3339, or in milliseconds under `*_ms`. */
function when(row, name) {
  if (row[name]) return row[name];
  const ms = row[`${name}_ms`];
  return ms ? new Date(ms).toISOString() : null;
}

const playerOf = (row) => row.player_id ?? row.id;

async function loadAccounts() {
  const { accounts } = await api.accounts('provisional');
  fill(
    $('#verify-queue'),
    table(
      [
        ['Player', (a) => h('a', { href: `#/players/${playerOf(a)}` }, a.username)],
        ['Opened', (a) => timeNode(when(a, 'opened_at'))],
        ['Provisional until', (a) => timeNode(when(a, 'provisional_until'))],
        ['Identity', (a) => (a.has_identity ? 'given' : 'none')],
        ['IBAN', (a) => groupIban(a.iban) ?? '—'],
        [
          'IBAN given',
          (a) =>
            h(
              'span',
              { 'data-testid': 'iban-given' },
              timeNode(when(a, 'iban_set_at')),
              a.iban_changes > 0 ? h('span', { class: 'state pending', 'data-testid': 'iban-changed' }, ` changed ×${a.iban_changes}`) : null,
            ),
        ],
        ['Ban list', (a) => (a.banned ? h('span', { class: 'state banned' }, 'banned') : '')],
        [
          '',
          (a) =>
            h('button', { type: 'button', class: 'small', 'data-action': 'verify', 'data-id': playerOf(a), 'data-name': a.username, 'data-iban': a.iban ?? '', 'data-testid': `verify-${playerOf(a)}` }, 'Verify…'),
          'actions',
        ],
      ],
      accounts,
      { empty: 'No account waits for verification.', rowAttrs: (a) => ({ 'data-testid': 'verify-row', 'data-player-id': playerOf(a) }), caption: 'Provisional accounts' },
    ),
  );
}

/** The pending withdrawals shown, oldest first, and the next page's cursor. */
let shownWithdrawals = [];
let nextWithdrawals = null;

async function loadWithdrawals(more = false) {
  const page = await api.withdrawals('pending', more ? nextWithdrawals : undefined);
  shownWithdrawals = more ? shownWithdrawals.concat(page.withdrawals) : page.withdrawals;
  nextWithdrawals = page.next_cursor ?? null;
  const withdrawals = shownWithdrawals;
  fill(
    $('#withdrawal-queue'),
    table(
      [
        ['#', (w) => w.id, 'num'],
        ['Player', (w) => (w.username ? h('a', { href: `#/players/${w.player_id}` }, w.username) : '—')],
        ['Amount', (w) => euros(w.amount_cents), 'num'],
        ['To IBAN', (w) => groupIban(w.iban) ?? '—'],
        ['Asked', (w) => timeNode(when(w, 'requested_at'))],
        ['Account', (w) => (w.closing ? h('span', { class: 'state closed' }, 'account closing') : '')],
        [
          '',
          (w) =>
            h(
              'span',
              { class: 'buttons' },
              h('button', { type: 'button', class: 'small', 'data-action': 'approve', 'data-id': w.id, 'data-amount': w.amount_cents, 'data-name': w.username ?? '', 'data-testid': `approve-${w.id}` }, 'Approve…'),
              h('button', { type: 'button', class: 'small danger-quiet', 'data-action': 'reject', 'data-id': w.id, 'data-amount': w.amount_cents, 'data-name': w.username ?? '', 'data-testid': `reject-${w.id}` }, 'Reject…'),
            ),
          'actions',
        ],
      ],
      withdrawals,
      { empty: 'No withdrawal waits.', rowAttrs: (w) => ({ 'data-testid': 'withdrawal-row', 'data-withdrawal-id': w.id }), caption: 'Pending withdrawals' },
    ),
    nextWithdrawals
      ? h('button', { type: 'button', class: 'quiet', 'data-action': 'more-withdrawals', 'data-testid': 'withdrawals-more' }, 'Later withdrawals')
      : null,
  );
}

async function load() {
  const work = [];
  if (appRef.can('players')) work.push(loadAccounts());
  if (appRef.can('withdrawals')) work.push(loadWithdrawals());
  await Promise.all(work);
}

async function act(button) {
  const id = Number(button.dataset.id);
  const name = button.dataset.name;
  const amount = euros(Number(button.dataset.amount));
  let done = null;
  if (button.dataset.action === 'more-withdrawals') {
    await loadWithdrawals(true);
    return;
  }
  if (button.dataset.action === 'verify') {
    const iban = button.dataset.iban;
    done = await confirmAction({
      title: `Verify ${name}?`,
      text: `Confirm that the identity documents were checked and that the IBAN ${groupIban(iban)} is in the player's name. The account may then withdraw. If the IBAN changed since this list was read, the verification is refused.`,
      ok: 'Verify',
      action: () => api.verify(id, iban),
    });
    if (done) notice(`${name} is verified.`);
  } else if (button.dataset.action === 'approve') {
    done = await confirmAction({
      title: `Approve withdrawal #${id}?`,
      text: `${amount} to ${name || 'the player'}'s verified IBAN: confirm the transfer is made. It is recorded as paid out.`,
      ok: `Approve ${amount}`,
      action: () => api.approve(id),
    });
    if (done) notice(`Withdrawal #${id} (${amount}) is paid.`);
  } else if (button.dataset.action === 'reject') {
    done = await confirmAction({
      title: `Reject withdrawal #${id}?`,
      text: `${amount} goes back to ${name || 'the player'}'s balance.`,
      ok: 'Reject',
      reason: true,
      action: (reason) => api.reject(id, reason),
    });
    if (done) notice(`Withdrawal #${id} is rejected; ${amount} is back on the balance.`);
  }
  if (done) await load();
}

export const queues = {
  setup(app) {
    appRef = app;
    $('#screen-queues').addEventListener('click', async (event) => {
      const button = event.target.closest('button[data-action]');
      if (!button) return;
      try {
        await act(button);
      } catch (failure) {
        showError(failure);
      }
    });
  },
  async show() {
    try {
      await load();
    } catch (failure) {
      showError(failure);
    }
  },
};
