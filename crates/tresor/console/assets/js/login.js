//! The login screen: username and password, then the 6-digit code from the
//! authenticator; the first time, enrolment (the server's QR code as an
//! image, and the secret as text for manual entry) before the code.

import { api } from './api.js';
import { $ } from './util.js';
import { errorText } from './i18n.js';

/** A text's UTF-8 bytes in base64, for a `data:` URL. */
function base64(text) {
  const bytes = new TextEncoder().encode(text);
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

export function setupLogin(app) {
  const form = $('#login-form');
  const codeForm = $('#code-form');
  const error = $('#login-error');
  const enrol = $('#enrol');

  const fail = (failure) => {
    error.textContent = errorText(failure);
    error.dataset.code = failure.code ?? '';
    error.hidden = false;
  };
  const reset = () => {
    codeForm.hidden = true;
    enrol.hidden = true;
    form.hidden = false;
    $('#enrol-secret').textContent = '';
    $('#enrol-qr').removeAttribute('src');
    $('#login-code').value = '';
    $('#login-password').value = '';
    document.body.dataset.loginStep = 'password';
  };

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.hidden = true;
    const username = $('#login-username').value.trim();
    const password = $('#login-password').value;
    if (!username || !password) {
      fail({ message: 'Type your username and password.', code: 'validation' });
      return;
    }
    const button = form.querySelector('button[type=submit]');
    button.disabled = true;
    try {
      const answer = await api.login(username, password);
      form.hidden = true;
      codeForm.hidden = false;
      if (answer.step === 'enrol') {
        $('#enrol-secret').textContent = answer.secret;
        $('#enrol-qr').src = `data:image/svg+xml;base64,${base64(answer.qr_svg)}`;
        enrol.hidden = false;
      }
      document.body.dataset.loginStep = answer.step;
      $('#login-code').focus();
    } catch (failure) {
      fail(failure);
    } finally {
      button.disabled = false;
    }
  });

  codeForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.hidden = true;
    const code = $('#login-code').value.replace(/\s/g, '');
    if (!/^\d{6}$/.test(code)) {
      fail({ message: 'The code is 6 digits.', code: 'validation' });
      return;
    }
    const button = codeForm.querySelector('button[type=submit]');
    button.disabled = true;
    try {
      const answer = await api.code(code);
      reset();
      app.signedIn(answer.operator);
    } catch (failure) {
      fail(failure);
      // A pending login that expired must start again from the password.
      if (failure.status === 401 && failure.code !== 'invalid_code') {
        reset();
        fail(failure);
      }
    } finally {
      button.disabled = false;
    }
  });

  $('#code-back').addEventListener('click', () => {
    error.hidden = true;
    reset();
    $('#login-username').focus();
  });
  reset();
}
