//! The queues: provisional accounts waiting for their identity check
//! (role `players`: where each stands first, those ready to verify at the
//! top, then those with documents to review; who the person is beside
//! their documents, each opened (named by the type read from its bytes),
//! verified or refused with a reason; the account verified once both
//! documents are, naming the IBAN reviewed; an IBAN changed since the
//! opening is marked), and pending withdrawals, oldest first, a page at
//! a time (role `withdrawals`: approve, or reject with a reason the player
//! sees). Each asks first.

import { api } from './api.js';
import { $, h, euros, fill, groupIban, table, timeNode, notice, confirmAction, raw, onActions, showingErrors } from './util.js';

let appRef = null;

/** A time the API gives as RFC 3339, or in milliseconds under `*_ms`. */
function when(row, name) {
  if (row[name]) return row[name];
  const ms = row[`${name}_ms`];
  return ms ? new Date(ms).toISOString() : null;
}

const playerOf = (row) => row.player_id ?? row.id;

const KINDS = [
  ['identity', 'Identity document'],
  ['iban_proof', 'Proof of IBAN'],
];

/** The latest document of `kind` (the list is newest first). */
const latestOf = (a, kind) => (a.documents ?? []).find((d) => d.kind === kind) ?? null;
const documentsVerified = (a) => KINDS.every(([kind]) => latestOf(a, kind)?.status === 'verified');

/**
 * Where an account stands, the queue's first column and its order: ready to
 * verify (both documents verified), documents to review (one waits), waiting
 * for the player (one refused, or one of the two not sent), nothing sent.
 */
const STAGES = ['ready to verify', 'documents to review', 'waiting for the player', 'nothing sent'];
const STAGE_CLASS = ['open', 'pending', 'closed', 'closed'];
function stage(a) {
  if (documentsVerified(a)) return 0;
  const latest = KINDS.map(([kind]) => latestOf(a, kind));
  if (latest.some((d) => d?.status === 'pending')) return 1;
  if (latest.some((d) => d)) return 2;
  return 3;
}

/** The queue's order: by stage, then the provisional period ending first. */
function queueOrder(accounts) {
  const until = (a) => Date.parse(when(a, 'provisional_until') ?? '') || Infinity;
  return accounts
    .map((a) => ({ a, stage: stage(a) }))
    .sort((x, y) => x.stage - y.stage || until(x.a) - until(y.a) || playerOf(x.a) - playerOf(y.a))
    .map(({ a }) => a);
}

/** The type the server found in the file's bytes (never the name sent). */
const TYPES = { 'application/pdf': 'PDF', 'image/jpeg': 'JPEG photo', 'image/png': 'PNG photo' };

/** The name the player's file had: cut with an ellipsis, the whole on hover. */
function sentName(name) {
  return h('span', { class: 'doc-name', title: name, 'data-testid': 'doc-name' }, raw(name));
}

/** Who the person is: names, birth date and place, address. */
function person(a) {
  const i = a.identity;
  return h(
    'div',
    { class: 'person' },
    h('a', { href: `#/players/${playerOf(a)}` }, raw(a.username)),
    i
      ? h(
          'div',
          { class: 'identity', 'data-testid': `identity-${playerOf(a)}`, 'data-no-tr': true },
          h('div', {}, h('strong', {}, `${i.first_names} ${i.birth_name}`)),
          h('div', {}, `${i.birth_date}, ${i.birth_place}`),
          h('div', {}, i.address),
        )
      : null,
  );
}

/** Each kind's latest document: its status, a link to open it, and the review buttons while it waits. */
function documentCell(a) {
  return h(
    'ul',
    { class: 'documents' },
    KINDS.map(([kind, label]) => {
      const d = latestOf(a, kind);
      const status = d ? d.status : 'missing';
      return h(
        'li',
        { 'data-testid': `doc-${playerOf(a)}-${kind}`, 'data-status': status },
        h('span', {}, `${label}: `),
        h('span', { class: `state ${status === 'verified' ? 'open' : status === 'refused' ? 'banned' : 'pending'}` }, d ? status : 'not sent'),
        d
          ? h(
              'span',
              { class: 'buttons' },
              h('a', { href: `/console/api/documents/${d.id}`, target: '_blank', rel: 'noopener', 'data-testid': `doc-open-${d.id}`, 'data-type': d.content_type, class: 'small' }, `Open the ${TYPES[d.content_type] ?? 'file'}`),
              d.status === 'pending'
                ? [
                    h('button', { type: 'button', class: 'small', 'data-action': 'doc-verify', 'data-id': d.id, 'data-kind': label, 'data-name': a.username, 'data-testid': `doc-verify-${d.id}` }, 'Document verified…'),
                    h('button', { type: 'button', class: 'small danger-quiet', 'data-action': 'doc-refuse', 'data-id': d.id, 'data-kind': label, 'data-name': a.username, 'data-testid': `doc-refuse-${d.id}` }, 'Refuse…'),
                  ]
                : null,
            )
          : null,
        d ? h('div', { class: 'hint doc-sent' }, h('span', {}, 'sent as'), ' ', sentName(d.name)) : null,
        d?.status === 'refused' && d.reason ? h('div', { class: 'hint' }, `Refused: ${d.reason}`) : null,
      );
    }),
  );
}

