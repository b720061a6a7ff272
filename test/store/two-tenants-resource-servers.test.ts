import t from 'tap';
import { twoTenants } from '../helpers/two-tenants.js';

// Two tenants, in the manner of Hydra's persister_nid_test: a resource server tenant A registers cannot be
// read, listed, found by identifier, updated or deleted through tenant B's repository; B may register the
// same identifier as its own; A's rows are exactly as they were afterwards.
const { A, B, tenantA, tenantB } = await twoTenants('rs');
const IDENT = 'https://shared.example.test/api';

t.test('resource servers', async (t) => {
  const a = await A.resourceServers.insert('rs_shared', { identifier: IDENT, name: 'A api', scopes: ['read'] });
  t.equal(a?.tenant_id, tenantA);
  t.equal(await A.resourceServers.insert('rs_other', { identifier: IDENT, name: 'dup', scopes: [] }), null, 'the identifier is unique within A');

  t.equal(await B.resourceServers.get(a!.id), null, 'get');
  t.same(await B.resourceServers.list({ limit: 100 }), [], 'list');
  t.same(await B.resourceServers.list({ limit: 100, identifier: IDENT }), [], 'list by identifier');
  t.same(await B.resourceServers.all(), [], 'all (what the per-process cache loads)');
  t.equal(await B.resourceServers.count(), 0, 'count');
  t.equal(await B.resourceServers.update(a!.id, { scopes: ['read', 'write'], name: 'intruder' }), null, 'update');
  t.equal(await B.resourceServers.delete(a!.id), null, 'delete');

  // The same id and identifier in the other tenant are another resource server.
  const b = await B.resourceServers.insert('rs_shared', { identifier: IDENT, name: 'B api', scopes: ['write'] });
  t.equal(b?.tenant_id, tenantB);
  t.same((await B.resourceServers.all()).map((r) => r.name), ['B api']);
  t.equal((await B.resourceServers.delete(b!.id))?.name, 'B api');

  t.same(await A.resourceServers.get(a!.id), a, 'A unchanged');
  t.same(await A.resourceServers.all(), [a]);
  t.equal(await A.resourceServers.count(), 1);
});
