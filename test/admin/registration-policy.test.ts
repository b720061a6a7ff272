import t from 'tap';
import { generateKeyPairSync } from 'node:crypto';
import { startTestServer } from '../helpers/server.js';
import { adminToken } from '../helpers/tokens.js';
import { grants } from '../../src/oauth/grants/index.js';
import { adminOf, api } from './helpers.js';

// The registration admin resource (issue 32): policy, initial access tokens and trusted software
// statement issuers of a tenant; permissions, validation of unknown fields, audit, and the shared client
// metadata schema of the admin API.
const srv = await startTestServer();
t.teardown(() => srv.close());
const A = await adminOf(srv, ['admin:*'], 'regpol');
const reader = api(srv, await adminToken(srv, { tenantId: A.tenantId, permissions: ['admin:registration:read'] }));
const jwk = () => generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });

t.test('the policy: defaults, a partial change, audit', async (t) => {
  const d = await A.call('GET', '/api/admin/registration/policy');
  t.same(d.body, {
    tenant_id: A.tenantId, open_registration: false, require_software_statement: false, allowed_grant_types: ['authorization_code', 'refresh_token'],
    allowed_scopes: ['openid', 'email', 'offline_access'], allowed_audiences: [], allowed_auth_methods: ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'],
    max_clients: 100, rate_limit_per_minute: 20, updated_at: null,
  });
  const put = await A.call('PUT', '/api/admin/registration/policy', { open_registration: true, allowed_scopes: ['openid', 'read'], allowed_grant_types: [...grants.keys()] });
  t.equal(put.status, 200, JSON.stringify(put.body));
  t.match(put.body, { open_registration: true, allowed_scopes: ['openid', 'read'], max_clients: 100, rate_limit_per_minute: 20 });
  t.type(put.body.updated_at, 'number');
  t.same((await A.call('GET', '/api/admin/registration/policy')).body, put.body);
  const audit = (await A.call('GET', '/api/admin/admin-audit-log?action=registration_policy.update')).body.items;
  t.match(audit, [{ result: 'success', resource_id: A.tenantId }]);
});

