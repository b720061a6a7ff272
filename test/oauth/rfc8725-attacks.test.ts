import { createHmac, generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { issueIdToken } from '../../src/oauth/id-token.js';
import { j } from '../helpers/http.js';
import { claims, header, mintJwt } from '../helpers/jwt.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { adminToken, postForm, setupTenant } from '../helpers/tokens.js';
import { adminOf } from '../admin/helpers.js';
import type { BootstrapResult } from '../../src/bootstrap.js';
import { headerAlgFits } from '../../src/tokens/algorithms.js';
import { signingInput, signWith } from '../../src/tokens/jwt.js';

// The RFC 8725 attack matrix against the public endpoints over real HTTP: every forged or unacceptable
// token is inactive at introspection (exactly {"active":false}), invalid_grant at token exchange, and
// 401 at the admin API, while the untouched token is accepted by all three. Run for a tenant of each
// signing algorithm (its `signing_algs`, keys of its own) and for the deployment's keys, plus algorithm
// confusion between the keys of one tenant that enables all four.

const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const AT = 'urn:ietf:params:oauth:token-type:access_token';
const ADMIN_PATH = '/api/admin/machine-access/principals';

const ALGS = ['RS256', 'PS256', 'ES256', 'EdDSA'] as const;
let srv: TestServer;
/** Tenants by the algorithm they sign with: 'deployment' uses the server's TOKEN_SIGNING_ALG keys. */
const tenants = new Map<string, BootstrapResult>();
let all: BootstrapResult;
t.before(async () => {
  srv = await startTestServer();
  const platform = await adminOf(srv, ['admin:*'], 'rfc8725-plat', true);
  const withAlgs = async (label: string, algs?: string[]) => {
    const tb = await setupTenant(srv, label);
    if (algs) {
      const r = await platform.call('PUT', `/api/admin/tenants/${tb.tenant_id}`, { settings: { signing_algs: algs } });
      if (r.status !== 200) throw new Error(`PUT tenant ${r.status}`);
    }
    return tb;
  };
  tenants.set('deployment', await withAlgs('rfc8725'));
  for (const alg of ALGS) tenants.set(alg, await withAlgs(`rfc8725-${alg.toLowerCase()}`, [alg]));
  all = await withAlgs('rfc8725-all', [...ALGS]);
});
t.teardown(() => srv.close());

const enc = (o: unknown) => Buffer.from(typeof o === 'string' ? o : JSON.stringify(o)).toString('base64url');
/** An attacker's key of each of our key types, so a forged token's header can carry our algorithm. */
const attackers = { rsa: generateKeyPairSync('rsa', { modulusLength: 2048 }), ec: generateKeyPairSync('ec', { namedCurve: 'P-256' }), ed: generateKeyPairSync('ed25519') };
const attackerFor = (alg: string) => (alg === 'ES256' ? attackers.ec : alg === 'EdDSA' || alg === 'Ed25519' ? attackers.ed : attackers.rsa);

/** Every attack on a valid token of ours: name and forged token. */
async function attacks(good: string): Promise<Array<[string, string]>> {
  const h = header(good);
  const c = claims(good);
  const [hs, ps, sig] = good.split('.') as [string, string, string];
  const now = Math.floor(Date.now() / 1000);
  const ring = srv.deps.tokens.keys;
  const ourKey = ring.signingKey(String(c.tenant));
  const pem = ourKey.publicKey.export({ format: 'pem', type: 'spki' }) as string;
  const attacker = attackerFor(String(h.alg));
  const attackerJwk = attacker.publicKey.export({ format: 'jwk' });
  // Our key's own signature under another algorithm's name (e.g. an ES256 header over the Ed25519 key).
  const renamed = (alg: string) => { const input = `${enc({ ...h, alg })}.${ps}`; return `${input}.${signWith(ourKey.alg, ourKey.privateKey, input).toString('base64url')}`; };
  const otherNames = ['RS256', 'PS256', 'ES256', 'EdDSA', 'Ed25519', 'RS512', 'ES384', 'Ed448'].filter((n) => !headerAlgFits(n, ourKey.alg));
  // The same claims under another tenant's key of the same algorithm (and under a tenant of another algorithm).
  // (`all` enables every algorithm, so it has a key of ours; our claims name our tenant, not it.)
  const theirs = ring.signingKey(all.tenant_id, ourKey.alg);
  const underTheirs = (alg: string) => { const input = signingInput({ ...h, alg, kid: theirs.kid }, c); return `${input}.${signWith(theirs.alg, theirs.privateKey, input).toString('base64url')}`; };
  const otherAlg = [...tenants.values()].find((x) => ring.hasOwnKeys(x.tenant_id) && ring.algsOf(x.tenant_id)[0] !== ourKey.alg);
  const jwkText = JSON.stringify(JSON.parse(ring.jwks()).keys.find((k: { kid: string }) => k.kid === h.kid));
  const hmac = (secret: string, hdr: unknown) => { const input = `${enc(hdr)}.${ps}`; return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`; };
  const ours = (hdr: Record<string, unknown>, body: Record<string, unknown>) => srv.deps.tokens.signer.sign(String(c.tenant), hdr, body);
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
    ['jwk embedding the attacker key, no kid', await mintJwt(attacker.privateKey, { alg: String(h.alg), typ: h.typ, jwk: attackerJwk as never }, c)],
    ['unknown crit, signed by our key', await ours({ typ: h.typ, crit: ['urn:example:policy'], 'urn:example:policy': 1 }, c)],
    ['ID token presented as an access token', idToken],
    ...otherNames.map((n): [string, string] => [`${n} header on our ${ourKey.alg} key (signed with it)`, renamed(n)]),
    [`another tenant's ${ourKey.alg} key`, underTheirs(h.alg)],
    [`another tenant's key of another algorithm`, await srv.deps.tokens.signer.sign(otherAlg!.tenant_id, { typ: h.typ }, c)],
    ['modified payload', `${hs}.${enc({ ...c, scope: `${c.scope} admin`, sub: 'someone-else' })}.${sig}`],
    ['stripped signature', `${hs}.${ps}.`],
    ['signature segment removed', `${hs}.${ps}`],
    ['other issuer, signed by our key', await ours({ typ: h.typ }, { ...c, iss: 'https://attacker.example' })],
    ['expired, signed by our key', await ours({ typ: h.typ }, { ...c, iat: now - 3600, exp: now - 60 })],
    ['nbf in the future, signed by our key', await ours({ typ: h.typ }, { ...c, nbf: now + 600 })],
    ['iat far in the future, signed by our key', await ours({ typ: h.typ }, { ...c, iat: now + 3600 })],
  ];
}

async function introspect(b: BootstrapResult, token: string): Promise<{ status: number; text: string }> {
  const res = await postForm(`${srv.url}/introspect`, b.clients.resource_server, { token });
  return { status: res.status, text: await res.text() };
}
function exchange(b: BootstrapResult, token: string): Promise<Response> {
  return postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: EXCHANGE, subject_token_type: AT, subject_token: token });
}
async function admin(token: string): Promise<number> {
  const res = await fetch(`${srv.url}${ADMIN_PATH}`, { headers: { authorization: `Bearer ${token}` } });
  await res.arrayBuffer();
  return res.status;
}

