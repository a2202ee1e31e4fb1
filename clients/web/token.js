// token.js — the daemon's bearer token (warpd --token-file): asked for once, in a dialog, when the daemon
// answers 401, and kept in sessionStorage (this tab only, gone when it closes). A token the daemon
// refuses is forgotten and asked for again. Calls that meet a 401 together share one dialog.

const KEY = 'warpd-token';
const $ = (id) => document.getElementById(id);
let asking = null; // the open dialog's promise: resolves to the token, or null when cancelled

export const storedToken = () => sessionStorage.getItem(KEY);

/** Headers that carry the token, when there is one. */
export function authHeaders() {
  const t = storedToken();
  return t ? { Authorization: `Bearer ${t}` } : {};
}

/** The daemon answered 401 to a call sent with `sent` (the token then, or null). Resolves to true when
 * a token (another one) is at hand and the call should be sent again, false when the user cancelled. */
export async function onUnauthorized(sent) {
  if (storedToken() !== sent) return true; // another call got a new token meanwhile
  if (sent) sessionStorage.removeItem(KEY); // refused: forget it
  const t = await ask(Boolean(sent));
  if (!t) return false;
  sessionStorage.setItem(KEY, t);
  return true;
}

function ask(refused) {
  if (asking) return asking;
  const dialog = $('token-dialog'), form = $('token-form'), input = $('token-input');
  dialog.dataset.asked = String(Number(dialog.dataset.asked || 0) + 1);
  $('token-error').hidden = !refused;
  input.value = '';
  asking = new Promise((resolve) => {
    const done = (value) => {
      form.removeEventListener('submit', submit);
      $('token-cancel').removeEventListener('click', cancel);
      dialog.removeEventListener('cancel', cancel);
      if (dialog.open) dialog.close();
      asking = null;
      resolve(value);
    };
    const submit = (e) => { e.preventDefault(); const t = input.value.trim(); if (t) done(t); };
    const cancel = (e) => { e.preventDefault(); done(null); };
    form.addEventListener('submit', submit);
    $('token-cancel').addEventListener('click', cancel);
    dialog.addEventListener('cancel', cancel); // Escape
    dialog.showModal();
    input.focus();
  });
  return asking;
}
