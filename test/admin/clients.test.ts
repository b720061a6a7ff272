import t from 'tap';
import { adminAudience } from '../../src/admin/context.js';
import { DEMO_RESOURCE_AUDIENCE } from '../../src/bootstrap.js';
import { startTestServer } from '../helpers/server.js';
import { postForm, setupTenant } from '../helpers/tokens.js';
import { api, adminOf } from './helpers.js';

const srv = await startTestServer();
t.teardown(() => srv.close());
const { tenantId, call } = await adminOf(srv, ['admin:*'], 'clients');

t.test('create shows the secret once; get never; 409 client_id_already_exists; 404 client_not_found', async (t) => {
  const c = await call('POST', '/api/admin/clients', { client_id: `${tenantId}-svc`, name: 'Service', grant_types: ['client_credentials'], scopes: ['read'], allowed_audiences: [DEMO_RESOURCE_AUDIENCE] });
  t.equal(c.status, 201);
  t.type(c.body.client_secret, 'string');
  t.ok(c.body.client_secret.length >= 40);
  t.match(c.body, { client_id: `${tenantId}-svc`, tenant_id: tenantId, status: 'active', token_endpoint_auth_method: 'client_secret_basic' });
  const got = await call('GET', `/api/admin/clients/${tenantId}-svc`);
  t.equal(got.status, 200);
  t.notOk('client_secret' in got.body);
  t.notOk(JSON.stringify(got.body).includes(c.body.client_secret));
  const dup = await call('POST', '/api/admin/clients', { client_id: `${tenantId}-svc`, name: 'x', grant_types: [] });
  t.equal(dup.status, 409);
  t.equal(dup.body.error, 'client_id_already_exists');
  for (const [m, p] of [['GET', ''], ['PUT', ''], ['DELETE', ''], ['POST', '/disable'], ['POST', '/secret']] as const) {
    const r = await call(m, `/api/admin/clients/nope${p}`, m === 'PUT' ? { name: 'x' } : undefined);
    t.equal(r.status, 404, `${m} ${p}`);
    t.equal(r.body.error, 'client_not_found');
  }
  const list = await call('GET', '/api/admin/clients?limit=100');
  t.ok(list.body.items.some((x: any) => x.client_id === `${tenantId}-svc`));
  const upd = await call('PUT', `/api/admin/clients/${tenantId}-svc`, { name: 'Renamed', scopes: ['read', 'write'] });
  t.match(upd.body, { name: 'Renamed', scopes: ['read', 'write'] });
  const pkj = await call('POST', '/api/admin/clients', { name: 'k', grant_types: ['client_credentials'], token_endpoint_auth_method: 'private_key_jwt' });
  t.equal(pkj.status, 422);
  t.same(pkj.body.details, { jwks: ['is required for private_key_jwt'] });
  const badUri = await call('POST', '/api/admin/clients', { name: 'k', grant_types: ['authorization_code'], redirect_uris: ['not a uri'] });
  t.equal(badUri.status, 422);
});

t.test('redirect URIs follow dynamic registration\'s rules on create and update (422 validation_error naming the field)', async (t) => {
  const base = { name: 'Web app', grant_types: ['authorization_code'] };
  for (const [why, uri, problem] of [
    ['http off loopback', 'http://app.example/cb', /must use https/],
    ['a custom scheme', 'com.example.app:/cb', /must use https/],
    ['a fragment', 'https://app.example/cb#x', /fragment/],
    ['a wildcard', 'https://*.app.example/cb', /wildcard/],
    ['user information', 'https://user:pw@app.example/cb', /user information/],
  ] as const) {
    const r = await call('POST', '/api/admin/clients', { ...base, redirect_uris: ['https://app.example/ok', uri] });
    t.equal(r.status, 422, why);
    t.equal(r.body.error, 'validation_error', why);
    t.same(Object.keys(r.body.details), ['redirect_uris'], why);
    t.match(r.body.details.redirect_uris[0], problem, why);
    t.ok(r.body.details.redirect_uris[0].includes(JSON.stringify(uri)), `${why}: the URI is named`);
  }
  const logout = await call('POST', '/api/admin/clients', { ...base, redirect_uris: ['https://app.example/cb'], post_logout_redirect_uris: ['http://app.example/bye'] });
  t.equal(logout.status, 422);
  t.same(Object.keys(logout.body.details), ['post_logout_redirect_uris']);
  // What registration accepts, the admin API accepts: https anywhere, http on loopback hosts (native apps).
  const ok = await call('POST', '/api/admin/clients', { ...base, redirect_uris: ['https://app.example/cb', 'http://127.0.0.1/cb', 'http://localhost:8080/cb', 'http://[::1]/cb'], post_logout_redirect_uris: ['https://app.example/bye'] });
  t.equal(ok.status, 201, JSON.stringify(ok.body));
  const upd = await call('PUT', `/api/admin/clients/${ok.body.client_id}`, { redirect_uris: ['http://evil.example/cb'] });
  t.equal(upd.status, 422);
  t.same(Object.keys(upd.body.details), ['redirect_uris']);
  t.same((await call('GET', `/api/admin/clients/${ok.body.client_id}`)).body.redirect_uris, ok.body.redirect_uris, 'a refused update changes nothing');
  // An update that leaves the URIs out is not held to them.
  t.equal((await call('PUT', `/api/admin/clients/${ok.body.client_id}`, { name: 'Renamed' })).status, 200);
});

