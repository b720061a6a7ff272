import { isIP } from 'node:net';
import { escapeHtml as esc } from '../http/html.js';
import { page } from '../http/pages.js';
import type { Reply } from '../http/types.js';
import { PASSKEY_SCRIPT } from '../login/pages.js';
import type { ConsentRow } from '../store/consents.js';
import type { ActivityRow, PasskeyRow } from '../store/passkeys.js';
import { providerOf } from './passkeys/providers.js';
import { ACCOUNT_CLIENT, ACCOUNT_CLIENT_NAME } from './session.js';

const hidden = (name: string, value: string) => `<input type="hidden" name="${esc(name)}" value="${esc(value)}">`;
const when = (ms: number | null) => (ms === null ? 'never' : `<time datetime="${new Date(ms).toISOString()}">${esc(new Date(ms).toISOString().replace('T', ' ').slice(0, 16))} UTC</time>`);

const NOTICES: Record<string, string> = {
  added: 'Passkey added.', renamed: 'Passkey renamed.', deleted: 'Passkey deleted.', revoked: 'Access withdrawn: the application has to ask again.', reauth: 'Thanks, you are confirmed for the next 5 minutes.',
};

/** The application an event names, as people know it: its name, else (a deleted client) its id; sign-ins for this page are "your account". */
function appName(a: ActivityRow): string {
  const id = String((a.data as Record<string, unknown>).client_id);
  return a.client_name ?? (id === ACCOUNT_CLIENT ? ACCOUNT_CLIENT_NAME : id);
}

function describe(a: ActivityRow): string {
  const d = a.data as Record<string, string | undefined>;
  switch (a.event) {
    case 'auth.login': return `Signed in${d.method === 'passkey' ? ' with a passkey' : d.method === 'email_code' ? ' with an email code' : ''}${d.client_id ? ` to ${appName(a)}` : ''}`;
    case 'auth.login_failed': return `Failed sign-in${d.reason ? ` (${d.reason})` : ''}`;
    case 'auth.logout': return 'Signed out';
    case 'security.alert': return `Security alert${d.reason ? ` (${d.reason})` : ''}`;
    case 'user.created': return 'Account created';
    case 'user.updated': return ({ passkey_added: 'Passkey added', passkey_renamed: 'Passkey renamed', passkey_deleted: 'Passkey deleted', consent_revoked: `Access withdrawn from ${d.client_id ? appName(a) : 'an application'}` } as Record<string, string>)[d.change ?? ''] ?? 'Account updated';
    default: return a.event;
  }
}

/**
 * Why passkeys cannot work at the issuer's address, or undefined when they can: browsers refuse WebAuthn
 * on an IP address (a newcomer's http://127.0.0.1:8080), so the account page says so before anyone tries.
 */
export function passkeyAddressNotice(issuer: string): string | undefined {
  const u = new URL(issuer);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (!isIP(host)) return undefined;
  const local = `${u.protocol}//localhost${u.port ? `:${u.port}` : ''}`;
  return `Passkeys cannot be used at this address: ${host} is an IP address, and browsers offer passkeys only on a host name. ` +
    (host.startsWith('127.') || host === '::1'
      ? `Open ${local}/account instead, with the server started with ISSUER=${local} (npm start's default).`
      : 'The server needs an ISSUER with a host name.');
}

