import { createHmac, generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { issueIdToken } from '../../src/oauth/id-token.js';
import { j } from '../helpers/http.js';
import { claims, header, mintJwt } from '../helpers/jwt.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { adminToken, postForm, setupTenant } from '../helpers/tokens.js';
import type { BootstrapResult } from '../../src/bootstrap.js';

// The RFC 8725 attack matrix against the public endpoints over real HTTP: every forged or unacceptable
// token is inactive at introspection (exactly {"active":false}), invalid_grant at token exchange, and
// 401 at the admin API, while the untouched token is accepted by all three.

const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const AT = 'urn:ietf:params:oauth:token-type:access_token';
const ADMIN_PATH = '/api/admin/machine-access/principals';

let srv: TestServer;
let b: BootstrapResult;
t.before(async () => {
  srv = await startTestServer();
  b = await setupTenant(srv, 'rfc8725');
});
t.teardown(() => srv.close());

const enc = (o: unknown) => Buffer.from(typeof o === 'string' ? o : JSON.stringify(o)).toString('base64url');
const attacker = generateKeyPairSync('rsa', { modulusLength: 2048 });
const attackerJwk = attacker.publicKey.export({ format: 'jwk' });

/** Every attack on a valid token of ours: name and forged token. */
async function attacks(good: string): Promise<Array<[string, string]>> {
  const h = header(good);
  const c = claims(good);
  const [hs, ps, sig] = good.split('.') as [string, string, string];
  const now = Math.floor(Date.now() / 1000);
  const ring = srv.deps.tokens.keys;
  const ourKey = ring.signingKey();
  const pem = ourKey.publicKey.export({ format: 'pem', type: 'spki' }) as string;
  const jwkText = JSON.stringify(JSON.parse(ring.jwks()).keys.find((k: { kid: string }) => k.kid === h.kid));
  const hmac = (secret: string, hdr: unknown) => { const input = `${enc(hdr)}.${ps}`; return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`; };
  const ours = (hdr: Record<string, unknown>, body: Record<string, unknown>) => srv.deps.tokens.signer.sign(hdr, body);
  const idToken = await issueIdToken(srv.deps, { clientId: String(c.client_id), sub: String(c.sub), email: 'a@example.com', emailVerified: true, authTime: now, accessToken: good, tenant: String(c.tenant) });
  return [
    ['alg none without a signature', `${enc({ ...h, alg: 'none' })}.${ps}.`],
    ['alg none with the original signature', `${enc({ ...h, alg: 'none' })}.${ps}.${sig}`],
    ['HS256 signed with our RSA public key (PEM)', hmac(pem, { ...h, alg: 'HS256' })],
    ['HS256 signed with our RSA public key (JWK)', hmac(jwkText, { ...h, alg: 'HS256' })],
    ['unknown kid', await mintJwt(attacker.privateKey, { ...h, kid: 'unknown-key' }, c)],
    ['path-traversal kid', await mintJwt(attacker.privateKey, { ...h, kid: '../../../../../dev/null' }, c)],
    ['SQL kid', await mintJwt(attacker.privateKey, { ...h, kid: "x' UNION SELECT 'attacker' --" }, c)],
    ['jku naming an attacker key set', await mintJwt(attacker.privateKey, { ...h, jku: 'https://attacker.example/jwks.json' }, c)],
    ['x5u naming an attacker certificate', await mintJwt(attacker.privateKey, { ...h, x5u: 'https://attacker.example/cert.pem' }, c)],
    ['jwk embedding the attacker key', await mintJwt(attacker.privateKey, { ...h, jwk: attackerJwk as never }, c)],
    ['jwk embedding the attacker key, no kid', await mintJwt(attacker.privateKey, { alg: 'RS256', typ: h.typ, jwk: attackerJwk as never }, c)],
    ['unknown crit, signed by our key', await ours({ typ: h.typ, crit: ['urn:example:policy'], 'urn:example:policy': 1 }, c)],
    ['ID token presented as an access token', idToken],
    ['PS256 header on our RS256 key (signed with it)', await mintJwt(ourKey.privateKey, { ...h, alg: 'PS256' }, c)],
    ['modified payload', `${hs}.${enc({ ...c, scope: `${c.scope} admin`, sub: 'someone-else' })}.${sig}`],
    ['stripped signature', `${hs}.${ps}.`],
    ['signature segment removed', `${hs}.${ps}`],
    ['other issuer, signed by our key', await ours({ typ: h.typ }, { ...c, iss: 'https://attacker.example' })],
    ['expired, signed by our key', await ours({ typ: h.typ }, { ...c, iat: now - 3600, exp: now - 60 })],
    ['nbf in the future, signed by our key', await ours({ typ: h.typ }, { ...c, nbf: now + 600 })],
    ['iat far in the future, signed by our key', await ours({ typ: h.typ }, { ...c, iat: now + 3600 })],
  ];
}

async function introspect(token: string): Promise<{ status: number; text: string }> {
  const res = await postForm(`${srv.url}/introspect`, b.clients.resource_server, { token });
  return { status: res.status, text: await res.text() };
}
function exchange(token: string): Promise<Response> {
  return postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: EXCHANGE, subject_token_type: AT, subject_token: token });
}
async function admin(token: string): Promise<number> {
  const res = await fetch(`${srv.url}${ADMIN_PATH}`, { headers: { authorization: `Bearer ${token}` } });
  await res.arrayBuffer();
  return res.status;
}

t.test('introspection and token exchange', async (t) => {
  const good = (await j(await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials', scope: 'read write' }))).access_token as string;
  const control = await introspect(good);
  t.equal(control.status, 200);
  t.equal(JSON.parse(control.text).active, true, 'the untouched token is active');
  for (const [name, token] of await attacks(good)) {
    const r = await introspect(token);
    t.equal(r.status, 200, `introspection status: ${name}`);
    t.equal(r.text, '{"active":false}', `introspection: ${name}`);
    const x = await exchange(token);
    t.equal(x.status, 400, `exchange status: ${name}`);
    t.equal((await j(x)).error, 'invalid_grant', `exchange: ${name}`);
  }
  const ok = await exchange(good);
  t.equal(ok.status, 200, 'the untouched token is exchanged');
});

t.test('admin API', async (t) => {
  const good = await adminToken(srv, { tenantId: b.tenant_id, permissions: ['admin:*'] });
  t.equal(await admin(good), 200, 'the untouched admin token is accepted');
  for (const [name, token] of await attacks(good)) t.equal(await admin(token), 401, `admin API: ${name}`);
});
