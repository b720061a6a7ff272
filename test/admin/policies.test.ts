import t from 'tap';
import { decide, strengthOf } from '../../src/admin/policy-engine.js';
import type { PolicyRow } from '../../src/store/policies.js';
import { startTestServer } from '../helpers/server.js';
import { adminToken } from '../helpers/tokens.js';
import { adminOf, api, events } from './helpers.js';

const srv = await startTestServer();
t.teardown(() => srv.close());
const { tenantId, call } = await adminOf(srv, ['admin:*'], 'pol');
const BASE = '/api/admin/admin-policies';
const policy = (over: Record<string, unknown>) => ({ name: 'p', priority: 10, effect: 'deny', conditions: [], resource_types: ['users'], actions: ['write'], ...over });

t.test('CRUD, activate, extra properties, events, 404 policy_not_found', async (t) => {
  const c = await call('POST', BASE, policy({ name: 'no user writes', description: 'freeze', display_name: 'Freeze', resource_pattern: 'users/*', is_system: false }));
  t.equal(c.status, 201);
  t.match(c.body, { name: 'no user writes', enabled: false, effect: 'deny', priority: 10, display_name: 'Freeze', resource_pattern: 'users/*', is_system: false, tenant_id: tenantId });
  t.equal(c.body.created_by, `${tenantId}-test-admin`);
  const id = c.body.id;
  const act = await call('POST', `${BASE}/${id}/activate`);
  t.equal(act.status, 200);
  t.equal(act.body.enabled, true);
  t.equal(act.body.display_name, 'Freeze');
  const deact = await call('POST', `${BASE}/${id}/deactivate`);
  t.equal(deact.body.enabled, false);
  const up = await call('PUT', `${BASE}/${id}`, { priority: 5, note: 'x' });
  t.match(up.body, { priority: 5, note: 'x', display_name: 'Freeze', name: 'no user writes' });
  t.equal((await call('GET', `${BASE}/${id}`)).body.priority, 5);
  t.ok((await call('GET', `${BASE}?enabled=false`)).body.items.some((p: any) => p.id === id));
  for (const [m, p] of [['GET', ''], ['PUT', ''], ['DELETE', ''], ['POST', '/activate']] as const) {
    const r = await call(m, `${BASE}/pol_nope${p}`, m === 'PUT' ? { priority: 1 } : undefined);
    t.equal(r.status, 404);
    t.equal(r.body.error, 'policy_not_found');
  }
  const bad = await call('POST', BASE, policy({ conditions: [{ type: 'moon_phase', params: {} }] }));
  t.equal(bad.status, 422);
  t.equal((await call('POST', BASE, policy({ conditions: [{ type: 'time_window', params: { timezone: 'Mars/Olympus' } }] }))).status, 422);
  t.equal((await call('POST', BASE, policy({ effect: 'maybe' }))).status, 422);
  t.equal((await call('DELETE', `${BASE}/${id}`)).status, 204);
  const ev = (await events(srv, tenantId)).filter((e) => e.data.policy_id === id);
  t.same(ev.map((e) => e.event), ['policy.created', 'policy.updated', 'policy.updated', 'policy.updated']);
});

