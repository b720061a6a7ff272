import t from 'tap';
import { createSession } from '../../src/login/sessions.js';
import { j } from '../helpers/http.js';
import { codeFor, startLoginEnv, uniqueEmail } from '../login/fixtures.js';

// The account page without a browser: headers and CSRF of its forms, delete with a recent sign-in and
// the re-authentication path (an emailed code) that makes a stale session recent again.
const env = await startLoginEnv();
t.teardown(env.close);
const { srv, sink, tenant } = env;
const base = srv.url;
const now = () => Math.floor(Date.now() / 1000);

const email = uniqueEmail('account');
const user = (await srv.deps.store.forTenant(tenant.tenant_id).users.insert({ email, emailVerified: true, loggedIn: true }))!;
const pk = (await srv.deps.store.forTenant(tenant.tenant_id).passkeys.insert({ userId: user.id, credentialId: `cred-${user.id}`, publicKey: new Uint8Array([1]), counter: 0, transports: ['internal'], backupEligible: false, backedUp: false, aaguid: null, deviceName: 'Phone' }))!;

function cookiesOf(res: Response): Record<string, string> {
  return Object.fromEntries(res.headers.getSetCookie().map((c) => c.split(';')[0]!.split('=') as [string, string]));
}
const header = (c: Record<string, string>) => Object.entries(c).map(([k, v]) => `${k}=${v}`).join('; ');

async function openPage(cookies: Record<string, string>, path = '/account') {
  const res = await fetch(`${base}${path}`, { headers: { cookie: header(cookies) } });
  Object.assign(cookies, cookiesOf(res));
  const html = await res.text();
  return { res, html, csrf: /name="csrf_token" value="([^"]+)"/.exec(html)?.[1] };
}
const postForm = (path: string, cookies: Record<string, string>, form: Record<string, string>) =>
  fetch(`${base}${path}`, { method: 'POST', redirect: 'manual', headers: { cookie: header(cookies), 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form) });

t.test('signed out, /account sends the person to sign in and brings them back', async (t) => {
  const cookies: Record<string, string> = {};
  const get = async (path: string) => {
    const res = await fetch(`${base}${path}`, { redirect: 'manual', headers: { cookie: header(cookies) } });
    Object.assign(cookies, cookiesOf(res));
    return res;
  };
  const start = await get(`/account?tenant=${encodeURIComponent(tenant.tenant_id)}`);
  t.equal(start.status, 303, 'a redirect to the login page');
  const loginPath = start.headers.get('location')!;
  t.notMatch(loginPath, /^https?:/, 'to this server');
  const login = await get(loginPath);
  t.equal(login.status, 200);
  const html = await login.text();
  t.match(html, /<label for="email">Email address<\/label>/, 'the login page');
  t.match(html, /your account/, 'it names where the person is going');
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(html)![1]!;
  const interaction = /name="interaction" value="([^"]+)"/.exec(html)![1]!;
  const who = uniqueEmail('return');
  const sent = await postForm('/email-code/generate', cookies, { csrf_token: csrf, interaction, email: who });
  t.equal(sent.status, 200);
  t.match(await sent.text(), /Enter your code|a code is on its way/);
  const verified = await postForm('/email-code/verify', cookies, { csrf_token: csrf, interaction, email: who, code: await codeFor(sink, who) });
  t.equal(verified.status, 303);
  Object.assign(cookies, cookiesOf(verified));
  t.ok(cookies.svc_session, 'signed in');
  const back = await get(verified.headers.get('location')!);
  t.equal(back.status, 303);
  t.equal(back.headers.get('location'), '/account', 'back to the account page');
  const page = await openPage(cookies);
  t.equal(page.res.status, 200);
  t.match(page.html, new RegExp(`id="account-email">${who}<`), 'the account page of the person who signed in');
});

t.test('signed out, an unknown tenant is a page, not a sign-in', async (t) => {
  const res = await fetch(`${base}/account?tenant=no-such-tenant`, { redirect: 'manual' });
  t.equal(res.status, 404);
  t.match(await res.text(), /not known/);
});

t.test('recent activity names the application, not its client id; a provider-named passkey is named once', async (t) => {
  const web = tenant.clients.web;
  const who = uniqueEmail('activity');
  await fetch(`${base}/email-code/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: who, client_id: web.client_id }) });
  const verified = await fetch(`${base}/email-code/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: who, code: await codeFor(sink, who) }) });
  const cookies = cookiesOf(verified);
  const me = (await srv.deps.store.forTenant(tenant.tenant_id).users.getByEmail(who))!;
  await srv.deps.store.forTenant(tenant.tenant_id).passkeys.insert({ userId: me.id, credentialId: `cred-gpm-${me.id}`, publicKey: new Uint8Array([1]), counter: 0, transports: ['hybrid'], backupEligible: true, backedUp: true, aaguid: 'ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4', deviceName: 'Google Password Manager' });
  const { html } = await openPage(cookies);
  const activity = /<ul class="activity">(.*?)<\/ul>/s.exec(html)![1]!;
  t.match(activity, /Signed in with an email code to Demo web application/);
  t.notMatch(activity, new RegExp(web.client_id), 'the raw client id is not shown');
  t.match(html, /<strong>Google Password Manager<\/strong><br>/, 'the passkey is named once');
  t.notMatch(html, /\(Google Password Manager\)/, 'not again as its provider');
});

