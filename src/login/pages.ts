import { escapeHtml as esc } from '../http/html.js';
import { page } from '../http/pages.js';
import type { Reply } from '../http/types.js';

/** The pages' WebAuthn script (src/account/assets/passkey-js.ts). */
export const PASSKEY_SCRIPT = '/assets/passkey.js';

const hidden = (name: string, value: string) => `<input type="hidden" name="${esc(name)}" value="${esc(value)}">`;
const alert = (msg?: string) => (msg ? `<p class="error" role="alert">${esc(msg)}</p>` : '');

export function emailPage(a: { clientName: string; tenantName?: string | null; csrf: string; interaction: string; email?: string; error?: string; status?: number; cookies?: string[] }): Reply {
  const to = a.tenantName ? ` with <strong>${esc(a.tenantName)}</strong>` : '';
  return page('Sign in', `<p>Sign in${to} to continue to <strong>${esc(a.clientName)}</strong>. We will email you a one-time code.</p>${alert(a.error)}` +
    `<form method="post" action="/email-code/generate">${hidden('csrf_token', a.csrf)}${hidden('interaction', a.interaction)}` +
    `<label for="email">Email address</label><input id="email" name="email" type="email" autocomplete="username webauthn" required maxlength="254" autofocus value="${esc(a.email ?? '')}">` +
    `<button type="submit">Email me a code</button></form>` +
    // Shown by the script when the browser has WebAuthn; the interaction id travels as data, not code.
    `<div class="secondary"><button type="button" id="passkey-signin" data-interaction="${esc(a.interaction)}" hidden>Sign in with a passkey</button></div>` +
    `<p id="passkey-status" class="error" role="alert" hidden></p>`,
  { status: a.status, cookies: a.cookies, scripts: [PASSKEY_SCRIPT] });
}

export function codePage(a: { email: string; csrf: string; interaction: string; expiresIn: number; formTargets: string[]; error?: string; status?: number; cookies?: string[] }): Reply {
  return page('Enter your code', `<p>If <strong>${esc(a.email)}</strong> can receive email, a code is on its way. It expires in ${Math.round(a.expiresIn / 60)} minutes.</p>${alert(a.error)}` +
    `<form method="post" action="/email-code/verify">${hidden('csrf_token', a.csrf)}${hidden('interaction', a.interaction)}${hidden('email', a.email)}` +
    `<label for="code">One-time code</label><input id="code" name="code" inputmode="numeric" pattern="[0-9]*" autocomplete="one-time-code" required maxlength="10" autofocus>` +
    `<button type="submit">Sign in</button></form>` +
    `<form method="post" action="/email-code/generate" class="secondary">${hidden('csrf_token', a.csrf)}${hidden('interaction', a.interaction)}${hidden('email', a.email)}` +
    `<button type="submit">Send a new code</button></form>`, { status: a.status, cookies: a.cookies, formTargets: a.formTargets });
}

export function consentPage(a: { clientName: string; email: string; scopes: string[]; csrf: string; interaction: string; formTargets: string[]; cookies?: string[] }): Reply {
  const items = a.scopes.map((s) => `<li>${esc(SCOPE_TEXT[s] ?? s)}</li>`).join('');
  return page('Allow access?', `<p><strong>${esc(a.clientName)}</strong> asks to access your account (${esc(a.email)}):</p><ul>${items}</ul>` +
    `<form method="post" action="/authorize/consent">${hidden('csrf_token', a.csrf)}${hidden('interaction', a.interaction)}` +
    `<button type="submit" name="decision" value="allow">Allow</button> <button type="submit" name="decision" value="deny">Deny</button></form>`,
  { cookies: a.cookies, formTargets: a.formTargets });
}

