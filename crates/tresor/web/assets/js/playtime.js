//! Time played this session, shown in the header, and the reminder window.
//!
//! "This session" starts when the player logged in (or opened the
//! account): `/api/account` gives `session_elapsed_s` by the server's
//! clock, and the page adds what its own clock (`util.clock`) has counted
//! since that answer. With a reminder every N minutes, a window comes after
//! each N minutes played; it closes only by its button, and play waits
//! until it has been acknowledged. Acknowledged reminders are remembered for
//! the session in sessionStorage, so a reload does not show them again.

import { t } from './i18n.js';
import { $, clock, showDialog } from './util.js';

/** Milliseconds as "moins d'une minute", "12 min", "1 h 05 min". */
export function formatPlayed(ms) {
  const minutes = Math.floor(ms / 60000);
  if (minutes < 1) return t('played.less');
  if (minutes < 60) return t('played.min', { m: minutes });
  return t('played.hmin', { h: Math.floor(minutes / 60), m: String(minutes % 60).padStart(2, '0') });
}

function stored(key) {
  try {
    const value = sessionStorage.getItem(key);
    return value === null ? null : Number(value);
  } catch {
    return null;
  }
}

function store(key, value) {
  try {
    sessionStorage.setItem(key, String(value));
  } catch {
    // Not remembered: a reload may show the last reminder again.
  }
}

export function setupPlaytime(app) {
  const dialog = $('#dlg-reminder');
  const chip = $('#played');
  let base = null;
  let every = null;
  let showing = false;

  const playedMs = () => (base ? base.elapsedMs + (clock() - base.at) : 0);
  const key = () => `tresor.reminded.${base.startedAt}`;
  const due = () => (every ? Math.floor(playedMs() / (every * 60000)) : 0);
  const acknowledged = () => stored(key()) ?? 0;

  function renderText() {
    $('#dlg-reminder-text').textContent = t('reminder.dialog.text', { played: formatPlayed(playedMs()) });
  }

  async function remind() {
    const returnTo = document.activeElement;
    showing = true;
    dialog.dataset.playedS = String(Math.floor(playedMs() / 1000));
    renderText();
    app.game?.update();
    app.scratch?.update();
    app.say($('#dlg-reminder-text').textContent);
    // Escape does not dismiss it; should the browser close it anyway, it comes back.
    while ((await showDialog(dialog, { blocking: true })) !== 'ok' && base) {
      // Shown again at once.
    }
    if (base) store(key(), due());
    showing = false;
    app.game?.update();
    app.scratch?.update();
    // "Jouer" was disabled while the window waited: the focus goes back now.
    if (returnTo?.isConnected && typeof returnTo.focus === 'function') returnTo.focus();
  }

  function tick() {
    if (!base) {
      chip.textContent = '—';
      chip.dataset.seconds = '';
      return;
    }
    const ms = playedMs();
    chip.textContent = formatPlayed(ms);
    chip.dataset.seconds = String(Math.floor(ms / 1000));
    if (!showing && every && due() > acknowledged()) remind();
  }

  $('#dlg-reminder-ok').addEventListener('click', () => dialog.close('ok'));
  setInterval(tick, 1000);
  window.addEventListener('tresor-clock', tick);

  return {
    /** Takes the session's start and the reminder setting from an `/api/account` answer. */
    sync(account, { reminderChanged = false } = {}) {
      if (account.session_started_at) {
        base = { startedAt: account.session_started_at, elapsedMs: account.session_elapsed_s * 1000, at: clock() };
      }
      if (!base) return;
      every = account.reminder_every_minutes ?? null;
      // A new setting counts from now: no window at once for the minutes already played.
      if (reminderChanged || stored(key()) === null) store(key(), due());
      tick();
    },
    /** Whether a reminder is waiting to be acknowledged: play waits. */
    blocking: () => showing,
    stop() {
      base = null;
      every = null;
      if (dialog.open) dialog.close('ok');
      tick();
    },
    relabel() {
      tick();
      if (showing) renderText();
    },
  };
}
