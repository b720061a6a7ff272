import http from 'node:http';
import t from 'tap';
import { CLIENT_SECRET_FAILURES, MANY_SOURCES } from '../../src/clients/secret-failures.js';
import { closeLogin } from '../../src/login/index.js';
import { LOGIN } from '../../src/login/options.js';
import { waitFor } from '../helpers/processes.js';
import { startTestServer } from '../helpers/server.js';
import { basic, setupTenant } from '../helpers/tokens.js';

// Issue 29 items 3 and 7: failure budgets count the client's address, and behind a reverse proxy
// (TRUSTED_PROXIES) that is the address the proxy forwards. Here the "proxy" is whoever connects from
// 127.0.0.1 (trusted); a connection bound to 127.0.0.2 is a client that reaches svc directly.
const CODES_PER_MINUTE = 3;
const CHECK_FAILURES = 3;
const srv = await startTestServer({ TRUSTED_PROXIES: '127.0.0.1', LOGIN_IP_LIMIT_PER_MINUTE: String(CODES_PER_MINUTE), CHECK_KEY_FAILURES_PER_MINUTE: String(CHECK_FAILURES) });
t.teardown(async () => { await srv.close(); await closeLogin(srv.deps); });
const b = await setupTenant(srv, 'per-address');

interface Answer { status: number; headers: http.IncomingHttpHeaders; body: any }
/** One request from a chosen local address (the socket svc sees), optionally naming a forwarded client. */
function send(p: string, o: { from?: string; forwardedFor?: string; headers?: Record<string, string>; body?: string }): Promise<Answer> {
  const headers: Record<string, string> = { ...o.headers, ...(o.forwardedFor !== undefined ? { 'x-forwarded-for': o.forwardedFor } : {}) };
  if (o.body !== undefined) headers['content-length'] = String(Buffer.byteLength(o.body));
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: srv.port, localAddress: o.from ?? '127.0.0.1', method: 'POST', path: p, agent: false, headers }, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? JSON.parse(text) : null }));
    });
    req.on('error', reject);
    req.end(o.body);
  });
}
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const JSON_BODY = { 'content-type': 'application/json', accept: 'application/json' };
const token = (c: { client_id: string }, secret: string, o: { from?: string; forwardedFor?: string; body?: string } = {}) =>
  send('/token', { ...o, headers: { ...FORM, authorization: basic(c.client_id, secret) }, body: o.body ?? 'grant_type=client_credentials' });
const introspect = (c: { client_id: string }, secret: string, subject: string, o: { from?: string; forwardedFor?: string } = {}) =>
  send('/introspect', { ...o, headers: { ...FORM, authorization: basic(c.client_id, secret) }, body: `token=${encodeURIComponent(subject)}` });
const exchangeBody = (subject: string) => new URLSearchParams({
  grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: subject, subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
}).toString();

const ATTACKER = '203.0.113.7';
const CLIENT = '198.51.100.1';

t.test('client secrets behind a trusted proxy: the attacker\'s address is refused, the client\'s is not', async (t) => {
  const ex = b.clients.exchanger;
  const first = await token(ex, ex.client_secret, { forwardedFor: CLIENT });
  t.equal(first.status, 200, 'the right secret works before');
  const subject = first.body.access_token as string;
  for (let i = 0; i < CLIENT_SECRET_FAILURES.limit; i++) {
    t.equal((await token(ex, `wrong-${i}`, { forwardedFor: ATTACKER })).status, 401, `wrong secret ${i + 1} from the attacker`);
  }
  const attacker = await token(ex, ex.client_secret, { forwardedFor: ATTACKER });
  t.equal(attacker.status, 429, "the attacker's address is refused, even with the right secret");
  t.equal(attacker.body.error, 'rate_limit_exceeded');
  t.ok(Number(attacker.headers['retry-after']) > 0, 'with Retry-After');
  t.equal((await token(ex, ex.client_secret, { forwardedFor: ATTACKER, body: exchangeBody(subject) })).status, 429,
    "refused at token exchange too (the budget read in the subject token's MGET is the attacker address's)");

  t.equal((await token(ex, ex.client_secret, { forwardedFor: CLIENT })).status, 200, 'the client keeps client_credentials from its own address');
  const exchanged = await token(ex, ex.client_secret, { forwardedFor: CLIENT, body: exchangeBody(subject) });
  t.equal(exchanged.status, 200, 'and token exchange');
  t.equal((await token(ex, ex.client_secret)).status, 200, "a request of the proxy's own (no X-Forwarded-For) is its own address");

  const rs = b.clients.resource_server;
  const rsAttacker = '203.0.113.8';
  for (let i = 0; i < CLIENT_SECRET_FAILURES.limit; i++) {
    t.equal((await introspect(rs, `wrong-${i}`, subject, { forwardedFor: rsAttacker })).status, 401, `wrong introspection secret ${i + 1}`);
  }
  const refused = await introspect(rs, rs.client_secret, subject, { forwardedFor: rsAttacker });
  t.equal(refused.status, 429, "the attacker's address cannot introspect");
  t.ok(Number(refused.body.retry_after) > 0, 'with the time left in the window');
  const served = await introspect(rs, rs.client_secret, subject, { forwardedFor: '198.51.100.2' });
  t.equal(served.status, 200, 'the resource server keeps introspecting from its own address');
  t.equal(served.body.active, true);
});

