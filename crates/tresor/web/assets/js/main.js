//! The page's entry point: loads the sale status, the island and the player,
//! routes between screens with the URL hash (#/ the island, #/games the
//! lobby, #/play/ID a game of the catalogue, #/free/ID (#/free the island)
//! the same game tried for free with play money (free.js), #/history, #/account,
//! #/account/deposit/ID (back from the payment provider), #/statement,
//! #/rules, #/fairness, #/login, #/register, #/replay/ID), keeps the balance,
//! the account, the time played, the site message and the language in step,
//! and speaks to screen readers.

import { api } from './api.js';
import { t, money, dateTime, setLang, currentLang, applyStatic, onLangChange } from './i18n.js';
import { installDefs } from './scene.js';
import { EMBLEM } from './art.js';
import { Game } from './game.js';
import { ScratchGame } from './scratch.js';
import { setupLobby, findGame, loadGames } from './lobby.js';
import { FreeMode } from './free.js';
import { setupOdds } from './odds.js';
import { setupAuth, setupAccount, setupHistory, loadRules } from './screens.js';
import { setupFairness } from './fairness.js';
import { setupMoney, setupOpening } from './account.js';
import { setupPlaytime } from './playtime.js';
import { setupSecurity } from './security.js';
import { setupDocuments } from './documents.js';
import { $, period } from './util.js';
import { sessionHint } from './server.js';

/** Whether this browser was logged in when last seen (asked of `/api/me` only then). */
const loggedInHint = sessionHint('tresor.session');

const FALLBACK_ISLAND = { width: 12, height: 9, land: [], start: [5, 4] };

const state = { status: null, island: null, me: null, account: null };
/** How often the page asks whether its session still holds. */
const SESSION_CHECK_MS = 30000;
let meVersion = 0;

const app = {
  state,
  dateTime,
  game: null,
  scratch: null,
  playtime: null,
  /** The free mode's play money and marks (free.js), shared by both game screens. */
  free: null,

  /** Keeps the account read from `/api/account` (or an answer with its body). */
  setAccount(account, options) {
    state.account = { ...(state.account ?? {}), ...account };
    playtime?.sync(state.account, options);
    wallet?.render();
    documents?.render();
  },

  /** The rules window before a purchase; resolves true once accepted. */
  askRules: (version) => wallet.askRules(version),

  /** Speaks `text` to screen readers through the live region. */
  say(text) {
    const live = $('#live');
    const line = document.createElement('p');
    line.textContent = text;
    live.append(line);
    while (live.children.length > 6) live.firstElementChild.remove();
  },

  /**
   * Shows an API error's message in `node`: in the page's language for the
   * refusals i18n.js knows (`error.code.*`), the server's own message for
   * those with figures (`deposit_limit_reached`, `stake_limit_reached`,
   * `excluded`, `rate_limited`, ...). A 401 means the session has expired: say so and
   * go back to the log-in screen.
   */
  showError(error, node) {
    if (error && (error.code === 'unauthorized' || (error.status === 401 && error.code !== 'invalid_credentials'))) {
      app.sessionExpired();
      return;
    }
    // A refusal that says nothing more than its code is told in the page's
    // language; one with figures (a cap, a date) keeps the server's words.
    const known = error?.code && t(`error.code.${error.code}`);
    const message = error?.code === 'network'
      ? t('error.network')
      : known && known !== `error.code.${error.code}` ? known : error?.message || t('error.generic');
    node.textContent = message;
    node.dataset.kind = 'error';
    node.dataset.code = error?.code ?? '';
  },

  setMe(me) {
    meVersion++;
    loggedInHint(true);
    state.me = me;
    renderUser();
  },

  /** Fetches the player again; an answer older than a later change is dropped. */
  async refreshMe() {
    const version = ++meVersion;
    try {
      const me = await api.me();
      if (version === meVersion) {
        state.me = me;
        renderUser();
      }
    } catch (error) {
      if (error.code === 'unauthorized') app.sessionExpired();
    }
  },

  /** Moves the balance shown at once, before the server confirms it. */
  adjustBalance(cents) {
    if (!state.me) return;
    meVersion++;
    state.me.balance_cents += cents;
    renderUser();
  },

  async refreshStatus() {
    try {
      state.status = await api.status();
    } catch {
      // Keep the last known status.
    }
    renderStatus();
    game.update();
    scratch.update();
  },

  loggedIn(me) {
    app.setMe(me);
    wallet.refresh();
    if (['game', 'play', 'games', 'free'].includes(currentRoute().name)) route();
    else location.hash = '#/';
  },

  /** The server no longer knows the session: log out and ask to log in again. */
  sessionExpired() {
    const wasIn = Boolean(state.me);
    app.loggedOut();
    const error = $('#login-error');
    error.textContent = t('session.expired');
    error.dataset.kind = 'error';
    error.dataset.code = 'session_expired';
    if (wasIn) app.say(t('session.expired'));
    location.hash = '#/login';
  },

  loggedOut() {
    state.me = null;
    state.account = null;
    playtime?.stop();
    loggedInHint(false);
    meVersion++;
    renderUser();
    if (game.mode !== 'idle') game.showIdle();
    scratch.reset();
    const route = currentRoute().name;
    if (NEEDS_USER.includes(route)) location.hash = '#/login';
  },
};

