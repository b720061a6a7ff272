import { generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import t from 'tap';
import { createClient } from '../../src/clients/create.js';
import { GRANT } from '../../src/clients/model.js';
import { j } from '../helpers/http.js';
import { mintJwt } from '../helpers/jwt.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { setupTenant } from '../helpers/tokens.js';
import type { BootstrapResult } from '../../src/bootstrap.js';

// private_key_jwt (RFC 7523) verified with jose: the claim policy of RFC 7523 section 3 and the
// per-key algorithm allow-lists, each case against a fresh assertion so replay never hides a result.

let srv: TestServer;
let b: BootstrapResult;
t.before(async () => {
  srv = await startTestServer();
  b = await setupTenant(srv, 'clientassert');
});
t.teardown(() => srv.close());

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const rsa2 = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const pub = (k: KeyObject) => k.export({ format: 'jwk' }) as Record<string, unknown>;

async function client(keys: Array<Record<string, unknown>>): Promise<string> {
  const { client } = await createClient(srv.deps.sql, srv.deps.tokens.secretKey, {
    tenantId: b.tenant_id, name: 'assertion', authMethod: 'private_key_jwt', grantTypes: [GRANT.clientCredentials], scopes: ['read'], jwks: { keys },
  });
  return client.clientId;
}

async function present(assertion: string, extra: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(`${srv.url}/token`, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: assertion, ...extra }),
  });
  return { status: res.status, body: await j(res) };
}

const now = () => Math.floor(Date.now() / 1000);
const claimsFor = (id: string, over: Record<string, unknown> = {}) => ({ iss: id, sub: id, aud: `${srv.config.issuer}/token`, iat: now(), exp: now() + 60, jti: randomUUID(), ...over });

t.test('the RFC 7523 claim policy', async (t) => {
  const id = await client([{ ...pub(rsa.publicKey), kid: 'r1', alg: 'RS256' }]);
  const sign = (over: Record<string, unknown> = {}, header: Record<string, unknown> = {}) => mintJwt(rsa.privateKey, { alg: 'RS256', kid: 'r1', ...header }, claimsFor(id, over));
  t.equal((await present(await sign())).status, 200, 'a valid assertion');
  t.equal((await present(await sign({ aud: srv.config.issuer }))).status, 200, 'aud may be the issuer');
  t.equal((await present(await sign({ aud: ['https://other.example', `${srv.config.issuer}/token`] }))).status, 200, 'aud may be an array containing the endpoint');
  t.equal((await present(await sign({ iat: undefined }))).status, 200, 'iat is optional (RFC 7523 3)');
  const refused: Array<[string, Record<string, unknown>, Record<string, unknown>?]> = [
    ['nbf in the future', { nbf: now() + 120 }],
    ['iat far in the future', { iat: now() + 600 }],
    ['iat older than 10 minutes', { iat: now() - 700 }],
    ['expired', { iat: now() - 120, exp: now() - 30 }],
    ['living longer than 10 minutes', { exp: now() + 3600 }],
    ['no exp', { exp: undefined }],
    ['no jti', { jti: undefined }],
    ['iss other than sub', { iss: 'someone-else' }],
    ['aud of another server', { aud: 'https://other.example/token' }],
    ['no aud', { aud: undefined }],
    ['exp as a string', { exp: String(now() + 60) }],
  ];
  for (const [name, over] of refused) {
    const r = await present(await sign(over));
    t.equal(r.status, 401, name);
    t.equal(r.body.error, 'invalid_client', `${name}: invalid_client`);
  }
  const claimedOther = await present(await sign(), { client_id: 'another-client' });
  t.equal(claimedOther.status, 401, 'client_id in the form must match the assertion');
});

t.test('algorithms: the registered key pins its alg, or its type allows the algorithm', async (t) => {
  const pinned = await client([{ ...pub(rsa.publicKey), kid: 'r1', alg: 'RS256' }]);
  t.equal((await present(await mintJwt(rsa.privateKey, { alg: 'PS256', kid: 'r1' }, claimsFor(pinned)))).status, 401, 'PS256 on a key registered for RS256');
  const unpinned = await client([{ ...pub(rsa.publicKey), kid: 'r1' }, { ...pub(ec.publicKey), kid: 'e1' }]);
  t.equal((await present(await mintJwt(rsa.privateKey, { alg: 'PS256', kid: 'r1' }, claimsFor(unpinned)))).status, 200, 'PS256 on an RSA key without alg');
  t.equal((await present(await mintJwt(rsa.privateKey, { alg: 'RS256', kid: 'r1' }, claimsFor(unpinned)))).status, 200, 'RS256 on an RSA key without alg');
  t.equal((await present(await mintJwt(ec.privateKey, { alg: 'ES256', kid: 'e1' }, claimsFor(unpinned)))).status, 200, 'ES256 on the P-256 key');
  t.equal((await present(await mintJwt(rsa.privateKey, { alg: 'RS256', kid: 'e1' }, claimsFor(unpinned)))).status, 401, 'RS256 naming the EC key');
  t.equal((await present(await mintJwt(rsa.privateKey, { alg: 'RS256' }, claimsFor(unpinned)))).status, 401, 'no kid while two keys are registered');
  t.equal((await present(await mintJwt(rsa2.privateKey, { alg: 'RS256', kid: 'r1' }, claimsFor(unpinned)))).status, 401, 'signed by another key under a registered kid');
  const rsaPem = rsa.publicKey.export({ format: 'pem', type: 'spki' }) as string;
  t.equal((await present(await mintJwt(Buffer.from(rsaPem), { alg: 'HS256', kid: 'r1' }, claimsFor(unpinned)))).status, 401, 'HS256 with the registered public key as secret');
  const h = Buffer.from(JSON.stringify({ alg: 'none', kid: 'r1' })).toString('base64url');
  t.equal((await present(`${h}.${Buffer.from(JSON.stringify(claimsFor(unpinned))).toString('base64url')}.`)).status, 401, 'alg none');
  const single = await client([{ ...pub(rsa.publicKey), kid: 'only' }]);
  t.equal((await present(await mintJwt(rsa.privateKey, { alg: 'RS256' }, claimsFor(single)))).status, 200, 'no kid with a single registered key');
});

