import { randomUUID, type webcrypto } from 'node:crypto';
import t from 'tap';
import { calculateJwkThumbprint, decodeJwt, exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import * as oidc from 'openid-client';
import { createClient } from '../../src/clients/create.js';
import { GRANT } from '../../src/clients/model.js';
import { athOf } from '../../src/dpop/proof.js';
import { j } from '../helpers/http.js';
import { basic, postForm, setupTenant } from '../helpers/tokens.js';
import { signInByEmailCode, startLoginEnv } from '../login/fixtures.js';

// DPoP (RFC 9449) as clients meet it: openid-client (a FAPI 2.0-certified library) obtains, refreshes
// and uses sender-constrained tokens through its own API and checks what it gets; hand-made proofs
// then try each way a proof or a bound token can be misused, and each is refused with the RFC's error.
const env = await startLoginEnv();
t.teardown(() => env.close());
const { srv, tenant } = env;
const insecure = { execute: [oidc.allowInsecureRequests] };
const tokenUrl = `${srv.url}/token`;
const TE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const AT = 'urn:ietf:params:oauth:token-type:access_token';

type CryptoKeyPair = webcrypto.CryptoKeyPair;
interface Key { pair: CryptoKeyPair; jwk: JWK; jkt: string }
async function newKey(alg = 'ES256'): Promise<Key> {
  const pair = await generateKeyPair(alg, { extractable: true }) as CryptoKeyPair;
  const jwk = await exportJWK(pair.publicKey);
  return { pair, jwk, jkt: await calculateJwkThumbprint(jwk) };
}

/** A proof made by hand, so each field can be made wrong on purpose. */
async function proof(key: Key, htm: string, htu: string, o: { claims?: Record<string, unknown>; header?: Record<string, unknown>; alg?: string; signWith?: webcrypto.CryptoKey } = {}): Promise<string> {
  return new SignJWT({ htm, htu, jti: randomUUID(), iat: Math.floor(Date.now() / 1000), ...o.claims })
    .setProtectedHeader({ alg: o.alg ?? 'ES256', typ: 'dpop+jwt', jwk: key.jwk, ...o.header })
    .sign(o.signWith ?? key.pair.privateKey);
}

const exchanger = tenant.clients.exchanger;
const cc = (dpop?: string, client: { client_id: string; client_secret: string } = exchanger) => fetch(tokenUrl, {
  method: 'POST',
  headers: { authorization: basic(client.client_id, client.client_secret), 'content-type': 'application/x-www-form-urlencoded', ...(dpop ? { dpop } : {}) },
  body: 'grant_type=client_credentials',
});
const introspect = async (token: string) => j(await postForm(`${srv.url}/introspect`, tenant.clients.resource_server, { token }));

// A public client for the code flow: its refresh tokens are bound to the key (RFC 9449 5).
const publicClientId = `${tenant.tenant_id}-spa`;
const redirectUri = 'https://spa.example.test/cb';
await createClient(srv.deps.sql, srv.deps.tokens.secretKey, {
  tenantId: tenant.tenant_id, clientId: publicClientId, name: 'SPA', authMethod: 'none', grantTypes: [GRANT.authorizationCode, GRANT.refreshToken],
  scopes: ['openid', 'email', 'offline_access'], redirectUris: [redirectUri], firstParty: true,
});

const signIn = (url: URL | string) => signInByEmailCode(env, url, 'dpop');

const spa = await oidc.discovery(new URL(srv.url), publicClientId, undefined, oidc.None(), insecure);
/** A code flow of the public client; `dpopJkt` binds the code at /authorize (RFC 9449 10). */
async function codeFlow(dpopJkt?: string): Promise<{ callback: URL; verifier: string; state: string }> {
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const url = oidc.buildAuthorizationUrl(spa, {
    redirect_uri: redirectUri, scope: 'openid email', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state,
    ...(dpopJkt ? { dpop_jkt: dpopJkt } : {}),
  });
  return { callback: await signIn(url), verifier, state };
}

t.test('discovery advertises the proof algorithms', async (t) => {
  const meta = await j(await fetch(`${srv.url}/.well-known/openid-configuration`));
  t.same(meta.dpop_signing_alg_values_supported, ['ES256', 'EdDSA', 'Ed25519', 'PS256', 'RS256']);
});

t.test('openid-client: client_credentials with DPoP gives a bound token that introspection reports bound', async (t) => {
  const key = await newKey();
  const config = await oidc.discovery(new URL(srv.url), exchanger.client_id, exchanger.client_secret, oidc.ClientSecretBasic(exchanger.client_secret), insecure);
  const got = await oidc.clientCredentialsGrant(config, { scope: 'read' }, { DPoP: oidc.getDPoPHandle(config, key.pair) });
  t.equal(got.token_type, 'dpop', 'the library saw token_type DPoP');
  t.same(decodeJwt(got.access_token).cnf, { jkt: key.jkt }, 'cnf.jkt is the RFC 7638 thumbprint of the proof key');
  for (const round of ['miss', 'hit']) {
    const answer = await introspect(got.access_token);
    t.equal(answer.active, true);
    t.same(answer.cnf, { jkt: key.jkt }, `introspection (cache ${round}) returns cnf`);
    t.equal(answer.token_type, 'DPoP');
  }
  const plain = await oidc.clientCredentialsGrant(config, { scope: 'read' });
  t.equal(plain.token_type, 'bearer', 'without a proof the same client still gets a Bearer token');
  t.equal(decodeJwt(plain.access_token).cnf, undefined);
  t.equal((await introspect(plain.access_token)).token_type, 'Bearer');
});

t.test('other proof algorithms: EdDSA, Ed25519 (RFC 9864), PS256, RS256', async (t) => {
  for (const [alg, gen] of [['EdDSA', 'Ed25519'], ['Ed25519', 'Ed25519'], ['PS256', 'PS256'], ['RS256', 'RS256']] as const) {
    const key = await newKey(gen);
    const res = await cc(await proof(key, 'POST', tokenUrl, { alg }));
    const body = await j(res);
    t.equal(res.status, 200, `${alg}: ${JSON.stringify(body).slice(0, 120)}`);
    t.same(decodeJwt(body.access_token).cnf, { jkt: key.jkt }, `${alg}: bound to its key`);
  }
});

t.test('the attack table at /token: every bad proof is 400 invalid_dpop_proof and no token', async (t) => {
  const key = await newKey();
  const other = await newKey();
  const now = Math.floor(Date.now() / 1000);
  const privateJwk = await exportJWK(key.pair.privateKey);
  const replayed = await proof(key, 'POST', tokenUrl);
  t.equal((await cc(replayed)).status, 200, 'first use of a proof');
  const cases: Array<[string, string]> = [
    ['a replayed proof', replayed],
    ['htm GET', await proof(key, 'GET', tokenUrl)],
    ['htu of another endpoint', await proof(key, 'POST', `${srv.url}/introspect`)],
    ['htu of another host', await proof(key, 'POST', 'https://evil.example/token')],
    ['iat two minutes old', await proof(key, 'POST', tokenUrl, { claims: { iat: now - 120 } })],
    ['iat a minute ahead', await proof(key, 'POST', tokenUrl, { claims: { iat: now + 60 } })],
    ['no jti', await proof(key, 'POST', tokenUrl, { claims: { jti: undefined } })],
    ['signed by another key than its jwk', await proof(key, 'POST', tokenUrl, { signWith: other.pair.privateKey })],
    ['a private key in jwk', await proof(key, 'POST', tokenUrl, { header: { jwk: privateJwk } })],
    ['typ JWT', await proof(key, 'POST', tokenUrl, { header: { typ: 'JWT' } })],
    ['a jwk without kty', await proof(key, 'POST', tokenUrl, { header: { jwk: { crv: key.jwk.crv, x: key.jwk.x, y: key.jwk.y } } })],
    ['an RSA key named for ES256', await proof(key, 'POST', tokenUrl, { header: { jwk: (await newKey('RS256')).jwk } })],
    ['a jwk for another algorithm', await proof(key, 'POST', tokenUrl, { header: { jwk: { ...key.jwk, alg: 'PS256' } } })],
    ['a jwk for encryption', await proof(key, 'POST', tokenUrl, { header: { jwk: { ...key.jwk, use: 'enc' } } })],
    ['not a JWT', 'not-a-proof'],
    ['two DPoP headers', `${await proof(key, 'POST', tokenUrl)}, ${await proof(key, 'POST', tokenUrl)}`],
  ];
  for (const [name, p] of cases) {
    const res = await cc(p);
    const body = await j(res);
    t.equal(res.status, 400, `${name}: 400`);
    t.equal(body.error, 'invalid_dpop_proof', `${name}: invalid_dpop_proof`);
    t.notOk(body.access_token, `${name}: no token`);
  }
  // An HMAC "proof": a symmetric key is no proof of possession.
  const hs = await new SignJWT({ htm: 'POST', htu: tokenUrl, jti: randomUUID(), iat: now }).setProtectedHeader({ alg: 'HS256', typ: 'dpop+jwt', jwk: { kty: 'oct', k: 'c2VjcmV0' } as never }).sign(new TextEncoder().encode('secret'));
  t.equal((await j(await cc(hs))).error, 'invalid_dpop_proof', 'HS256 refused');
});

t.test('a client registered with dpop_bound_access_tokens, and a tenant that requires DPoP, refuse requests without a proof', async (t) => {
  const bound = await createClient(srv.deps.sql, srv.deps.tokens.secretKey, {
    tenantId: tenant.tenant_id, clientId: `${tenant.tenant_id}-bound`, name: 'bound', grantTypes: [GRANT.clientCredentials], scopes: ['read'], dpopBoundAccessTokens: true,
  });
  const creds = { client_id: bound.client.clientId, client_secret: bound.clientSecret! };
  const without = await cc(undefined, creds);
  t.equal(without.status, 400);
  t.equal((await j(without)).error, 'invalid_dpop_proof');
  const key = await newKey();
  const withProof = await j(await cc(await proof(key, 'POST', tokenUrl), creds));
  t.equal(withProof.token_type, 'DPoP');

  const other = await setupTenant(srv, 'dpop-required');
  await srv.deps.sql`update tenants set settings = settings || ${srv.deps.sql.json({ require_dpop: true })} where id = ${other.tenant_id}`;
  await srv.deps.tokens.tenantSettings.changed(other.tenant_id);
  const refused = await cc(undefined, other.clients.exchanger);
  t.equal(refused.status, 400, 'the tenant setting applies to every client');
  t.equal((await j(refused)).error, 'invalid_dpop_proof');
  t.equal((await j(await cc(await proof(key, 'POST', tokenUrl), other.clients.exchanger))).token_type, 'DPoP');
});

t.test('server nonces: openid-client retries on use_dpop_nonce; a proof without the nonce is refused with a fresh one', async (t) => {
  const nonced = await setupTenant(srv, 'dpop-nonce');
  await srv.deps.sql`update tenants set settings = settings || ${srv.deps.sql.json({ dpop_nonce: true })} where id = ${nonced.tenant_id}`;
  await srv.deps.tokens.tenantSettings.changed(nonced.tenant_id);
  const key = await newKey();
  const raw = await cc(await proof(key, 'POST', tokenUrl), nonced.clients.exchanger);
  t.equal(raw.status, 400);
  t.equal((await j(raw)).error, 'use_dpop_nonce');
  const nonce = raw.headers.get('dpop-nonce');
  t.ok(nonce, 'DPoP-Nonce header with the refusal');
  const retried = await cc(await proof(key, 'POST', tokenUrl, { claims: { nonce } }), nonced.clients.exchanger);
  t.equal(retried.status, 200, 'the same key with the nonce');
  t.ok(retried.headers.get('dpop-nonce'), 'a nonce offered with the answer');
  t.equal((await j(await cc(await proof(key, 'POST', tokenUrl, { claims: { nonce: `${nonce}x` } }), nonced.clients.exchanger))).error, 'use_dpop_nonce', 'a forged nonce');

  const ex = nonced.clients.exchanger;
  const config = await oidc.discovery(new URL(srv.url), ex.client_id, ex.client_secret, oidc.ClientSecretBasic(ex.client_secret), insecure);
  const handle = oidc.getDPoPHandle(config, key.pair);
  let got: Awaited<ReturnType<typeof oidc.clientCredentialsGrant>> | undefined;
  try { got = await oidc.clientCredentialsGrant(config, {}, { DPoP: handle }); } catch (err) {
    // openid-client surfaces use_dpop_nonce once and caches the nonce; its documented pattern is one retry.
    if (!(err instanceof oidc.ResponseBodyError) || err.error !== 'use_dpop_nonce') throw err;
    got = await oidc.clientCredentialsGrant(config, {}, { DPoP: handle });
  }
  t.equal(got.token_type, 'dpop', 'the library completes the grant with the server nonce');
});

t.test('token exchange: a bound subject token needs a proof; the new token is bound to the proof key', async (t) => {
  const holder = await newKey();
  const subject = (await j(await cc(await proof(holder, 'POST', tokenUrl)))).access_token as string;
  const exchange = (dpop?: string) => fetch(tokenUrl, {
    method: 'POST', headers: { authorization: basic(exchanger.client_id, exchanger.client_secret), 'content-type': 'application/x-www-form-urlencoded', ...(dpop ? { dpop } : {}) },
    body: new URLSearchParams({ grant_type: TE, subject_token: subject, subject_token_type: AT, audience: exchanger.audience }),
  });
  const bare = await exchange();
  t.equal(bare.status, 400, 'never an unbound token from a bound one');
  t.equal((await j(bare)).error, 'invalid_dpop_proof');
  const service = await newKey();
  const res = await exchange(await proof(service, 'POST', tokenUrl));
  const body = await j(res);
  t.equal(res.status, 200);
  t.equal(body.token_type, 'DPoP');
  t.same(decodeJwt(body.access_token).cnf, { jkt: service.jkt }, 'bound to the exchanging request\'s key');

  // An unbound subject token exchanged with a proof comes out bound; without one, Bearer as before.
  const plainSubject = (await j(await cc())).access_token as string;
  const plain = await j(await fetch(tokenUrl, {
    method: 'POST', headers: { authorization: basic(exchanger.client_id, exchanger.client_secret), 'content-type': 'application/x-www-form-urlencoded', dpop: await proof(service, 'POST', tokenUrl) },
    body: new URLSearchParams({ grant_type: TE, subject_token: plainSubject, subject_token_type: AT, audience: exchanger.audience }),
  }));
  t.same(decodeJwt(plain.access_token).cnf, { jkt: service.jkt });
});

t.test('code flow: dpop_jkt binds the code; a public client\'s refresh token is bound to its key', async (t) => {
  const key = await newKey();
  const dpop = oidc.getDPoPHandle(spa, key.pair);

  const unproved = await codeFlow(key.jkt);
  await t.rejects(oidc.authorizationCodeGrant(spa, unproved.callback, { pkceCodeVerifier: unproved.verifier, expectedState: unproved.state }),
    { error: 'invalid_dpop_proof' } as Error & { error: string }, 'a code bound with dpop_jkt is not redeemed without a proof');

  const stranger = await newKey();
  const wrongKey = await codeFlow(key.jkt);
  await t.rejects(oidc.authorizationCodeGrant(spa, wrongKey.callback, { pkceCodeVerifier: wrongKey.verifier, expectedState: wrongKey.state }, undefined, { DPoP: oidc.getDPoPHandle(spa, stranger.pair) }),
    { error: 'invalid_grant' } as Error & { error: string }, 'nor with a proof of another key');

  const flow = await codeFlow(key.jkt);
  const tokens = await oidc.authorizationCodeGrant(spa, flow.callback, { pkceCodeVerifier: flow.verifier, expectedState: flow.state }, undefined, { DPoP: dpop });
  t.equal(tokens.token_type, 'dpop');
  t.same(decodeJwt(tokens.access_token).cnf, { jkt: key.jkt });
  t.ok(tokens.refresh_token, 'a refresh token');

  // The refresh token is bound: a thief without the key gets nothing and changes nothing.
  const steal = (dpopHeader?: string) => fetch(tokenUrl, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...(dpopHeader ? { dpop: dpopHeader } : {}) },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: publicClientId }),
  });
  t.equal((await j(await steal())).error, 'invalid_dpop_proof', 'refresh without a proof');
  t.equal((await j(await steal(await proof(stranger, 'POST', tokenUrl)))).error, 'invalid_grant', 'refresh with another key');
  const refreshed = await oidc.refreshTokenGrant(spa, tokens.refresh_token!, undefined, { DPoP: dpop });
  t.equal(refreshed.token_type, 'dpop', 'the holder still refreshes: the failed attempts spent nothing');
  t.same(decodeJwt(refreshed.access_token).cnf, { jkt: key.jkt });

  // The resource side: /userinfo through the library with the same key.
  const info = await oidc.fetchUserInfo(spa, refreshed.access_token, oidc.skipSubjectCheck, { DPoP: dpop });
  t.type(info.email, 'string', 'userinfo answers the DPoP-bound token with a proof');

  // An unbound code flow of the same client still works (no dpop_jkt, no proof).
  const plainFlow = await codeFlow();
  const plain = await oidc.authorizationCodeGrant(spa, plainFlow.callback, { pkceCodeVerifier: plainFlow.verifier, expectedState: plainFlow.state });
  t.equal(plain.token_type, 'bearer');
  t.equal(decodeJwt(plain.access_token).cnf, undefined);
});

