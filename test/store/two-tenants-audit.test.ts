import t from 'tap';
import { Store } from '../../src/store/index.js';
import { createSql } from '../../src/store/sql.js';
import { uniqueName } from '../helpers/env.js';

// In the manner of Hydra's persister_nid_test: what tenant A's repositories write, tenant B's cannot reach.
const sql = createSql({ databaseUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/svc_test', databasePoolSize: 2 });
t.teardown(() => sql.end({ timeout: 2 }));
const store = new Store(sql);
const actor = { type: 'machine' as const, id: 'tester', displayName: 'tester', email: null };

t.test('audit log entries stay in their tenant', async (t) => {
  const [a, b] = [uniqueName('aud-a'), uniqueName('aud-b')];
  await sql`insert into tenants (id, name) values (${a}, ${a}), (${b}, ${b})`;
  const A = store.forTenant(a).auditLog;
  const B = store.forTenant(b).auditLog;
  const id = await A.record(actor, { action: 'thing.create', resourceType: 'thing', resourceId: 'x1', after: { v: 1 } });

  t.equal(await B.get(id), null, 'B cannot read A\'s entry by id');
  t.same(await B.list({ limit: 10 }), [], 'B lists nothing');
  t.same(await B.list({ limit: 10, resource_id: 'x1' }), [], 'B cannot find it by filter');

  const mine = await A.get(id);
  t.equal(mine?.tenant_id, a, 'A reads its own entry');
  t.same((await A.list({ limit: 10 })).map((r) => r.id), [id], 'A lists exactly its entry');
});
