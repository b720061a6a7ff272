import t from 'tap';
import { api } from '../admin/helpers.js';
import { createSession } from '../../src/login/sessions.js';
import { waitFor } from '../helpers/processes.js';
import { adminToken } from '../helpers/tokens.js';
import { startLoginEnv, uniqueEmail } from '../login/fixtures.js';
import { type OtlpSpan, attr, descends, parent, startOtlpReceiver } from './otlp-receiver.js';

// Issue 34: the account page, its form posts, the passkey API and the device verification page are traced
// like the login steps. A sampled request is one trace whose server span is under the caller's, with the
// Redis and Postgres work it does as client spans below it (so an operator sees where its time went), and
// no span carries the session cookie, the address, a code or a CSRF token. A local receiver collects what
// the real OTLP/HTTP exporter posts; each request's spans are found by the trace id of its traceparent.

const receiver = await startOtlpReceiver();
t.teardown(() => receiver.close());
const { spans, bodies } = receiver;
const otlp = receiver.url;

const env = await startLoginEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp, OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_SERVICE_NAME: 'svc-test' });
t.teardown(() => env.close());
const { srv, tenant } = env;
const tenantId = tenant.tenant_id;

const traceOf = (traceId: string) => spans.filter((s) => s.traceId === traceId);
const isPg = (s: OtlpSpan) => attr(s, 'db.system.name') === 'postgresql';
const isRedis = (s: OtlpSpan) => s.name.startsWith('redis ');

/**
 * The spans of one request's trace once its server span and the client spans expected under it have
 * arrived (one request's spans may reach the collector in several export batches); what arrived by
 * then otherwise, for the assertions to report.
 */
async function requestTrace(traceId: string, expect: { pg?: RegExp; redis?: boolean }) {
  const ready = () => {
    const trace = traceOf(traceId);
    const server = trace.find((s) => s.kind === 2);
    if (!server) return false;
    const below = trace.filter((s) => descends(trace, s, server.spanId));
    return (!expect.pg || below.some((s) => isPg(s) && expect.pg!.test(s.name))) && (!expect.redis || below.some(isRedis));
  };
  await waitFor(async () => ready(), 10_000, 50).catch(() => {});
  const trace = traceOf(traceId);
  return { trace, server: trace.find((s) => s.kind === 2) };
}

type Subtest = Parameters<Parameters<typeof t.test>[0]>[0];

/** One trace for the request: its server span named by the route, under the caller's, with the client spans it should have below it. */
function checkTrace(t: Subtest, p: ReturnType<typeof parent>, got: Awaited<ReturnType<typeof requestTrace>>, route: string, expect: { pg?: RegExp; redis?: boolean }) {
  const { trace, server } = got;
  t.equal(trace.filter((s) => s.kind === 2).length, 1, 'one server span in the trace');
  if (!server) return;
  t.equal(server.name, route, 'named by the route template');
  t.equal(server.parentSpanId, p.spanId, 'a child of the caller\'s span (W3C traceparent)');
  const below = trace.filter((s) => descends(trace, s, server.spanId));
  const names = below.map((s) => s.name).join(', ') || 'none';
  if (expect.pg) t.ok(below.some((s) => isPg(s) && expect.pg!.test(s.name)), `a Postgres span matching ${expect.pg} under the server span (${names})`);
  if (expect.redis) t.ok(below.some(isRedis), `a Redis span under the server span (${names})`);
  const clients = trace.filter((s) => isPg(s) || isRedis(s));
  t.ok(clients.every((s) => descends(trace, s, server.spanId)), 'every client span of the trace is under the server span');
}

// A signed-in user of this file's tenant, with one passkey to rename.
const email = uniqueEmail('acct-trace');
const user = (await srv.deps.store.forTenant(tenantId).users.insert({ email, emailVerified: true, loggedIn: true }))!;
const pk = (await srv.deps.store.forTenant(tenantId).passkeys.insert({ userId: user.id, credentialId: `cred-${user.id}`, publicKey: new Uint8Array([1]), counter: 0, transports: ['internal'], backupEligible: false, backedUp: false, aaguid: null, deviceName: 'Phone' }))!;
const session = await createSession(srv.deps.redis, { tenantId, userId: user.id, email, authTime: Math.floor(Date.now() / 1000) });
const secrets: Array<[string, string]> = [['session cookie', session.id], ['address', email]];

const cookies: Record<string, string> = { svc_session: session.id };
const cookieHeader = () => Object.entries(cookies).map(([k, v]) => `${k}=${v}`).join('; ');
function keepCookies(res: Response) {
  for (const c of res.headers.getSetCookie()) { const [k, v] = c.split(';')[0]!.split('=') as [string, string]; cookies[k] = v; }
}

t.test('a signed-in GET /account is one trace with the session read (Redis) and the page\'s queries (Postgres) under it', async (t) => {
  const p = parent();
  const res = await fetch(`${srv.url}/account`, { headers: { cookie: cookieHeader(), traceparent: p.header } });
  t.equal(res.status, 200);
  keepCookies(res);
  const html = await res.text();
  t.match(html, email, 'the page of the signed-in user');
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(html)![1]!;
  secrets.push(['CSRF token', csrf], ['CSRF cookie', cookies.svc_csrf!]);
  const expect = { pg: /^SELECT passkeys/, redis: true };
  checkTrace(t, p, await requestTrace(p.traceId, expect), 'GET /account', expect);
});