t.test('the attack table at /userinfo: bound tokens need the DPoP scheme and a proof of their key for this request', async (t) => {
  const key = await newKey();
  const flow = await codeFlow();
  const tokens = await oidc.authorizationCodeGrant(spa, flow.callback, { pkceCodeVerifier: flow.verifier, expectedState: flow.state }, undefined, { DPoP: oidc.getDPoPHandle(spa, key.pair) });
  const at = tokens.access_token;
  const userinfo = `${srv.url}/userinfo`;
  const call = (authorization: string, dpopHeader?: string, method = 'GET') => fetch(userinfo, { method, headers: { authorization, ...(dpopHeader ? { dpop: dpopHeader } : {}) } });
  const good = await call(`DPoP ${at}`, await proof(key, 'GET', userinfo, { claims: { ath: athOf(at) } }));
  t.equal(good.status, 200, 'DPoP scheme with a proof of the bound key');

  const other = await newKey();
  const refused = async (name: string, res: Response, error: string) => {
    t.equal(res.status, 401, `${name}: 401`);
    const challenge = res.headers.get('www-authenticate') ?? '';
    t.match(challenge, /^DPoP /, `${name}: the DPoP challenge, not Bearer`);
    t.match(challenge, new RegExp(`error="${error}"`), `${name}: ${error}`);
    t.match(challenge, /algs="ES256 EdDSA Ed25519 PS256 RS256"/, `${name}: names the algorithms`);
  };
  await refused('a bound token presented as Bearer', await call(`Bearer ${at}`), 'invalid_token');
  await refused('a proof of another key', await call(`DPoP ${at}`, await proof(other, 'GET', userinfo, { claims: { ath: athOf(at) } })), 'invalid_dpop_proof');
  await refused('ath of another token', await call(`DPoP ${at}`, await proof(key, 'GET', userinfo, { claims: { ath: athOf(`${at}x`) } })), 'invalid_dpop_proof');
  await refused('no ath', await call(`DPoP ${at}`, await proof(key, 'GET', userinfo)), 'invalid_dpop_proof');
  await refused('htm POST for a GET', await call(`DPoP ${at}`, await proof(key, 'POST', userinfo, { claims: { ath: athOf(at) } })), 'invalid_dpop_proof');
  await refused('no proof', await call(`DPoP ${at}`), 'invalid_dpop_proof');
  const once = await proof(key, 'GET', userinfo, { claims: { ath: athOf(at) } });
  t.equal((await call(`DPoP ${at}`, once)).status, 200);
  await refused('a replayed proof', await call(`DPoP ${at}`, once), 'invalid_dpop_proof');

  const bearerFlow = await codeFlow();
  const bearer = await oidc.authorizationCodeGrant(spa, bearerFlow.callback, { pkceCodeVerifier: bearerFlow.verifier, expectedState: bearerFlow.state });
  await refused('an unbound token under the DPoP scheme', await call(`DPoP ${bearer.access_token}`, await proof(key, 'GET', userinfo, { claims: { ath: athOf(bearer.access_token) } })), 'invalid_token');
  t.equal((await call(`Bearer ${bearer.access_token}`)).status, 200, 'an unbound token as Bearer, as before');

  // /api/user/consents is a resource of ours too.
  const consents = `${srv.url}/api/user/consents`;
  const listed = await fetch(consents, { headers: { authorization: `DPoP ${at}`, dpop: await proof(key, 'GET', consents, { claims: { ath: athOf(at) } }) } });
  t.equal(listed.status, 200, 'consents with DPoP');
  const asBearer = await fetch(consents, { headers: { authorization: `Bearer ${at}` } });
  t.equal(asBearer.status, 401);
  t.match(asBearer.headers.get('www-authenticate') ?? '', /^DPoP error="invalid_token"/);
});
