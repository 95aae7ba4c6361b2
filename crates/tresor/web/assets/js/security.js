//! Passwords, e-mail and sessions on the page (docs/ACCOUNT.md, "Passwords
//! and e-mail", "Sessions"): on the account screen, the password change,
//! the address on file and its confirmation, the open sessions (ending one
//! or all the others); the "forgotten password" screen, the screen a reset
//! link opens (#/reset/TOKEN), the one a confirmation link opens
//! (#/confirm-email/TOKEN) and the one that undoes an address change
//! (#/undo-email/TOKEN, mailed to the old address).

import { api } from './api.js';
import { t, dateTime, setText } from './i18n.js';
import { $, h, onSubmit } from './util.js';

/** A refusal of the current password given (the server names its field). */
export function wrongPassword(error) {
  return error?.code === 'validation' && String(error.message ?? '').startsWith('current_password');
}

export function setupSecurity(app) {
  let sessions = [];

  function renderEmail() {
    const account = app.state.account;
    const box = $('#email-box');
    box.hidden = !account?.has_identity;
    if (box.hidden) return;
    const email = account.identity?.email;
    $('#email-current').textContent = !email
      ? t('email.none')
      : account.email_confirmed_at
        ? t('email.confirmed', { email })
        : t('email.unconfirmed', { email });
    $('#email-current').dataset.confirmed = String(Boolean(account.email_confirmed_at));
  }

  /** A session's device in the page's language, from the browser and the
   * system the server read in its User-Agent (src/account/device.rs). */
  function device(s) {
    if (s.browser === undefined && s.system === undefined) return s.device;
    const phone = s.system === 'iPhone' || s.system === 'iPad' || s.system === 'Android' ? '.phone' : '';
    if (s.browser && s.system) return t(`device.on${phone}`, { browser: s.browser, system: s.system });
    if (s.browser) return t('device.browser', { browser: s.browser });
    if (s.system) return t(`device.system${phone}`, { system: s.system });
    return t('device.unknown');
  }

  function renderSessions() {
    const list = $('#sessions');
    list.replaceChildren(
      ...sessions.map((s) =>
        h(
          'li',
          { 'data-testid': 'session-row', 'data-current': String(s.current) },
          h('span', { class: 'session-device', 'data-testid': 'session-device' }, device(s)),
          ' · ',
          h('span', {}, s.address ?? '—'),
          ' · ',
          h('span', {}, t('sessions.last', { date: dateTime(s.last_used_at) })),
          s.current
            ? h('strong', {}, ` ${t('sessions.current')}`)
            : h(
                'button',
                { type: 'button', class: 'link', 'data-testid': 'session-end', onclick: () => endSession(s.id) },
                t('sessions.end'),
              ),
        ),
      ),
    );
    $('#sessions-end-others').hidden = sessions.filter((s) => !s.current).length === 0;
  }

  async function loadSessions() {
    if (!app.state.me) return;
    try {
      sessions = (await api.sessions()).sessions;
      renderSessions();
    } catch (error) {
      app.showError(error, $('#sessions-error'));
    }
  }

  async function endSession(id) {
    $('#sessions-error').textContent = '';
    try {
      const done = id ? await api.endSession(id) : await api.endOtherSessions();
      setText($('#sessions-notice'), 'sessions.ended', { n: done.sessions_ended });
      app.say($('#sessions-notice').textContent);
    } catch (error) {
      app.showError(error, $('#sessions-error'));
    }
    await loadSessions();
  }

  $('#sessions-end-others').addEventListener('click', () => endSession(null));

  /** A refusal where the current password was asked: a wrong one in the page's words. */
  function passwordRefused(failure, line) {
    if (wrongPassword(failure)) setText(line, 'password.wrong');
    else app.showError(failure, line);
  }

  onSubmit(
    app,
    'password',
    async ({ notice }) => {
      const done = await api.changePassword($('#password-current').value, $('#password-new').value);
      $('#password-current').value = '';
      $('#password-new').value = '';
      setText(notice, 'password.changed', { n: done.sessions_ended });
      app.say(notice.textContent);
      await loadSessions();
    },
    passwordRefused,
  );

  onSubmit(
    app,
    'email',
    async ({ notice }) => {
      app.setAccount(await api.setEmail($('#email-input').value.trim(), $('#email-password').value));
      $('#email-input').value = '';
      $('#email-password').value = '';
      setText(notice, 'email.sent');
      app.say(notice.textContent);
      renderEmail();
    },
    passwordRefused,
  );

  onSubmit(app, 'forgot', async ({ notice }) => {
    await api.askReset($('#forgot-email').value.trim());
    setText(notice, 'forgot.sent');
    app.say(notice.textContent);
  });

  /**
   * A mailed link followed, on the screen it opens (`#confirm-text`):
   * `send` its token, then say `done` (a text's key) and do `then`; a
   * refusal is said instead.
   */
  async function followLink(send, done, then) {
    const node = $('#confirm-text');
    node.textContent = '';
    try {
      await send();
      setText(node, done);
      node.dataset.kind = 'notice';
      await then();
    } catch (error) {
      app.showError(error, node);
    }
  }

  let resetToken = null;
  onSubmit(
    app,
    'reset',
    async ({ notice }) => {
      await api.resetPassword(resetToken ?? '', $('#reset-password').value);
      $('#reset-password').value = '';
      $('#reset-form').hidden = true;
      setText(notice, 'reset.done');
      app.say(notice.textContent);
      // Every session ended, this one too.
      if (app.state.me) app.loggedOut();
    },
    (failure, line) => app.showError(failure?.status === 401 ? { ...failure, code: 'invalid_token' } : failure, line),
  );

  return {
    /** The account screen's part: the address, and the sessions read again. */
    async show() {
      renderEmail();
      await loadSessions();
    },
    render: renderEmail,
    /** Writes the address and the sessions again in the new language. */
    relabel() {
      renderEmail();
      renderSessions();
    },
    /** The screen a reset link opens. */
    showReset(token) {
      resetToken = token ?? null;
      $('#reset-form').hidden = false;
      $('#reset-notice').textContent = '';
      $('#reset-error').textContent = '';
    },
    /** The screen the link mailed to an old address opens: undoes the
     *  address change at once (every session ends, this one too). */
    undoEmail(token) {
      return followLink(
        () => api.undoEmail(token ?? ''),
        'undo.done',
        async () => {
          if (app.state.me) app.loggedOut();
        },
      );
    },
    /** The screen a confirmation link opens: confirms at once. */
    confirmEmail(token) {
      return followLink(
        () => api.confirmEmail(token ?? ''),
        'confirm.done',
        async () => {
          if (app.state.me) app.setAccount(await api.account());
        },
      );
    },
  };
}