for (const which of ['deployment', ...ALGS]) {
  t.test(`introspection and token exchange: ${which} keys`, async (t) => {
    const b = tenants.get(which)!;
    const good = (await j(await postForm(`${srv.url}/token`, b.clients.exchanger, { grant_type: 'client_credentials', scope: 'read write' }))).access_token as string;
    if (which !== 'deployment') t.equal(header(good).alg, which, 'signed with the tenant\'s algorithm');
    const control = await introspect(b, good);
    t.equal(control.status, 200);
    t.equal(JSON.parse(control.text).active, true, 'the untouched token is active');
    for (const [name, token] of await attacks(good)) {
      const r = await introspect(b, token);
      t.equal(r.status, 200, `introspection status: ${name}`);
      t.equal(r.text, '{"active":false}', `introspection: ${name}`);
      const x = await exchange(b, token);
      t.equal(x.status, 400, `exchange status: ${name}`);
      t.equal((await j(x)).error, 'invalid_grant', `exchange: ${name}`);
    }
    const ok = await exchange(b, good);
    t.equal(ok.status, 200, 'the untouched token is exchanged');
  });

  t.test(`admin API: ${which} keys`, async (t) => {
    const b = tenants.get(which)!;
    const good = await adminToken(srv, { tenantId: b.tenant_id, permissions: ['admin:*'] });
    t.equal(await admin(good), 200, 'the untouched admin token is accepted');
    for (const [name, token] of await attacks(good)) t.equal(await admin(token), 401, `admin API: ${name}`);
  });
}

t.test('algorithm confusion between the keys of one tenant (all four algorithms enabled)', async (t) => {
  const ring = srv.deps.tokens.keys;
  t.same(ring.algsOf(all.tenant_id), [...ALGS]);
  const good = (await j(await postForm(`${srv.url}/token`, all.clients.exchanger, { grant_type: 'client_credentials', scope: 'read write' }))).access_token as string;
  const c = claims(good);
  const keys = ALGS.map((a) => ring.signingKey(all.tenant_id, a));
  for (const signer of keys) {
    // Each key signs correctly for itself...
    const own = `${signingInput({ alg: signer.alg, kid: signer.kid, typ: 'at+jwt' }, c)}`;
    const ownToken = `${own}.${signWith(signer.alg, signer.privateKey, own).toString('base64url')}`;
    t.equal(JSON.parse((await introspect(all, ownToken)).text).active, true, `${signer.alg} key, its own kid and alg: active`);
    for (const named of keys) {
      if (named.kid === signer.kid) continue;
      // ...but never under the kid of another of the tenant's keys, with either key's algorithm in the header.
      for (const alg of new Set([signer.alg, named.alg])) {
        const input = signingInput({ alg, kid: named.kid, typ: 'at+jwt' }, c);
        const forged = `${input}.${signWith(signer.alg, signer.privateKey, input).toString('base64url')}`;
        t.equal((await introspect(all, forged)).text, '{"active":false}', `${signer.alg} signature, ${named.alg} key's kid, alg ${alg}: inactive`);
        t.equal((await j(await exchange(all, forged))).error, 'invalid_grant', `and not exchanged`);
      }
    }
  }
});