/** /device: where a person types the code their device shows (RFC 8628 3.3), prefilled from verification_uri_complete. */
export function deviceEntryPage(a: { csrf: string; userCode?: string; error?: string; status?: number; cookies?: string[] }): Reply {
  return page('Connect a device', `<p>Enter the code shown on your device.</p>${alert(a.error)}` +
    `<form method="post" action="/device">${hidden('csrf_token', a.csrf)}` +
    `<label for="user_code">Code</label><input id="user_code" name="user_code" autocomplete="off" autocapitalize="characters" spellcheck="false" required maxlength="32" autofocus value="${esc(a.userCode ?? '')}">` +
    `<button type="submit">Continue</button></form>`, { status: a.status, cookies: a.cookies });
}

/**
 * The device flow's consent: always asked (RFC 8628 5.4, remote phishing), with the code to compare
 * against the one on the device.
 */
export function deviceConfirmPage(a: { clientName: string; email: string; scopes: string[]; userCode: string; csrf: string; handle: string; cookies?: string[] }): Reply {
  const items = a.scopes.map((s) => `<li>${esc(SCOPE_TEXT[s] ?? s)}</li>`).join('');
  return page('Allow this device?', `<p>A device running <strong>${esc(a.clientName)}</strong> asks to access your account (${esc(a.email)}):</p><ul>${items}</ul>` +
    `<p>Check that your device shows the code <strong class="user-code">${esc(a.userCode)}</strong>. Allow only if you started this sign-in on that device yourself.</p>` +
    `<form method="post" action="/device/confirm">${hidden('csrf_token', a.csrf)}${hidden('handle', a.handle)}` +
    `<button type="submit" name="decision" value="allow">Allow</button> <button type="submit" name="decision" value="deny">Deny</button></form>`,
  { cookies: a.cookies });
}

export function messagePage(title: string, text: string, opts: { cookies?: string[] } = {}): Reply {
  return page(title, `<p>${esc(text)}</p>`, opts);
}

export function logoutConfirmPage(a: { csrf: string; fields: Record<string, string>; cookies?: string[]; formTargets: string[] }): Reply {
  const fields = Object.entries(a.fields).map(([k, v]) => hidden(k, v)).join('');
  return page('Sign out?', `<p>Do you want to sign out?</p><form method="post" action="/logout">${hidden('csrf_token', a.csrf)}${fields}` +
    `<button type="submit" name="confirm" value="yes">Sign out</button></form>`, { cookies: a.cookies, formTargets: a.formTargets });
}

const SCOPE_TEXT: Record<string, string> = {
  openid: 'Know who you are',
  email: 'See your email address',
  offline_access: 'Stay signed in when you are away',
};

export const LOGIN_CSS = `body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f5f5f7;color:#111}
main{max-width:26rem;margin:4rem auto;background:#fff;padding:2rem;border-radius:8px;box-shadow:0 1px 4px rgba(0,0,0,.15)}
h1{font-size:1.4rem;margin-top:0}label{display:block;font-weight:600;margin:.5rem 0 .25rem}
input{width:100%;box-sizing:border-box;font-size:1rem;padding:.6rem;border:1px solid #767676;border-radius:4px}
button{margin-top:1rem;font-size:1rem;padding:.6rem 1.2rem;border:0;border-radius:4px;background:#0b57d0;color:#fff;cursor:pointer}
.secondary button{background:#fff;color:#0b57d0;border:1px solid #0b57d0}
.error{color:#b00020;font-weight:600}.warning{color:#7a4100;font-weight:600}:focus{outline:3px solid #f9a825;outline-offset:2px}
h2{font-size:1.1rem;margin:1.5rem 0 .5rem}.muted{color:#555;font-size:.9rem}.notice{color:#0a6b2d;font-weight:600}
.items{list-style:none;padding:0}.items li{border-top:1px solid #ddd;padding:.75rem 0}.activity{padding-left:1.2rem}
.items form{display:inline-block;margin-right:.5rem}.items input{margin-top:.25rem}[hidden]{display:none!important}
`;
