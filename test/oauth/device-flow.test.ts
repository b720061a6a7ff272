import t from 'tap';
import { decodeJwt } from 'jose';
import { api } from '../admin/helpers.js';
import { codeFor, sessionCookieFrom, startLoginEnv, uniqueEmail } from '../login/fixtures.js';
import { waitFor } from '../helpers/processes.js';
import { adminToken, postForm, setupTenant } from '../helpers/tokens.js';

// RFC 8628 through the real server as a device and a person's API client would drive it: the device asks
// /device_authorization for codes and polls /token; the person enters the user code at /device, signs in
// with an emailed code and decides at /device/confirm. The interval is 1 s here (DEVICE_POLL_INTERVAL_SECONDS)
// so waits the protocol demands stay short; TRUSTED_PROXIES lets each test enter codes from its own address.
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const CODE = /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/;

const env = await startLoginEnv({ DEVICE_POLL_INTERVAL_SECONDS: '1', TRUSTED_PROXIES: '127.0.0.1' });
t.teardown(() => env.close());
const { srv, sink } = env;

/** A tenant with a public device client registered through the admin API (platform admin, to set tenant settings too). */
async function deviceTenant(label: string, settings?: Record<string, unknown>) {
  const tenant = await setupTenant(srv, label);
  const call = api(srv, await adminToken(srv, { tenantId: tenant.tenant_id, permissions: ['admin:*'], platform: true }));
  const created = await call('POST', '/api/admin/clients', {
    client_id: `${tenant.tenant_id}-tv`, name: 'Living room TV', token_endpoint_auth_method: 'none',
    grant_types: [DEVICE_GRANT, 'refresh_token'], scopes: ['openid', 'email', 'offline_access'],
  });
  if (created.status !== 201) throw new Error(`client create answered ${created.status}: ${JSON.stringify(created.body)}`);
  if (settings) {
    const r = await call('PUT', `/api/admin/tenants/${tenant.tenant_id}`, { settings });
    if (r.status !== 200) throw new Error(`tenant update answered ${r.status}: ${JSON.stringify(r.body)}`);
  }
  return { tenant, tv: created.body.client_id as string, created };
}

const A = await deviceTenant('device-a');
const B = await deviceTenant('device-b');

