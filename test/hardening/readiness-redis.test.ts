import t from 'tap';
import { spawnSync } from 'node:child_process';
import { PrivateRedis, waitFor } from '../helpers/processes.js';
import { startTestServer } from '../helpers/server.js';
import { postForm, setupTenant } from '../helpers/tokens.js';

// Issue 21 item 19: when Redis comes back empty, the revocation record is refilled without waiting for
// a request, and /readyz stays 503 until it is (a load balancer must not route to a process that would
// refuse every token).
t.test('Redis restarted empty: proactive refill, readiness tells the truth', async (t) => {
  const redis = new PrivateRedis();
  await redis.start();
  t.teardown(() => redis.destroy());
  const srv = await startTestServer({ REDIS_URL: redis.url });
  t.teardown(() => srv.close());
  const b = await setupTenant(srv, 'ready-rv');
  const rs = b.clients.resource_server;
  const tokenRes = await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials' });
  const token = ((await tokenRes.json()) as any).access_token as string;
  const revoked = await postForm(`${srv.url}/revoke`, b.clients.exchanger, { token });
  t.equal(revoked.status, 200);
  await waitFor(async () => (await fetch(`${srv.url}/readyz`)).status === 200);

  const cli = (...args: string[]) => spawnSync('redis-cli', ['-p', String(redis.port), ...args], { encoding: 'utf8' }).stdout.trim();
  const prefix = srv.config.redisPrefix;
  await redis.stop();
  await redis.start(); // empty: no persistence
  // Without any token request, the process refills on reconnect.
  await waitFor(() => cli('exists', `${prefix}rv:loaded`) === '1', 15_000, 100);
  t.pass('the revocation record is back without a request triggering it');
  t.equal((await fetch(`${srv.url}/readyz`)).status, 200);
  const after = (await (await postForm(`${srv.url}/introspect`, rs, { token })).json()) as any;
  t.equal(after.active, false, 'the revoked token is still revoked after the refill');

  // Redis reachable but the record missing (and another process holding the refill): not ready.
  cli('set', `${prefix}rv:refilling`, 'other', 'PX', '60000');
  cli('del', `${prefix}rv:loaded`);
  const notReady = await fetch(`${srv.url}/readyz`);
  t.equal(notReady.status, 503);
  t.match(((await notReady.json()) as any).error_description, /revocation state not loaded/);
  t.equal((await postForm(`${srv.url}/introspect`, rs, { token })).status, 503, 'checks fail closed meanwhile');
  cli('del', `${prefix}rv:refilling`);
  await waitFor(async () => (await fetch(`${srv.url}/readyz`)).status === 200, 15_000, 100);
  t.pass('ready again once the record is loaded (the probe itself restarts the refill)');
});
