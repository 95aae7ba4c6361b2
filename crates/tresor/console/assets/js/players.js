//! Players: search by username, then one player's account, caps,
//! exclusion and statement (paged), and the operator's actions on them:
//! credit, exclude, suspend or lift a suspension (a reason required, for
//! the staff only), verify — each confirmed first.

import { api } from './api.js';
import { $, h, euros, count, fill, groupIban, table, timeNode, notice, showError, confirmAction, parseEuros, raw, amountPlaceholder } from './util.js';
import { setText } from './i18n.js';

let appRef = null;
let shown = null;
let statementCursor = null;

const PERIODS = [
  ['7d', '7 days'],
  ['1m', '1 month'],
  ['3m', '3 months'],
  ['6m', '6 months'],
  ['1y', '1 year'],
];

const MOVEMENTS = {
  deposit: 'Deposit',
  operator_credit: 'Operator credit',
  stake: 'Stake',
  win: 'Win',
  withdrawal_requested: 'Withdrawal requested',
  withdrawal_paid: 'Withdrawal paid',
  withdrawal_rejected: 'Withdrawal rejected',
  withdrawal_cancelled: 'Withdrawal cancelled',
  kept_in_reserve: 'Kept in reserve',
};

/** The account's status, and beside it what holds it: suspended (by the
 * operator), banned (the national list). */
function statusBadge(status, banned, suspended = false) {
  return h(
    'span',
    { class: 'badges' },
    h('span', { class: `state ${status}` }, status ?? '—'),
    suspended ? h('span', { class: 'state banned', 'data-testid': 'suspended-marker' }, 'suspended') : null,
    banned ? h('span', { class: 'state banned' }, 'banned') : null,
  );
}

/** The identity document and the proof of IBAN, each's latest verified. */
const KINDS = ['identity', 'iban_proof'];
const documentsVerified = (documents) =>
  KINDS.every((kind) => (documents ?? []).find((d) => d.kind === kind)?.status === 'verified');

async function search(text) {
  const { players } = await api.players(text, 50);
  fill(
    $('#player-results'),
    table(
      [
        ['Player', (p) => h('a', { href: `#/players/${p.id}`, 'data-testid': `player-link-${p.id}` }, raw(p.username))],
        ['Status', (p) => statusBadge(p.status, p.banned, p.suspended)],
        ['Balance', (p) => euros(p.balance_cents), 'num'],
        ['Opened', (p) => timeNode(p.opened_at)],
        ['Excluded until', (p) => timeNode(p.excluded_until)],
      ],
      players,
      { empty: text ? `No player’s username contains “${text}”.` : 'No player yet.', rowAttrs: (p) => ({ 'data-testid': 'player-row', 'data-player-id': p.id, 'data-suspended': String(Boolean(p.suspended)) }), caption: 'Players found' },
    ),
  );
}

function cap(name, view) {
  if (!view) return [h('dt', {}, name), h('dd', {}, '—')];
  const limited = view.limit_cents !== null && view.limit_cents !== undefined;
  return [
    h('dt', {}, name),
    h(
      'dd',
      { 'data-testid': `cap-${name.toLowerCase().split(' ')[0]}` },
      limited ? `${euros(view.used_cents)} used of ${euros(view.limit_cents)}, ${euros(view.left_cents)} left` : `${euros(view.used_cents)} used, no cap`,
      view.pending ? h('span', { class: 'muted' }, ` (raise to ${euros(view.pending.limit_cents)} from `, timeNode(view.pending.effective_at), ')') : null,
    ),
  ];
}

function movementsTable(movements) {
  return table(
    [
      ['When', (m) => timeNode(m.at)],
      ['Movement', (m) => MOVEMENTS[m.movement] ?? m.movement],
      ['Amount', (m) => euros(m.amount_cents), 'num'],
      ['Change', (m) => (m.delta_cents > 0 ? `+${euros(m.delta_cents)}` : euros(m.delta_cents)), 'num'],
      ['Balance after', (m) => euros(m.balance_cents), 'num'],
      ['Reference', (m) => (m.play_id ? `play ${m.play_id}` : m.deposit_id ? `deposit ${m.deposit_id}` : m.withdrawal_id ? `withdrawal ${m.withdrawal_id}` : '')],
    ],
    movements,
    { empty: 'No movement yet.', rowAttrs: (m) => ({ 'data-testid': 'movement-row', 'data-movement': m.movement }), caption: 'Statement' },
  );
}

async function loadStatement(id, more) {
  const page = await api.statement(id, more ? statementCursor : null, 20);
  statementCursor = page.next_cursor ?? null;
  const body = $('#statement-body');
  if (more) {
    const rows = movementsTable(page.movements).querySelector('tbody');
    const current = body.querySelector('tbody');
    if (rows && current) current.append(...rows.children);
  } else {
    fill(body, movementsTable(page.movements));
  }
  $('#statement-more').hidden = !statementCursor;
}