function form(path: string, body: Record<string, string>, headers: Record<string, string> = {}) {
  return fetch(`${srv.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(body) });
}
async function start(clientId: string, scope = 'openid email offline_access') {
  const res = await form('/device_authorization', { client_id: clientId, scope });
  return { status: res.status, body: await res.json() as any };
}
async function poll(clientId: string, deviceCode: string) {
  const res = await form('/token', { grant_type: DEVICE_GRANT, client_id: clientId, device_code: deviceCode });
  return { status: res.status, body: await res.json() as any };
}
function json(path: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${srv.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}
/** The person's part: enter the code, sign in with an emailed code, decide. */
async function decide(userCode: string, decision: 'allow' | 'deny', from = '198.51.100.1') {
  const xff = { 'x-forwarded-for': from };
  const entered = await (await json('/device', { user_code: userCode }, xff)).json() as any;
  if (!entered.interaction) throw new Error(`/device answered ${JSON.stringify(entered)}`);
  const email = uniqueEmail('device');
  await json('/email-code/generate', { email, interaction: entered.interaction }, xff);
  const verified = await json('/email-code/verify', { email, code: await codeFor(sink, email), interaction: entered.interaction }, xff);
  const cookie = sessionCookieFrom(verified)!;
  const res = await json('/device/confirm', { handle: entered.handle, decision }, { ...xff, cookie });
  return { entered, email, status: res.status, body: await res.json() as any };
}

t.test('discovery advertises the endpoint and the grant; the admin API registers a public device client', async (t) => {
  const meta = await (await fetch(`${srv.url}/.well-known/oauth-authorization-server`)).json() as any;
  t.equal(meta.device_authorization_endpoint, `${srv.url}/device_authorization`);
  t.ok(meta.grant_types_supported.includes(DEVICE_GRANT));
  t.equal(A.created.body.token_endpoint_auth_method, 'none');
  t.same(A.created.body.grant_types, [DEVICE_GRANT, 'refresh_token']);
  const openapi = await (await fetch(`${srv.url}/openapi.json`)).json() as any;
  for (const p of ['/device_authorization', '/device', '/device/confirm']) t.ok(openapi.paths[p], `${p} is in /openapi.json`);
});

t.test('the codes; an immediate first poll is pending, a faster one slow_down and the interval grows; approve; tokens once', async (t) => {
  const { status, body } = await start(A.tv);
  t.equal(status, 200);
  t.match(body.user_code, CODE, 'XXXX-XXXX of the vowel-free alphabet');
  t.equal(body.verification_uri, `${srv.url}/device`);
  t.equal(body.verification_uri_complete, `${srv.url}/device?user_code=${body.user_code}`);
  t.equal(body.interval, 1);
  t.equal(body.expires_in, 600);
  t.match((await poll(A.tv, body.device_code)), { status: 400, body: { error: 'authorization_pending' } }, 'an immediate first poll is pending');
  t.match((await poll(A.tv, body.device_code)), { status: 400, body: { error: 'slow_down' } }, 'a poll before the interval is slow_down');
  const since = Date.now();
  await new Promise((r) => setTimeout(r, 1100)); // the 1 s interval the code started with
  t.ok(Date.now() - since >= 1000);
  t.match((await poll(A.tv, body.device_code)), { body: { error: 'slow_down' } }, 'the interval grew by 5 s: 1.1 s later is still too fast');
  // The person types it in lower case without the dash.
  const d = await decide(body.user_code.replace('-', '').toLowerCase(), 'allow');
  t.same(d.body, { approved: true });
  t.equal(d.entered.client_name, 'Living room TV');
  t.equal(d.entered.scope, 'openid email offline_access');
  t.equal(d.entered.user_code, body.user_code);
  // A fresh code: approved before its first poll, which gets the tokens at once.
  const c2 = await start(A.tv);
  const d2 = await decide(c2.body.user_code, 'allow');
  t.same(d2.body, { approved: true });
  const tokens = await poll(A.tv, c2.body.device_code);
  t.equal(tokens.status, 200, JSON.stringify(tokens.body));
  t.equal(tokens.body.token_type, 'Bearer');
  t.equal(tokens.body.scope, 'openid email offline_access');
  t.type(tokens.body.refresh_token, 'string');
  const at = decodeJwt(tokens.body.access_token);
  t.equal(at.email, d2.email);
  t.equal(at.client_id, A.tv);
  const id = decodeJwt(tokens.body.id_token);
  t.equal(id.aud, A.tv);
  t.equal(id.sub, at.sub);
  const refreshed = await form('/token', { grant_type: 'refresh_token', client_id: A.tv, refresh_token: tokens.body.refresh_token });
  t.equal(refreshed.status, 200, 'the refresh token works for the public client');
  // The consent the person gave is listed for them (and revocable) like any other.
  const consents = await (await fetch(`${srv.url}/api/user/consents`, { headers: { authorization: `Bearer ${tokens.body.access_token}` } })).json() as any;
  t.ok(JSON.stringify(consents).includes(A.tv), 'the device client is among the user\'s consents');
});

t.test('a device code polled again after its tokens: invalid_grant, and the first tokens are revoked (RFC 9700 4.5)', async (t) => {
  // A resource server of the tenant that introspects any of its tokens (no strict_validation).
  const call = api(srv, await adminToken(srv, { tenantId: A.tenant.tenant_id, permissions: ['admin:*'] }));
  const made = await call('POST', '/api/admin/clients', { name: 'Introspector', grant_types: [], can_introspect: true, strict_validation: false });
  t.equal(made.status, 201, JSON.stringify(made.body));
  const rs = { client_id: made.body.client_id as string, client_secret: made.body.client_secret as string };
  const introspect = async (token: string) => (await (await postForm(`${srv.url}/introspect`, rs, { token })).json() as any).active;
  const c = await start(A.tv);
  t.same((await decide(c.body.user_code, 'allow', '198.51.100.7')).body, { approved: true });
  const tokens = await poll(A.tv, c.body.device_code);
  t.equal(tokens.status, 200, JSON.stringify(tokens.body));
  t.equal(await introspect(tokens.body.access_token), true, 'the access token is active before the replay');
  const again = await poll(A.tv, c.body.device_code);
  t.same(again, { status: 400, body: { error: 'invalid_grant', error_description: 'The device code was already used.' } });
  t.equal(await introspect(tokens.body.access_token), false, 'the first access token is revoked');
  const refreshed = await form('/token', { grant_type: 'refresh_token', client_id: A.tv, refresh_token: tokens.body.refresh_token });
  t.equal(refreshed.status, 400);
  t.equal((await refreshed.json() as any).error, 'invalid_grant', 'its refresh token is refused');
  // Another tenant's client cannot revoke them, and is told the code is unknown to it.
  const c2 = await start(A.tv);
  t.same((await decide(c2.body.user_code, 'allow', '198.51.100.8')).body, { approved: true });
  const kept = await poll(A.tv, c2.body.device_code);
  t.equal(kept.status, 200);
  t.match(await poll(B.tv, c2.body.device_code), { status: 400, body: { error: 'invalid_grant', error_description: 'The device code is invalid.' } });
  t.equal(await introspect(kept.body.access_token), true, 'another client\'s poll revokes nothing');
  // The alert was recorded for the tenant before the answer (the same transaction as any outbox event).
  const alerts = await srv.deps.sql<{ data: any }[]>`select data from event_outbox where tenant_id = ${A.tenant.tenant_id} and event = 'security.alert'`;
  t.same(alerts.filter((a) => a.data.reason === 'device_code_replay').map((a) => a.data.client_id), [A.tv], 'one security.alert for the replay');
});

t.test('two polls of one approved code at once: exactly one spends it; the other is a replay and what was issued is revoked', async (t) => {
  const call = api(srv, await adminToken(srv, { tenantId: A.tenant.tenant_id, permissions: ['admin:*'] }));
  // A device client of its own, so the refresh tokens under it are exactly these polls'.
  const made = await call('POST', '/api/admin/clients', {
    name: 'Racing TV', token_endpoint_auth_method: 'none', grant_types: [DEVICE_GRANT, 'refresh_token'], scopes: ['openid', 'email', 'offline_access'],
  });
  t.equal(made.status, 201, JSON.stringify(made.body));
  const tv = made.body.client_id as string;
  const rsMade = await call('POST', '/api/admin/clients', { name: 'Race introspector', grant_types: [], can_introspect: true, strict_validation: false });
  const rs = { client_id: rsMade.body.client_id as string, client_secret: rsMade.body.client_secret as string };
  const introspect = async (token: string) => (await (await postForm(`${srv.url}/introspect`, rs, { token })).json() as any).active;
  // The second poll lands either while the first is still issuing (the first sees the replay mark, revokes
  // its own tokens and answers invalid_grant too: what was seen in every round so far, since signing takes
  // longer than the replay's script) or after the first recorded them (the replay revokes them; the
  // sequential test above). Either way one poll spends the code and nothing it got stays usable.
  const rounds = 4;
  for (let i = 0; i < rounds; i++) {
    const c = await start(tv);
    t.same((await decide(c.body.user_code, 'allow', `198.51.100.${40 + i}`)).body, { approved: true });
    const answers = await Promise.all([poll(tv, c.body.device_code), poll(tv, c.body.device_code)]);
    const served = answers.filter((a) => a.status === 200);
    t.ok(served.length <= 1, `round ${i}: never two sets of tokens (${answers.map((a) => a.status).join(', ')})`);
    for (const a of answers.filter((x) => x.status !== 200)) {
      t.same(a, { status: 400, body: { error: 'invalid_grant', error_description: 'The device code was already used.' } }, `round ${i}: the other poll is refused as a replay`);
    }
    for (const a of served) {
      t.equal(await introspect(a.body.access_token), false, `round ${i}: the tokens handed out are revoked`);
      const refreshed = await form('/token', { grant_type: 'refresh_token', client_id: tv, refresh_token: a.body.refresh_token });
      t.equal(refreshed.status, 400, `round ${i}: so is their refresh token`);
    }
  }
  // Exactly one poll per code got tokens issued (one refresh-token family each), and none stayed usable.
  const rows = await srv.deps.sql<{ family_id: string; status: string }[]>`select family_id, status from refresh_tokens where tenant_id = ${A.tenant.tenant_id} and client_id = ${tv}`;
  t.equal(new Set(rows.map((r) => r.family_id)).size, rounds, 'one issuance per code');
  t.same(rows.filter((r) => r.status === 'active'), [], 'every refresh token issued is revoked');
  const alerts = await srv.deps.sql<{ data: any }[]>`select data from event_outbox where tenant_id = ${A.tenant.tenant_id} and event = 'security.alert'`;
  t.equal(alerts.filter((a) => a.data.client_id === tv && a.data.reason === 'device_code_replay').length, rounds, 'one security.alert per replayed code');
});

t.test('a user locked after approving: the device\'s poll gets no tokens', async (t) => {
  const call = api(srv, await adminToken(srv, { tenantId: A.tenant.tenant_id, permissions: ['admin:*'] }));
  const c = await start(A.tv);
  const d = await decide(c.body.user_code, 'allow', '198.51.100.50');
  t.same(d.body, { approved: true });
  const [user] = (await call('GET', `/api/admin/users?email=${encodeURIComponent(d.email)}`)).body.items;
  t.equal((await call('POST', `/api/admin/users/${user.id}/lock`)).status, 200);
  t.same(await poll(A.tv, c.body.device_code), { status: 400, body: { error: 'invalid_grant', error_description: 'The sign-in that approved this has ended: the user must sign in again.' } });
  const rows = await srv.deps.sql<{ status: string }[]>`select status from refresh_tokens where tenant_id = ${A.tenant.tenant_id} and sub = ${user.id}`;
  t.same(rows.filter((r) => r.status === 'active'), [], 'nothing issued stays usable');
});

t.test('denied consent: access_denied, and the code stays refused', async (t) => {
  const { body } = await start(A.tv, 'openid');
  const d = await decide(body.user_code, 'deny');
  t.same(d.body, { approved: false });
  const r = await poll(A.tv, body.device_code);
  t.match(r, { status: 400, body: { error: 'access_denied' } });
  const again = await json('/device', { user_code: body.user_code }, { 'x-forwarded-for': '198.51.100.2' });
  t.equal(again.status, 400, 'a decided code cannot be entered again');
});

t.test('expired: polls at the interval until expired_token (tenant device_code_ttl of 2 s)', async (t) => {
  const C = await deviceTenant('device-c', { device_code_ttl: 2 });
  // The tenant's setting reaches this process's cache by its change notice.
  let started: any;
  await waitFor(async () => { started = (await start(C.tv)).body; return started.expires_in === 2; }, 10_000, 100);
  t.match((await poll(C.tv, started.device_code)).body, { error: 'authorization_pending' });
  let last: any;
  // Each poll waits the interval the protocol asks for (1 s), until the answer is no longer pending.
  for (let i = 0; i < 10; i++) {
    await new Promise((r) => setTimeout(r, started.interval * 1000));
    last = (await poll(C.tv, started.device_code)).body;
    if (last.error !== 'authorization_pending') break;
  }
  t.equal(last.error, 'expired_token');
  const entered = await json('/device', { user_code: started.user_code }, { 'x-forwarded-for': '198.51.100.3' });
  t.equal(entered.status, 400);
  t.match(await entered.json(), { error: 'invalid_request', error_description: /expired/ });
});

t.test('user-code guessing: 20 wrong codes from one address, then 429 even for a right one; another address is unaffected', async (t) => {
  const { body } = await start(A.tv);
  const xff = { 'x-forwarded-for': '203.0.113.9' };
  for (let i = 0; i < 20; i++) {
    const r = await json('/device', { user_code: i % 2 ? 'BBBB-BBBB' : 'not a code' }, xff);
    t.equal(r.status, 400, `wrong code ${i + 1}`);
  }
  const refused = await json('/device', { user_code: body.user_code }, xff);
  t.equal(refused.status, 429);
  t.ok(Number(refused.headers.get('retry-after')) > 0);
  t.equal((await refused.json() as any).error, 'rate_limit_exceeded');
  const other = await json('/device', { user_code: body.user_code }, { 'x-forwarded-for': '203.0.113.10' });
  t.equal(other.status, 200, 'the right code from another address');
});

t.test('one user code entered more than 5 times is burned: the device gets access_denied', async (t) => {
  const { body } = await start(A.tv);
  for (let i = 0; i < 5; i++) t.equal((await json('/device', { user_code: body.user_code }, { 'x-forwarded-for': `198.51.100.${20 + i}` })).status, 200);
  const sixth = await json('/device', { user_code: body.user_code }, { 'x-forwarded-for': '198.51.100.30' });
  t.equal(sixth.status, 400);
  t.match((await poll(A.tv, body.device_code)).body, { error: 'access_denied' });
  const alerts = await srv.deps.sql<{ data: any }[]>`select data from event_outbox where tenant_id = ${A.tenant.tenant_id} and event = 'security.suspicious_activity'`;
  t.same(alerts.map((a) => a.data), [{ client_id: A.tv, reason: 'device_user_code_overuse' }], 'security receivers are told');
});

t.test('a client without the grant type is unauthorized_client; tenant B cannot poll tenant A\'s code', async (t) => {
  const web = A.tenant.clients.web;
  const r = await postForm(`${srv.url}/device_authorization`, web, { scope: 'openid' });
  t.equal(r.status, 400);
  t.match(await r.json(), { error: 'unauthorized_client' });
  const { body } = await start(A.tv);
  const tokenByWeb = await postForm(`${srv.url}/token`, web, { grant_type: DEVICE_GRANT, device_code: body.device_code });
  t.match(await tokenByWeb.json(), { error: 'unauthorized_client' });
  t.match((await poll(B.tv, body.device_code)), { status: 400, body: { error: 'invalid_grant' } }, 'tenant B\'s client');
  t.match((await poll(A.tv, body.device_code)).body, { error: 'authorization_pending' }, 'the code is untouched for its own client');
});

t.test('bad input is a clear 4xx', async (t) => {
  t.match(await (await form('/device_authorization', { client_id: 'nobody' })).json(), { error: 'invalid_client' });
  t.match(await start(A.tv, 'admin'), { status: 400, body: { error: 'invalid_scope' } });
  t.match(await (await form('/token', { grant_type: DEVICE_GRANT, client_id: A.tv })).json(), { error: 'invalid_request' });
  t.match(await poll(A.tv, 'x'.repeat(43)), { status: 400, body: { error: 'invalid_grant' } });
  t.match(await poll(A.tv, 'x'.repeat(200)), { status: 400, body: { error: 'invalid_request' } });
  const long = await json('/device', { user_code: 'B'.repeat(100) });
  t.equal(long.status, 422);
  const noSession = await json('/device/confirm', { handle: 'x'.repeat(43), decision: 'allow' });
  t.equal(noSession.status, 400);
  const page = await fetch(`${srv.url}/device/confirm?handle=nope`);
  t.equal(page.status, 200);
  t.match(await page.text(), /expired or was already completed/);
  const entry = await fetch(`${srv.url}/device?user_code=%3Cb%3E`);
  t.match(entry.headers.get('content-security-policy'), /default-src 'none'/);
  t.notMatch(await entry.text(), /<b>/, 'escaped');
});

t.test('device authorizations are rate-limited per client and address (30 a minute)', async (t) => {
  const xff = { 'x-forwarded-for': '192.0.2.44' };
  const statuses: number[] = [];
  for (let i = 0; i < 31; i++) statuses.push((await form('/device_authorization', { client_id: B.tv, scope: 'openid' }, xff)).status);
  t.same(statuses.slice(0, 30), Array(30).fill(200));
  t.equal(statuses[30], 429);
  t.equal((await form('/device_authorization', { client_id: B.tv, scope: 'openid' }, { 'x-forwarded-for': '192.0.2.45' })).status, 200, 'another address');
});