t.test('crit: unknown extensions are refused', async (t) => {
  const id = await client([{ ...pub(rsa.publicKey), kid: 'r1', alg: 'RS256' }]);
  // jose refuses to sign an unknown crit, so this one is framed by hand.
  const { sign } = await import('node:crypto');
  const h = Buffer.from(JSON.stringify({ alg: 'RS256', kid: 'r1', crit: ['urn:example:x'], 'urn:example:x': true })).toString('base64url');
  const p = Buffer.from(JSON.stringify(claimsFor(id))).toString('base64url');
  const token = `${h}.${p}.${sign('sha256', Buffer.from(`${h}.${p}`), rsa.privateKey).toString('base64url')}`;
  t.equal((await present(token)).status, 401);
  t.equal((await present(await mintJwt(rsa.privateKey, { alg: 'RS256', kid: 'r1' }, claimsFor(id)))).status, 200, 'the same key without crit');
});

t.test('principal credentials: public keys only, consistent with the credential algorithm', async (t) => {
  const { adminOf } = await import('../admin/helpers.js');
  const { call } = await adminOf(srv, ['admin:*'], 'clientassert-mp');
  const BASE = '/api/admin/machine-access/principals';
  const p = (await call('POST', BASE, { displayName: 'bot', principalType: 'ci', permissions: [] })).body;
  const add = (publicJwk: unknown, alg: string) => call('POST', `${BASE}/${p.id}/credentials`, { publicJwk, alg, displayName: 'k' });
  const r1 = await add({ ...pub(rsa.publicKey), alg: 'PS256' }, 'RS256');
  t.equal(r1.status, 422, 'the JWK says PS256, the credential RS256');
  t.match(r1.body.details.publicJwk[0], /alg/);
  t.equal((await add({ ...pub(rsa.publicKey), use: 'enc' }, 'RS256')).status, 422, 'use enc');
  t.equal((await add({ ...pub(rsa.publicKey), key_ops: ['encrypt'] }, 'RS256')).status, 422, 'key_ops without verify');
  t.equal((await add({ ...pub(ec.publicKey), crv: 'P-384' }, 'ES256')).status, 422, 'curve mismatch');
  t.equal((await add(pub(ec.publicKey), 'RS256')).status, 422, 'kty mismatch');
  t.equal((await add({ kty: 'RSA', n: 'AQAB', e: 'AQAB' }, 'RS256')).status, 422, 'not a usable RSA key');
  t.equal((await add({ kty: 'EC', crv: 'P-256', x: 'AAAA', y: 'AAAA' }, 'ES256')).status, 422, 'not a point on the curve');
  t.equal((await add({ kty: 'oct', k: 'c2VjcmV0' }, 'RS256')).status, 422, 'a symmetric key');
  const ok = await add({ ...pub(ec.publicKey), alg: 'ES256', use: 'sig' }, 'ES256');
  t.equal(ok.status, 201);
  const { calculateJwkThumbprint } = await import('jose');
  t.equal(ok.body.kid, await calculateJwkThumbprint(pub(ec.publicKey) as never), 'the default kid is the RFC 7638 thumbprint');
});

t.test('our signing keys: kids are RFC 7638 thumbprints of the published keys', async (t) => {
  const { calculateJwkThumbprint } = await import('jose');
  const jwks = await j(await fetch(`${srv.url}/.well-known/jwks.json`));
  for (const k of jwks.keys) {
    t.notOk(k.d || k.p || k.q || k.dp || k.dq || k.qi, 'no private members');
    // Keys created before issue 18 keep their random kids; the test database may hold some.
    if (!/^(rs|ps|es)256-/.test(k.kid)) t.equal(k.kid, await calculateJwkThumbprint(k), `kid ${k.kid} is the thumbprint`);
  }
});
