import t from 'tap';
import { createPrivateKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { mintJwt } from '../helpers/jwt.js';
import { startTestServer } from '../helpers/server.js';
import { adminOf, api } from './helpers.js';

// Machine access principals: lifecycle, credentials, and their admin tokens by client_credentials with
// private_key_jwt (RFC 7523) signed by keys the server never sees.
// The credential sweep runs in the jobs worker, beside the HTTP process.
const srv = await startTestServer({}, { jobsWorker: true });
t.teardown(() => srv.close());
const { tenantId, call } = await adminOf(srv, ['admin:*'], 'mp');
const BASE = '/api/admin/machine-access/principals';

type Alg = 'ES256' | 'PS256' | 'RS256';
function keyPair(alg: Alg): { privateKey: KeyObject; jwk: Record<string, unknown> } {
  const kp = alg === 'ES256' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { privateKey: kp.privateKey, jwk: kp.publicKey.export({ format: 'jwk' }) as Record<string, unknown> };
}
function assertion(alg: Alg, key: KeyObject, kid: string, clientId: string): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return mintJwt(key, { alg, kid, typ: 'JWT' }, { iss: clientId, sub: clientId, aud: `${srv.url}/token`, iat: now, exp: now + 60, jti: randomBytes(12).toString('hex') });
}
async function token(clientId: string, minted: string | Promise<string>): Promise<{ status: number; body: any }> {
  const jwt = await minted;
  const res = await fetch(`${srv.url}/token`, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'admin', client_id: clientId, client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: jwt }),
  });
  return { status: res.status, body: await res.json() };
}
const claims = (tok: string) => JSON.parse(Buffer.from(tok.split('.')[1]!, 'base64url').toString());

t.test('create, list with filters and pagination, get, update, 404', async (t) => {
  const c = await call('POST', BASE, { displayName: 'CI bot', principalType: 'ci', permissions: ['admin:users:read'], tokenTtlSeconds: 300 });
  t.equal(c.status, 201);
  t.match(c.body, { displayName: 'CI bot', principalType: 'ci', status: 'active', tokenTtlSeconds: 300, permissions: ['admin:users:read'], credentials: [], tenantScopes: [{ scope_mode: 'none', tenant_id: null }] });
  t.match(c.body.clientId, /^mpc_/);
  await call('POST', BASE, { displayName: 'Agent', principalType: 'ai_agent', permissions: [] });
  const l = await call('GET', `${BASE}?principal_type=ci`);
  t.equal(l.status, 200);
  t.match(l.body, { page: 1, limit: 20 });
  t.same(l.body.items.map((p: any) => p.id), [c.body.id]);
  const p1 = await call('GET', `${BASE}?limit=1&page=2`);
  t.equal(p1.body.items.length, 1);
  t.equal(p1.body.items[0].id, c.body.id, 'second page of one is the older one');
  t.equal((await call('GET', `${BASE}?limit=101`)).status, 422);
  t.equal((await call('GET', `${BASE}?page=0`)).status, 422);
  t.equal((await call('GET', `${BASE}?status=weird`)).status, 422);
  t.equal((await call('GET', `${BASE}/mp_nope`)).status, 404);
  const u = await call('PUT', `${BASE}/${c.body.id}`, { displayName: 'CI bot 2', permissions: ['admin:users:read', 'admin:roles:read'] });
  t.equal(u.body.displayName, 'CI bot 2');
  t.equal((await call('POST', BASE, { displayName: 'x', principalType: 'nope', permissions: [] })).status, 422);
  const scoped = await call('POST', BASE, { displayName: 'x', principalType: 'ci', permissions: [], tenantScopes: [{ scope_mode: 'allow' }] });
  t.equal(scoped.status, 422);
  t.equal((await call('POST', BASE, { displayName: 'x', principalType: 'ci', permissions: [], tenantScopes: [{ scope_mode: 'all', tenant_id: null }] })).status, 403, 'only platform admins grant all tenants');
});

for (const alg of ['ES256', 'PS256', 'RS256'] as const) {
  t.test(`private_key_jwt with ${alg}: token lives tokenTtlSeconds and carries permissions and tenant scopes`, async (t) => {
    const p = (await call('POST', BASE, { displayName: `bot ${alg}`, principalType: 'automation', permissions: ['admin:users:read'], tokenTtlSeconds: 120 })).body;
    const { privateKey, jwk } = keyPair(alg);
    const cr = await call('POST', `${BASE}/${p.id}/credentials`, { publicJwk: jwk, alg, displayName: 'key 1' });
    t.equal(cr.status, 201);
    t.match(cr.body, { alg, status: 'active', principalId: p.id, notBefore: null, expiresAt: null });
    t.notOk(JSON.parse(cr.body.publicJwkJson).d);
    const r = await token(p.clientId, assertion(alg, privateKey, cr.body.kid, p.clientId));
    t.equal(r.status, 200, JSON.stringify(r.body));
    t.equal(r.body.expires_in, 120);
    const c = claims(r.body.access_token);
    t.equal(c.exp - c.iat, 120);
    t.same(c.permissions, ['admin:users:read']);
    t.same(c.tenant_scopes, [{ scope_mode: 'none', tenant_id: null }]);
    const as = api(srv, r.body.access_token);
    t.equal((await as('GET', '/api/admin/users')).status, 200);
    t.equal((await as('GET', '/api/admin/roles')).body.error, 'forbidden');
  });
}

