import t from 'tap';
import { parseJti } from '../../src/tokens/jti.js';
import { RevocationStore } from '../../src/tokens/revocation.js';
import { api } from '../admin/helpers.js';
import { j } from '../helpers/http.js';
import { claims } from '../helpers/jwt.js';
import { waitFor } from '../helpers/processes.js';
import { startTestServer } from '../helpers/server.js';
import { adminToken, postForm, setupTenant } from '../helpers/tokens.js';
import { isolatedDatabase } from '../webhooks/fixtures.js';
import { forgetRevocationState } from '../helpers/revocation.js';

const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const AT = 'urn:ietf:params:oauth:token-type:access_token';
const PATH = '/api/admin/settings/refresh-token-sharding';

// Item 6 of issue 20: the revocation shard count changes (a new generation) while tokens are issued,
// exchanged and introspected. No request fails, and tokens of the old generation are still checked in
// their old shards: revoked after the change, they introspect inactive (also after Redis is refilled).
// A database of its own: the global generation changes here, and other files assert theirs.
t.test('a global reshard under load: no error, old-generation tokens revoked afterwards are inactive', async (t) => {
  const db = await isolatedDatabase();
  const srv = await startTestServer({ DATABASE_URL: db.url });
  let stop = false;
  t.teardown(async () => { stop = true; await srv.close(); await db.drop(); });
  const b = await setupTenant(srv, 'reshard');
  const platform = api(srv, await adminToken(srv, { tenantId: b.tenant_id, permissions: ['admin:*'], platform: true }));
  const rs = b.clients.resource_server;
  const issue = async () => {
    const res = await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials' });
    return { status: res.status, token: (await j(res)).access_token as string };
  };
  const introspect = async (token: string) => j(await postForm(`${srv.url}/introspect`, rs, { token }));

  const before = (await platform('GET', PATH)).body;
  const oldGen = before.currentGeneration as number;
  const oldCount = before.currentShardCount as number;
  const newCount = oldCount === 4 ? 8 : 4;
  const old = await Promise.all(Array.from({ length: 24 }, async () => (await issue()).token));
  for (const tok of old) {
    const jti = parseJti(claims(tok).jti)!;
    t.ok(jti.generation === oldGen && jti.shard < oldCount, 'issued in the old generation');
  }

  // Load: issuing, exchanging and introspecting, every answer recorded.
  const failures: string[] = [];
  const issued: string[] = [];
  let requests = 0;
  const loop = async (fn: () => Promise<void>) => { while (!stop) { await fn().catch((err) => failures.push(String(err))); requests++; } };
  const loops = Promise.all([
    loop(async () => { const r = await issue(); if (r.status !== 200) failures.push(`token ${r.status}`); else issued.push(r.token); }),
    loop(async () => { const a = await introspect(old[0]!); if (a.active !== true) failures.push(`live old token answered ${JSON.stringify(a)}`); }),
    loop(async () => {
      const subject = issued[issued.length - 1] ?? old[1]!;
      const res = await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: EXCHANGE, subject_token: subject, subject_token_type: AT, audience: rs.audience! });
      if (res.status !== 200) failures.push(`exchange ${res.status} ${await res.text()}`); else await res.arrayBuffer();
    }),
  ]);
  await waitFor(() => requests >= 30, 20_000);

  const changed = await platform('PUT', PATH, { shardCount: newCount, skip_sync_check: true, notes: 'live reshard test' });
  t.equal(changed.status, 200, JSON.stringify(changed.body));
  const newGen = changed.body.config.currentGeneration as number;
  t.equal(newGen, oldGen + 1);
  // New tokens carry the new generation and its shard count.
  await waitFor(() => issued.some((tok) => parseJti(claims(tok).jti)!.generation === newGen), 10_000);
  const n0 = requests;
  await waitFor(() => requests >= n0 + 30, 20_000);

  // Old-generation tokens revoked after the change: checked in their old shards, so inactive.
  const revokedOld = old.slice(2, 14);
  for (const tok of revokedOld) t.equal((await postForm(`${srv.url}/revoke`, b.clients.exchanger, { token: tok })).status, 200);
  for (const tok of revokedOld) {
    const jti = claims(tok).jti as string;
    const key = RevocationStore.jtiKey(jti)!;
    t.match(key, `{g${oldGen}:${parseJti(jti)!.region}:${parseJti(jti)!.shard}}`, 'the revocation key is in the token\'s own (old) shard');
    t.equal(await srv.deps.redis.exists(key), 1);
    t.same(await introspect(tok), { active: false }, 'revoked old-generation token is inactive');
  }
  for (const tok of old.slice(14)) t.equal((await introspect(tok)).active, true, 'unrevoked old-generation token stays active');
  const fresh = issued.filter((tok) => parseJti(claims(tok).jti)!.generation === newGen).slice(0, 6);
  for (const tok of fresh) t.ok(parseJti(claims(tok).jti)!.shard < newCount, 'new tokens use the new shard count');
  for (const tok of fresh) await postForm(`${srv.url}/revoke`, b.clients.exchanger, { token: tok });
  for (const tok of fresh) t.same(await introspect(tok), { active: false }, 'revoked new-generation token is inactive');

  stop = true;
  await loops;
  t.same(failures, [], 'no request failed during the reshard');
  t.ok(requests > 60, `${requests} requests during the test`);

  // Redis loses the revocation state (checks fail closed meanwhile, so after the load): the refill from
  // Postgres puts the old-generation keys back in their old shards.
  await forgetRevocationState(srv.deps.redis);
  await waitFor(async () => (await introspect(old[14]!)).active === true, 10_000, 100);
  // On a Redis Cluster each hash slot has its own sentinel, refilled when a check first finds it gone
  // (503 until then): wait until every revoked token's slot answers, then hold each answer to inactive.
  await waitFor(async () => {
    for (const tok of revokedOld) if ((await introspect(tok)).error === 'service_unavailable') return false;
    return true;
  }, 10_000, 100);
  for (const tok of revokedOld) t.same(await introspect(tok), { active: false }, 'still inactive after a refill');
});
