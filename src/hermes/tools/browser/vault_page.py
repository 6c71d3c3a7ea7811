"""What the vault tools run inside a page: find the login fields, check the origin, write, read back.

Every script checks ``location.origin`` against the entry's site **in the same synchronous run** that
writes the fields, so a navigation between the check and the write cannot happen. Fields are chosen
from their ``autocomplete`` attribute first, then their type, name, id, label and placeholder; a form
that holds a new-password, confirm-password or one-time-code field is a password-change, sign-up or
second-step form and gets no password. The scripts answer which fields they wrote, never values
(except :data:`READ_LOGIN`, whose answer stays in the tool's process; see :mod:`.vault_tools`).
"""

from __future__ import annotations

#: shared helpers of the scripts below (one function body: ``helpers`` + the script's own part)
_HELPERS = r"""
const visible = el => !el.disabled && !el.readOnly && el.getClientRects().length > 0 &&
  getComputedStyle(el).visibility !== 'hidden';
const tokens = el => (el.getAttribute('autocomplete') || '').toLowerCase().split(/\s+/);
const label = el => {
  const own = el.labels ? Array.from(el.labels).map(l => l.textContent).join(' ') : '';
  return [el.name, el.id, el.getAttribute('aria-label'), el.placeholder, own].join(' ').toLowerCase();
};
const NEW_PASSWORD = /new[-_ ]?pass|confirm|repeat|retype|re-enter|verify[-_ ]?pass|change[-_ ]?pass/;
const ONE_TIME = new RegExp('one[-_ ]?time|otp|totp|2fa|mfa|two[-_ ]?factor|verification|' +
  'auth(entication)?[-_ ]?code|security[-_ ]?code');
const isNewPassword = el => tokens(el).includes('new-password') || NEW_PASSWORD.test(label(el));
const isOneTime = el => tokens(el).includes('one-time-code') || ONE_TIME.test(label(el));
const TEXTUAL = ['text', 'email', 'tel', ''];
const write = (el, value) => {
  el.focus();
  const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set;
  setter.call(el, value);
  el.dispatchEvent(new Event('input', {bubbles: true}));
  el.dispatchEvent(new Event('change', {bubbles: true}));
};
const loginFields = () => {
  const inputs = Array.from(document.querySelectorAll('input')).filter(visible);
  const passwords = inputs.filter(el => el.type === 'password');
  const current = passwords.filter(el => !isNewPassword(el) && !isOneTime(el));
  if (!current.length) return {why: passwords.length ? 'the only password fields here are for a new password '
    + 'or a one-time code (a password-change, sign-up or second-step form)' : 'no password field on this page'};
  const preferred = current.filter(el => tokens(el).includes('current-password'));
  const password = (preferred.length ? preferred : current)[0];
  const scope = password.form || document;
  const inScope = Array.from(scope.querySelectorAll('input')).filter(visible);
  if (inScope.some(el => el.type === 'password' && isNewPassword(el)))
    return {why: 'this form asks for a new password (a password-change or sign-up form); nothing was filled'};
  const textual = inScope.filter(el => TEXTUAL.includes(el.type) && !isOneTime(el));
  const before = textual.filter(el => el.compareDocumentPosition(password) & Node.DOCUMENT_POSITION_FOLLOWING);
  const username = textual.find(el => tokens(el).includes('username') || tokens(el).includes('email'))
    || textual.find(el => el.type === 'email')
    || textual.find(el => /user|login|e-?mail|account/.test(label(el)))
    || before[before.length - 1] || null;
  return {password, username};
};
"""

#: fill a login form: (args: {origin, username, password}) → {filled: [...]} | {error}
FILL_LOGIN = "(args) => {" + _HELPERS + r"""
  if (location.origin !== args.origin) return {error: 'origin', origin: location.origin};
  const found = loginFields();
  if (found.why) return {error: 'fields', why: found.why};
  const filled = [];
  if (found.username) { write(found.username, args.username); filled.push('username'); }
  write(found.password, args.password); filled.push('password');
  return {filled, form: (found.password.form && (found.password.form.id || found.password.form.name)) || null};
}"""

#: fill a one-time code: (args: {origin, code}) → {filled: n} | {error}
FILL_CODE = "(args) => {" + _HELPERS + r"""
  if (location.origin !== args.origin) return {error: 'origin', origin: location.origin};
  const inputs = Array.from(document.querySelectorAll('input')).filter(visible)
    .filter(el => el.type !== 'password' && el.type !== 'hidden');
  const marked = inputs.filter(el => tokens(el).includes('one-time-code'));
  const named = marked.length ? marked : inputs.filter(el => isOneTime(el) &&
    ['text', 'tel', 'number', ''].includes(el.type));
  if (!named.length) return {error: 'fields', why: 'no one-time-code field on this page'};
  const boxes = named.filter(el => el.maxLength === 1);
  if (boxes.length >= args.code.length) {
    Array.from(args.code).forEach((digit, i) => write(boxes[i], digit));
    return {filled: boxes.length};
  }
  write(named[0], args.code);
  return {filled: 1};
}"""

#: read what the person typed into a login form: () → {origin, username, password} | {error}
READ_LOGIN = "() => {" + _HELPERS + r"""
  const found = loginFields();
  if (found.why) return {error: 'fields', why: found.why};
  if (!found.password.value) return {error: 'fields', why: 'the password field is empty'};
  return {origin: location.origin, username: found.username ? found.username.value : '',
          password: found.password.value};
}"""
