import { createLocalJWKSet, jwtVerify } from 'jose';
import t from 'tap';
import * as oidc from 'openid-client';
import { j } from '../helpers/http.js';
import { header } from '../helpers/jwt.js';
import { adminToken } from '../helpers/tokens.js';
import { adminOf, api } from '../admin/helpers.js';
import { codeFor, sessionCookieFrom, startLoginEnv, uniqueEmail } from './fixtures.js';

// Issue 35 item 1: a client's id_token_signed_response_alg among those its tenant enables is honoured. A real
// relying party (openid-client) configured from the tenant's discovery document, with the algorithm registered,
// completes the code flow and verifies the ID token against the tenant's JWKS.
const env = await startLoginEnv();
t.teardown(() => env.close());
const { srv, sink, tenant } = env;
const web = tenant.clients.web;
const redirectUri = web.redirect_uris[0]!;
const platform = await adminOf(srv, ['admin:*'], 'idalg-plat', true);
const tenantAdmin = api(srv, await adminToken(srv, { tenantId: tenant.tenant_id, permissions: ['admin:*'] }));
t.equal((await platform.call('PUT', `/api/admin/tenants/${tenant.tenant_id}`, { settings: { signing_algs: ['ES256', 'EdDSA', 'PS256'] } })).status, 200);

/** The code flow of one sign-in with openid-client, for a client registered with `alg` (null: none registered). */
async function signIn(alg: string | null): Promise<string> {
  const meta = await j(await fetch(`${srv.url}/.well-known/openid-configuration?tenant=${tenant.tenant_id}`));
  const config = new oidc.Configuration(meta, web.client_id, { client_secret: web.client_secret, ...(alg ? { id_token_signed_response_alg: alg } : {}) }, oidc.ClientSecretBasic(web.client_secret));
  oidc.allowInsecureRequests(config);
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const url = oidc.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope: 'openid email', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state, nonce });
  let res = await fetch(url, { headers: { accept: 'application/json' } });
  const { interaction } = await j(res);
  const email = uniqueEmail('idalg');
  await fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, interaction }) });
  res = await fetch(`${srv.url}/email-code/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, code: await codeFor(sink, email), interaction }) });
  const verified = await j(res);
  res = await fetch(verified.continue, { headers: { cookie: sessionCookieFrom(res)! }, redirect: 'manual' });
  const tokens = await oidc.authorizationCodeGrant(config, new URL(res.headers.get('location')!), { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true });
  t.equal(tokens.claims()!.email, email, 'openid-client accepted the ID token');
  return tokens.id_token!;
}

const setAlg = async (alg: string | null) => {
  const r = await tenantAdmin('PUT', `/api/admin/clients/${web.client_id}`, { id_token_signed_response_alg: alg });
  t.equal(r.status, 200, `client registers ${alg}`);
  await srv.deps.tokens.clients.changed(web.client_id);
};

t.test('the client\'s algorithm is honoured, and verifies against the tenant JWKS', async (t) => {
  const meta = await j(await fetch(`${srv.url}/.well-known/openid-configuration?tenant=${tenant.tenant_id}`));
  t.same(meta.id_token_signing_alg_values_supported, ['ES256', 'EdDSA', 'Ed25519', 'PS256'], 'discovery lists the tenant\'s algorithms');
  const jwks = createLocalJWKSet(await j(await fetch(meta.jwks_uri)));
  for (const alg of ['Ed25519', 'EdDSA', 'PS256', 'ES256']) {
    await setAlg(alg);
    const idToken = await signIn(alg);
    t.equal(header(idToken).alg, alg, `ID token signed with ${alg}`);
    await jwtVerify(idToken, jwks, { algorithms: [alg], issuer: srv.config.issuer, audience: web.client_id });
  }
  await setAlg(null);
  t.equal(header(await signIn('ES256')).alg, 'ES256', 'no registered algorithm: the tenant\'s default');
  const refused = await tenantAdmin('PUT', `/api/admin/clients/${web.client_id}`, { id_token_signed_response_alg: 'RS256' });
  t.equal(refused.status, 422, 'an algorithm the tenant does not enable is refused');
  t.match(refused.body, { error: 'validation_error', details: { id_token_signed_response_alg: [/ES256, EdDSA, Ed25519, PS256/] } });
});

t.test('dynamic registration holds id_token_signed_response_alg to the tenant\'s algorithms', async (t) => {
  t.equal((await tenantAdmin('PUT', '/api/admin/registration/policy', { open_registration: true })).status < 300, true, 'open registration');
  const register = (body: Record<string, unknown>) => fetch(`${srv.url}/register?tenant=${tenant.tenant_id}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: ['https://rp.example/cb'], ...body }) });
  const bad = await register({ id_token_signed_response_alg: 'RS256' });
  t.equal(bad.status, 400);
  t.match(await j(bad), { error: 'invalid_client_metadata', error_description: /id_token_signed_response_alg/ });
  const worse = await register({ id_token_signed_response_alg: 'HS256' });
  t.equal(worse.status, 400);
  t.equal((await j(worse)).error, 'invalid_client_metadata');
  const ok = await register({ id_token_signed_response_alg: 'Ed25519' });
  t.equal(ok.status, 201);
  t.equal((await j(ok)).id_token_signed_response_alg, 'Ed25519', 'echoed back (RFC 7591 3.2.1)');
});
