import { randomUUID } from 'node:crypto';
import t from 'tap';
import { createLocalJWKSet, decodeProtectedHeader, exportJWK, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import * as oauth from 'oauth4webapi';
import * as oidc from 'openid-client';
import { j } from '../helpers/http.js';
import { startTestServer } from '../helpers/server.js';
import { createClient } from '../../src/clients/create.js';
import { GRANT } from '../../src/clients/model.js';
import { adminToken, basic, postForm, setupTenant } from '../helpers/tokens.js';

// JWT introspection responses (RFC 9701): a resource server that asks with
// `Accept: application/token-introspection+jwt` gets the answer signed with the server's key, for itself
// (aud = its client_id); oauth4webapi and openid-client request and validate it through their own APIs.
const srv = await startTestServer();
t.teardown(() => srv.close());
const b = await setupTenant(srv, 'introjwt');
const rs = b.clients.resource_server;
const ex = b.clients.exchanger;
const jwks = createLocalJWKSet(await j(await fetch(`${srv.url}/.well-known/jwks.json`)));
const tokenOf = async () => (await j(await postForm(`${srv.url}/token`, ex, { grant_type: 'client_credentials', scope: 'read' }))).access_token as string;
const ask = (token: string, accept?: string) => fetch(`${srv.url}/introspect`, {
  method: 'POST', body: new URLSearchParams({ token }),
  headers: { authorization: basic(rs.client_id, rs.client_secret), 'content-type': 'application/x-www-form-urlencoded', ...(accept ? { accept } : {}) },
});

t.test('Accept: application/token-introspection+jwt answers a signed JWT for the asking client', async (t) => {
  const token = await tokenOf();
  const res = await ask(token, 'application/token-introspection+jwt');
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^application\/token-introspection\+jwt/);
  t.equal(res.headers.get('cache-control'), 'no-store');
  const jwt = await res.text();
  t.equal(decodeProtectedHeader(jwt).typ, 'token-introspection+jwt');
  const { payload } = await jwtVerify(jwt, jwks, { issuer: srv.config.issuer, audience: rs.client_id, typ: 'token-introspection+jwt' });
  t.type(payload.iat, 'number');
  const ti = payload.token_introspection as Record<string, unknown>;
  t.equal(ti.active, true);
  t.equal(ti.client_id, ex.client_id);
  t.equal(ti.scope, 'read');
  t.same(ti, await j(await ask(token)), 'the same members as the JSON answer');
  t.match((await ask(token)).headers.get('content-type'), /^application\/json/, 'plain JSON unless asked');

  const inactive = await jwtVerify(await (await ask(`${token}x`, 'application/token-introspection+jwt')).text(), jwks, { audience: rs.client_id });
  t.same(inactive.payload.token_introspection, { active: false }, 'an inactive answer is signed too');
});

t.test('a DPoP-bound token: the signed answer carries cnf', async (t) => {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwk = await exportJWK(publicKey);
  const proof = await new SignJWT({ htm: 'POST', htu: `${srv.url}/token`, jti: randomUUID(), iat: Math.floor(Date.now() / 1000) }).setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk }).sign(privateKey);
  const bound = (await j(await fetch(`${srv.url}/token`, { method: 'POST', body: 'grant_type=client_credentials', headers: { authorization: basic(ex.client_id, ex.client_secret), 'content-type': 'application/x-www-form-urlencoded', dpop: proof } }))).access_token as string;
  const { payload } = await jwtVerify(await (await ask(bound, 'application/token-introspection+jwt')).text(), jwks, { audience: rs.client_id });
  const ti = payload.token_introspection as Record<string, unknown>;
  t.equal(ti.token_type, 'DPoP');
  t.type((ti.cnf as { jkt?: unknown }).jkt, 'string');
});

t.test('oauth4webapi requests and validates the JWT answer', async (t) => {
  const as = await oauth.processDiscoveryResponse(new URL(srv.url), await oauth.discoveryRequest(new URL(srv.url), { [oauth.allowInsecureRequests]: true }));
  t.same(as.introspection_signing_alg_values_supported, [srv.config.tokenSigningAlg], 'discovery names the signing algorithm');
  const client: oauth.Client = { client_id: rs.client_id, introspection_signed_response_alg: srv.config.tokenSigningAlg };
  const token = await tokenOf();
  const res = await oauth.introspectionRequest(as, client, oauth.ClientSecretBasic(rs.client_secret), token, { [oauth.allowInsecureRequests]: true });
  const answer = await oauth.processIntrospectionResponse(as, client, res);
  t.equal(answer.active, true);
  t.equal(answer.client_id, ex.client_id);
});

t.test('openid-client: tokenIntrospection with introspection_signed_response_alg', async (t) => {
  const config = await oidc.discovery(new URL(srv.url), rs.client_id, { client_secret: rs.client_secret, introspection_signed_response_alg: srv.config.tokenSigningAlg }, oidc.ClientSecretBasic(rs.client_secret), { execute: [oidc.allowInsecureRequests] });
  const answer = await oidc.tokenIntrospection(config, await tokenOf());
  t.equal(answer.active, true);
  t.equal(answer.scope, 'read');
  // A client that checks the audience refuses an answer made for another client: ours names this one.
  const other = await oidc.discovery(new URL(srv.url), ex.client_id, { client_secret: ex.client_secret, introspection_signed_response_alg: srv.config.tokenSigningAlg }, oidc.ClientSecretBasic(ex.client_secret), { execute: [oidc.allowInsecureRequests] });
  await t.rejects(oidc.tokenIntrospection(other, await tokenOf()), { error: 'unauthorized_client' } as Error & { error: string }, 'a client that may not introspect is still refused');
});

t.test('a client registered with introspection_signed_response_alg always gets signed answers (RFC 9701 6)', async (t) => {
  const made = await createClient(srv.deps.sql, srv.deps.tokens.secretKey, {
    tenantId: b.tenant_id, clientId: `${b.tenant_id}-rs-jwt`, name: 'RS with signed answers', grantTypes: [GRANT.clientCredentials], canIntrospect: true,
  });
  const rs2 = { client_id: made.client.clientId, client_secret: made.clientSecret! };
  const admin = await adminToken(srv, { tenantId: b.tenant_id, permissions: ['admin:clients:read', 'admin:clients:write'] });
  const put = (alg: string) => fetch(`${srv.url}/api/admin/clients/${rs2.client_id}`, {
    method: 'PUT', headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' }, body: JSON.stringify({ introspection_signed_response_alg: alg }),
  });
  const other = srv.config.tokenSigningAlg === 'ES256' ? 'RS256' : 'ES256';
  const refused = await put(other);
  t.equal(refused.status, 422, 'an algorithm the server does not sign with');
  t.match((await j(refused)).details?.introspection_signed_response_alg?.[0], new RegExp(srv.config.tokenSigningAlg));
  const ok = await put(srv.config.tokenSigningAlg);
  t.equal(ok.status, 200);
  t.equal((await j(ok)).introspection_signed_response_alg, srv.config.tokenSigningAlg);
  const res = await postForm(`${srv.url}/introspect`, rs2, { token: await tokenOf() });
  t.match(res.headers.get('content-type'), /^application\/token-introspection\+jwt/, 'signed without an Accept header');
  const { payload } = await jwtVerify(await res.text(), jwks, { audience: rs2.client_id, typ: 'token-introspection+jwt' });
  t.equal((payload.token_introspection as { active: boolean }).active, true);
});