t.test('a form post of the account page (rename a passkey) is one trace with its transaction under it', async (t) => {
  const page = await (await fetch(`${srv.url}/account`, { headers: { cookie: cookieHeader() } })).text();
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(page)![1]!;
  const p = parent();
  const res = await fetch(`${srv.url}/account/passkeys/${pk.id}/rename`, {
    method: 'POST', redirect: 'manual',
    headers: { cookie: cookieHeader(), 'content-type': 'application/x-www-form-urlencoded', traceparent: p.header },
    body: new URLSearchParams({ csrf_token: csrf, device_name: 'Work laptop' }),
  });
  t.equal(res.status, 303);
  t.equal(res.headers.get('location'), '/account?done=renamed');
  const expect = { pg: /^UPDATE passkeys/, redis: true };
  const got = await requestTrace(p.traceId, expect);
  checkTrace(t, p, got, 'POST /account/passkeys/:id/rename', expect);
  t.ok(got.trace.some((s) => isPg(s) && /event_outbox/.test(String(attr(s, 'db.query.text')))), 'the user.updated event is written in the traced transaction');
});

t.test('passkey registration options are one trace with the user\'s passkeys (Postgres) and the challenge (Redis) under it', async (t) => {
  const p = parent();
  const res = await fetch(`${srv.url}/api/account/passkeys/registration-options`, {
    method: 'POST', headers: { cookie: cookieHeader(), 'content-type': 'application/json', traceparent: p.header }, body: '{}',
  });
  t.equal(res.status, 200);
  const { options } = await res.json() as { options: { challenge: string } };
  secrets.push(['WebAuthn challenge', options.challenge]);
  const expect = { pg: /^SELECT passkeys/, redis: true };
  const got = await requestTrace(p.traceId, expect);
  checkTrace(t, p, got, 'POST /api/account/passkeys/registration-options', expect);
  t.ok(got.trace.some((s) => s.name === 'redis SET' && got.server && descends(got.trace, s, got.server.spanId)), 'the challenge write is under the request');
});

t.test('the device verification page: the entry form, a typed code and the decision, each its own trace with its Redis and Postgres work under it', async (t) => {
  const call = api(srv, await adminToken(srv, { tenantId, permissions: ['admin:*'] }));
  const created = await call('POST', '/api/admin/clients', {
    name: 'Traced TV', token_endpoint_auth_method: 'none', grant_types: ['urn:ietf:params:oauth:grant-type:device_code'], scopes: ['openid', 'email'],
  });
  t.equal(created.status, 201);
  const da = await (await fetch(`${srv.url}/device_authorization`, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ client_id: created.body.client_id as string, scope: 'openid email' }),
  })).json() as { user_code: string; device_code: string };
  secrets.push(['user code', da.user_code], ['user code without its dash', da.user_code.replace('-', '')], ['device code', da.device_code]);

  const entry = parent();
  const page = await fetch(`${srv.url}/device?user_code=${da.user_code}`, { headers: { traceparent: entry.header } });
  t.equal(page.status, 200);
  t.match(await page.text(), da.user_code, 'the form prefilled with the code');
  // The entry form reads nothing: its trace is the server span alone, under the caller's.
  checkTrace(t, entry, await requestTrace(entry.traceId, {}), 'GET /device', {});

  const p = parent();
  const res = await fetch(`${srv.url}/device`, { method: 'POST', headers: { cookie: cookieHeader(), 'content-type': 'application/json', traceparent: p.header }, body: JSON.stringify({ user_code: da.user_code }) });
  t.equal(res.status, 200);
  const entered = await res.json() as { handle: string };
  t.match(entered, { login_required: false, client_name: 'Traced TV' }, 'signed in: straight to the decision');
  const expect = { redis: true };
  const got = await requestTrace(p.traceId, expect);
  checkTrace(t, p, got, 'POST /device', expect);
  t.ok(got.server && got.trace.filter(isRedis).filter((s) => descends(got.trace, s, got.server!.spanId)).length >= 3, 'the code budget, the code and the session are read under the request');

  const d = parent();
  const decided = await fetch(`${srv.url}/device/confirm`, { method: 'POST', headers: { cookie: cookieHeader(), 'content-type': 'application/json', traceparent: d.header }, body: JSON.stringify({ handle: entered.handle, decision: 'allow' }) });
  t.equal(decided.status, 200);
  t.same(await decided.json(), { approved: true });
  const allowed = { pg: /consents/, redis: true };
  checkTrace(t, d, await requestTrace(d.traceId, allowed), 'POST /device/confirm', allowed);
});

t.test('signed out, GET /account and then passkey sign-in options are each one trace with their Redis work under it', async (t) => {
  const out = parent();
  const res = await fetch(`${srv.url}/account?tenant=${encodeURIComponent(tenantId)}`, { redirect: 'manual', headers: { traceparent: out.header } });
  t.equal(res.status, 303, 'sent to sign in');
  const interaction = new URL(res.headers.get('location')!, srv.url).searchParams.get('interaction')!;
  const saved = { redis: true };
  checkTrace(t, out, await requestTrace(out.traceId, saved), 'GET /account', saved);

  const p = parent();
  const options = await fetch(`${srv.url}/login/passkey/options`, { method: 'POST', headers: { 'content-type': 'application/json', traceparent: p.header }, body: JSON.stringify({ interaction }) });
  t.equal(options.status, 200);
  secrets.push(['sign-in challenge', (await options.json() as { options: { challenge: string } }).options.challenge]);
  const got = await requestTrace(p.traceId, saved);
  checkTrace(t, p, got, 'POST /login/passkey/options', saved);
  t.ok(got.server && got.trace.some((s) => s.name === 'redis SET' && descends(got.trace, s, got.server!.spanId)), 'the challenge write is under the request');
});

t.test('no exported span carries the session cookie, the address, a code, a challenge or a CSRF token', async (t) => {
  const all = bodies.join('\n');
  t.ok(all.length > 0, 'spans were exported');
  for (const [what, value] of secrets) t.notOk(all.includes(value), `no ${what}`);
});