let game;
let scratch;
let lobby;
let account;
let history;
let fairness;
let wallet;
let opening;
let playtime;
let security;
let documents;

function renderUser() {
  const me = state.me;
  document.body.dataset.user = me ? 'in' : 'out';
  for (const node of document.querySelectorAll('[data-needs]')) {
    node.hidden = node.dataset.needs === 'user' ? !me : Boolean(me);
  }
  const text = me ? money(me.balance_cents) : t('balance.none');
  for (const node of [$('#balance'), $('#foot-balance')]) {
    if (node.textContent !== text && me) {
      node.classList.remove('flash');
      void node.offsetWidth;
      node.classList.add('flash');
    }
    node.textContent = text;
    node.dataset.cents = me ? String(me.balance_cents) : '';
  }
  account?.render();
  game?.update();
  scratch?.update();
}

function renderStatus() {
  const node = $('#site-message');
  const status = state.status;
  const lines = [];
  if (status && status.closed_after_restore) {
    lines.push(t('sales.closed_after_restore'));
  } else if (status && !status.sales_open) {
    lines.push(status.opens_at ? t('sales.opens', { date: dateTime(status.opens_at) }) : t('sales.closed'));
  }
  if (status && status.message) lines.push(status.message);
  node.textContent = lines.join(' ');
  node.hidden = lines.length === 0;
  opening?.render();
}

