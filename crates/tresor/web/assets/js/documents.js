//! The account screen's identity documents: the player sends an identity
//! document and a proof that the IBAN is theirs (a JPEG or PNG photo, or a
//! PDF), and sees each one's review (waiting, verified, or refused with
//! the operator's reason, then sent again). The files never come back:
//! only kind, name, size, date and status. docs/ACCOUNT.md, "Identity
//! documents".

import { api } from './api.js';
import { t, dateTime, currentLang } from './i18n.js';
import { $, h, onSubmit } from './util.js';

/** A size in the page's language: "1,2 Mo" / "1.2 MB". */
function size(bytes) {
  const fr = currentLang() === 'fr';
  const units = fr ? ['o', 'Ko', 'Mo'] : ['B', 'KB', 'MB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const text = new Intl.NumberFormat(fr ? 'fr-FR' : 'en-GB', { maximumFractionDigits: unit ? 1 : 0 }).format(value);
  return `${text} ${units[unit]}`;
}

export function setupDocuments(app) {
  let documents = [];
  let maxBytes = 5 * 1024 * 1024;

  /** The latest document of each kind: what counts for the review. */
  function latest(kind) {
    return documents.find((d) => d.kind === kind) ?? null;
  }

  function render() {
    const account = app.state.account;
    const box = $('#docs-box');
    const shown = Boolean(account?.has_identity) && account.status !== 'closed';
    box.hidden = !shown;
    if (!shown) return;
    const list = $('#docs-list');
    list.replaceChildren(
      ...['identity', 'iban_proof'].map((kind) => {
        const d = latest(kind);
        const status = d ? d.status : 'missing';
        const parts = [h('strong', {}, t(`docs.kind.${kind}`)), ' — '];
        if (!d) parts.push(t('docs.missing'));
        else {
          // The name as sent, cut with an ellipsis when long, the whole on hover.
          parts.push(h('span', { class: 'doc-name', title: d.name, 'data-testid': `doc-name-${kind}` }, d.name), ', ');
          parts.push(t('docs.sent', { size: size(d.size_bytes), date: dateTime(d.uploaded_at) }), ' ');
          parts.push(h('span', { class: `tag doc-${status}`, 'data-testid': `doc-status-${kind}` }, t(`docs.status.${status}`)));
          if (status === 'refused' && d.reason) parts.push(' ', h('span', { 'data-testid': `doc-reason-${kind}` }, t('docs.reason', { reason: d.reason })));
        }
        return h('li', { 'data-testid': `doc-${kind}`, 'data-status': status }, ...parts);
      }),
    );
    // Only a kind with nothing waiting or verified can be sent.
    const open = ['identity', 'iban_proof'].filter((kind) => {
      const d = latest(kind);
      return !d || d.status === 'refused';
    });
    const select = $('#docs-kind');
    for (const option of select.options) option.disabled = !open.includes(option.value);
    if (!open.includes(select.value) && open.length) select.value = open[0];
    $('#docs-form').hidden = open.length === 0;
    $('#docs-file-hint').textContent = t('docs.file.hint', { max: size(maxBytes) });
  }

  async function refresh() {
    if (!app.state.me) {
      documents = [];
      render();
      return;
    }
    try {
      const answer = await api.documents();
      documents = answer.documents;
      maxBytes = answer.max_bytes ?? maxBytes;
    } catch (error) {
      app.showError(error, $('#docs-error'));
    }
    render();
  }

  onSubmit(app, 'docs', async ({ error, notice }) => {
    const input = $('#docs-file');
    const file = input.files?.[0];
    if (!file) {
      error.textContent = t('docs.err.none');
      input.setAttribute('aria-invalid', 'true');
      input.focus();
      return;
    }
    input.removeAttribute('aria-invalid');
    const kind = $('#docs-kind').value;
    const button = $('#docs-send');
    button.disabled = true;
    try {
      await api.uploadDocument(kind, file);
      input.value = '';
      notice.textContent = t('docs.done', { kind: t(`docs.kind.${kind}`) });
      await refresh();
    } catch (failure) {
      app.showError(failure, error);
      input.setAttribute('aria-invalid', 'true');
      input.focus();
    } finally {
      button.disabled = false;
    }
  });

  return { refresh, render, relabel: render };
}