t.test('the page: strict CSP, one script file, CSRF on every form', async (t) => {
  const s = await createSession(srv.deps.redis, { tenantId: tenant.tenant_id, userId: user.id, email, authTime: now() });
  const cookies = { svc_session: s.id };
  const { res, html, csrf } = await openPage(cookies);
  const csp = res.headers.get('content-security-policy')!;
  t.match(csp, /default-src 'none'/);
  t.match(csp, /script-src 'self'/);
  t.notMatch(csp, /unsafe-inline/);
  t.same(html.match(/<script[^>]*>[^<]*<\/script>/g), ['<script src="/assets/passkey.js" defer></script>']);
  t.match(html, /Phone/);
  const forms = html.match(/<form /g)!.length;
  t.equal(html.match(/name="csrf_token"/g)!.length, forms, 'every form carries the CSRF token');
  const noToken = await postForm(`/account/passkeys/${pk.id}/rename`, cookies, { device_name: 'x' });
  t.equal(noToken.status, 403, 'a form post without the token is refused');
  const renamed = await postForm(`/account/passkeys/${pk.id}/rename`, cookies, { device_name: 'Tablet', csrf_token: csrf! });
  t.equal(renamed.status, 303);
  t.equal(renamed.headers.get('location'), '/account?done=renamed');
  const tooLong = await postForm(`/account/passkeys/${pk.id}/rename`, cookies, { device_name: 'y'.repeat(101), csrf_token: csrf! });
  t.equal(tooLong.status, 422, 'the page shows the validation error');
  t.match(await tooLong.text(), /1 to 100 characters/);
  const js = await fetch(`${base}/assets/passkey.js`);
  t.match(js.headers.get('content-type'), /^text\/javascript/);
  t.match(await js.text(), /navigator\.credentials\.create/);
});

t.test('delete needs a recent sign-in; the re-authentication path makes the session recent', async (t) => {
  const s = await createSession(srv.deps.redis, { tenantId: tenant.tenant_id, userId: user.id, email, authTime: now() - 3600 });
  const cookies: Record<string, string> = { svc_session: s.id };
  const api = await fetch(`${base}/api/account/passkeys/${pk.id}`, { method: 'DELETE', headers: { cookie: header(cookies) } });
  t.equal(api.status, 403);
  t.same((await j(api)).details.session, ['reauthentication_required']);
  const { csrf } = await openPage(cookies);
  const viaForm = await postForm(`/account/passkeys/${pk.id}/delete`, cookies, { csrf_token: csrf! });
  t.equal(viaForm.status, 303);
  t.equal(viaForm.headers.get('location'), '/account/reauth');
  const reauth = await openPage(cookies, '/account/reauth');
  t.match(reauth.html, /Confirm it is you/);
  const sent = await postForm('/account/reauth/send', cookies, { csrf_token: reauth.csrf! });
  t.equal(sent.status, 200);
  const code = await codeFor(sink, email);
  const wrong = await postForm('/account/reauth/verify', cookies, { csrf_token: reauth.csrf!, code: code === '000000' ? '111111' : '000000' });
  t.equal(wrong.status, 400);
  const ok = await postForm('/account/reauth/verify', cookies, { csrf_token: reauth.csrf!, code });
  t.equal(ok.status, 303);
  t.equal(ok.headers.get('location'), '/account?done=reauth');
  const fresh = cookiesOf(ok).svc_session!;
  t.not(fresh, s.id, 'a new session id');
  const oldOne = await fetch(`${base}/api/account/passkeys/${pk.id}`, { method: 'DELETE', headers: { cookie: `svc_session=${s.id}` } });
  t.equal(oldOne.status, 401, 'the old session ended');
  const del = await fetch(`${base}/api/account/passkeys/${pk.id}`, { method: 'DELETE', headers: { cookie: `svc_session=${fresh}` } });
  t.equal(del.status, 204);
  const again = await fetch(`${base}/api/account/passkeys/${pk.id}`, { method: 'DELETE', headers: { cookie: `svc_session=${fresh}` } });
  t.equal(again.status, 404);
  t.equal((await j(again)).error, 'not_found');
  const changes = await srv.deps.sql<{ data: { change: string } }[]>`select data from event_outbox where tenant_id = ${tenant.tenant_id} and event = 'user.updated' and data->>'user_id' = ${user.id} order by id`;
  t.same(changes.map((c) => c.data.change), ['passkey_renamed', 'passkey_deleted']);
});

t.test('passkey sign-in refuses garbage and unknown credentials with 400, never 500', async (t) => {
  const web = tenant.clients.web;
  const start = await j(await fetch(`${base}/authorize?${new URLSearchParams({ response_type: 'code', client_id: web.client_id, redirect_uri: web.redirect_uris[0]!, scope: 'openid' })}`, { headers: { accept: 'application/json' } }));
  const interaction = start.interaction as string;
  const post = (body: unknown) => fetch(`${base}/login/passkey/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const options = await j(await fetch(`${base}/login/passkey/options`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ interaction }) }));
  t.equal(options.options.userVerification, 'required');
  t.same(options.options.allowCredentials, [], 'discoverable: no allow list');
  for (const response of [null, 'x', { id: 'x' }, { id: 'x', rawId: 'x', type: 'public-key', response: null }]) {
    const res = await post({ interaction, response });
    t.equal(res.status, 400, `malformed ${JSON.stringify(response)}`);
  }
  const unknown = await post({ interaction, response: { id: 'AAAA', rawId: 'AAAA', type: 'public-key', response: { clientDataJSON: 'e30', authenticatorData: 'AAAA', signature: 'AAAA' } } });
  t.equal(unknown.status, 400);
  t.same((await j(unknown)).details, { passkey: ['unknown_credential'] });
  const stale = await post({ interaction: 'x'.repeat(24), response: { id: `cred-${user.id}`, rawId: 'AAAA', type: 'public-key', response: { clientDataJSON: 'e30', authenticatorData: 'AAAA', signature: 'AAAA' } } });
  t.equal(stale.status, 400, 'an expired interaction');
});
