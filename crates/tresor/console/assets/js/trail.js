//! The audit trail (role `trail`): its head (sequence number and hash, with
//! a copy button), the last verification, verifying now, and the export as
//! JSON Lines saved by the browser; browsing the records by actor, action
//! and days, newest first, a page at a time.

import { api } from './api.js';
import { $, h, fill, table, timeNode, count, dateTime, notice, showError, copyText, busy, showingErrors } from './util.js';
import { setText, tr } from './i18n.js';

function lastLine(last) {
  if (!last) return 'Never verified from the console or the command line.';
  const result = tr(last.ok ? 'intact' : 'BROKEN');
  return `Last verified ${dateTime(last.at)} by ${last.by}: ${count(last.records)} records, ${result}.`;
}

function render(data) {
  $('#trail-seq').textContent = count(data.head?.seq ?? 0);
  $('#trail-seq').dataset.seq = String(data.head?.seq ?? 0);
  $('#trail-hash').textContent = data.head?.hash ?? '—';
  const last = $('#trail-last');
  setText(last, lastLine(data.last_verification));
  last.dataset.ok = data.last_verification ? String(data.last_verification.ok) : '';
}

async function load() {
  render(await api.trail());
}

/** The records shown, newest first, the next page's cursor and the filter they match. */
let shown = [];
let nextBefore = null;
let filter = {};

/** A record's JSON, on one line (the whole in the cell: it wraps). */
const json = (value) => h('code', { class: 'json' }, typeof value === 'string' ? value : JSON.stringify(value));

async function loadRecords(more = false) {
  if (!more) {
    filter = {
      actor: $('#trail-actor').value.trim(),
      action: $('#trail-action').value.trim(),
      from: $('#trail-from').value,
      to: $('#trail-to').value,
    };
  }
  const page = await api.trailRecords(filter, more ? nextBefore : undefined);
  shown = more ? shown.concat(page.records) : page.records;
  nextBefore = page.next_before ?? null;
  fill(
    $('#trail-records'),
    table(
      [
        ['#', (r) => r.seq, 'num'],
        ['Time', (r) => timeNode(r.at)],
        ['Actor', (r) => h('code', {}, r.actor)],
        ['Action', (r) => h('code', {}, r.action)],
        ['Request', (r) => json(r.request)],
        ['Result', (r) => json(r.result)],
      ],
      shown,
      { empty: 'No record matches this search.', rowAttrs: (r) => ({ 'data-testid': 'trail-record', 'data-seq': r.seq, 'data-action': r.action }), caption: 'Trail records, newest first' },
    ),
    nextBefore ? h('button', { type: 'button', class: 'quiet', id: 'trail-more', 'data-testid': 'trail-more' }, 'Older records') : null,
  );
  $('#trail-records').dataset.count = String(shown.length);
}

export const trail = {
  setup() {
    $('#trail-search').addEventListener('submit', async (event) => {
      event.preventDefault();
      await showingErrors(loadRecords);
    });
    $('#trail-records').addEventListener('click', async (event) => {
      if (!event.target.closest('#trail-more')) return;
      await showingErrors(() => loadRecords(true));
    });
    $('#trail-copy').addEventListener('click', async () => {
      const hash = $('#trail-hash').textContent;
      if (await copyText(hash)) notice('The head hash is copied.');
      else notice('The browser would not copy: select the hash and copy it by hand.', 'error', 'copy');
    });
    $('#trail-verify').addEventListener('click', async (event) => {
      try {
        const result = await busy(event.currentTarget, () => api.verifyTrail());
        if (result.ok) notice(`The trail is intact: ${count(result.records)} records verified.`, 'ok', 'trail_ok');
        else notice(`The trail is BROKEN: verification failed after ${count(result.records)} records.`, 'error', 'trail_broken');
        await load();
      } catch (failure) {
        showError(failure);
      }
    });
    $('#trail-export').addEventListener('click', async (event) => {
      const result = $('#trail-export-result');
      try {
        const { name, text } = await busy(event.currentTarget, () => api.exportTrail());
        const lines = text.split('\n').filter((line) => line.trim()).length;
        const url = URL.createObjectURL(new Blob([text], { type: 'application/x-ndjson' }));
        const link = document.createElement('a');
        link.href = url;
        link.download = name;
        document.body.append(link);
        link.click();
        link.remove();
        setTimeout(() => URL.revokeObjectURL(url), 10000);
        setText(result, `Saved ${name}: ${count(lines)} records, ${count(Math.ceil(text.length / 1024))} KiB.`);
        result.dataset.records = String(lines);
      } catch (failure) {
        showError(failure);
      }
    });
  },
  show() {
    return showingErrors(() => Promise.all([load(), loadRecords()]));
  },
};