t.test('evaluation on every admin request: deny, priorities, deny wins ties, conditions', async (t) => {
  const { call: adm, tenantId: tid } = await adminOf(srv, ['admin:*'], 'pol-eval');
  const create = async (over: Record<string, unknown>) => (await adm('POST', BASE, { ...policy(over), enabled: true })).body.id as string;
  const off = (id: string) => adm('POST', `${BASE}/${id}/deactivate`);

  const deny = await create({ name: 'freeze users' });
  const w = await adm('POST', '/api/admin/users', { email: 'a@example.com' });
  t.equal(w.status, 403);
  t.equal(w.body.error, 'forbidden');
  t.match(w.body.error_description, /freeze users/);
  t.equal((await adm('GET', '/api/admin/users')).status, 200, 'reads are not covered');
  const audit = await adm('GET', '/api/admin/admin-audit-log?action=admin_policy.deny');
  t.match(audit.body.items[0], { result: 'failure', resource_type: 'users', metadata: { policy_id: deny, permission: 'admin:users:write' } });

  const allow = await create({ name: 'loopback may', effect: 'allow', priority: 20, conditions: [{ type: 'ip_range', params: { cidrs: ['127.0.0.0/8', '::1/128'] } }] });
  t.equal((await adm('POST', '/api/admin/users', { email: 'b@example.com' })).status, 201, 'a higher-priority allow overrides');
  const tie = await create({ name: 'tie deny', priority: 20, conditions: [{ type: 'time_window', params: { start: '00:00', end: '23:59' } }] });
  t.equal((await adm('POST', '/api/admin/users', { email: 'c@example.com' })).status, 403, 'deny wins at equal priority');
  await adm('PUT', `${BASE}/${tie}`, { conditions: [{ type: 'time_window', params: { start: '00:00', end: '23:59', negate: true } }] });
  t.equal((await adm('POST', '/api/admin/users', { email: 'd@example.com' })).status, 201, 'a condition that does not hold takes the policy out');
  await off(tie); await off(allow); await off(deny);

  const weak = await create({ name: 'keys only', resource_types: ['*'], actions: ['read'], conditions: [{ type: 'auth_strength', params: { below: 'key' } }] });
  const r = await adm('GET', '/api/admin/roles');
  t.equal(r.status, 403, 'a secret-authenticated machine token is below key strength');
  // Platform admins can always repair policies, even when a tenant policy would deny them.
  const platform = api(srv, await adminToken(srv, { tenantId: `${tid}-p`, permissions: ['admin:*'], platform: true }));
  t.equal((await platform('POST', `${BASE}/${weak}/deactivate`, undefined, { 'x-tenant-id': tid })).status, 200);
  t.equal((await adm('GET', '/api/admin/roles')).status, 200);
  const ip = await create({ name: 'elsewhere', resource_types: ['*'], actions: ['*'], conditions: [{ type: 'ip_range', params: { cidrs: ['10.0.0.0/8'] } }] });
  t.equal((await adm('GET', '/api/admin/roles')).status, 200, 'not from 10/8: the deny does not apply');
  await off(ip);
});

t.test('decision rules and strength, as units', async (t) => {
  const p = (over: Partial<PolicyRow>): PolicyRow => ({ tenant_id: 't', id: String(Math.random()), name: 'x', description: null, priority: 0, effect: 'deny', conditions: [], resource_types: ['*'], actions: ['*'], enabled: true, extra: {}, created_by: null, updated_by: null, created_at: 0, updated_at: 0, ...over });
  const facts = { ip: '192.0.2.7', now: new Date('2026-01-05T10:30:00Z'), strength: 'mfa' as const };
  t.equal(decide([], facts), null);
  t.equal(decide([p({ priority: 5, effect: 'allow' }), p({ priority: 1 })], facts)?.effect, 'allow');
  t.equal(decide([p({ priority: 5, effect: 'allow' }), p({ priority: 5 })], facts)?.effect, 'deny');
  t.equal(decide([p({ priority: 9, conditions: [{ type: 'ip_range', params: { cidrs: ['198.51.100.0/24'] } }] }), p({ priority: 1, effect: 'allow' })], facts)?.effect, 'allow');
  const tw = (params: Record<string, unknown>) => decide([p({ conditions: [{ type: 'time_window', params }] })], facts)?.effect ?? 'none';
  t.equal(tw({ days: [1], start: '09:00', end: '17:00' }), 'deny', 'Monday 10:30 UTC');
  t.equal(tw({ days: [0, 6] }), 'none');
  t.equal(tw({ start: '22:00', end: '06:00' }), 'none');
  t.equal(tw({ start: '22:00', end: '11:00' }), 'deny', 'over midnight');
  t.equal(tw({ start: '09:00', end: '10:00', timezone: 'America/New_York' }), 'none', '05:30 in New York');
  const st = (params: Record<string, unknown>) => decide([p({ conditions: [{ type: 'auth_strength', params }] })], facts)?.effect ?? 'none';
  t.equal(st({ min: 'mfa' }), 'deny');
  t.equal(st({ min: 'key' }), 'none');
  t.equal(st({ below: 'key' }), 'deny');
  t.equal(strengthOf({ sub: 'c', client_id: 'c' } as never, { authMethod: 'private_key_jwt' }), 'key');
  t.equal(strengthOf({ sub: 'u', client_id: 'c', amr: ['email'] } as never, null), 'otp');
  t.equal(strengthOf({ sub: 'u', client_id: 'c', amr: ['pwd', 'mfa'] } as never, null), 'mfa');
  t.equal(decide([p({ conditions: [{ type: 'ip_range', params: { cidrs: ['2001:db8::/32'] } }] })], { ...facts, ip: '2001:db8::1' })?.effect, 'deny');
  t.equal(decide([p({ conditions: [{ type: 'ip_range', params: { cidrs: ['127.0.0.1/32'] } }] })], { ...facts, ip: '::ffff:127.0.0.1' })?.effect, 'deny');
});