t.test('revoked, expired, not-yet-valid and wrong-algorithm credentials are refused', async (t) => {
  const p = (await call('POST', BASE, { displayName: 'bot', principalType: 'integration', permissions: ['admin:users:read'] })).body;
  const k1 = keyPair('ES256');
  const c1 = (await call('POST', `${BASE}/${p.id}/credentials`, { publicJwkJson: JSON.stringify(k1.jwk), alg: 'ES256', displayName: 'k1', kid: 'k1' })).body;
  t.equal((await token(p.clientId, assertion('ES256', k1.privateKey, 'k1', p.clientId))).status, 200);
  const rv = await call('POST', `${BASE}/${p.id}/credentials/${c1.id}/revoke`, {});
  t.equal(rv.body.status, 'revoked');
  const refused = await token(p.clientId, assertion('ES256', k1.privateKey, 'k1', p.clientId));
  t.equal(refused.status, 401);
  t.equal(refused.body.error, 'invalid_client');
  t.equal((await call('POST', `${BASE}/${p.id}/credentials/${c1.id}/revoke`, {})).status, 409);

  const k2 = keyPair('RS256');
  const c2 = (await call('POST', `${BASE}/${p.id}/credentials`, { publicJwk: k2.jwk, alg: 'RS256', displayName: 'old', kid: 'k2', expiresAt: Date.now() - 1000 })).body;
  t.equal(c2.status, 'expired');
  t.equal((await token(p.clientId, assertion('RS256', k2.privateKey, 'k2', p.clientId))).body.error, 'invalid_client');

  const k3 = keyPair('PS256');
  await call('POST', `${BASE}/${p.id}/credentials`, { publicJwk: k3.jwk, alg: 'PS256', displayName: 'future', kid: 'k3', notBefore: Date.now() + 3_600_000 });
  t.equal((await token(p.clientId, assertion('PS256', k3.privateKey, 'k3', p.clientId))).body.error, 'invalid_client');

  const k4 = keyPair('ES256');
  await call('POST', `${BASE}/${p.id}/credentials`, { publicJwk: k4.jwk, alg: 'ES256', displayName: 'k4', kid: 'k4' });
  t.equal((await token(p.clientId, assertion('ES256', k4.privateKey, 'k4', p.clientId))).status, 200);
  t.equal((await token(p.clientId, (await assertion('ES256', k4.privateKey, 'k4', p.clientId)).replace(/\.[^.]+$/, '.AAAA'))).status, 401);

  // Validation: private key material, wrong key type for alg, weak RSA, duplicate kid.
  const priv = createPrivateKey(k1.privateKey.export({ format: 'pem', type: 'pkcs8' })).export({ format: 'jwk' });
  const e1 = await call('POST', `${BASE}/${p.id}/credentials`, { publicJwk: priv, alg: 'ES256', displayName: 'x' });
  t.equal(e1.status, 422);
  t.match(e1.body.details.publicJwk[0], /private key material/);
  t.equal((await call('POST', `${BASE}/${p.id}/credentials`, { publicJwk: k2.jwk, alg: 'ES256', displayName: 'x' })).status, 422);
  const weak = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ format: 'jwk' });
  t.equal((await call('POST', `${BASE}/${p.id}/credentials`, { publicJwk: weak, alg: 'RS256', displayName: 'x' })).status, 422);
  t.equal((await call('POST', `${BASE}/${p.id}/credentials`, { publicJwk: k4.jwk, alg: 'ES256', displayName: 'dup', kid: 'k4' })).status, 409);
});

