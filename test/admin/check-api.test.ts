import t from 'tap';
import { TIER_LIMITS } from '../../src/check/rate-limit.js';
import { startTestServer } from '../helpers/server.js';
import { adminOf } from './helpers.js';

// Check API keys (admin) and the check API they authenticate, with per-tier rate limits in Redis.
const srv = await startTestServer();
t.teardown(() => srv.close());
const { tenantId, call } = await adminOf(srv, ['admin:*'], 'check');
const clientId = `${tenantId}-web`;

async function check(key: string, path: string, body: unknown): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(srv.url + path, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json(), headers: res.headers };
}
const newKey = async (body: Record<string, unknown>) => (await call('POST', '/api/admin/check-api-keys', { name: 'k', client_id: clientId, ...body })).body;

const user = (await call('POST', '/api/admin/users', { email: 'checked@example.com' })).body;
const role = (await call('POST', '/api/admin/roles', { name: 'editor', permissions: ['documents:*', 'reports:read'] })).body;
await call('POST', `/api/admin/users/${user.id}/roles`, { role_id: role.id });

t.test('keys: create shows the key once, list filters and pages, revoke', async (t) => {
  const c = await call('POST', '/api/admin/check-api-keys', { name: 'svc', client_id: clientId, allowed_operations: ['check'], rate_limit_tier: 'strict' });
  t.equal(c.status, 201);
  t.match(c.body.key, /^svc_ck_/);
  t.equal(c.body.key_prefix, c.body.key.slice(0, 14));
  t.match(c.body, { tenant_id: tenantId, client_id: clientId, allowed_operations: ['check'], rate_limit_tier: 'strict', is_active: true, expires_at: null });
  const d = await call('POST', '/api/admin/check-api-keys', { name: 'defaults', client_id: clientId });
  t.same(d.body.allowed_operations, ['check', 'batch']);
  t.equal(d.body.rate_limit_tier, 'moderate');
  t.equal((await call('POST', '/api/admin/check-api-keys', { name: 'x', client_id: 'nope' })).body.error, 'client_not_found');
  t.equal((await call('POST', '/api/admin/check-api-keys', { name: 'x', client_id: clientId, rate_limit_tier: 'wild' })).status, 422);

  const list = await call('GET', `/api/admin/check-api-keys?client_id=${clientId}&limit=1&page=1`);
  t.equal(list.status, 200);
  t.match(list.body, { page: 1, limit: 1 });
  t.equal(list.body.keys.length, 1);
  t.ok(list.body.total >= 2);
  t.notOk(JSON.stringify(list.body).includes(c.body.key), 'plaintext never listed');
  t.notOk('key' in list.body.keys[0]);
  // Issue 21 item 3: the spec caps limit at 100 instead of refusing.
  t.equal((await call('GET', '/api/admin/check-api-keys?limit=101')).body.limit, 100);
  t.equal((await call('GET', '/api/admin/check-api-keys?page=0')).status, 422);

  const rv = await call('POST', `/api/admin/check-api-keys/${c.body.id}/revoke`);
  t.equal(rv.body.is_active, false);
  t.equal((await call('POST', `/api/admin/check-api-keys/${c.body.id}/revoke`)).status, 409);
  t.equal((await call('POST', '/api/admin/check-api-keys/cak_nope/revoke')).status, 404);
  const inactive = await call('GET', '/api/admin/check-api-keys?is_active=false');
  t.ok(inactive.body.keys.some((k: any) => k.id === c.body.id));
  t.ok(inactive.body.keys.every((k: any) => k.is_active === false));
  const r = await check(c.body.key, '/api/check', { user_id: user.id, permission: 'documents:read' });
  t.equal(r.status, 401, 'a revoked key stops working');
});

t.test('check and batch answers', async (t) => {
  const k = await newKey({ rate_limit_tier: 'lenient' });
  const yes = await check(k.key, '/api/check', { user_id: user.id, permission: 'documents:write' });
  t.equal(yes.status, 200);
  t.same(yes.body, { user_id: user.id, permission: 'documents:write', allowed: true });
  t.equal((await check(k.key, '/api/check', { user_id: user.id, permission: 'reports:write' })).body.allowed, false);
  t.equal((await check(k.key, '/api/check', { user_id: 'u_nope', permission: 'reports:read' })).body.error, 'user_not_found');
  const b = await check(k.key, '/api/check/batch', { checks: [
    { user_id: user.id, permission: 'reports:read' }, { user_id: user.id, permission: 'admin:users:read' }, { user_id: 'u_nope', permission: 'x' },
  ] });
  t.equal(b.status, 200);
  t.same(b.body.results.map((r: any) => [r.allowed, r.reason ?? null]), [[true, null], [false, null], [false, 'user_not_found']]);
  await call('POST', `/api/admin/users/${user.id}/suspend`);
  t.match((await check(k.key, '/api/check', { user_id: user.id, permission: 'reports:read' })).body, { allowed: false, reason: 'user_suspended' });
  await call('POST', `/api/admin/users/${user.id}/unsuspend`);

  t.equal((await check('svc_ck_nonsense', '/api/check', { user_id: user.id, permission: 'a' })).status, 401);
  t.equal((await fetch(`${srv.url}/api/check`, { method: 'POST', body: JSON.stringify({ user_id: user.id, permission: 'a' }), headers: { 'content-type': 'application/json' } })).status, 401);
  const only = await newKey({ allowed_operations: ['check'] });
  const f = await check(only.key, '/api/check/batch', { checks: [{ user_id: user.id, permission: 'a' }] });
  t.equal(f.status, 403);
  t.equal(f.body.error, 'forbidden');
  const expired = await newKey({ expires_at: Date.now() - 1 });
  t.equal(expired.is_active, false);
  t.equal((await check(expired.key, '/api/check', { user_id: user.id, permission: 'a' })).status, 401);
  t.equal((await check(k.key, '/api/check/batch', { checks: [] })).status, 422);
});

for (const tier of ['strict', 'moderate', 'lenient'] as const) {
  t.test(`rate limit, ${tier} tier: ${TIER_LIMITS[tier]} checks per minute, then 429 with Retry-After`, async (t) => {
    const k = await newKey({ rate_limit_tier: tier });
    const limit = TIER_LIMITS[tier];
    // Stay inside one window: start early in the minute if the current one is nearly over.
    const msLeft = 60_000 - (Date.now() % 60_000);
    if (msLeft < 15_000) await new Promise((r) => setTimeout(r, msLeft + 50));
    let used = 0;
    while (used + 100 <= limit) {
      const r = await check(k.key, '/api/check/batch', { checks: Array.from({ length: 100 }, () => ({ user_id: user.id, permission: 'reports:read' })) });
      t.equal(r.status, 200);
      used += 100;
    }
    while (used < limit) { t.equal((await check(k.key, '/api/check', { user_id: user.id, permission: 'reports:read' })).status, 200); used++; }
    const over = await check(k.key, '/api/check', { user_id: user.id, permission: 'reports:read' });
    t.equal(over.status, 429);
    t.equal(over.body.error, 'rate_limit_exceeded');
    const ra = Number(over.headers.get('retry-after'));
    t.ok(ra >= 1 && ra <= 60, `Retry-After ${ra}`);
    t.equal(over.body.retry_after, ra);
    const other = await newKey({ rate_limit_tier: tier });
    t.equal((await check(other.key, '/api/check', { user_id: user.id, permission: 'reports:read' })).status, 200, 'limits are per key');
  });
}