/** The account page: email, passkeys (add, rename, delete), consents with Revoke, recent activity, sign-out. */
export function accountPage(a: { email: string; csrf: string; passkeys: PasskeyRow[]; consents: ConsentRow[]; activity: ActivityRow[]; passkeyNotice?: string; notice?: string; error?: string; cookies?: string[]; status?: number }): Reply {
  const notice = a.notice && NOTICES[a.notice] ? `<p class="notice" role="status">${esc(NOTICES[a.notice]!)}</p>` : '';
  const error = a.error ? `<p class="error" role="alert">${esc(a.error)}</p>` : '';
  const passkeys = a.passkeys.length ? `<ul class="items">${a.passkeys.map((p) => {
    const provider = providerOf(p.aaguid)?.name;
    const label = p.device_name ?? 'Unnamed passkey';
    // A passkey still named after its provider (the default name) is named once.
    return `<li class="passkey"><strong>${esc(label)}</strong>${provider && provider !== label ? ` <span class="muted">(${esc(provider)})</span>` : ''}<br>` +
      `<span class="muted">Added ${when(p.created_at)}, last used ${when(p.last_used_at)}</span>` +
      `<form method="post" action="/account/passkeys/${esc(p.id)}/rename" class="inline">${hidden('csrf_token', a.csrf)}` +
      `<label for="name-${esc(p.id)}">New name for ${esc(label)}</label><input id="name-${esc(p.id)}" name="device_name" maxlength="100" required value="${esc(label)}">` +
      `<button type="submit">Rename</button></form>` +
      `<form method="post" action="/account/passkeys/${esc(p.id)}/delete" class="secondary">${hidden('csrf_token', a.csrf)}<button type="submit" aria-label="Delete ${esc(label)}">Delete</button></form></li>`;
  }).join('')}</ul>` : '<p>No passkeys yet.</p>';
  const consents = a.consents.length ? `<ul class="items">${a.consents.map((c) =>
    `<li class="consent"><strong>${esc(c.client_name ?? c.client_id)}</strong><br><span class="muted">${esc(c.scopes.join(', '))}; granted ${when(Number(c.granted_at))}</span>` +
    `<form method="post" action="/account/consents/${esc(c.id)}/revoke" class="secondary">${hidden('csrf_token', a.csrf)}<button type="submit" aria-label="Revoke ${esc(c.client_name ?? c.client_id)}">Revoke</button></form></li>`).join('')}</ul>`
    : '<p>No applications have access.</p>';
  const activity = a.activity.length ? `<ul class="activity">${a.activity.map((e) => `<li>${esc(describe(e))} <span class="muted">${when(e.occurred_at)}</span></li>`).join('')}</ul>` : '<p>Nothing yet.</p>';
  return page('Your account',
    `${notice}${error}<p>Signed in as <strong id="account-email">${esc(a.email)}</strong></p>` +
    `<h2>Passkeys</h2>${a.passkeyNotice ? `<p class="warning" role="note">${esc(a.passkeyNotice)}</p>` : ''}${passkeys}<button type="button" id="passkey-add" hidden>Add a passkey</button><p id="passkey-status" class="error" role="alert" hidden></p>` +
    `<h2>Applications with access</h2>${consents}` +
    `<h2>Recent activity</h2>${activity}` +
    `<form method="post" action="/account/signout" class="secondary">${hidden('csrf_token', a.csrf)}<button type="submit">Sign out</button></form>`,
    { status: a.status, cookies: a.cookies, scripts: [PASSKEY_SCRIPT] });
}

/** After sign-out from the account page: a way back in. */
export function signedOutPage(cookies: string[]): Reply {
  return page('Signed out', '<p>You are signed out.</p><p><a href="/account">Sign in again</a></p>', { cookies });
}

/** Re-authentication: an emailed code to the signed-in address. */
export function reauthPage(a: { email: string; csrf: string; sent: boolean; hasPasskeys?: boolean; error?: string; cookies?: string[]; status?: number }): Reply {
  const error = a.error ? `<p class="error" role="alert">${esc(a.error)}</p>` : '';
  const body = a.sent
    ? `<p>We emailed a code to <strong>${esc(a.email)}</strong>.</p>${error}<form method="post" action="/account/reauth/verify">${hidden('csrf_token', a.csrf)}` +
      `<label for="code">One-time code</label><input id="code" name="code" inputmode="numeric" pattern="[0-9]*" autocomplete="one-time-code" required maxlength="10" autofocus><button type="submit">Confirm</button></form>`
    : `<p>For your security, confirm it is you before changing your passkeys.</p>${error}` +
      (a.hasPasskeys ? `<button type="button" id="passkey-reauth" hidden>Use a passkey</button><p id="passkey-status" class="error" role="alert" hidden></p>` : '') +
      `<form method="post" action="/account/reauth/send" class="secondary">${hidden('csrf_token', a.csrf)}<button type="submit">Email me a code</button></form>`;
  return page('Confirm it is you', body, { status: a.status, cookies: a.cookies, scripts: [PASSKEY_SCRIPT] });
}
