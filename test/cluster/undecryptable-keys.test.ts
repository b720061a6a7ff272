import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import t from 'tap';
import { migrate } from '../../src/store/migrate.js';
import { tempDatabase } from '../helpers/db.js';
import { freePort, removePrefix, uniqueName } from '../helpers/env.js';
import { waitFor } from '../helpers/processes.js';

// Issue 29 item 13: a node whose KEY_ENCRYPTION_KEY cannot decrypt the current signing key used to
// crash-loop at start (the supervisor replaced its HTTP processes forever), and a running node whose key
// reload failed after a rotation kept signing with the retired key and stayed ready. Now the supervisor
// stops once with the message and EXIT_CONFIG (78), and a running node answers /readyz 503 and refuses
// issuance until the current key is one it can use, while it still verifies tokens. Signing keys are
// environment-wide, so this file has a database of its own.
// Two supervisors start here, each forking two HTTP processes: on a busy machine that alone takes a while.
t.setTimeout(300_000);
const cli = path.resolve('dist/src/cli.js');
const K1 = '11'.repeat(32);
const K2 = '22'.repeat(32);
const db = await tempDatabase();
t.teardown(() => db.drop());
await migrate(db.sql);
const prefix = `${uniqueName('undecryptable')}:`;
t.teardown(() => removePrefix(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', prefix));
const base = { ...process.env, NODE_ENV: 'test', DATABASE_URL: db.url, REDIS_PREFIX: prefix };

/** A CLI command under the given key (on this file's database and Redis prefix); its JSON output. */
function svc(args: string[], key: string): any {
  const r = spawnSync(process.execPath, [cli, ...args], { env: { ...base, KEY_ENCRYPTION_KEY: key, LOG_LEVEL: 'warn' }, encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`svc ${args.join(' ')} failed: ${r.stderr}`);
  return JSON.parse(r.stdout.slice(r.stdout.indexOf('{')));
}

/** `svc start` (a supervisor with two HTTP processes) under the given key, killed when test `t` ends. */
async function startNode(t: { teardown(fn: () => unknown): void }, key: string) {
  const port = await freePort();
  const proc: ChildProcess = spawn(process.execPath, [cli, 'start'], {
    env: { ...base, KEY_ENCRYPTION_KEY: key, PORT: String(port), WORKERS: '2', CRYPTO_THREADS: '1', QUEUE_WORKERS: 'false', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout!.on('data', (d) => { stdout += d; });
  proc.stderr!.on('data', (d) => { stderr += d; });
  t.teardown(() => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL'); });
  return { proc, url: `http://127.0.0.1:${port}`, stdout: () => stdout, stderr: () => stderr };
}

interface Res { status: number; body: any; headers: http.IncomingHttpHeaders }
/** One request on a new connection, so the kernel hands each to either HTTP process of the node. */
function send(url: string, method = 'GET', headers: Record<string, string> = {}, body?: string): Promise<Res> {
  return new Promise((resolve, reject) => {
    const r = http.request(url, { method, agent: false, headers: { ...headers, ...(body !== undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {}) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => { let b: any = text; try { b = JSON.parse(text); } catch { /* not JSON */ } resolve({ status: res.statusCode ?? 0, body: b, headers: res.headers }); });
    });
    r.on('error', reject);
    r.end(body);
  });
}
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
const form = (url: string, auth: string, f: Record<string, string>) =>
  send(url, 'POST', { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' }, new URLSearchParams(f).toString());
/** Waits until `n` requests in a row on fresh connections (both processes, in all likelihood) answer `status`. */
const allAnswer = (url: string, status: number, n = 10) => waitFor(async () => {
  for (let i = 0; i < n; i++) if ((await send(url)).status !== status) return false;
  return true;
}, 30_000, 100);
const kidOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[0]!, 'base64url').toString()).kid as string;

// The signing keys (active and next) and the demo clients, stored under K1.
const boot = svc(['bootstrap', '--json'], K1);
const activeKid = async () => (await db.sql<{ kid: string }[]>`select kid from signing_keys where status = 'active'`)[0]!.kid;

t.test('a node started with a key that cannot decrypt the signing key stops once, with the reason', async (t) => {
  const node = await startNode(t, K2);
  // Old code: the supervisor replaced the failing HTTP processes forever and never exited.
  await waitFor(() => node.proc.exitCode !== null, 90_000, 100).catch(() => { throw new Error(`the supervisor is still running: ${node.stdout()}${node.stderr()}`); });
  t.equal(node.proc.exitCode, 78, 'the supervisor exits with EXIT_CONFIG');
  const kid = await activeKid();
  t.equal(node.stderr().match(/cannot decrypt signing key/g)?.length, 1, `the message is printed once: ${node.stderr()}`);
  t.match(node.stderr(), `svc: stopped on a configuration error: cannot decrypt signing key ${kid}: KEY_ENCRYPTION_KEY is not the key it was stored with`);
  t.equal(node.stderr().trim().split('\n').length, 1, 'on one line');
  t.notMatch(node.stdout(), /replacing it/, 'no HTTP process was restarted');
  t.notMatch(node.stdout(), /svc listening/);
});

t.test('a running node whose current key becomes undecryptable reports not ready and stops issuing, then recovers', async (t) => {
  const node = await startNode(t, K1);
  await waitFor(() => node.stdout().includes('svc listening'), 90_000, 50).catch(() => { throw new Error(`node did not start: ${node.stdout()}${node.stderr()}`); });
  const ex = boot.clients.exchanger;
  const rs = boot.clients.resource_server;
  const issue = () => form(`${node.url}/token`, basic(ex.client_id, ex.client_secret), { grant_type: 'client_credentials', scope: 'read', audience: ex.audience });
  await allAnswer(`${node.url}/readyz`, 200);
  const before = await issue();
  t.equal(before.status, 200);
  const original = kidOf(before.body.access_token);

  // Rotations under another key: the first promotes the next key, stored under K1 (still usable here);
  // the second promotes the one the first created, stored under K2.
  const r1 = svc(['keys', 'rotate'], K2);
  await waitFor(async () => { const x = await issue(); return x.status === 200 && kidOf(x.body.access_token) === r1.active; }, 20_000, 100);
  t.pass('the first rotation under K2 signs with a key stored under K1');
  const r2 = svc(['keys', 'rotate'], K2);
  // Old code: "key reload failed" in the log, /readyz 200 and tokens signed with the retired key.
  await allAnswer(`${node.url}/readyz`, 503);
  const ready = await send(`${node.url}/readyz`);
  t.match(ready.body, { error: 'service_unavailable', error_description: `not ready: cannot decrypt signing key ${r2.active}: KEY_ENCRYPTION_KEY is not the key it was stored with` });
  for (let i = 0; i < 10; i++) {
    const x = await issue();
    t.equal(x.status, 503, 'issuance is refused, not done with the retired key');
    t.equal(x.body.error, 'service_unavailable');
    t.equal(x.headers['retry-after'], '5');
  }
  // Verification follows the database: tokens signed before stay valid, and the new key is published.
  const intro = await form(`${node.url}/introspect`, basic(rs.client_id, rs.client_secret), { token: before.body.access_token });
  t.equal(intro.status, 200);
  t.equal(intro.body.active, true, 'a token signed before the rotation still introspects as active');
  const jwks = await send(`${node.url}/.well-known/jwks.json`);
  t.ok(jwks.body.keys.some((k: { kid: string }) => k.kid === r2.active), 'the JWKS lists the new current key');
  t.ok(jwks.body.keys.some((k: { kid: string }) => k.kid === original), 'and still the retired one');
  t.match(node.stdout(), /key reload failed/, 'the failed reload is logged');

  // Two rotations under the right key make a key stored under K1 current again: ready and issuing.
  svc(['keys', 'rotate'], K1);
  const r4 = svc(['keys', 'rotate'], K1);
  await allAnswer(`${node.url}/readyz`, 200);
  const after = await issue();
  t.equal(after.status, 200);
  t.equal(kidOf(after.body.access_token), r4.active, 'signed with the current key');
  t.notMatch(node.stdout(), /replacing it/, 'no process died on the way');
});
