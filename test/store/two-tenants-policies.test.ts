import { randomBytes } from 'node:crypto';
import t from 'tap';
import type { NewCheckKey } from '../../src/store/check-api-keys.js';
import { lockSharding } from '../../src/store/sharding.js';
import { twoTenants } from '../helpers/two-tenants.js';

// Two tenants, in the manner of Hydra's persister_nid_test: what tenant A's policy, sharding and check
// API key repositories create cannot be read, listed, updated or deleted through tenant B's, and A's
// rows are exactly as they were afterwards.
// Shard generations name clients, not tenants: they do not go with the tenant.
const { sql, store, tenantA: tA, tenantB: tB, A, B } = await twoTenants('nid', (sql, [a, b]) => sql`delete from token_shard_generations where client_id in (${`${a}-client`}, ${`${b}-client`})`);
const clientA = `${tA}-client`;
const clientB = `${tB}-client`;
await sql`insert into clients (client_id, tenant_id, name) values (${clientA}, ${tA}, 'A'), (${clientB}, ${tB}, 'B')`;
const ACTOR = 'adm_1';

t.test('policies', async (t) => {
  const policy = { name: 'freeze', priority: 10, effect: 'deny' as const, conditions: [], resource_types: ['users'], actions: ['write'], enabled: true, extra: { note: 'a' } };
  const a = await A.policies.insert('pol_shared', policy, ACTOR);
  t.equal(a.tenant_id, tA);

  t.equal(await B.policies.get(a.id), null, 'get');
  t.equal(await B.policies.get(a.id, true), null, 'get for update');
  t.notOk((await B.policies.list({ limit: 100 })).some((p) => p.id === a.id), 'list');
  t.same(await B.policies.applicablePolicies('users', 'write'), [], 'applicable policies');
  t.equal(await B.policies.update(a.id, { enabled: false, name: 'thawed', extra: { note: 'b' } }, 'intruder'), null, 'update');
  t.equal(await B.policies.delete(a.id), null, 'delete');

  // The same id in the other tenant is another policy.
  const b = await B.policies.insert('pol_shared', { ...policy, name: 'B own', enabled: false }, ACTOR);
  t.equal(b.tenant_id, tB);
  t.equal((await B.policies.delete(b.id))?.name, 'B own');

  t.same(await A.policies.get(a.id), a, 'A unchanged');
  t.same((await A.policies.applicablePolicies('users', 'write')).map((p) => p.id), [a.id]);
  t.same((await A.policies.list({ limit: 100 })).map((p) => p.id), [a.id]);
});

t.test('sharding: per-client generations', async (t) => {
  // As the admin route does: in a transaction, under the resharding lock.
  const reshard = (tenantId: string, clientId: string, shards: number) =>
    store.transaction(tenantId, async (s, tx) => { await lockSharding(tx); return s.sharding.addClientGeneration(clientId, shards, ACTOR, null); });
  const g = await reshard(tA, clientA, 4);
  t.equal(g?.client_id, clientA, 'A adds a generation for its client');
  const before = await A.sharding.clientGenerations(clientA);
  t.same(before, [g]);

  t.equal(await B.sharding.clientGenerations(clientA), null, 'read');
  t.equal(await reshard(tB, clientA, 2), null, 'add');
  t.equal(await A.sharding.clientGenerations(clientB), null, 'and the other way');

  t.same(await A.sharding.clientGenerations(clientA), before, 'A unchanged');
  t.same(await B.sharding.clientGenerations(clientB), [], 'B sees its own client, without an override');
});

t.test('check API keys', async (t) => {
  const key = (id: string, clientId: string): NewCheckKey => ({
    id, clientId, name: 'k', prefix: 'svc_ck_xxxxxxx', hash: randomBytes(32), operations: ['check'], tier: 'strict', expiresAt: null, createdBy: ACTOR,
  });
  const a = await A.checkApiKeys.insert(key('cak_shared', clientA));
  t.ok(a);
  t.equal(a!.tenant_id, tA);

  t.equal(await B.checkApiKeys.insert(key('cak_b', clientA)), null, 'B cannot create a key for A\'s client');
  t.equal(await A.checkApiKeys.insert(key('cak_a2', clientB)), null, 'nor A for B\'s');
  t.equal(await B.checkApiKeys.get(a!.id), null, 'get');
  t.equal(await B.checkApiKeys.get(a!.id, true), null, 'get for update');
  const listed = await B.checkApiKeys.list({ page: 1, limit: 100 });
  t.same(listed, { rows: [], total: 0 }, 'list');
  t.same(await B.checkApiKeys.list({ page: 1, limit: 100, client_id: clientA }), { rows: [], total: 0 }, 'list by A\'s client');
  t.equal(await B.checkApiKeys.revoke(a!.id), null, 'revoke');

  t.same(await A.checkApiKeys.get(a!.id), a, 'A unchanged');
  t.same(await A.checkApiKeys.list({ page: 1, limit: 100 }), { rows: [a], total: 1 });
});
