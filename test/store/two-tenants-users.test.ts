import t from 'tap';
import { uniqueName } from '../helpers/env.js';
import { twoTenants } from '../helpers/two-tenants.js';

// Two tenants, one database (in the manner of Hydra's persister_nid_test): rows written through tenant
// A's repositories cannot be read, listed, changed, deleted, locked or assigned through tenant B's,
// and A's rows are exactly as they were afterwards. Every method of UserRepository and RoleRepository
// that takes an id or an address is tried from B.
const { sql, store, tenantA, tenantB, A, B } = await twoTenants('nid');

// Tenant A's rows: a user with a role assignment and an active refresh token, and a role.
const aUser = (await A.users.insert({ email: 'Owner@Example.com', name: 'A owner', metadata: { team: 'a' } }))!;
const aRole = (await A.roles.insert(`role_${tenantA}`, { name: 'a-role', description: 'A only', permissions: ['docs:read'] }))!;
await A.roles.assign(aUser.id, aRole.id, 'admin-a');
const refreshId = uniqueName('rt');
await sql`insert into refresh_tokens (id, tenant_id, client_id, sub, family_id, generation, shard, status, expires_at)
  values (${refreshId}, ${tenantA}, 'client-a', ${aUser.id}, ${refreshId}, 1, 0, 'active', ${Date.now() + 3_600_000})`;
// Tenant B has a role of its own, so assigning is tried with both A's and B's role.
const bRole = (await B.roles.insert(`role_${tenantB}`, { name: 'b-role', description: null, permissions: ['admin:*'] }))!;

const snapshot = async () => ({
  user: await A.users.get(aUser.id),
  byEmail: await A.users.getByEmail('owner@example.com'),
  list: (await A.users.list({ limit: 10 })).map((u) => u.id),
  role: await A.roles.get(aRole.id),
  roles: (await A.roles.list({ limit: 10 })).map((r) => r.id),
  assignments: await A.roles.ofUser(aUser.id),
  permissions: await A.roles.permissionsOf(aUser.id),
  refresh: (await sql<{ status: string }[]>`select status from refresh_tokens where id = ${refreshId}`)[0]?.status,
});
const before = await snapshot();

t.test("A's rows are there for A", async (t) => {
  t.match(aUser, { id: /^u_[0-9a-f]{24}$/, tenant_id: tenantA, email: 'Owner@Example.com', status: 'active' });
  t.equal(before.user?.id, aUser.id);
  t.equal(before.byEmail?.id, aUser.id, 'found by address, case-insensitively');
  t.same(before.list, [aUser.id]);
  t.same(before.assignments.map((a) => a.role_id), [aRole.id]);
  t.same(before.permissions, ['docs:read']);
  t.equal(before.refresh, 'active');
});

t.test("B's user repository does not see A's user", async (t) => {
  t.equal(await B.users.get(aUser.id), null, 'get');
  t.equal(await B.users.getByEmail(aUser.email), null, 'getByEmail');
  t.same(await B.users.list({ limit: 100 }), [], 'list');
  t.same(await B.users.list({ limit: 100, email: 'owner' }), [], 'list by email prefix');
  t.same(await B.users.list({ limit: 100, q: 'owner' }), [], 'list by q');
  t.same(await B.users.list({ limit: 100, role_id: aRole.id }), [], 'list by A\'s role');
  t.same(await B.users.list({ limit: 100, status: 'active', cursor: { createdAt: Number.MAX_SAFE_INTEGER, id: 'u_z' } }), [], 'list with a cursor');
  t.equal(await B.users.lock(aUser.id), null, 'lock (outside a transaction)');
  t.equal(await store.transaction(tenantB, (s) => s.users.lock(aUser.id)), null, 'lock (select for update in a transaction)');
  t.equal(await B.users.touchActiveLogin(aUser.email), null, 'login of A\'s address');
});

t.test("B's user repository cannot change or delete A's user", async (t) => {
  t.equal(await B.users.update(aUser.id, { name: 'pwned', email: 'pwned@example.com', email_verified: true, metadata: { pwned: true } }), null, 'update');
  t.equal(await B.users.setStatus(aUser.id, 'suspended'), null, 'setStatus');
  t.equal(await B.users.revokeRefreshTokens(aUser.id), 0, 'revokeRefreshTokens');
  t.equal(await B.users.delete(aUser.id), null, 'delete');
});

t.test("an address is unique per tenant: B may have A's address, as a user of its own", async (t) => {
  const b = await B.users.insert({ email: aUser.email.toLowerCase() });
  t.ok(b, 'inserted');
  t.not(b!.id, aUser.id);
  t.equal(b!.tenant_id, tenantB);
  t.equal((await B.users.getByEmail(aUser.email))?.id, b!.id, "B's lookup finds B's user");
  t.equal((await A.users.getByEmail(aUser.email))?.id, aUser.id, "A's lookup still finds A's user");
  t.ok(await B.users.delete(b!.id), 'B deletes its own user');
});

t.test("B's role repository does not see or assign A's role and user", async (t) => {
  t.equal(await B.roles.get(aRole.id), null, 'get');
  t.same((await B.roles.list({ limit: 100 })).map((r) => r.id), [bRole.id], 'list');
  t.same(await B.roles.list({ limit: 100, name: 'a-role' }), [], 'list by name');
  t.equal(await B.roles.update(aRole.id, { name: 'pwned', permissions: ['admin:*'] }), null, 'update');
  t.equal(await B.roles.delete(aRole.id), null, 'delete');
  t.same(await B.roles.ofUser(aUser.id), [], 'ofUser');
  t.same(await B.roles.permissionsOf(aUser.id), [], 'permissionsOf');
  t.equal(await B.roles.unassign(aUser.id, aRole.id), false, 'unassign');
  t.equal(await B.roles.assign(aUser.id, bRole.id, 'admin-b'), null, "assign B's role to A's user");
  t.equal(await B.roles.assign(aUser.id, aRole.id, 'admin-b'), null, "assign A's role to A's user");
  const rows = await sql`select 1 from user_roles where user_id = ${aUser.id} and tenant_id <> ${tenantA}`;
  t.equal(rows.count, 0, 'no assignment of A\'s user under another tenant');
});

t.test("A's rows are unchanged afterwards", async (t) => {
  t.same(await snapshot(), before);
});
