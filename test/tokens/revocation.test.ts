import t from 'tap';
import { j } from '../helpers/http.js';
import { PrivateRedis, waitFor } from '../helpers/processes.js';
import { startTestServer } from '../helpers/server.js';
import { postForm, setupTenant } from '../helpers/tokens.js';

t.test('a Redis that restarts empty is refilled from Postgres: a revoked token never comes back to life', async (t) => {
  const redis = new PrivateRedis();
  await redis.start();
  const srv = await startTestServer({ REDIS_URL: redis.url });
  t.teardown(async () => { await srv.close(); await redis.destroy(); });
  const b = await setupTenant(srv, 'refill');
  const get = async () => (await j(await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials' }))).access_token as string;
  const revoked = await get();
  const live = await get();
  t.equal((await postForm(`${srv.url}/revoke`, b.clients.exchanger, { token: revoked })).status, 200);
  const introspect = async (token: string) => postForm(`${srv.url}/introspect`, b.clients.resource_server, { token });
  t.same(await j(await introspect(revoked)), { active: false });

  // Restart with nothing in memory (no persistence): the revocation key is gone from Redis.
  await redis.stop();
  await redis.start();
  await waitFor(async () => (await fetch(`${srv.url}/readyz`)).status === 200, 15_000, 100);
  await waitFor(async () => (await introspect(live)).status === 200, 15_000, 100);
  t.same(await j(await introspect(revoked)), { active: false }, 'still revoked after the restart');
  t.equal((await j(await introspect(live))).active, true, 'live tokens are live again');
  const subject = await postForm(`${srv.url}/token`, b.clients.exchanger, {
    grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: revoked, subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
  });
  t.equal(subject.status, 400, 'and cannot be exchanged');
});

t.test('revocation keys live under the shard that the jti names', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.close());
  const b = await setupTenant(srv, 'shardkey');
  const token = (await j(await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials' }))).access_token as string;
  const jti = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).jti as string;
  await postForm(`${srv.url}/revoke`, b.clients.exchanger, { token });
  const [g, region, shard] = jti.split(':');
  const key = `rv:{${g}:${region}:${shard}}:${jti}`;
  t.equal(await srv.deps.redis.exists(key), 1, 'hash-tagged by generation, region and shard');
  const ttl = await srv.deps.redis.pttl(key);
  t.ok(ttl > 0 && ttl <= 900_000, 'expires when the token would have');
  const [row] = await srv.deps.sql<{ jti: string }[]>`select jti from revocations where jti = ${jti}`;
  t.equal(row?.jti, jti, 'written durably to Postgres');
});
