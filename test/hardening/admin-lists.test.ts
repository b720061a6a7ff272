import t from 'tap';
import { adminToken } from '../helpers/tokens.js';
import { startTestServer } from '../helpers/server.js';
import { adminOf, api } from '../admin/helpers.js';

// Issue 21 items 1-4: a platform admin naming a missing tenant, the check API key list's is_active
// filter and limit cap, and unknown query parameters.
const srv = await startTestServer();
t.teardown(() => srv.close());
const A = await adminOf(srv, ['admin:*'], 'hl-a');

t.test('item 1: X-Tenant-Id naming a tenant that does not exist is 404 before any work', async (t) => {
  const platform = api(srv, await adminToken(srv, { tenantId: A.tenantId, permissions: ['admin:*'], platform: true }));
  const hdr = { 'x-tenant-id': 'no-such-tenant-hl' };
  const read = await platform('GET', '/api/admin/users', undefined, hdr);
  t.equal(read.status, 404);
  t.equal(read.body.error, 'not_found');
  t.match(read.body.message, /tenant/i);
  const write = await platform('POST', '/api/admin/users', { email: 'ghost@example.com' }, hdr);
  t.equal(write.status, 404, 'a write is 404, not a foreign-key 500');
  t.equal(write.body.error, 'not_found');
  const audit = await srv.deps.sql`select 1 from admin_audit_log where tenant_id = 'no-such-tenant-hl'`.catch(() => []);
  t.equal(audit.length, 0, 'nothing is written for the missing tenant');
  t.equal((await platform('GET', '/api/admin/users', undefined, { 'x-tenant-id': A.tenantId })).status, 200, 'an existing tenant still works');
});

t.test('items 2 and 3: check API keys list filters on the shown is_active and caps limit at 100', async (t) => {
  const client: any = (await A.call('POST', '/api/admin/clients', { name: 'hl client', grant_types: ['client_credentials'] })).body;
  const live: any = (await A.call('POST', '/api/admin/check-api-keys', { name: 'live', client_id: client.client_id })).body;
  const soon = Date.now() + 1500;
  const expiring: any = (await A.call('POST', '/api/admin/check-api-keys', { name: 'expiring', client_id: client.client_id, expires_at: soon })).body;
  t.equal(expiring.is_active, true);
  // Wait until the key's expiry has passed (no fixed sleep: poll the record).
  const { waitFor } = await import('../helpers/processes.js');
  await waitFor(async () => (await A.call('GET', `/api/admin/check-api-keys/${expiring.id}`)).body.is_active === false, 10_000, 100);
  const active = (await A.call('GET', '/api/admin/check-api-keys?is_active=true')).body;
  const ids = active.keys.map((k: any) => k.id);
  t.ok(ids.includes(live.id));
  t.notOk(ids.includes(expiring.id), 'an expired key is not listed as active');
  t.ok(active.keys.every((k: any) => k.is_active === true), 'every key listed under is_active=true shows is_active true');
  const inactive = (await A.call('GET', '/api/admin/check-api-keys?is_active=false')).body;
  t.ok(inactive.keys.some((k: any) => k.id === expiring.id), 'the expired key is listed under is_active=false');
  t.ok(inactive.keys.every((k: any) => k.is_active === false));

  const big = await A.call('GET', '/api/admin/check-api-keys?limit=500');
  t.equal(big.status, 200, 'limit over 100 is capped, not refused');
  t.equal(big.body.limit, 100);
  t.equal((await A.call('GET', '/api/admin/check-api-keys?limit=0')).status, 422, 'limit below 1 is still refused');
});

t.test('item 4: unknown query parameters are ignored on every kind of list', async (t) => {
  for (const path of ['/api/admin/users', '/api/admin/roles', '/api/admin/clients', '/api/admin/check-api-keys', '/api/admin/admin-audit-log',
    '/api/admin/admin-policies', '/api/admin/webhooks', '/api/admin/machine-access/principals']) {
    const r = await A.call('GET', `${path}?utm_source=x&limit=2&whatever=1`);
    t.equal(r.status, 200, `${path} ignores unknown parameters`);
  }
  t.equal((await A.call('GET', '/api/admin/users?limit=abc&x=1')).status, 422, 'a known parameter with a bad value is still refused');
});
