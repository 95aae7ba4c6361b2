//! The console's entry point: who is logged in, the navigation their role
//! allows, and the routing between screens with the URL hash (#/dashboard,
//! #/emissions, #/players, #/players/ID, #/queues, #/trail, #/site).

import { api, setUnauthorizedHandler } from './api.js';
import { $, notice } from './util.js';
import { applyStatic, currentLang, onLangChange, setLang, setText } from './i18n.js';
import { setupLogin } from './login.js';
import { dashboard } from './dashboard.js';
import { emissions } from './emissions.js';
import { players } from './players.js';
import { queues } from './queues.js';
import { trail } from './trail.js';
import { site } from './site.js';
import { reports } from './reports.js';
import { sessionHint } from './server.js';

/** Whether this browser had a session when last seen (asked of `/console/api/me` only then). */
const hint = sessionHint('tresor.console.session');

const screens = { dashboard, emissions, players, queues, trail, site, reports };

const app = {
  me: null,
  current: null,

  /** Whether the operator's role has `permission`. */
  can(permission) {
    return Boolean(app.me && app.me.permissions.includes(permission));
  },

  /** Whether any of the space-separated permissions in `needs` is held. */
  canAny(needs) {
    return needs.split(/\s+/).some((p) => app.can(p));
  },

  /** Logged in: remember it, show the navigation, go where the URL says. */
  signedIn(me) {
    app.me = me;
    hint(true);
    document.body.dataset.role = me.role;
    $('#who-name').textContent = me.username;
    setText($('#who-role'), me.role);
    $('#who').hidden = false;
    $('#nav').hidden = false;
    applyPermissions(document);
    route();
  },

  /** Logged out, or the session ended: back to the login screen. */
  signedOut(message) {
    app.me = null;
    hint(false);
    delete document.body.dataset.role;
    $('#who').hidden = true;
    $('#nav').hidden = true;
    leave();
    show('login');
    if (message) notice(message, 'error', 'unauthorized');
  },
};

/** Hides what the role may not do: every `[data-needs]` under `root`. */
function applyPermissions(root) {
  for (const node of root.querySelectorAll('[data-needs]')) node.hidden = !app.canAny(node.dataset.needs);
}

function leave() {
  // A confirmation belongs to the screen that asked it: leaving the screen
  // (the browser's back button, a link, the session ending) cancels it.
  for (const dialog of document.querySelectorAll('dialog[open]')) dialog.close('cancel');
  if (app.current && screens[app.current]?.hide) screens[app.current].hide();
  app.current = null;
}

function show(name) {
  for (const section of document.querySelectorAll('main > .screen')) section.hidden = section.dataset.screen !== name;
  for (const link of document.querySelectorAll('#nav a')) {
    if (link.dataset.route === name) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  document.body.dataset.screen = name;
}

function firstAllowed() {
  const link = [...document.querySelectorAll('#nav a')].find((a) => !a.hidden);
  return link ? link.dataset.route : null;
}

async function route() {
  if (!app.me) {
    show('login');
    return;
  }
  const [, name = '', arg] = location.hash.split('/');
  const link = document.querySelector(`#nav a[data-route="${CSS.escape(name)}"]`);
  if (!link || link.hidden || !screens[name]) {
    const fallback = firstAllowed();
    if (fallback && location.hash !== `#/${fallback}`) {
      location.replace(`#/${fallback}`);
      return;
    }
    if (!fallback) {
      show('login');
      return;
    }
  }
  const target = screens[name] ? name : firstAllowed();
  if (app.current !== target) {
    leave();
    show(target);
    app.current = target;
    document.querySelector(`#screen-${target} h1`)?.focus({ preventScroll: true });
  }
  document.body.dataset.loaded = '';
  try {
    await screens[target].show(app, arg ? decodeURIComponent(arg) : null);
  } finally {
    if (app.current === target) document.body.dataset.loaded = target;
  }
}

async function boot() {
  setUnauthorizedHandler(() => {
    if (app.me) app.signedOut('Your session has ended: log in again.');
  });
  applyStatic(document);
  const langButton = $('#lang');
  const labelLang = () => {
    const other = currentLang() === 'fr' ? 'en' : 'fr';
    langButton.textContent = other === 'en' ? 'English' : 'Français';
    langButton.lang = other;
    langButton.setAttribute('aria-label', other === 'en' ? 'Switch to English' : 'Passer en français');
  };
  labelLang();
  langButton.addEventListener('click', () => setLang(currentLang() === 'fr' ? 'en' : 'fr'));
  onLangChange(() => {
    labelLang();
    if (app.me) route();
  });
  for (const screen of Object.values(screens)) screen.setup?.(app);
  setupLogin(app);
  $('#logout').addEventListener('click', async () => {
    try {
      await api.logout();
    } catch {
      // The session may already be gone: logged out either way.
    }
    app.signedOut();
  });
  window.addEventListener('hashchange', () => route());
  if (hint()) {
    try {
      app.signedIn(await api.me());
    } catch {
      app.signedOut();
    }
  } else {
    app.signedOut();
  }
  document.body.dataset.ready = 'true';
}

boot();
