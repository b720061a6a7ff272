import t from 'tap';
import { startTestServer } from '../helpers/server.js';
import { adminOf } from '../admin/helpers.js';

// Issue 21 item 9: the spec example's policy (conditions object with condition_type, is_active,
// is_system) is accepted and means something.
const srv = await startTestServer();
t.teardown(() => srv.close());
const A = await adminOf(srv, ['admin:*'], 'pol-h');
const base = { name: 'office only', priority: 10, effect: 'deny', resource_types: ['users'], actions: ['write'] };

t.test('conditions in the example form are mapped to the list form', async (t) => {
  const r = await A.call('POST', '/api/admin/admin-policies', { ...base, conditions: { condition_type: 'ip_range', params: { cidrs: ['10.0.0.0/8'] } } });
  t.equal(r.status, 201, JSON.stringify(r.body));
  t.same(r.body.conditions, [{ type: 'ip_range', params: { cidrs: ['10.0.0.0/8'] } }]);
  const flat = await A.call('POST', '/api/admin/admin-policies', { ...base, conditions: { condition_type: 'ip_range', cidrs: ['192.168.0.0/16'] } });
  t.equal(flat.status, 201);
  t.same(flat.body.conditions, [{ type: 'ip_range', params: { cidrs: ['192.168.0.0/16'] } }]);
  const bad = await A.call('POST', '/api/admin/admin-policies', { ...base, conditions: { condition_type: 'ip_range', params: { cidrs: 'nope' } } });
  t.equal(bad.status, 422);
  t.ok(Object.keys(bad.body.details).some((k) => k.startsWith('conditions')));
});

t.test('is_active is an alias of enabled', async (t) => {
  const r = await A.call('POST', '/api/admin/admin-policies', { ...base, conditions: [], is_active: true });
  t.equal(r.status, 201);
  t.equal(r.body.enabled, true);
  t.equal(r.body.is_active, true);
  const off = await A.call('PUT', `/api/admin/admin-policies/${r.body.id}`, { is_active: false });
  t.equal(off.body.enabled, false);
  t.equal(off.body.is_active, false, 'never is_active true beside enabled false');
  t.equal((await A.call('POST', `/api/admin/admin-policies/${r.body.id}/activate`)).body.is_active, true);
  const clash = await A.call('POST', '/api/admin/admin-policies', { ...base, conditions: [], is_active: true, enabled: false });
  t.equal(clash.status, 422);
  t.ok(clash.body.details.is_active);
});

t.test('is_system policies cannot be deleted', async (t) => {
  const r = await A.call('POST', '/api/admin/admin-policies', { ...base, conditions: [], is_system: true });
  t.equal(r.status, 201);
  const del = await A.call('DELETE', `/api/admin/admin-policies/${r.body.id}`);
  t.equal(del.status, 409);
  t.equal(del.body.error, 'conflict');
  t.equal((await A.call('GET', `/api/admin/admin-policies/${r.body.id}`)).status, 200, 'still there');
  const plain = await A.call('POST', '/api/admin/admin-policies', { ...base, conditions: [] });
  t.equal((await A.call('DELETE', `/api/admin/admin-policies/${plain.body.id}`)).status, 204);
});