async function loadAccounts() {
  const { accounts } = await api.accounts('provisional');
  fill(
    $('#verify-queue'),
    table(
      [
        [
          'State',
          (a) => {
            const at = stage(a);
            return h('span', { class: `state ${STAGE_CLASS[at]}`, 'data-testid': 'queue-stage', 'data-stage': at }, STAGES[at]);
          },
        ],
        ['Documents', documentCell],
        ['Person', person],
        ['Provisional until', (a) => timeNode(when(a, 'provisional_until'))],
        [
          'IBAN',
          (a) =>
            h(
              'div',
              {},
              h('div', {}, groupIban(a.iban) ?? '—'),
              h(
                'span',
                { 'data-testid': 'iban-given', class: 'hint' },
                timeNode(when(a, 'iban_set_at')),
                a.iban_changes > 0 ? h('span', { class: 'state pending', 'data-testid': 'iban-changed' }, ` changed ×${a.iban_changes}`) : null,
              ),
            ),
        ],
        ['Ban list', (a) => (a.banned ? h('span', { class: 'state banned' }, 'banned') : '')],
        [
          'Account',
          (a) =>
            documentsVerified(a)
              ? h('button', { type: 'button', class: 'small', 'data-action': 'verify', 'data-id': playerOf(a), 'data-name': a.username, 'data-iban': a.iban ?? '', 'data-testid': `verify-${playerOf(a)}` }, 'Verify…')
              : h('span', { class: 'hint', 'data-testid': `verify-${playerOf(a)}-waits` }, 'Documents first'),
          'actions',
        ],
      ],
      queueOrder(accounts),
      { empty: 'No account waits for verification.', rowAttrs: (a) => ({ 'data-testid': 'verify-row', 'data-player-id': playerOf(a), 'data-stage': stage(a) }), caption: 'Provisional accounts' },
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
        [
          'Account',
          (w) =>
            h(
              'span',
              {},
              w.closing ? h('span', { class: 'state closed' }, 'account closing') : null,
              // Approving is refused while the account is suspended.
              w.suspended ? h('span', { class: 'state banned', 'data-testid': `suspended-${w.id}` }, 'account suspended') : null,
            ),
        ],
        [
          '',
          (w) =>
            h(
              'span',
              { class: 'buttons' },
              w.suspended
                ? h('span', { class: 'hint', 'data-testid': `approve-${w.id}-suspended` }, 'Not paid while suspended')
                : h('button', { type: 'button', class: 'small', 'data-action': 'approve', 'data-id': w.id, 'data-amount': w.amount_cents, 'data-name': w.username ?? '', 'data-testid': `approve-${w.id}` }, 'Approve…'),
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
  if (button.dataset.action === 'doc-verify') {
    done = await confirmAction({
      title: `Verify ${name}'s document?`,
      text: `${button.dataset.kind}: confirm that you opened it and that it is in order.`,
      ok: 'Document verified',
      action: () => api.verifyDocument(id),
    });
    if (done) notice(`${name}'s document is verified.`);
  } else if (button.dataset.action === 'doc-refuse') {
    done = await confirmAction({
      title: `Refuse ${name}'s document?`,
      text: `${button.dataset.kind}: the player reads your reason and sends another one.`,
      ok: 'Refuse',
      reason: true,
      action: (reason) => api.refuseDocument(id, reason),
    });
    if (done) notice(`${name}'s document is refused.`);
  } else if (button.dataset.action === 'verify') {
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
    onActions($('#screen-queues'), act);
  },
  show() {
    return showingErrors(load);
  },
};
