import t from 'tap';
import { startTestServer } from '../helpers/server.js';
import { adminToken, setupTenant } from '../helpers/tokens.js';
import { api, events } from '../admin/helpers.js';
import { waitFor } from '../helpers/processes.js';

// Issue 21 item 10: user_locked is reachable: admin lock/unlock, and an automatic lock after the
// tenant's number of consecutive failed sign-ins, each with its user.updated event.
const srv = await startTestServer();
t.teardown(() => srv.close());
const b = await setupTenant(srv, 'lock');
const call = api(srv, await adminToken(srv, { tenantId: b.tenant_id, permissions: ['admin:*'] }));
const post = (path: string, body: unknown) => fetch(`${srv.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(body) });

t.test('admin lock and unlock', async (t) => {
  const u: any = (await call('POST', '/api/admin/users', { email: 'lock-me@example.com' })).body;
  let r = await call('POST', `/api/admin/users/${u.id}/lock`);
  t.equal(r.status, 200);
  t.equal(r.body.status, 'locked');
  t.equal((await call('POST', `/api/admin/users/${u.id}/lock`)).body.status, 'locked', 'locking again changes nothing');
  t.equal((await call('GET', '/api/admin/users?status=locked')).body.items.filter((x: any) => x.id === u.id).length, 1);
  r = await call('POST', `/api/admin/users/${u.id}/unlock`);
  t.equal(r.body.status, 'active');
  const ev = (await events(srv, b.tenant_id)).filter((e) => e.event === 'user.updated' && e.data.user_id === u.id);
  t.same(ev.map((e) => e.data.status), ['locked', 'active'], 'one event per change');
  await call('POST', `/api/admin/users/${u.id}/suspend`);
  t.equal((await call('POST', `/api/admin/users/${u.id}/lock`)).status, 409, 'a suspended user is not locked');
  t.equal((await call('POST', '/api/admin/users/usr_nope/lock')).status, 404);
  const audit = (await call('GET', '/api/admin/admin-audit-log?action=user.lock')).body.items;
  t.ok(audit.length >= 1, 'audited');
});

t.test('automatic lock after the tenant threshold of failed sign-ins', async (t) => {
  t.same((await call('GET', '/api/admin/settings/login-lockout')).body, { max_failed_logins: 0 }, 'off by default');
  t.same((await call('PUT', '/api/admin/settings/login-lockout', { max_failed_logins: 3 })).body, { max_failed_logins: 3 });
  t.equal((await call('PUT', '/api/admin/settings/login-lockout', { max_failed_logins: -1 })).status, 422);
  const u: any = (await call('POST', '/api/admin/users', { email: 'guessed@example.com' })).body;
  const gen = await post('/email-code/generate', { email: 'guessed@example.com', client_id: b.clients.web.client_id });
  t.equal(gen.status, 200);
  for (let i = 0; i < 2; i++) t.equal((await post('/email-code/verify', { email: 'guessed@example.com', code: '000000' })).status, 400);
  t.equal((await call('GET', `/api/admin/users/${u.id}`)).body.status, 'active', 'two failures: still active');
  t.equal((await post('/email-code/verify', { email: 'guessed@example.com', code: '000001' })).status, 400);
  await waitFor(async () => (await call('GET', `/api/admin/users/${u.id}`)).body.status === 'locked');
  const ev = (await events(srv, b.tenant_id)).filter((e) => e.event === 'user.updated' && e.data.user_id === u.id);
  t.match(ev, [{ data: { status: 'locked', reason: 'too_many_failed_logins' } }]);
  t.equal((await call('POST', `/api/admin/users/${u.id}/unlock`)).body.status, 'active', 'an admin unlocks');
  // The count starts over after unlocking.
  await post('/email-code/verify', { email: 'guessed@example.com', code: '000002' });
  t.equal((await call('GET', `/api/admin/users/${u.id}`)).body.status, 'active');
});
