//! The site: when sales open, the announcement shown to players and the
//! national ban list (role `site` to change them; every role with
//! `dashboard` reads the first two).

import { api } from './api.js';
import { $, h, count, dateTime, fill, timeNode, notice, showError, confirmAction, showingErrors } from './util.js';
import { setText } from './i18n.js';

/** An RFC 3339 time as the value of a `datetime-local` input (local time). */
function toLocalInput(text) {
  if (!text) return '';
  const date = new Date(text);
  if (Number.isNaN(date.getTime())) return '';
  const pad = (n) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

function render(data) {
  const opens = data.sales_open_at;
  const opensDate = opens ? new Date(opens) : null;
  fill(
    $('#site-facts'),
    h('dt', {}, 'Sales'),
    h('dd', { 'data-testid': 'site-sales', 'data-opens-at': opens ?? '' },
      data.restore_hold
        ? ['closed after a restore: ', data.restore_hold]
        : opens ? [opensDate > new Date() ? 'open at ' : 'open since ', timeNode(opens)] : 'open'),
    h('dt', {}, 'Announcement'),
    h('dd', { 'data-testid': 'site-announcement' }, data.announcement ? data.announcement : h('span', { class: 'muted' }, 'none')),
    h('dt', {}, 'Rules version in force'),
    h('dd', {}, String(data.rules_version ?? '—')),
  );
  $('#sales-at').value = toLocalInput(opens);
  $('#announce-text').value = data.announcement ?? '';
}

async function load() {
  render(await api.site());
}

async function change(title, text, action, done) {
  try {
    const site = await confirmAction({ title, text, ok: 'Apply', action });
    if (site) {
      render(site.sales_open_at === undefined ? await api.site() : site);
      notice(done);
    }
  } catch (failure) {
    showError(failure);
  }
}

export const site = {
  setup() {
    $('#sales-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const value = $('#sales-at').value;
      if (!value) {
        notice('Choose a date and time, or press “Open now”.', 'error', 'validation');
        return;
      }
      const at = new Date(value);
      change(
        'Change the sales opening time?',
        `Players can buy from ${dateTime(at.toISOString())} (your local time) on; before it, every purchase is refused.`,
        () => api.setSales(at.toISOString()),
        'The sales opening time is saved.',
      );
    });
    $('#sales-clear').addEventListener('click', () =>
      change('Open sales now?', 'Players can buy at once.', () => api.setSales(null), 'Sales are open.'),
    );
    $('#announce-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const message = $('#announce-text').value.trim();
      if (!message) {
        notice('Write a message, or press “Remove”.', 'error', 'validation');
        return;
      }
      change('Publish this announcement?', `Every player sees: “${message}”`, () => api.setAnnouncement(message), 'The announcement is published.');
    });
    $('#banlist-form').addEventListener('submit', async (event) => {
      event.preventDefault();
      const file = $('#banlist-file').files[0];
      if (!file) {
        notice('Choose the CSV file of the ban list.', 'error', 'validation');
        return;
      }
      const csv = await file.text();
      const lines = csv.split('\n').filter((line) => line.trim()).length - 1;
      try {
        const imported = await confirmAction({
          title: 'Replace the national ban list?',
          text: `${file.name}: about ${count(lines)} names. Accounts that match are banned at once; accounts no longer listed are lifted.`,
          ok: 'Import',
          action: () => api.importBanList(csv),
        });
        if (imported) {
          const result = $('#banlist-result');
          setText(result, `Version ${imported.version}: ${count(imported.entries)} names; banned now: ${imported.banned.length ? imported.banned.join(', ') : 'none'}; lifted: ${imported.lifted.length ? imported.lifted.join(', ') : 'none'}.`);
          result.hidden = false;
          notice('The ban list is imported.');
        }
      } catch (failure) {
        showError(failure);
      }
    });
    $('#announce-clear').addEventListener('click', () =>
      change('Remove the announcement?', 'Players no longer see it.', () => api.setAnnouncement(null), 'The announcement is removed.'),
    );
  },
  show() {
    return showingErrors(load);
  },
};