t.test('rotation: the successor works at once, the old key is rotating until its grace ends', async (t) => {
  const p = (await call('POST', BASE, { displayName: 'rot', principalType: 'internal_service', permissions: ['admin:users:read'] })).body;
  const a = keyPair('ES256');
  const b = keyPair('ES256');
  const ca = (await call('POST', `${BASE}/${p.id}/credentials`, { publicJwk: a.jwk, alg: 'ES256', displayName: 'a', kid: 'a' })).body;
  const rot = await call('POST', `${BASE}/${p.id}/credentials/${ca.id}/rotate`, { publicJwk: b.jwk, alg: 'ES256', displayName: 'b', kid: 'b', graceSeconds: 600 });
  t.equal(rot.status, 200);
  t.equal(rot.body.previous.status, 'rotating');
  t.ok(rot.body.previous.expiresAt > Date.now() + 590_000);
  t.equal(rot.body.credential.status, 'active');
  t.equal((await token(p.clientId, assertion('ES256', a.privateKey, 'a', p.clientId))).status, 200, 'old key inside its grace');
  t.equal((await token(p.clientId, assertion('ES256', b.privateKey, 'b', p.clientId))).status, 200);
  const cb = rot.body.credential;
  const rot2 = await call('POST', `${BASE}/${p.id}/credentials/${cb.id}/rotate`, { publicJwk: keyPair('RS256').jwk, alg: 'RS256', displayName: 'c', graceSeconds: 0 });
  t.equal(rot2.body.previous.status, 'expired', 'no grace: the old key is expired at once');
  t.equal((await token(p.clientId, assertion('ES256', b.privateKey, 'b', p.clientId))).status, 401);
  const got = await call('GET', `${BASE}/${p.id}`);
  t.same(got.body.credentials.map((c: any) => c.status), ['rotating', 'expired', 'active']);
});

t.test('disable, enable, delete: tokens fail with client_disabled; deleted stays listable', async (t) => {
  const p = (await call('POST', BASE, { displayName: 'life', principalType: 'setup_tool', permissions: ['admin:users:read'] })).body;
  const k = keyPair('ES256');
  await call('POST', `${BASE}/${p.id}/credentials`, { publicJwk: k.jwk, alg: 'ES256', displayName: 'k', kid: 'k' });
  const tok = (await token(p.clientId, assertion('ES256', k.privateKey, 'k', p.clientId))).body.access_token;
  const as = api(srv, tok);
  t.equal((await as('GET', '/api/admin/users')).status, 200);
  t.equal((await call('POST', `${BASE}/${p.id}/disable`)).body.status, 'disabled');
  const r = await as('GET', '/api/admin/users');
  t.equal(r.status, 403);
  t.equal(r.body.error, 'client_disabled');
  t.equal((await token(p.clientId, assertion('ES256', k.privateKey, 'k', p.clientId))).status, 401, 'no key is published while disabled');
  t.equal((await call('POST', `${BASE}/${p.id}/enable`)).body.status, 'active');
  t.equal((await as('GET', '/api/admin/users')).body.error, 'token_revoked', 'tokens from before the disable stay revoked');
  t.equal((await token(p.clientId, assertion('ES256', k.privateKey, 'k', p.clientId))).status, 200);
  t.equal((await call('DELETE', `${BASE}/${p.id}`)).status, 204);
  t.equal((await call('DELETE', `${BASE}/${p.id}`)).status, 409);
  t.equal((await call('PUT', `${BASE}/${p.id}`, { displayName: 'x' })).status, 409);
  const d = await call('GET', `${BASE}?status=deleted`);
  t.same(d.body.items.map((x: any) => x.id), [p.id]);
  t.same(d.body.items[0].credentials.map((c: any) => c.status), ['revoked']);
  t.equal((await token(p.clientId, assertion('ES256', k.privateKey, 'k', p.clientId))).status, 401);
  t.ok(tenantId);
});

t.test('a credential stops working when its expiresAt passes and another starts at its notBefore (sweeper)', async (t) => {
  const p = (await call('POST', BASE, { displayName: 'edges', principalType: 'ci', permissions: [] })).body;
  const soon = keyPair('ES256');
  const later = keyPair('ES256');
  await call('POST', `${BASE}/${p.id}/credentials`, { publicJwk: soon.jwk, alg: 'ES256', displayName: 'soon', kid: 'soon', expiresAt: Date.now() + 1500 });
  await call('POST', `${BASE}/${p.id}/credentials`, { publicJwk: later.jwk, alg: 'ES256', displayName: 'later', kid: 'later', notBefore: Date.now() + 1500 });
  t.equal((await token(p.clientId, assertion('ES256', soon.privateKey, 'soon', p.clientId))).status, 200);
  t.equal((await token(p.clientId, assertion('ES256', later.privateKey, 'later', p.clientId))).status, 401);
  await new Promise((r) => setTimeout(r, 7500));
  t.equal((await token(p.clientId, assertion('ES256', soon.privateKey, 'soon', p.clientId))).status, 401, 'expired');
  t.equal((await token(p.clientId, assertion('ES256', later.privateKey, 'later', p.clientId))).status, 200, 'now valid');
  t.same((await call('GET', `${BASE}/${p.id}`)).body.credentials.map((c: any) => c.status), ['expired', 'active']);
});