function currentRoute() {
  const hash = location.hash.replace(/^#\/?/, '');
  const [name, ...rest] = hash.split('/');
  return { name: name || 'game', arg: rest[0], rest };
}

const SCREENS = ['game', 'games', 'scratch', 'history', 'account', 'statement', 'login', 'register', 'rules', 'fairness', 'forgot', 'reset', 'confirm'];
const NEEDS_USER = ['history', 'account', 'statement'];

async function route() {
  let { name, arg, rest } = currentRoute();
  if (NEEDS_USER.includes(name) && !state.me) name = 'login';
  if ((name === 'login' || name === 'register') && state.me) name = 'game';
  const undo = name === 'undo-email';
  if (name === 'confirm-email' || undo) name = 'confirm';
  if (name === 'forgot' && state.me) name = 'account';
  // A game of the catalogue, or a play shown again, is on its kind's screen.
  let picked = null;
  let replayed = null;
  const free = name === 'free';
  if ((name === 'play' || free) && arg) picked = await findGame(decodeURIComponent(arg));
  if (name === 'replay' && arg && state.me) {
    try {
      replayed = await api.play(Number(arg));
      if (replayed.scenario?.kind === 'scratch') picked = (await findGame(replayed.game?.id)) ?? replayed.game;
    } catch {
      replayed = null;
    }
  }
  const scratchKind = picked?.kind === 'scratch';
  const screen = scratchKind ? 'scratch' : ['replay', 'play', 'free'].includes(name) ? 'game' : SCREENS.includes(name) && name !== 'scratch' ? name : 'game';
  for (const id of SCREENS) $(`#screen-${id}`).hidden = id !== screen;
  for (const link of document.querySelectorAll('.nav a')) {
    // The games' link stands for the lobby and every game's screen.
    const section = screen === 'scratch' || screen === 'game' ? 'games' : screen;
    if (link.dataset.route === section) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  document.body.dataset.screen = screen;
  if (screen !== 'game') {
    const heading = $(`#screen-${screen} h1`);
    heading.tabIndex = -1;
    heading.focus({ preventScroll: true });
    window.scrollTo(0, 0);
  }
  if (screen === 'scratch' && replayed) await scratch.replay(replayed, picked);
  else if (screen === 'scratch') await scratch.enter(picked, free);
  else if (screen === 'game' && name === 'replay' && arg) await game.replay(Number(arg));
  else if (screen === 'game') await game.enter(free);
  else if (screen === 'games') await lobby.show();
  else if (screen === 'history') await history.show();
  else if (screen === 'account') {
    account.render();
    await Promise.all([wallet.show(rest), security.show(), documents.refresh()]);
  } else if (screen === 'reset') security.showReset(arg);
  else if (screen === 'confirm' && undo) await security.undoEmail(arg); else if (screen === 'confirm') await security.confirmEmail(arg); else if (screen === 'statement') await wallet.showStatement();
  else if (screen === 'rules') await loadRules($('#rules-text'), currentLang());
  else if (screen === 'fairness') await fairness.show();
}

async function boot() {
  installDefs();
  $('#emblem').innerHTML = EMBLEM;
  applyStatic(document);
  app.free = new FreeMode(app);
  game = new Game(app);
  scratch = new ScratchGame(app);
  lobby = setupLobby(app);
  setupOdds(loadGames);
  account = setupAccount(app);
  history = setupHistory(app);
  fairness = setupFairness(app);
  setupAuth(app);
  wallet = setupMoney(app);
  opening = setupOpening(app);
  playtime = setupPlaytime(app);
  security = setupSecurity(app);
  documents = setupDocuments(app);
  app.game = game;
  app.scratch = scratch;
  app.playtime = playtime;

  $('#lang').addEventListener('click', () => setLang(currentLang() === 'fr' ? 'en' : 'fr'));
  $('#logout').addEventListener('click', async () => {
    try {
      await api.logout();
    } catch {
      // Logged out here all the same.
    }
    app.loggedOut();
    location.hash = '#/';
  });
  $('#rules-other').addEventListener('click', () => {
    const rules = $('#rules-text');
    loadRules(rules, rules.dataset.lang === 'fr' ? 'en' : 'fr');
    $('#rules-other').textContent = rules.dataset.lang === 'fr' ? 'Lire en français' : 'Read in English';
  });
  onLangChange(() => {
    renderUser();
    renderStatus();
    game.relabel();
    scratch.relabel();
    lobby.relabel();
    wallet.relabel();
    playtime.relabel();
    security.relabel();
    documents.relabel();
    if (currentRoute().name === 'history' && state.me) history.show();
    if (currentRoute().name === 'fairness') fairness.render();
    const rules = $('#rules-text');
    if (!$('#screen-rules').hidden) loadRules(rules, currentLang());
  });
  // On a phone the navigation, the language and logging out wait behind a
  // menu button (a one-line header, the island below at full width).
  const top = $('header.top');
  const menu = $('#menu-toggle');
  const setMenu = (open) => {
    top.classList.toggle('menu-open', open);
    menu.setAttribute('aria-expanded', String(open));
  };
  menu.addEventListener('click', () => setMenu(!top.classList.contains('menu-open')));
  top.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && top.classList.contains('menu-open')) {
      setMenu(false);
      menu.focus();
    }
  });
  window.addEventListener('hashchange', () => {
    setMenu(false);
    route();
  });

  const [status, island, me] = await Promise.allSettled([api.status(), api.island(), loggedInHint() ? api.me() : Promise.reject(new Error('logged out'))]);
  state.status = status.status === 'fulfilled' ? status.value : null;
  state.island = island.status === 'fulfilled' ? island.value : FALLBACK_ISLAND;
  state.me = me.status === 'fulfilled' ? me.value : null;
  if (!state.me) loggedInHint(false);
  renderStatus();
  renderUser();
  if (state.me) await wallet.refresh();
  await route();
  document.body.dataset.ready = 'true';
  // The status can change while the page stays open (sales opening, a
  // message from the operator): look again now and then.
  setInterval(() => app.refreshStatus(), 60000);
  // A session ended elsewhere (another of the player's sessions, the
  // operator's suspension or exclusion) is noticed within half a minute,
  // not at the next click; the check does not keep an idle session alive.
  const checkSession = async () => {
    if (!state.me || document.hidden) return;
    try {
      await api.sessionCheck();
    } catch (error) {
      if (error.status === 401 && state.me) {
        app.sessionExpired();
        if (error.detail?.reason === 'session_ended') {
          const said = $('#login-error');
          said.textContent = t('session.ended.elsewhere');
          said.dataset.code = 'session_ended';
        }
      }
    }
  };
  setInterval(checkSession, period(SESSION_CHECK_MS));
  document.addEventListener('visibilitychange', checkSession);
}

boot();