t.test('X-Forwarded-For from a peer that is not a trusted proxy is ignored', async (t) => {
  const web = b.clients.web;
  for (let i = 0; i < CLIENT_SECRET_FAILURES.limit; i++) {
    const r = await token(web, `wrong-${i}`, { from: '127.0.0.2', forwardedFor: `192.0.2.${i + 1}` });
    t.equal(r.status, 401, `wrong secret ${i + 1}, naming another address each time`);
  }
  const spoofed = await token(web, `wrong-again`, { from: '127.0.0.2', forwardedFor: '192.0.2.200' });
  t.equal(spoofed.status, 429, "a new X-Forwarded-For does not evade the socket address's budget");
  // The client is authenticated (400 for a grant it may not use, not 401 or 429) from the address the spoofer named.
  t.equal((await token(web, web.client_secret, { forwardedFor: '192.0.2.200' })).status, 400, 'the named address itself was never charged');
});

t.test('security.alert once when one client id fails from many addresses', async (t) => {
  const admin = b.clients.admin_console;
  const alerts = async () => (await srv.deps.sql<{ data: Record<string, unknown> }[]>`
    select data from event_outbox where tenant_id = ${b.tenant_id} and event = 'security.alert' and data->>'client_id' = ${admin.client_id}`).map((r) => r.data);
  for (let i = 0; i < MANY_SOURCES.sources - 1; i++) t.equal((await token(admin, 'wrong', { forwardedFor: `203.0.113.${100 + i}` })).status, 401);
  // Many failures from one address are one source.
  for (let i = 0; i < 3; i++) await token(admin, 'wrong', { forwardedFor: '203.0.113.100' });
  t.same(await alerts(), [], `no alert from ${MANY_SOURCES.sources - 1} addresses (the event would be written before the 401)`);
  t.equal((await token(admin, 'wrong', { forwardedFor: '203.0.113.200' })).status, 401);
  await waitFor(async () => (await alerts()).length > 0);
  const [alert] = await alerts();
  t.match(alert, { client_id: admin.client_id, reason: 'client_secret_failures_many_sources', sources: MANY_SOURCES.sources, window_seconds: MANY_SOURCES.windowMs / 1000 });
  for (let i = 0; i < 5; i++) await token(admin, 'wrong', { forwardedFor: `203.0.113.${210 + i}` });
  t.equal((await alerts()).length, 1, 'one alert per window, however many more addresses fail');
  t.equal((await token(admin, admin.client_secret, { forwardedFor: CLIENT })).status, 400, 'and the client still authenticates (400: a grant it may not use, not 401 or 429)');
});

t.test('per-address login and check API budgets count the forwarded address', async (t) => {
  // One-time code verification: 100 failures per address in 15 minutes.
  for (let i = 0; i < LOGIN.verifyFailuresPerIp; i++) {
    const r = await send('/email-code/verify', { forwardedFor: ATTACKER, headers: JSON_BODY, body: JSON.stringify({ email: `guess-${i}@example.test`, code: '000000' }) });
    if (r.status !== 400) { t.fail(`verify ${i + 1} answered ${r.status}`); return; }
  }
  const verifyRefused = await send('/email-code/verify', { forwardedFor: ATTACKER, headers: JSON_BODY, body: JSON.stringify({ email: 'guess-last@example.test', code: '000000' }) });
  t.equal(verifyRefused.status, 429, "the guesser's forwarded address is refused");
  const verifyOther = await send('/email-code/verify', { forwardedFor: CLIENT, headers: JSON_BODY, body: JSON.stringify({ email: 'someone@example.test', code: '000000' }) });
  t.equal(verifyOther.status, 400, 'another user behind the same proxy still gets an answer to their code');

  // Code requests: LOGIN_IP_LIMIT_PER_MINUTE (3 here) per address.
  const generate = (forwardedFor: string, i: number) => send('/email-code/generate', { forwardedFor, headers: JSON_BODY, body: JSON.stringify({ email: `spray-${i}@example.test`, client_id: b.clients.web.client_id }) });
  for (let i = 0; i < CODES_PER_MINUTE; i++) t.equal((await generate(ATTACKER, i)).status, 200, `code request ${i + 1}`);
  t.equal((await generate(ATTACKER, 99)).status, 429, "past the limit from the sprayer's address");
  t.equal((await generate(CLIENT, 100)).status, 200, 'another address behind the proxy can still ask for a code');

  // Check API keys: CHECK_KEY_FAILURES_PER_MINUTE (3 here) invalid keys per address.
  const check = (forwardedFor: string, i: number) => send('/api/check', { forwardedFor, headers: { ...JSON_BODY, authorization: `Bearer ck_guess_${i}` }, body: JSON.stringify({ user_id: 'u', permission: 'p' }) });
  for (let i = 0; i < CHECK_FAILURES; i++) t.equal((await check(ATTACKER, i)).status, 401, `invalid key ${i + 1}`);
  t.equal((await check(ATTACKER, 99)).status, 429, "the key guesser's address is refused");
  t.equal((await check(CLIENT, 100)).status, 401, 'another address is still answered');
});