function actions(id, detail) {
  const account = detail.account ?? {};
  const player = detail.player ?? {};
  const parts = [];
  parts.push(
    h(
      'form',
      { class: 'inline-form', id: 'credit-form', 'data-testid': 'credit-form', novalidate: true },
      h('label', { for: 'credit-amount' }, 'Credit (€)'),
      h('input', { id: 'credit-amount', inputmode: 'decimal', placeholder: amountPlaceholder(), required: true, 'data-testid': 'credit-amount' }),
      h('button', { type: 'submit', 'data-testid': 'credit-submit' }, 'Credit…'),
    ),
  );
  parts.push(
    h(
      'form',
      { class: 'inline-form', id: 'exclude-form', 'data-testid': 'exclude-form', novalidate: true },
      h('label', { for: 'exclude-period' }, 'Exclude for'),
      h('select', { id: 'exclude-period', 'data-testid': 'exclude-period' }, PERIODS.map(([value, label]) => h('option', { value }, label))),
      h('button', { type: 'submit', class: 'danger-quiet', 'data-testid': 'exclude-submit' }, 'Exclude…'),
    ),
  );
  const suspended = Boolean(detail.suspension);
  parts.push(
    h(
      'form',
      { class: 'inline-form', id: 'suspend-form', 'data-testid': 'suspend-form', 'data-suspended': String(suspended), novalidate: true },
      h('label', { for: 'suspend-reason' }, suspended ? 'Lift the suspension, because' : 'Suspend, because'),
      h('input', { id: 'suspend-reason', maxlength: 500, required: true, 'data-testid': 'suspend-reason' }),
      h('button', { type: 'submit', class: suspended ? '' : 'danger-quiet', 'data-testid': 'suspend-submit' }, suspended ? 'Unsuspend…' : 'Suspend…'),
    ),
  );
  const status = account.status ?? player.status;
  if (status === 'provisional') {
    // Offered once both documents are verified: the server refuses before (documents_required).
    parts.push(
      documentsVerified(detail.documents)
        ? h('button', { type: 'button', id: 'verify-player', 'data-testid': 'verify-player' }, 'Mark as verified…')
        : h('span', { class: 'hint', 'data-testid': 'verify-player-waits' }, 'Documents first'),
    );
  }
  return h('div', { class: 'player-actions' }, parts);
}

