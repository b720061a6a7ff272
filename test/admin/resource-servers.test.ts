import t from 'tap';
import { decodeJwt } from '../../src/tokens/jwt.js';
import { j } from '../helpers/http.js';
import { startTestServer } from '../helpers/server.js';
import { adminToken, postForm } from '../helpers/tokens.js';
import { adminOf, api } from './helpers.js';

// Resource servers (admin API): registration, validation, audit, permissions, and tenancy: tenant A's
// resource server is invisible through tenant B's admin API and unusable by B's clients at /token.
const srv = await startTestServer();
t.teardown(() => srv.close());
const A = await adminOf(srv, ['admin:*'], 'rsa');
const B = await adminOf(srv, ['admin:*'], 'rsb');
const IDENT = 'https://api.example.test/v1';

t.test('create, get, list, update, delete, each audited', async (t) => {
  const c = await A.call('POST', '/api/admin/resource-servers', { identifier: IDENT, name: 'Orders API', scopes: ['orders:read', 'orders:write'], documentation_uri: 'https://docs.example.test/orders' });
  t.equal(c.status, 201);
  t.match(c.body, {
    id: /^rs_[0-9a-f]{24}$/, tenant_id: A.tenantId, identifier: IDENT, name: 'Orders API', scopes: ['orders:read', 'orders:write'], documentation_uri: 'https://docs.example.test/orders',
    resource_metadata: `${srv.url}/.well-known/oauth-protected-resource/tenants/${A.tenantId}/${c.body.id}`, created_at: Number, updated_at: Number,
  });
  const id = c.body.id;
  t.same((await A.call('GET', `/api/admin/resource-servers/${id}`)).body, c.body);
  const list = await A.call('GET', '/api/admin/resource-servers');
  t.same(list.body, { items: [c.body], cursor: null });
  t.same((await A.call('GET', `/api/admin/resource-servers?identifier=${encodeURIComponent(IDENT)}`)).body.items.map((r: any) => r.id), [id]);

  const dup = await A.call('POST', '/api/admin/resource-servers', { identifier: IDENT, name: 'again', scopes: [] });
  t.equal(dup.status, 409);
  t.equal(dup.body.error, 'conflict');

  const u = await A.call('PUT', `/api/admin/resource-servers/${id}`, { scopes: ['orders:read'], documentation_uri: null });
  t.equal(u.status, 200);
  t.match(u.body, { id, scopes: ['orders:read'], documentation_uri: null, name: 'Orders API' });
  t.equal((await A.call('PUT', '/api/admin/resource-servers/rs_nope', { name: 'x' })).status, 404);

  const d = await A.call('DELETE', `/api/admin/resource-servers/${id}`);
  t.equal(d.status, 204);
  t.equal((await A.call('GET', `/api/admin/resource-servers/${id}`)).status, 404);
  t.equal((await A.call('DELETE', `/api/admin/resource-servers/${id}`)).status, 404);

  const audit = await A.call('GET', '/api/admin/admin-audit-log?limit=100');
  const mine = audit.body.items.filter((e: any) => e.resource_type === 'resource_server' && e.result === 'success').map((e: any) => [e.action, e.resource_id]);
  t.same(mine.reverse(), [['resource_server.create', id], ['resource_server.update', id], ['resource_server.delete', id]]);
});

t.test('validation: unknown fields, identifiers, scopes (422 with details)', async (t) => {
  const bad = async (body: unknown, field: string) => {
    const r = await A.call('POST', '/api/admin/resource-servers', body);
    t.equal(r.status, 422, JSON.stringify(body));
    t.equal(r.body.error, 'validation_error');
    t.ok(r.body.details?.[field], `details name ${field}: ${JSON.stringify(r.body.details)}`);
  };
  await bad({ identifier: IDENT, name: 'x', scopes: [], owner: 'me' }, 'owner');
  await bad({ identifier: 'https://api.example.test/v1#part', name: 'x', scopes: [] }, 'identifier');
  await bad({ identifier: '/relative', name: 'x', scopes: [] }, 'identifier');
  await bad({ identifier: 'urn:x:y', name: 'x', scopes: [] }, 'identifier');
  await bad({ identifier: 'https://[', name: 'x', scopes: [] }, 'identifier');
  await bad({ identifier: IDENT, name: 'x', scopes: ['has space'] }, 'scopes.0');
  await bad({ identifier: IDENT, name: 'x' }, 'scopes');
  const up = await A.call('PUT', '/api/admin/resource-servers/rs_any', {});
  t.equal(up.status, 422, 'an empty update');
});

t.test('permissions: read cannot write', async (t) => {
  const reader = api(srv, await adminToken(srv, { tenantId: A.tenantId, permissions: ['admin:resource-servers:read'] }));
  t.equal((await reader('GET', '/api/admin/resource-servers')).status, 200);
  t.equal((await reader('POST', '/api/admin/resource-servers', { identifier: 'https://r.example.test', name: 'r', scopes: [] })).status, 403);
  const none = api(srv, await adminToken(srv, { tenantId: A.tenantId, permissions: ['admin:users:read'] }));
  t.equal((await none('GET', '/api/admin/resource-servers')).status, 403);
});

t.test('tenancy: A\'s resource server is invisible and unusable from B', async (t) => {
  const a = (await A.call('POST', '/api/admin/resource-servers', { identifier: 'https://tenant-a.example.test/api', name: 'A', scopes: ['read'] })).body;
  t.equal((await B.call('GET', `/api/admin/resource-servers/${a.id}`)).status, 404, 'get');
  t.same((await B.call('GET', '/api/admin/resource-servers')).body.items, [], 'list');
  t.equal((await B.call('PUT', `/api/admin/resource-servers/${a.id}`, { scopes: ['admin'] })).status, 404, 'update');
  t.equal((await B.call('DELETE', `/api/admin/resource-servers/${a.id}`)).status, 404, 'delete');
  t.same((await A.call('GET', `/api/admin/resource-servers/${a.id}`)).body, a, 'A unchanged');

  // B's machine client, allowed B's audiences only, cannot obtain a token for A's resource server.
  const bClient = (await B.call('POST', '/api/admin/clients', { name: 'b', grant_types: ['client_credentials'], scopes: ['read'], allowed_audiences: ['https://tenant-b.example.test/api'] })).body;
  const res = await postForm(`${srv.url}/token`, bClient, { grant_type: 'client_credentials', resource: a.identifier });
  t.equal(res.status, 400);
  t.equal((await j(res)).error, 'invalid_target');

  // B registering the same identifier gets its own resource server, with its own scopes: A's never bound B's tokens.
  const b = await B.call('POST', '/api/admin/resource-servers', { identifier: a.identifier, name: 'B', scopes: ['write'] });
  t.equal(b.status, 201);
  t.not(b.body.id, a.id);
  await B.call('PUT', `/api/admin/clients/${bClient.client_id}`, { allowed_audiences: [a.identifier], scopes: ['read', 'write'] });
  const body = await j(await postForm(`${srv.url}/token`, bClient, { grant_type: 'client_credentials', resource: a.identifier }));
  t.equal(body.scope, 'write', 'B\'s registration, not A\'s');
  t.equal(decodeJwt(body.access_token).payload.tenant, B.tenantId);
});
