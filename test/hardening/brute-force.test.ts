import { spawn } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import t from 'tap';
import { CLIENT_SECRET_FAILURES } from '../../src/clients/authenticate.js';
import { LOGIN } from '../../src/login/options.js';
import { freePort } from '../helpers/env.js';
import { waitFor } from '../helpers/processes.js';
import { startTestServer } from '../helpers/server.js';

/** The default of CHECK_KEY_FAILURES_PER_MINUTE (the two-process server below keeps it). */
const CHECK_KEY_FAILURES = 30;
import { setupTenant } from '../helpers/tokens.js';

// Issue 21 item 23: guessing one-time codes, client secrets and check API keys is budgeted per code,
// address, client and IP in Redis (client secrets per client and IP since issue 29), so the budget
// holds across both HTTP processes. The requests go to a real `svc start` with two HTTP processes
// (SO_REUSEPORT), each on a fresh connection, so the kernel spreads them over both: with per-process
// counters the refusal would not come at budget + 1.
const srv = await startTestServer();
t.teardown(() => srv.close());
const b = await setupTenant(srv, 'brute');

const port = await freePort();
const proc = spawn(process.execPath, [path.resolve('dist/src/cli.js'), 'start'], {
  env: { ...process.env, PORT: String(port), WORKERS: '2', QUEUE_WORKERS: 'false', LOG_LEVEL: 'info', NODE_ENV: 'test', REDIS_PREFIX: srv.config.redisPrefix, CRYPTO_QUEUE_WAIT_MS: '0' },
  stdio: ['ignore', 'pipe', 'pipe'],
});
let stdout = '';
proc.stdout!.on('data', (d) => { stdout += d; });
proc.stderr!.on('data', () => {});
t.teardown(() => { if (proc.exitCode === null) proc.kill('SIGKILL'); });
// The cluster's processes start; on a loaded CI machine that took over 30 s once.
// A start that never finishes must not outlive the test (the supervisor drains its workers on SIGTERM).
await waitFor(() => stdout.includes('svc listening'), 60_000, 50).catch((err: unknown) => { proc.kill('SIGTERM'); throw err; });

/** One request on a new connection (no keep-alive), so either HTTP process may take it. */
function fresh(method: string, p: string, headers: Record<string, string>, body?: string, o: { from?: string } = {}): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, localAddress: o.from, method, path: p, agent: false, headers: { ...headers, ...(body ? { 'content-length': String(Buffer.byteLength(body)) } : {}) } }, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null }));
    });
    req.on('error', reject);
    req.end(body);
  });
}
const json = { 'content-type': 'application/json', accept: 'application/json' };
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

t.test('one-time codes: failures per address are budgeted across codes and processes', async (t) => {
  const email = `guess-${Date.now()}@example.test`;
  for (let i = 0; i < LOGIN.verifyFailuresPerAddress; i++) {
    const r = await fresh('POST', '/email-code/verify', json, JSON.stringify({ email, code: String(100000 + i) }));
    t.equal(r.status, 400, `try ${i + 1}: wrong code`);
  }
  const refused = await fresh('POST', '/email-code/verify', json, JSON.stringify({ email, code: '123456' }));
  t.equal(refused.status, 429);
  t.equal(refused.body.error, 'rate_limit_exceeded');
});

t.test('one-time codes: failures per IP are budgeted across addresses and processes', async (t) => {
  // The address budget above already spent some of this IP's; count what is left.
  let status = 0;
  let tries = 0;
  for (; tries <= LOGIN.verifyFailuresPerIp; tries++) {
    status = (await fresh('POST', '/email-code/verify', json, JSON.stringify({ email: `ip-${tries}@example.test`, code: '000000' }))).status;
    if (status === 429) break;
  }
  t.equal(status, 429, `refused after ${tries} more failures`);
  t.equal(tries, LOGIN.verifyFailuresPerIp - LOGIN.verifyFailuresPerAddress, 'exactly at the IP budget (counted across both processes)');
});

