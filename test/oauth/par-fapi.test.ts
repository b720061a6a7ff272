import { type webcrypto } from 'node:crypto';
import t from 'tap';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import * as oidc from 'openid-client';
import { createClient } from '../../src/clients/create.js';
import { GRANT } from '../../src/clients/model.js';
import { redisKeys } from '../../src/store/redis-keys.js';
import { sha256b64url } from '../../src/tokens/secrets.js';
import { j } from '../helpers/http.js';
import { waitFor } from '../helpers/processes.js';
import { basic, setupTenant } from '../helpers/tokens.js';
import { signInByEmailCode, startLoginEnv } from '../login/fixtures.js';

// Pushed authorization requests (RFC 9126), request objects (RFC 9101) and the FAPI 2.0 Security
// Profile as a tenant switch, driven by openid-client (FAPI 2.0-certified) where it has an API for it.
const env = await startLoginEnv();
t.teardown(() => env.close());
const { srv, tenant } = env;
const insecure = { execute: [oidc.allowInsecureRequests] };
const web = tenant.clients.web;
const redirectUri = web.redirect_uris[0]!;
const parUrl = `${srv.url}/par`;

const signIn = (url: URL | string) => signInByEmailCode(env, url, 'par');
const push = (client: { client_id: string; client_secret: string }, form: Record<string, string>) => fetch(parUrl, {
  method: 'POST', body: new URLSearchParams(form), headers: { authorization: basic(client.client_id, client.client_secret), 'content-type': 'application/x-www-form-urlencoded' },
});
const pkce = async () => { const verifier = oidc.randomPKCECodeVerifier(); return { verifier, challenge: await oidc.calculatePKCECodeChallenge(verifier) }; };

t.test('openid-client: a code flow through /par, with DPoP, and the request_uri spent by its code', async (t) => {
  const meta = await j(await fetch(`${srv.url}/.well-known/openid-configuration`));
  t.equal(meta.pushed_authorization_request_endpoint, parUrl);
  t.same(meta.request_object_signing_alg_values_supported, ['ES256', 'PS256', 'RS256']);
  const config = await oidc.discovery(new URL(srv.url), web.client_id, web.client_secret, oidc.ClientSecretBasic(web.client_secret), insecure);
  const key = await generateKeyPair('ES256', { extractable: true }) as webcrypto.CryptoKeyPair;
  const dpop = oidc.getDPoPHandle(config, key);
  const { verifier, challenge } = await pkce();
  const state = oidc.randomState();
  const url = await oidc.buildAuthorizationUrlWithPAR(config, { redirect_uri: redirectUri, scope: 'openid email', code_challenge: challenge, code_challenge_method: 'S256', state }, { DPoP: dpop });
  t.match(url.searchParams.get('request_uri'), /^urn:ietf:params:oauth:request_uri:/);
  t.same([...url.searchParams.keys()].sort(), ['client_id', 'request_uri'], 'only client_id and request_uri travel through the browser');
  // A reload of the login page before the code is issued still works.
  t.ok((await j(await fetch(url, { headers: { accept: 'application/json' } }))).interaction, 'first load');
  const callback = await signIn(url);
  const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state }, undefined, { DPoP: dpop });
  t.equal(tokens.token_type, 'dpop', 'the code was bound to the key the push proved (RFC 9449 10)');
  const again = await fetch(url, { headers: { accept: 'application/json' } });
  t.equal(again.status, 400);
  t.equal((await j(again)).error, 'invalid_request_uri', 'the request_uri is spent once its code is issued');
});

