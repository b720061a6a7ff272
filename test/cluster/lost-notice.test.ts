import t from 'tap';
import { PrivateRedis, waitFor } from '../helpers/processes.js';
import { startTestServer } from '../helpers/server.js';
import { postForm, setupTenant } from '../helpers/tokens.js';

// Change notices are Redis pub/sub, delivered at most once: one published while a process's subscriber
// connection is down never arrives. The process clears its caches when the connection comes back, so
// the change applies then, not when the cache entry expires (30 s).
// Everything is set up and torn down inside the test: with the private Redis and server opened by top-level
// awaits, the file sometimes never exited (tap's root test, idle during the awaits, ended before their
// teardowns were registered, which then never ran and left the connections open).
t.test('a client disabled while the notice channel was down is refused as soon as it reconnects', async (t) => {
  const redis = new PrivateRedis();
  await redis.start();
  t.teardown(() => redis.destroy());
  const srv = await startTestServer({ REDIS_URL: redis.url, QUEUE_REDIS_URL: redis.url });
  t.teardown(() => srv.close());
  const b = await setupTenant(srv, 'lost-notice');
  const token = () => postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials' });
  t.equal((await token()).status, 200, 'the client is cached as active');
  await redis.stop();
  // The change lands in Postgres while no notice can reach this process (as if it had been made on
  // another node whose notice was lost).
  await srv.deps.sql`update clients set status = 'disabled' where client_id = ${b.clients.exchanger.client_id}`;
  await redis.start();
  const restarted = Date.now();
  await waitFor(async () => (await token()).status === 403, 20_000, 100);
  const took = Date.now() - restarted;
  t.ok(took < 10_000, `refused ${took} ms after Redis came back (the cache entry alone would have lived about 30 s)`);
  const r = await token();
  t.equal(((await r.json()) as { error: string }).error, 'client_disabled');
});