t.test('client secrets: wrong secrets lock out the address they come from, not the client', async (t) => {
  // TRUSTED_PROXIES is unset here: X-Forwarded-For is ignored, so the attacker's spoofed addresses
  // below are charged to its socket address (127.0.0.2), whatever they say.
  const c = b.clients.exchanger;
  const form = { 'content-type': 'application/x-www-form-urlencoded' };
  const attacker = { from: '127.0.0.2' };
  const ok = await fresh('POST', '/token', { ...form, authorization: basic(c.client_id, c.client_secret) }, 'grant_type=client_credentials');
  t.equal(ok.status, 200, 'the right secret works before');
  for (let i = 0; i < CLIENT_SECRET_FAILURES.limit; i++) {
    const r = await fresh('POST', '/token', { ...form, authorization: basic(c.client_id, `wrong-${i}`), 'x-forwarded-for': `192.0.2.${i + 1}` }, 'grant_type=client_credentials', attacker);
    t.equal(r.status, 401, `wrong secret ${i + 1}`);
  }
  const locked = await fresh('POST', '/token', { ...form, authorization: basic(c.client_id, c.client_secret), 'x-forwarded-for': '192.0.2.200' }, 'grant_type=client_credentials', attacker);
  t.equal(locked.status, 429, "the attacker's address is locked out, even with the right secret and a new X-Forwarded-For");
  t.equal(locked.body.error, 'rate_limit_exceeded');
  // Token exchange and introspection read the budget in the same command as the presented token's
  // revocation state (src/tokens/read-ahead.ts): the lockout must hold there too, before the token counts.
  const subject = encodeURIComponent(ok.body.access_token as string);
  const exchange = `grant_type=${encodeURIComponent('urn:ietf:params:oauth:grant-type:token-exchange')}&subject_token=${subject}&subject_token_type=${encodeURIComponent('urn:ietf:params:oauth:token-type:access_token')}`;
  const exchangedByAttacker = await fresh('POST', '/token', { ...form, authorization: basic(c.client_id, c.client_secret) }, exchange, attacker);
  t.equal(exchangedByAttacker.status, 429, "the attacker's address is locked out of token exchange with a valid subject token");
  const cc = await fresh('POST', '/token', { ...form, authorization: basic(c.client_id, c.client_secret) }, 'grant_type=client_credentials');
  t.equal(cc.status, 200, 'the client itself, from its own address, is not locked out');
  const exchanged = await fresh('POST', '/token', { ...form, authorization: basic(c.client_id, c.client_secret) }, exchange);
  t.equal(exchanged.status, 200, 'nor out of token exchange');
  const rs = b.clients.resource_server;
  for (let i = 0; i < CLIENT_SECRET_FAILURES.limit; i++) await fresh('POST', '/introspect', { ...form, authorization: basic(rs.client_id, `wrong-${i}`) }, `token=${subject}`, { from: '127.0.0.3' });
  const rsLocked = await fresh('POST', '/introspect', { ...form, authorization: basic(rs.client_id, rs.client_secret) }, `token=${subject}`, { from: '127.0.0.3' });
  t.equal(rsLocked.status, 429, "the attacker's address gets 429 for a cached, active token");
  t.ok(Number(rsLocked.body.retry_after) > 0, 'with the time left in the window');
  const served = await fresh('POST', '/introspect', { ...form, authorization: basic(rs.client_id, rs.client_secret) }, `token=${subject}`);
  t.equal(served.status, 200, 'the resource server keeps introspecting from its own address');
  t.equal(served.body.active, true);
});

t.test('check API keys: invalid keys per IP are budgeted across processes', async (t) => {
  for (let i = 0; i < CHECK_KEY_FAILURES; i++) {
    const r = await fresh('POST', '/api/check', { ...json, authorization: `Bearer ck_guess_${i}` }, JSON.stringify({ user_id: 'u', permission: 'p' }));
    t.equal(r.status, 401, `invalid key ${i + 1}`);
  }
  const refused = await fresh('POST', '/api/check', { ...json, authorization: 'Bearer ck_guess_last' }, JSON.stringify({ user_id: 'u', permission: 'p' }));
  t.equal(refused.status, 429);
  t.equal(refused.body.error, 'rate_limit_exceeded');
});