t.test('the created secret works at /token; rotation replaces it', async (t) => {
  const c = (await call('POST', '/api/admin/clients', { name: 'Rotating', grant_types: ['client_credentials'], allowed_audiences: [DEMO_RESOURCE_AUDIENCE] })).body;
  const ok = await postForm(`${srv.url}/token`, c, { grant_type: 'client_credentials' });
  t.equal(ok.status, 200);
  const rot = await call('POST', `/api/admin/clients/${c.client_id}/secret`);
  t.equal(rot.status, 200);
  t.not(rot.body.client_secret, c.client_secret);
  t.equal((await postForm(`${srv.url}/token`, c, { grant_type: 'client_credentials' })).status, 401);
  t.equal((await postForm(`${srv.url}/token`, { client_id: c.client_id, client_secret: rot.body.client_secret }, { grant_type: 'client_credentials' })).status, 200);
});

t.test('disabling a client: its tokens are inactive and fail with client_disabled; re-enabling keeps them revoked', async (t) => {
  const boot = await setupTenant(srv, 'dis');
  const tenantCall = api(srv, boot.admin_access_token);
  const c = (await tenantCall('POST', '/api/admin/clients', { name: 'Victim', grant_types: ['client_credentials'], allowed_audiences: [DEMO_RESOURCE_AUDIENCE] })).body;
  const tok = (await (await postForm(`${srv.url}/token`, c, { grant_type: 'client_credentials' })).json() as any).access_token;
  const introspect = async () => (await (await postForm(`${srv.url}/introspect`, boot.clients.resource_server, { token: tok })).json() as any).active;
  t.equal(await introspect(), true);
  // An admin client disabled mid-session: its admin token is refused with client_disabled.
  const adm = (await tenantCall('POST', '/api/admin/clients', {
    name: 'Ops', grant_types: ['client_credentials'], scopes: ['admin'], allowed_audiences: [adminAudience(srv.config.issuer)], permissions: ['admin:users:read'],
    tenant_scopes: [{ scope_mode: 'allow', tenant_id: boot.tenant_id }],
  })).body;
  const admTok = (await (await postForm(`${srv.url}/token`, adm, { grant_type: 'client_credentials', scope: 'admin' })).json() as any).access_token;
  const opsCall = api(srv, admTok);
  t.equal((await opsCall('GET', '/api/admin/users')).status, 200);

  const d = await tenantCall('POST', `/api/admin/clients/${c.client_id}/disable`);
  t.equal(d.status, 200);
  t.equal(d.body.status, 'disabled');
  t.equal(await introspect(), false);
  const again = await postForm(`${srv.url}/token`, c, { grant_type: 'client_credentials' });
  t.equal(again.status, 403);
  t.equal((await again.json() as any).error, 'client_disabled');

  t.equal((await tenantCall('PUT', `/api/admin/clients/${adm.client_id}`, { status: 'disabled' })).body.status, 'disabled');
  const refused = await opsCall('GET', '/api/admin/users');
  t.equal(refused.status, 403);
  t.equal(refused.body.error, 'client_disabled');

  t.equal((await tenantCall('POST', `/api/admin/clients/${c.client_id}/enable`)).body.status, 'active');
  t.equal(await introspect(), false, 'tokens issued before the disable stay revoked');
  t.equal((await postForm(`${srv.url}/token`, c, { grant_type: 'client_credentials' })).status, 200);
  t.equal((await tenantCall('DELETE', `/api/admin/clients/${c.client_id}`)).status, 204);
  t.equal((await tenantCall('GET', `/api/admin/clients/${c.client_id}`)).body.error, 'client_not_found');
});

t.test('tenant-scoped admins cannot grant other tenants or permissions they lack', async (t) => {
  const r = await api(srv, (await adminOf(srv, ['admin:clients:*'], 'esc')).token)('POST', '/api/admin/clients', { name: 'x', grant_types: ['client_credentials'], permissions: ['admin:*'] });
  t.equal(r.status, 403);
  const s = await call('POST', '/api/admin/clients', { name: 'x', grant_types: ['client_credentials'], tenant_scopes: [{ scope_mode: 'all', tenant_id: null }] });
  t.equal(s.status, 403);
});