async function showPlayer(id) {
  const detail = await api.player(id);
  shown = id;
  const player = detail.player ?? {};
  const account = detail.account ?? {};
  const limits = detail.limits ?? {};
  const identity = account.identity ?? {};
  const exclusion = detail.exclusion;
  const excludedUntil = exclusion?.excluded_until ?? (typeof exclusion === 'string' ? exclusion : player.excluded_until);
  const section = $('#player-detail');
  section.hidden = false;
  section.dataset.playerId = String(id);
  section.dataset.status = account.status ?? player.status ?? '';
  section.dataset.suspended = String(Boolean(detail.suspension));
  setText($('#player-detail-title'), `Player ${player.username ?? `#${id}`}`);
  fill(
    $('#player-body'),
    h(
      'div',
      { class: 'grid two' },
      h(
        'dl',
        { class: 'facts' },
        h('dt', {}, 'Status'),
        h('dd', { 'data-testid': 'player-status' }, statusBadge(account.status ?? player.status, account.banned ?? player.banned, Boolean(detail.suspension))),
        h('dt', {}, 'Balance'),
        h('dd', { 'data-testid': 'player-balance', 'data-cents': account.balance_cents ?? player.balance_cents }, euros(account.balance_cents ?? player.balance_cents)),
        h('dt', {}, 'Opened'),
        h('dd', {}, timeNode(account.opened_at ?? player.opened_at)),
        h('dt', {}, 'Verified'),
        h('dd', {}, timeNode(account.verified_at)),
        account.provisional_until ? [h('dt', {}, 'Provisional until'), h('dd', {}, timeNode(account.provisional_until))] : null,
        h('dt', {}, 'Identity'),
        h('dd', {}, account.has_identity ? `${identity.first_names ?? ''} ${identity.birth_name ?? ''}, born ${identity.birth_date ?? '?'}` : 'none (demo money)'),
        h('dt', {}, 'IBAN'),
        h('dd', { 'data-testid': 'player-iban' }, groupIban(detail.review?.iban ?? account.iban) ?? '—'),
        detail.review?.iban_set_at
          ? [
              h('dt', {}, 'IBAN given'),
              h('dd', {}, timeNode(detail.review.iban_set_at), detail.review.iban_changes > 0 ? ` (changed ×${detail.review.iban_changes})` : ''),
            ]
          : null,
      ),
      h(
        'dl',
        { class: 'facts' },
        cap('Deposit cap', limits.deposit),
        cap('Stake cap', limits.stake),
        h('dt', {}, 'Cap window'),
        h('dd', {}, limits.window_days ? `${limits.window_days} days` : '—'),
        h('dt', {}, 'Excluded until'),
        h('dd', { 'data-testid': 'player-excluded' }, timeNode(excludedUntil)),
        h('dt', {}, 'Suspended'),
        h(
          'dd',
          { 'data-testid': 'player-suspended' },
          detail.suspension ? [timeNode(detail.suspension.suspended_at), ` by ${detail.suspension.suspended_by}: ${detail.suspension.reason}`] : 'no',
        ),
        h('dt', {}, 'Rules accepted'),
        h('dd', {}, account.rules_version_accepted ? `version ${account.rules_version_accepted} (in force: ${account.rules_version_current ?? '?'})` : '—'),
      ),
    ),
    appRef.can('players') ? actions(id, detail) : null,
    h('h3', {}, 'Statement'),
    h('div', { id: 'statement-body', 'data-testid': 'statement' }),
    h('button', { type: 'button', id: 'statement-more', class: 'quiet', hidden: true }, 'Older movements'),
  );
  await loadStatement(id, false);
  wire(id, player.username ?? `#${id}`, detail.review?.iban ?? '');
}

/** After an action: the player again, and the list (balances, status). */
async function refresh(id) {
  await Promise.all([showPlayer(id), search($('#player-q').value.trim())]);
}

function wire(id, name, iban) {
  $('#statement-more').addEventListener('click', () => loadStatement(id, true).catch(showError));
  $('#credit-form')?.addEventListener('submit', async (event) => {
    event.preventDefault();
    const cents = parseEuros($('#credit-amount').value);
    if (!cents) {
      notice('Give an amount in euros, such as 10 or 10.50.', 'error', 'validation');
      return;
    }
    try {
      const done = await confirmAction({
        title: `Credit ${euros(cents)} to ${name}?`,
        text: 'The money goes to the player’s balance at once, recorded as an operator credit in the statement and the trail.',
        ok: `Credit ${euros(cents)}`,
        action: () => api.credit(id, cents),
      });
      if (done) {
        notice(`${euros(cents)} credited to ${name}; balance ${euros(done.balance_cents)}.`);
        await refresh(id);
      }
    } catch (failure) {
      showError(failure);
    }
  });
  $('#exclude-form')?.addEventListener('submit', async (event) => {
    event.preventDefault();
    const select = $('#exclude-period');
    const label = select.options[select.selectedIndex].textContent;
    try {
      const done = await confirmAction({
        title: `Exclude ${name} for ${label}?`,
        text: 'The player can neither stake nor deposit until the exclusion ends, and every session of theirs ends now. It cannot be shortened.',
        ok: 'Exclude',
        action: () => api.exclude(id, select.value),
      });
      if (done) {
        notice(`${name} is excluded for ${label}.`);
        await refresh(id);
      }
    } catch (failure) {
      showError(failure);
    }
  });
  $('#suspend-form')?.addEventListener('submit', async (event) => {
    event.preventDefault();
    const reason = $('#suspend-reason').value.trim();
    const lifting = $('#suspend-form').dataset.suspended === 'true';
    if (reason.length < 3) {
      notice('Give a reason (3 to 500 characters): the staff read it, the player does not.', 'error', 'validation');
      return;
    }
    try {
      const done = await confirmAction(
        lifting
          ? {
              title: `Lift the suspension of ${name}?`,
              text: 'The player may deposit and stake again; a withdrawal held may be approved.',
              ok: 'Unsuspend',
              action: () => api.unsuspend(id, reason),
            }
          : {
              title: `Suspend ${name}?`,
              text: 'Every session of the player ends now; afterwards the player may log in only to read their balance and statement and ask for a withdrawal, which is held until the suspension is lifted. Deposits and stakes are refused with a neutral message. The reason stays with the staff.',
              ok: 'Suspend',
              action: () => api.suspend(id, reason),
            },
      );
      if (done) {
        notice(lifting ? `${name} is no longer suspended.` : `${name} is suspended.`);
        await refresh(id);
      }
    } catch (failure) {
      showError(failure);
    }
  });
  document.getElementById('verify-player')?.addEventListener('click', async () => {
    try {
      const done = await confirmAction({
        title: `Verify ${name}?`,
        text: `Confirm that the identity documents were checked and that the IBAN ${groupIban(iban)} is in the player's name. The account may then withdraw. If the IBAN changed since this page was read, the verification is refused.`,
        ok: 'Verify',
        action: () => api.verify(id, iban),
      });
      if (done) {
        notice(`${name} is verified.`);
        await refresh(id);
      }
    } catch (failure) {
      showError(failure);
    }
  });
}

export const players = {
  setup(app) {
    appRef = app;
    $('#player-search').addEventListener('submit', (event) => {
      event.preventDefault();
      const text = $('#player-q').value.trim();
      search(text).catch(showError);
    });
  },
  async show(app, id) {
    try {
      if (!$('#player-results').childElementCount) await search($('#player-q').value.trim());
      if (id) await showPlayer(Number(id));
      else {
        shown = null;
        $('#player-detail').hidden = true;
      }
    } catch (failure) {
      showError(failure);
    }
  },
  hide() {
    shown = null;
  },
};
