import t from 'tap';
import { startTestServer } from '../helpers/server.js';
import { adminToken } from '../helpers/tokens.js';
import { adminOf, api, events } from './helpers.js';

// Users, roles and the audit log through the HTTP interface, against the shared test Postgres and Redis.
const srv = await startTestServer();
t.teardown(() => srv.close());
const { tenantId, call } = await adminOf(srv, ['admin:*'], 'users');

t.test('user lifecycle: create, get, list, update, suspend, unsuspend, delete, with events and audit', async (t) => {
  const created = await call('POST', '/api/admin/users', { email: 'Ada@Example.com', name: 'Ada', metadata: { team: 'x' } });
  t.equal(created.status, 201);
  const u = created.body;
  t.match(u, { email: 'Ada@Example.com', name: 'Ada', status: 'active', email_verified: false, metadata: { team: 'x' }, tenant_id: tenantId });
  t.type(u.created_at, 'number');

  const dup = await call('POST', '/api/admin/users', { email: 'ada@example.com' });
  t.equal(dup.status, 409);
  t.equal(dup.body.error, 'email_already_exists');
  const bad = await call('POST', '/api/admin/users', { email: 'not-an-email' });
  t.equal(bad.status, 422);
  t.equal(bad.body.error, 'invalid_email');
  const extra = await call('POST', '/api/admin/users', { email: 'x@y.zz', bogus: 1 });
  t.equal(extra.status, 422);
  t.equal(extra.body.error, 'validation_error');
  t.same(extra.body.details, { bogus: ['is not an allowed field'] });

  t.equal((await call('GET', `/api/admin/users/${u.id}`)).body.email, 'Ada@Example.com');
  const missing = await call('GET', '/api/admin/users/u_nope');
  t.equal(missing.status, 404);
  t.equal(missing.body.error, 'user_not_found');

  const upd = await call('PUT', `/api/admin/users/${u.id}`, { name: 'Ada L.', email_verified: true });
  t.equal(upd.status, 200);
  t.match(upd.body, { name: 'Ada L.', email_verified: true, email: 'Ada@Example.com' });
  t.equal((await call('PUT', '/api/admin/users/u_nope', { name: 'x' })).body.error, 'user_not_found');

  const sus = await call('POST', `/api/admin/users/${u.id}/suspend`);
  t.equal(sus.status, 200);
  t.equal(sus.body.status, 'suspended');
  t.equal((await call('POST', `/api/admin/users/${u.id}/suspend`)).body.status, 'suspended', 'idempotent');
  const uns = await call('POST', `/api/admin/users/${u.id}/unsuspend`);
  t.equal(uns.body.status, 'active');

  const list = await call('GET', '/api/admin/users?email=ada&limit=5');
  t.equal(list.status, 200);
  t.same(list.body.items.map((x: any) => x.id), [u.id]);
  t.equal((await call('GET', '/api/admin/users?status=suspended')).body.items.length, 0);

  t.equal((await call('DELETE', `/api/admin/users/${u.id}`)).status, 204);
  t.equal((await call('DELETE', `/api/admin/users/${u.id}`)).body.error, 'user_not_found');

  const ev = (await events(srv, tenantId)).filter((e) => e.data.user_id === u.id);
  t.same(ev.map((e) => e.event), ['user.created', 'user.updated', 'user.suspended', 'user.unsuspended', 'user.deleted'], 'one event per change, none for the repeated suspend');

  const audit = await call('GET', `/api/admin/admin-audit-log?resource_type=user&resource_id=${u.id}&limit=100`);
  t.equal(audit.status, 200);
  const actions = audit.body.items.map((e: any) => `${e.action}:${e.result}`).reverse();
  t.same(actions, ['user.create:success', 'user.update:success', 'user.suspend:success', 'user.suspend:success', 'user.unsuspend:success', 'user.delete:success', 'user.delete:failure']);
});