t.test('validation: unknown fields and bad values are 422 validation_error with details', async (t) => {
  const cases: Array<[string, string, unknown, string]> = [
    ['PUT', '/api/admin/registration/policy', { open_registration: true, surprise: 1 }, 'surprise'],
    ['PUT', '/api/admin/registration/policy', {}, '_'],
    ['PUT', '/api/admin/registration/policy', { allowed_grant_types: ['password'] }, 'allowed_grant_types.0'],
    ['PUT', '/api/admin/registration/policy', { allowed_auth_methods: ['tls_client_auth'] }, 'allowed_auth_methods.0'],
    ['PUT', '/api/admin/registration/policy', { max_clients: -1 }, 'max_clients'],
    ['POST', '/api/admin/registration/initial-access-tokens', { max_uses: 0 }, 'max_uses'],
    ['POST', '/api/admin/registration/initial-access-tokens', { expires_in: 1 }, 'expires_in'],
    ['POST', '/api/admin/registration/initial-access-tokens', { token: 'chosen' }, 'token'],
    ['POST', '/api/admin/registration/software-statement-issuers', { issuer: 'https://x.example' }, 'jwks'],
    ['POST', '/api/admin/registration/software-statement-issuers', { issuer: 'https://x.example', jwks: { keys: [{ kty: 'EC', crv: 'P-256', x: 'AA', y: 'AA' }] } }, 'jwks'],
  ];
  for (const [method, path, body, field] of cases) {
    const r = await A.call(method, path, body);
    t.equal(r.status, 422, `${method} ${path} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
    t.equal(r.body.error, 'validation_error');
    t.ok(r.body.details?.[field], `details name ${field}: ${JSON.stringify(r.body.details)}`);
  }
});

t.test('permissions: read may read, not write', async (t) => {
  t.equal((await reader('GET', '/api/admin/registration/policy')).status, 200);
  t.equal((await reader('GET', '/api/admin/registration/initial-access-tokens')).status, 200);
  t.equal((await reader('GET', '/api/admin/registration/software-statement-issuers')).status, 200);
  for (const [m, p, b] of [['PUT', '/api/admin/registration/policy', { open_registration: false }], ['POST', '/api/admin/registration/initial-access-tokens', {}],
    ['POST', '/api/admin/registration/software-statement-issuers', { issuer: 'https://y.example', jwks: { keys: [jwk()] } }]] as const) {
    const r = await reader(m, p, b);
    t.equal(r.status, 403, `${m} ${p}`);
  }
  t.equal((await api(srv, 'nope')('GET', '/api/admin/registration/policy')).status, 401);
});

t.test('initial access tokens: shown once, listed without values, revoked, audited', async (t) => {
  const created = await A.call('POST', '/api/admin/registration/initial-access-tokens', { description: 'ci', expires_in: 3600, max_uses: 3 });
  t.equal(created.status, 201);
  t.match(created.body, { description: 'ci', max_uses: 3, uses: 0, status: 'active', revoked_at: null });
  t.ok(created.body.expires_at > Date.now() + 3_500_000);
  const secret = created.body.token.split('.')[1];
  const got = await A.call('GET', `/api/admin/registration/initial-access-tokens/${created.body.id}`);
  t.notOk('token' in got.body);
  const page1 = await A.call('GET', '/api/admin/registration/initial-access-tokens?limit=1');
  t.equal(page1.body.items.length, 1);
  t.notOk(JSON.stringify(page1.body).includes(secret));
  const revoked = await A.call('POST', `/api/admin/registration/initial-access-tokens/${created.body.id}/revoke`);
  t.match(revoked.body, { status: 'revoked' });
  t.equal((await A.call('POST', '/api/admin/registration/initial-access-tokens/iat_nope/revoke')).status, 404);
  const entries = (await A.call('GET', `/api/admin/admin-audit-log?resource_id=${created.body.id}`)).body.items;
  t.same(entries.map((e: any) => e.action).sort(), ['initial_access_token.create', 'initial_access_token.revoke']);
  const rows = await srv.deps.sql`select metadata::text || coalesce(before::text, '') || coalesce(after::text, '') as x from admin_audit_log where resource_id = ${created.body.id}`;
  t.notOk(rows.some((r) => String(r.x).includes(secret)), 'no audit entry holds the value');
  const stored = await srv.deps.sql`select token_hash from initial_access_tokens where id = ${created.body.id}`;
  t.notOk(Buffer.from(stored[0]!.token_hash).toString('utf8').includes(secret), 'only a hash is stored');
});

t.test('software statement issuers: create, list, get, delete', async (t) => {
  const c = await A.call('POST', '/api/admin/registration/software-statement-issuers', { issuer: 'https://issuer.regpol.example', jwks: { keys: [jwk()] }, description: 'vendor' });
  t.equal(c.status, 201, JSON.stringify(c.body));
  t.match((await A.call('GET', `/api/admin/registration/software-statement-issuers/${c.body.id}`)).body, { issuer: 'https://issuer.regpol.example', description: 'vendor' });
  t.ok((await A.call('GET', '/api/admin/registration/software-statement-issuers')).body.items.some((i: any) => i.id === c.body.id));
  t.equal((await A.call('DELETE', `/api/admin/registration/software-statement-issuers/${c.body.id}`)).status, 204);
  t.equal((await A.call('GET', `/api/admin/registration/software-statement-issuers/${c.body.id}`)).status, 404);
  t.equal((await A.call('DELETE', `/api/admin/registration/software-statement-issuers/${c.body.id}`)).status, 404);
});

t.test('the admin client schema is the shared metadata schema: every grant type svc supports, unknown fields refused', async (t) => {
  const all = [...grants.keys()];
  const r = await A.call('POST', '/api/admin/clients', { name: 'all grants', grant_types: all, redirect_uris: ['https://c.example/cb'] });
  t.equal(r.status, 201, JSON.stringify(r.body));
  t.same(r.body.grant_types, all);
  t.equal(r.body.registered_dynamically, false);
  const bad = await A.call('POST', '/api/admin/clients', { name: 'x', grant_types: ['password'], client_name: 'x' });
  t.equal(bad.status, 422);
  t.ok(bad.body.details['grant_types.0'] && bad.body.details.client_name, JSON.stringify(bad.body.details));
  const pkj = await A.call('POST', '/api/admin/clients', { name: 'x', grant_types: ['client_credentials'], token_endpoint_auth_method: 'private_key_jwt' });
  t.match(pkj, { status: 422, body: { details: { jwks: ['is required for private_key_jwt'] } } }, 'the shared metadata rule');
  const priv = await A.call('POST', '/api/admin/clients', { name: 'x', grant_types: ['client_credentials'], token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' })] } });
  t.match(priv, { status: 422, body: { details: { jwks: ['must hold public keys only'] } } }, 'a private key is refused by the admin API too');
  const doc = await (await fetch(`${srv.url}/openapi.json`)).json() as any;
  t.same([...doc.components.schemas['admin.client-create'].properties.grant_types.items.enum].sort(), [...all].sort(), 'OpenAPI writes the shared field out: every grant of the grant table');
  t.ok(doc.paths['/register']?.post && doc.paths['/register/{clientId}']?.put, 'the registration endpoints are documented');
  t.notOk(JSON.stringify(doc).includes('#/$defs/'), 'no reference into a shared schema is left in the document');
});
