import t from 'tap';
import { listAllTenants, TenantRepository } from '../../src/store/tenants.js';
import { twoTenants } from '../helpers/two-tenants.js';

// The tenant row repository is bound to one tenant id (it is not a TenantStore getter: admins act on
// other tenants' rows from their own). A change through A's repository leaves B's row as it was, and
// the platform-wide list is the one explicitly cross-tenant read.
const { sql, tenantA: tA, tenantB: tB } = await twoTenants('trow');
const A = new TenantRepository(sql, tA);
const B = new TenantRepository(sql, tB);

t.test('tenant rows', async (t) => {
  const bBefore = await B.get();
  t.equal(bBefore!.status, 'active');
  const a = await A.update({ name: 'A renamed', displayName: 'A login', settings: { access_token_ttl: 60 } });
  t.match(a, { id: tA, name: 'A renamed', display_name: 'A login', settings: { access_token_ttl: 60 } });
  t.equal((await A.setStatus('suspended'))!.status, 'suspended');
  t.type((await A.get())!.suspended_at, 'number');
  t.same(await B.get(), bBefore, "B's row is exactly as it was");
  t.equal(await new TenantRepository(sql, `${tA}-nope`).update({ name: 'x' }), null, 'an unknown id updates nothing');
  t.equal(await A.insert({ name: 'again' }), null, 'an existing id is not inserted twice');

  const suspended = await listAllTenants(sql, { limit: 1000, status: 'suspended' });
  t.ok(suspended.some((r) => r.id === tA));
  t.notOk(suspended.some((r) => r.id === tB), 'the status filter holds');
  t.equal((await A.setStatus('active'))!.suspended_at, null, 'unsuspending clears suspended_at');
});