t.test('pagination by cursor', async (t) => {
  for (let i = 0; i < 5; i++) t.equal((await call('POST', '/api/admin/users', { email: `page${i}@example.com` })).status, 201);
  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const r: any = await call('GET', `/api/admin/users?email=page&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
    t.equal(r.status, 200);
    seen.push(...r.body.items.map((x: any) => x.email));
    cursor = r.body.cursor;
    pages++;
  } while (cursor);
  t.equal(pages, 3);
  t.same(seen, ['page4@example.com', 'page3@example.com', 'page2@example.com', 'page1@example.com', 'page0@example.com']);
  const bad = await call('GET', '/api/admin/users?cursor=garbage');
  t.equal(bad.status, 422);
  t.same(bad.body.details, { cursor: ['is not a valid cursor'] });
  t.equal((await call('GET', '/api/admin/users?limit=0')).status, 422);
});

t.test('roles: CRUD, assign, 409 role_already_assigned, unassign, events', async (t) => {
  const u = (await call('POST', '/api/admin/users', { email: 'grace@example.com' })).body;
  const r = await call('POST', '/api/admin/roles', { name: 'auditor', description: 'reads', permissions: ['admin:audit-log:read', 'documents:read'] });
  t.equal(r.status, 201);
  t.same(r.body.permissions, ['admin:audit-log:read', 'documents:read']);
  t.equal((await call('POST', '/api/admin/roles', { name: 'AUDITOR', permissions: [] })).body.error, 'conflict');
  t.equal((await call('POST', '/api/admin/roles', { name: 'bad', permissions: ['has space'] })).status, 422);
  const role = r.body;
  t.equal((await call('GET', `/api/admin/roles/${role.id}`)).body.name, 'auditor');
  t.equal((await call('GET', '/api/admin/roles/role_nope')).body.error, 'role_not_found');
  const upd = await call('PUT', `/api/admin/roles/${role.id}`, { permissions: ['admin:audit-log:*'] });
  t.same(upd.body.permissions, ['admin:audit-log:*']);

  const a = await call('POST', `/api/admin/users/${u.id}/roles`, { role_id: role.id });
  t.equal(a.status, 201);
  t.match(a.body, { user_id: u.id, role_id: role.id, role: 'auditor' });
  const again = await call('POST', `/api/admin/users/${u.id}/roles`, { role_id: role.id });
  t.equal(again.status, 409);
  t.equal(again.body.error, 'role_already_assigned');
  t.equal((await call('POST', `/api/admin/users/${u.id}/roles`, { role_id: 'role_nope' })).body.error, 'role_not_found');
  t.equal((await call('POST', '/api/admin/users/u_nope/roles', { role_id: role.id })).body.error, 'user_not_found');
  const roles = await call('GET', `/api/admin/users/${u.id}/roles`);
  t.same(roles.body.roles.map((x: any) => x.name), ['auditor']);
  t.same((await call('GET', `/api/admin/users/${u.id}`)).body.roles, [{ id: role.id, name: 'auditor' }]);
  t.same((await call('GET', `/api/admin/users?role_id=${role.id}`)).body.items.map((x: any) => x.id), [u.id]);

  t.equal((await call('DELETE', `/api/admin/users/${u.id}/roles/${role.id}`)).status, 204);
  t.equal((await call('DELETE', `/api/admin/users/${u.id}/roles/${role.id}`)).body.error, 'role_not_found');
  const ev = (await events(srv, tenantId)).filter((e) => e.event.startsWith('role.'));
  t.same(ev.map((e) => [e.event, e.data.user_id, e.data.role]), [['role.assigned', u.id, 'auditor'], ['role.unassigned', u.id, 'auditor']]);

  t.equal((await call('DELETE', `/api/admin/roles/${role.id}`)).status, 204);
  t.equal((await call('DELETE', `/api/admin/roles/${role.id}`)).body.error, 'role_not_found');
});

t.test('no escalation: a role admin cannot create or assign admin permissions it lacks', async (t) => {
  const limited = api(srv, await adminToken(srv, { tenantId, permissions: ['admin:roles:*', 'admin:users:read'] }));
  const r = await limited('POST', '/api/admin/roles', { name: 'sneaky', permissions: ['admin:*'] });
  t.equal(r.status, 403);
  t.equal(r.body.error, 'forbidden');
  t.equal((await limited('POST', '/api/admin/roles', { name: 'fine', permissions: ['admin:roles:read', 'app:anything'] })).status, 201);
});

t.test('permissions: missing permission 403 forbidden, missing scope 403 insufficient_scope, no token 401', async (t) => {
  const reader = api(srv, await adminToken(srv, { tenantId, permissions: ['admin:users:read'] }));
  t.equal((await reader('GET', '/api/admin/users')).status, 200);
  const w = await reader('POST', '/api/admin/users', { email: 'nope@example.com' });
  t.equal(w.status, 403);
  t.equal(w.body.error, 'forbidden');
  const noScope = api(srv, await adminToken(srv, { tenantId, permissions: ['admin:*'], scope: 'read' }));
  t.equal((await noScope('GET', '/api/admin/users')).body.error, 'insufficient_scope');
  const anon = await fetch(`${srv.url}/api/admin/users`);
  t.equal(anon.status, 401);
  t.equal((await anon.json() as any).error, 'unauthorized');
  const expired = api(srv, await adminToken(srv, { tenantId, permissions: ['admin:*'], ttlSeconds: -10 }));
  t.equal((await expired('GET', '/api/admin/users')).body.error, 'token_expired');
});

t.test('audit log: get by id, before/after only with admin:audit-log:read-sensitive, filters', async (t) => {
  const u = (await call('POST', '/api/admin/users', { email: 'audit-me@example.com' })).body;
  await call('PUT', `/api/admin/users/${u.id}`, { name: 'Renamed' });
  const full = await call('GET', `/api/admin/admin-audit-log?action=user.update&resource_id=${u.id}`);
  t.equal(full.body.items.length, 1);
  const entry = full.body.items[0];
  t.match(entry, { action: 'user.update', resource_type: 'user', resource_id: u.id, result: 'success', severity: 'info', actor_type: 'machine', tenant_id: tenantId });
  t.match(entry.before, { name: null });
  t.match(entry.after, { name: 'Renamed' });
  t.ok(entry.metadata.request_id, 'request id recorded');
  t.same(Object.keys(entry.admin_user).sort(), ['email', 'id', 'name']);

  const byId = await call('GET', `/api/admin/admin-audit-log/${entry.id}`);
  t.equal(byId.status, 200);
  t.same(byId.body, entry);

  const plain = api(srv, await adminToken(srv, { tenantId, permissions: ['admin:audit-log:read'] }));
  const redacted = await plain('GET', `/api/admin/admin-audit-log/${entry.id}`);
  t.equal(redacted.status, 200);
  t.notOk('before' in redacted.body);
  t.notOk('after' in redacted.body);
  t.equal(redacted.body.action, 'user.update');
  const listRedacted = await plain('GET', `/api/admin/admin-audit-log?resource_id=${u.id}`);
  t.ok(listRedacted.body.items.every((e: any) => !('before' in e) && !('after' in e)));
  t.equal((await plain('GET', '/api/admin/admin-audit-log/aud_nope')).status, 404);

  const sensitive = api(srv, await adminToken(srv, { tenantId, permissions: ['admin:audit-log:read', 'admin:audit-log:read-sensitive'] }));
  t.match((await sensitive('GET', `/api/admin/admin-audit-log/${entry.id}`)).body.after, { name: 'Renamed' });
  t.equal((await api(srv, await adminToken(srv, { tenantId, permissions: ['admin:users:read'] }))('GET', '/api/admin/admin-audit-log')).status, 403);

  // A failed mutation is recorded too, without before/after.
  await call('PUT', '/api/admin/users/u_missing', { name: 'x' });
  const fail = await call('GET', '/api/admin/admin-audit-log?result=failure&resource_id=u_missing');
  t.equal(fail.body.items.length, 1);
  t.match(fail.body.items[0], { action: 'user.update', result: 'failure', severity: 'warn', metadata: { error: 'user_not_found', status: 404 }, before: null, after: null });
  const since = Date.now() + 60_000;
  t.equal((await call('GET', `/api/admin/admin-audit-log?since=${since}`)).body.items.length, 0);
});