t.test('request_uri refusals: expired, of another client, pushed into /par; /par validates as /authorize does', async (t) => {
  const { challenge } = await pkce();
  const pushed = await j(await push(web, { response_type: 'code', redirect_uri: redirectUri, scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256' }));
  t.equal(pushed.expires_in, 60);
  const other = tenant.clients.admin_console;
  const stolen = await fetch(`${srv.url}/authorize?${new URLSearchParams({ client_id: other.client_id, request_uri: pushed.request_uri })}`, { headers: { accept: 'application/json' } });
  t.equal((await j(stolen)).error, 'invalid_request_uri', 'a request_uri is its client\'s only');
  // Expiry: the pushed request's record lapses (as it does after 60 s).
  const key = redisKeys.pushedRequest(sha256b64url(pushed.request_uri));
  await srv.deps.redis.pexpire(key, 1);
  await waitFor(async () => (await srv.deps.redis.exists(key)) === 0, 5000);
  const expired = await fetch(`${srv.url}/authorize?${new URLSearchParams({ client_id: web.client_id, request_uri: pushed.request_uri })}`, { headers: { accept: 'application/json' } });
  t.equal(expired.status, 400);
  t.equal((await j(expired)).error, 'invalid_request_uri', 'an expired request_uri');

  const refusals: Array<[string, Record<string, string>, string]> = [
    ['an unregistered redirect_uri', { response_type: 'code', redirect_uri: 'https://evil.example/cb', scope: 'openid' }, 'invalid_request'],
    ['response_type token', { response_type: 'token', redirect_uri: redirectUri, scope: 'openid' }, 'unsupported_response_type'],
    ['a request_uri pushed', { response_type: 'code', redirect_uri: redirectUri, request_uri: pushed.request_uri }, 'invalid_request'],
    ['code_challenge_method plain', { response_type: 'code', redirect_uri: redirectUri, code_challenge: challenge, code_challenge_method: 'plain' }, 'invalid_request'],
  ];
  for (const [name, form, error] of refusals) {
    const res = await push(web, form);
    t.equal(res.status, 400, `${name}: 400`);
    t.equal((await j(res)).error, error, `${name}: ${error}`);
  }
  const anonymous = await fetch(parUrl, { method: 'POST', body: new URLSearchParams({ client_id: web.client_id, response_type: 'code' }), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  t.equal(anonymous.status, 401, 'a confidential client must authenticate at /par');
});

t.test('require_pushed_authorization_requests: the client\'s plain /authorize is refused, its pushed one works', async (t) => {
  const c = await createClient(srv.deps.sql, srv.deps.tokens.secretKey, {
    tenantId: tenant.tenant_id, clientId: `${tenant.tenant_id}-par-only`, name: 'PAR only', grantTypes: [GRANT.authorizationCode], scopes: ['openid'],
    redirectUris: [redirectUri], requirePushedAuthorizationRequests: true,
  });
  const creds = { client_id: c.client.clientId, client_secret: c.clientSecret! };
  const plain = await fetch(`${srv.url}/authorize?${new URLSearchParams({ client_id: creds.client_id, response_type: 'code', redirect_uri: redirectUri, scope: 'openid' })}`, { redirect: 'manual' });
  t.equal(plain.status, 302);
  const back = new URL(plain.headers.get('location')!);
  t.equal(back.searchParams.get('error'), 'invalid_request');
  t.match(back.searchParams.get('error_description'), /push/);
  const pushed = await j(await push(creds, { response_type: 'code', redirect_uri: redirectUri, scope: 'openid' }));
  const res = await fetch(`${srv.url}/authorize?${new URLSearchParams({ client_id: creds.client_id, request_uri: pushed.request_uri })}`, { headers: { accept: 'application/json' } });
  t.ok((await j(res)).interaction, 'the pushed request starts the sign-in');
});

// A client with registered keys: private_key_jwt and request objects.
const signer = await generateKeyPair('ES256', { extractable: true }) as webcrypto.CryptoKeyPair;
const signerJwk = { ...(await exportJWK(signer.publicKey)), kid: 'rp-1', alg: 'ES256' };
const stranger = await generateKeyPair('ES256');
async function keyedClient(tenantId: string, id: string, grants: string[] = [GRANT.authorizationCode]): Promise<string> {
  await createClient(srv.deps.sql, srv.deps.tokens.secretKey, {
    tenantId, clientId: id, name: 'Keyed RP', authMethod: 'private_key_jwt', grantTypes: grants, scopes: ['openid', 'email', 'read'],
    redirectUris: [redirectUri], jwks: { keys: [signerJwk] }, firstParty: true,
  });
  return id;
}
const requestObject = (clientId: string, claims: Record<string, unknown>, key: webcrypto.CryptoKey = signer.privateKey, alg = 'ES256') => new SignJWT({ client_id: clientId, ...claims })
  .setProtectedHeader({ alg, kid: 'rp-1', typ: 'oauth-authz-req+jwt' }).setIssuer(clientId).setAudience(srv.config.issuer).setIssuedAt().setExpirationTime('5m').sign(key);

t.test('request objects (RFC 9101) at /par and /authorize: signed by a registered key, or refused', async (t) => {
  const rp = await keyedClient(tenant.tenant_id, `${tenant.tenant_id}-jar`);
  const config = await oidc.discovery(new URL(srv.url), rp, { token_endpoint_auth_method: 'private_key_jwt' }, oidc.PrivateKeyJwt({ key: signer.privateKey, kid: 'rp-1' }), insecure);
  const { verifier, challenge } = await pkce();
  const state = oidc.randomState();
  const jar = await requestObject(rp, { response_type: 'code', redirect_uri: redirectUri, scope: 'openid email', code_challenge: challenge, code_challenge_method: 'S256', state });
  const res = await oidc.buildAuthorizationUrlWithPAR(config, { request: jar });
  const tokens = await oidc.authorizationCodeGrant(config, await signIn(res), { pkceCodeVerifier: verifier, expectedState: state });
  t.type(tokens.access_token, 'string', 'a pushed request object completes the flow');

  const pushAs = async (form: Record<string, string>) => {
    const assertion = await new SignJWT({}).setProtectedHeader({ alg: 'ES256', kid: 'rp-1' }).setIssuer(rp).setSubject(rp).setAudience(srv.config.issuer).setJti(oidc.randomState()).setIssuedAt().setExpirationTime('1m').sign(signer.privateKey);
    return fetch(parUrl, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ client_id: rp, client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: assertion, ...form }) });
  };
  const base = { response_type: 'code', redirect_uri: redirectUri, scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256' };
  const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${Buffer.from(JSON.stringify({ iss: rp, aud: srv.config.issuer, exp: Math.floor(Date.now() / 1000) + 60, ...base })).toString('base64url')}.`;
  const cases: Array<[string, string]> = [
    ['an unsigned request object', unsigned],
    ['signed by a key the client did not register', await requestObject(rp, base, stranger.privateKey)],
    ['for another audience', await new SignJWT({ ...base }).setProtectedHeader({ alg: 'ES256', kid: 'rp-1' }).setIssuer(rp).setAudience('https://other.example').setExpirationTime('5m').sign(signer.privateKey)],
    ['without exp', await new SignJWT({ ...base }).setProtectedHeader({ alg: 'ES256', kid: 'rp-1' }).setIssuer(rp).setAudience(srv.config.issuer).sign(signer.privateKey)],
  ];
  for (const [name, jwt] of cases) {
    const r = await pushAs({ request: jwt });
    t.equal(r.status, 400, `${name}: 400 at /par`);
    t.equal((await j(r)).error, 'invalid_request_object', `${name}: invalid_request_object at /par`);
    const a = await fetch(`${srv.url}/authorize?${new URLSearchParams({ client_id: rp, request: jwt })}`, { headers: { accept: 'application/json' } });
    t.equal((await j(a)).error, 'invalid_request_object', `${name}: invalid_request_object at /authorize`);
  }
  const direct = await fetch(`${srv.url}/authorize?${new URLSearchParams({ client_id: rp, request: await requestObject(rp, base) })}`, { headers: { accept: 'application/json' } });
  t.ok((await j(direct)).interaction, 'a signed request object sent to /authorize directly starts the sign-in');
});

t.test('a FAPI 2.0 tenant refuses a plain code flow, a client_secret client and a Bearer-only client', async (t) => {
  const fapi = await setupTenant(srv, 'fapi');
  await srv.deps.sql`update tenants set settings = settings || ${srv.deps.sql.json({ security_profile: 'fapi2_security' })} where id = ${fapi.tenant_id}`;
  await srv.deps.tokens.tenantSettings.changed(fapi.tenant_id);
  const rp = await keyedClient(fapi.tenant_id, `${fapi.tenant_id}-rp`, [GRANT.authorizationCode, GRANT.clientCredentials]);
  const fweb = fapi.clients.web;

  const plain = await fetch(`${srv.url}/authorize?${new URLSearchParams({ client_id: rp, response_type: 'code', redirect_uri: redirectUri, scope: 'openid', code_challenge: (await pkce()).challenge, code_challenge_method: 'S256' })}`, { redirect: 'manual' });
  t.equal(new URL(plain.headers.get('location')!).searchParams.get('error'), 'invalid_request', 'a code flow without PAR');
  const secretPush = await push(fweb, { response_type: 'code', redirect_uri: fweb.redirect_uris[0]!, scope: 'openid' });
  t.equal(secretPush.status, 401);
  t.equal((await j(secretPush)).error, 'invalid_client', 'a client_secret client at /par');
  const secretToken = await fetch(`${srv.url}/token`, { method: 'POST', body: 'grant_type=client_credentials', headers: { authorization: basic(fapi.clients.exchanger.client_id, fapi.clients.exchanger.client_secret), 'content-type': 'application/x-www-form-urlencoded' } });
  t.equal((await j(secretToken)).error, 'invalid_client', 'a client_secret client at /token');

  const config = await oidc.discovery(new URL(srv.url), rp, { token_endpoint_auth_method: 'private_key_jwt' }, oidc.PrivateKeyJwt({ key: signer.privateKey, kid: 'rp-1' }), insecure);
  await t.rejects(oidc.clientCredentialsGrant(config, { scope: 'read' }), { error: 'invalid_dpop_proof' } as Error & { error: string }, 'a Bearer-only client (no DPoP proof) at /token');
  await t.rejects(oidc.buildAuthorizationUrlWithPAR(config, { redirect_uri: redirectUri, scope: 'openid' }), { error: 'invalid_request' } as Error & { error: string }, 'a pushed request without PKCE');

  // The whole profile through the library: PAR, PKCE, private_key_jwt, DPoP, iss in the response.
  const key = await generateKeyPair('ES256', { extractable: true }) as webcrypto.CryptoKeyPair;
  const dpop = oidc.getDPoPHandle(config, key);
  const { verifier, challenge } = await pkce();
  const state = oidc.randomState();
  const url = await oidc.buildAuthorizationUrlWithPAR(config, { redirect_uri: redirectUri, scope: 'openid email', code_challenge: challenge, code_challenge_method: 'S256', state }, { DPoP: dpop });
  const callback = await signIn(url);
  t.equal(callback.searchParams.get('iss'), srv.config.issuer, 'iss in the authorization response (RFC 9207)');
  const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state }, undefined, { DPoP: dpop });
  t.equal(tokens.token_type, 'dpop', 'a sender-constrained token');
});
