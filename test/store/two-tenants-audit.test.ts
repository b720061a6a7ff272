import t from 'tap';
import { twoTenants } from '../helpers/two-tenants.js';

// In the manner of Hydra's persister_nid_test: what tenant A's repositories write, tenant B's cannot reach.
const { tenantA: a, A: storeA, B: storeB } = await twoTenants('aud');
const actor = { type: 'machine' as const, id: 'tester', displayName: 'tester', email: null };

t.test('audit log entries stay in their tenant', async (t) => {
  const A = storeA.auditLog;
  const B = storeB.auditLog;
  const id = await A.record(actor, { action: 'thing.create', resourceType: 'thing', resourceId: 'x1', after: { v: 1 } });

  t.equal(await B.get(id), null, 'B cannot read A\'s entry by id');
  t.same(await B.list({ limit: 10 }), [], 'B lists nothing');
  t.same(await B.list({ limit: 10, resource_id: 'x1' }), [], 'B cannot find it by filter');

  const mine = await A.get(id);
  t.equal(mine?.tenant_id, a, 'A reads its own entry');
  t.same((await A.list({ limit: 10 })).map((r) => r.id), [id], 'A lists exactly its entry');
});
