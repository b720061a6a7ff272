import fs from 'node:fs';
import t from 'tap';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import * as oidc from 'openid-client';
import type { Browser } from 'playwright-core';
import { api } from '../admin/helpers.js';
import { CHROMIUM, launchChromium } from '../helpers/browser.js';
import { setupTenant, adminToken } from '../helpers/tokens.js';
import { codeFor, startLoginEnv, uniqueEmail } from '../login/fixtures.js';

// Dynamic client registration (RFC 7591) and management (RFC 7592) against the real server: openid-client
// registers with an initial access token, a person signs in through Chromium with the registered client,
// then the client reads, replaces and deletes its registration. Refusals and tenancy below.
const env = await startLoginEnv();
t.teardown(() => env.close());
const { srv, sink, tenant } = env;
const admin = api(srv, await adminToken(srv, { tenantId: tenant.tenant_id, permissions: ['admin:*'] }));
const insecure = [oidc.allowInsecureRequests];
const redirectUri = `${srv.url}/demo/callback`;
// This file registers many clients from one address: the per-source limit is tested on a tenant of its own.
await admin('PUT', '/api/admin/registration/policy', { rate_limit_per_minute: 10_000, max_clients: 10_000 });

type Json = Record<string, any>;
async function call(method: string, path: string, opts: { token?: string; body?: unknown } = {}): Promise<{ status: number; body: Json; headers: Headers }> {
  const res = await fetch(path.startsWith('http') ? path : srv.url + path, {
    method,
    headers: { ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}), ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
}
async function initialAccessToken(body: Json = {}, who = admin): Promise<Json> {
  const r = await who('POST', '/api/admin/registration/initial-access-tokens', body);
  if (r.status !== 201) throw new Error(`initial access token: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}
const register = (body: Json, token?: string, query = '') => call('POST', `/register${query}`, { body, ...(token ? { token } : {}) });
const codeClient = { redirect_uris: ['https://app.example/cb'], grant_types: ['authorization_code'], response_types: ['code'], client_name: 'x' };

t.test('discovery names the registration endpoint', async (t) => {
  const meta = await (await fetch(`${srv.url}/.well-known/openid-configuration`)).json() as Json;
  t.equal(meta.registration_endpoint, `${srv.config.issuer}/register`);
});

t.test('openid-client registers, a person signs in with the new client in Chromium, then RFC 7592 read, update, delete', { skip: !fs.existsSync(CHROMIUM) && 'Chromium is not installed' }, async (t) => {
  const iat = await initialAccessToken({ description: 'e2e', max_uses: 1 });
  t.match(iat.token, /^iat_[0-9a-f]{24}\./);
  const config = await oidc.dynamicClientRegistration(new URL(srv.url), {
    client_name: 'Registered by openid-client', redirect_uris: [redirectUri], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic', scope: 'openid email offline_access', contacts: ['ops@example.test'], software_id: 'e2e-app',
  }, undefined, { initialAccessToken: iat.token, execute: insecure });
  const registered = config.clientMetadata() as Json;
  t.match(registered, {
    client_name: 'Registered by openid-client', redirect_uris: [redirectUri], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic', scope: 'openid email offline_access', client_secret_expires_at: 0, contacts: ['ops@example.test'], software_id: 'e2e-app',
    registration_client_uri: `${srv.config.issuer}/register/${registered.client_id}`,
  });
  t.type(registered.client_secret, 'string');
  t.type(registered.registration_access_token, 'string');
  t.type(registered.client_id_issued_at, 'number');

  // The registered client is a normal client of the tenant: the admin API lists it, marked.
  const viaAdmin = await admin('GET', `/api/admin/clients/${registered.client_id}`);
  t.match(viaAdmin.body, { registered_dynamically: true, name: 'Registered by openid-client', tenant_id: tenant.tenant_id });
  t.notOk('client_secret' in viaAdmin.body);
  const listed = await admin('GET', '/api/admin/clients?registered_dynamically=true&limit=100');
  t.ok(listed.body.items.some((c: Json) => c.client_id === registered.client_id), 'listed under registered_dynamically=true');
  t.notOk((await admin('GET', '/api/admin/clients?registered_dynamically=false&limit=100')).body.items.some((c: Json) => c.client_id === registered.client_id));
  const created = (await admin('GET', `/api/admin/admin-audit-log?resource_id=${registered.client_id}`)).body.items;
  t.match(created, [{ action: 'client.create', result: 'success', actor_type: 'machine', actor_id: `initial-access-token:${iat.id}` }]);
  t.notOk(JSON.stringify(created).includes(iat.token.split('.')[1]), 'the audit entry does not hold the token');
  t.match((await admin('GET', `/api/admin/registration/initial-access-tokens/${iat.id}`)).body, { uses: 1, status: 'used_up' });

  // A person signs in with it through Chromium (PKCE), and openid-client redeems the code with the registered secret.
  const browser: Browser = await launchChromium();
  t.teardown(() => browser.close());
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const url = oidc.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope: 'openid email offline_access', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state });
  const page = await (await browser.newContext()).newPage();
  await page.goto(url.href);
  t.equal(await page.title(), 'Sign in');
  const email = uniqueEmail('dcr');
  await page.getByLabel('Email address').fill(email);
  await page.getByRole('button', { name: 'Email me a code' }).click();
  await page.waitForSelector('#code');
  await page.getByLabel('One-time code').fill(await codeFor(sink, email));
  await page.getByRole('button', { name: 'Sign in' }).click();
  // A registered client is third party: the person is asked to consent first.
  await page.waitForFunction('document.title === "Allow access?"');
  await Promise.all([page.waitForURL(/\/demo\/callback\?/), page.getByRole('button', { name: 'Allow' }).click()]);
  const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: verifier, expectedState: state });
  t.type(tokens.access_token, 'string');
  t.equal(tokens.claims()?.email, email, 'the ID token names the person');
  t.ok(tokens.refresh_token, 'a refresh token (offline_access)');
  const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
  t.type(refreshed.access_token, 'string', 'refresh with the registered client');

  // RFC 7592 2.1: read with the registration access token; never the secret.
  const uri = registered.registration_client_uri as string;
  const read = await call('GET', uri, { token: registered.registration_access_token });
  t.equal(read.status, 200);
  t.match(read.body, { client_id: registered.client_id, client_name: 'Registered by openid-client', client_secret_expires_at: 0, software_id: 'e2e-app' });
  t.notOk('client_secret' in read.body || 'registration_access_token' in read.body, 'no secret and no token in a read');
  t.equal(read.headers.get('cache-control'), 'no-store');

  // RFC 7592 2.2: the update replaces the metadata as a whole and rotates the registration access token.
  const { client_secret_expires_at: _e, client_id_issued_at: _i, registration_access_token: _r, registration_client_uri: _u, ...metadata } = read.body;
  const updated = await call('PUT', uri, { token: registered.registration_access_token, body: { ...metadata, client_name: 'Renamed', redirect_uris: [redirectUri, 'http://[::1]:7777/cb'], contacts: undefined } });
  t.equal(updated.status, 200, JSON.stringify(updated.body));
  t.match(updated.body, { client_name: 'Renamed', redirect_uris: [redirectUri, 'http://[::1]:7777/cb'] });
  t.notOk('contacts' in updated.body, 'a field left out is gone: the update replaced the whole');
  t.not(updated.body.registration_access_token, registered.registration_access_token);
  t.equal((await call('GET', uri, { token: registered.registration_access_token })).status, 401, 'the old registration access token stops working');
  t.equal((await call('GET', uri, { token: updated.body.registration_access_token })).status, 200, 'the new one works');
  t.match((await admin('GET', `/api/admin/clients/${registered.client_id}`)).body, { name: 'Renamed' });
  const token = updated.body.registration_access_token as string;

  // Updates that break RFC 7592 2.2's rules.
  const current = (await call('GET', uri, { token })).body;
  const { client_secret_expires_at: _e2, client_id_issued_at: _i2, registration_client_uri: _u2, ...plain } = current;
  let r = await call('PUT', uri, { token, body: { ...plain, client_id: undefined } });
  t.match(r, { status: 400, body: { error: 'invalid_request' } }, 'client_id is required');
  r = await call('PUT', uri, { token, body: { ...plain, registration_access_token: token } });
  t.match(r, { status: 400, body: { error: 'invalid_request' } }, 'registration_access_token may not be sent');
  r = await call('PUT', uri, { token, body: { ...plain, client_id_issued_at: 1 } });
  t.match(r, { status: 400, body: { error: 'invalid_request' } }, 'the *_at fields may not be sent');
  r = await call('PUT', uri, { token, body: { ...plain, client_secret: 'not-the-secret' } });
  t.match(r, { status: 400, body: { error: 'invalid_client_metadata' } }, 'a client_secret sent must be the current one');
  r = await call('PUT', uri, { token, body: { ...plain, client_secret: registered.client_secret, redirect_uris: ['http://evil.example/cb'] } });
  t.match(r, { status: 400, body: { error: 'invalid_redirect_uri' } }, 'an update meets the same redirect URI rules');
  t.equal((await call('GET', uri, { token })).status, 200, 'refused updates do not rotate the token');

  // RFC 7592 2.3: delete; the token, the client and its tokens are gone.
  t.equal((await call('DELETE', uri, { token })).status, 204);
  for (const m of ['GET', 'DELETE'] as const) t.equal((await call(m, uri, { token })).status, 401, `${m} with the deleted client's registration access token`);
  t.equal((await call('PUT', uri, { token, body: plain })).status, 401);
  t.equal((await admin('GET', `/api/admin/clients/${registered.client_id}`)).status, 404);
  await t.rejects(oidc.refreshTokenGrant(config, refreshed.refresh_token!), 'the deleted client cannot refresh');
  const audit = (await admin('GET', `/api/admin/admin-audit-log?resource_id=${registered.client_id}`)).body.items.map((e: Json) => `${e.action}:${e.result}`);
  t.ok(audit.includes('client.update:success') && audit.includes('client.delete:success'), `audited: ${audit.join(', ')}`);
});

t.test('refusals: no token, bad tokens, bad redirect URIs, unknown grant types', async (t) => {
  let r = await register(codeClient);
  t.match(r, { status: 401, body: { error: 'invalid_token' } }, 'an initial access token is required (open registration is off by default)');
  t.match(r.headers.get('www-authenticate'), /^Bearer error="invalid_token"/);
  r = await register(codeClient, 'iat_000000000000000000000000.nope');
  t.match(r, { status: 401, body: { error: 'invalid_token' } }, 'an unknown token');
  const iat = await initialAccessToken({ max_uses: 100 });
  r = await register(codeClient, `${iat.id}.wrong`);
  t.match(r, { status: 401, body: { error: 'invalid_token' } }, 'a known id with a wrong secret');

  const cases: Array<[string, Json, string]> = [
    ['http off loopback', { redirect_uris: ['http://app.example/cb'] }, 'invalid_redirect_uri'],
    ['a fragment', { redirect_uris: ['https://app.example/cb#frag'] }, 'invalid_redirect_uri'],
    ['a wildcard host', { redirect_uris: ['https://*.app.example/cb'] }, 'invalid_redirect_uri'],
    ['a wildcard path', { redirect_uris: ['https://app.example/*'] }, 'invalid_redirect_uri'],
    ['a custom scheme', { redirect_uris: ['com.example.app:/cb'] }, 'invalid_redirect_uri'],
    ['not a URI', { redirect_uris: ['not a uri'] }, 'invalid_redirect_uri'],
    ['no redirect URI for the code flow', { redirect_uris: [] }, 'invalid_redirect_uri'],
    ['an unknown grant type', { grant_types: ['password'] }, 'invalid_client_metadata'],
    ['a grant type the policy does not allow', { grant_types: ['client_credentials'], response_types: [] }, 'invalid_client_metadata'],
    ['an implicit response type', { response_types: ['token'] }, 'invalid_client_metadata'],
    ['a scope the policy does not allow', { scope: 'openid admin' }, 'invalid_client_metadata'],
    ['jwks_uri', { jwks_uri: 'https://app.example/jwks' }, 'invalid_client_metadata'],
    ['private_key_jwt without keys', { token_endpoint_auth_method: 'private_key_jwt' }, 'invalid_client_metadata'],
    ['a private key in jwks', { token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [{ kty: 'EC', crv: 'P-256', x: 'x', y: 'y', d: 'secret' }] } }, 'invalid_client_metadata'],
    ['a wrong type', { client_name: 42 }, 'invalid_client_metadata'],
  ];
  for (const [what, change, error] of cases) {
    r = await register({ ...codeClient, ...change }, iat.token);
    t.match(r, { status: 400, body: { error } }, what);
    t.same(Object.keys(r.body).sort(), ['error', 'error_description'], `${what}: the RFC 7591 error form`);
  }
  for (const ok of ['http://localhost:53124/cb', 'http://127.0.0.1/cb', 'http://[::1]:8/cb', 'https://app.example/cb?x=1']) {
    r = await register({ ...codeClient, redirect_uris: [ok] }, iat.token);
    t.equal(r.status, 201, `${ok} is accepted`);
  }
  r = await register({ ...codeClient, token_endpoint_auth_method: 'none', unknown_field: 'ignored' }, iat.token);
  t.equal(r.status, 201, 'unknown metadata is ignored (RFC 7591 2)');
  t.notOk('client_secret' in r.body || 'client_secret_expires_at' in r.body, 'a public client gets no secret');
  t.equal((await srv.deps.sql`select count(*)::int as n from initial_access_tokens where id = ${iat.id}`)[0]!.n, 1);
});

t.test('initial access tokens: expired, used up, revoked', async (t) => {
  const once = await initialAccessToken({ max_uses: 1 });
  t.equal((await register(codeClient, once.token)).status, 201);
  t.match(await register(codeClient, once.token), { status: 401, body: { error: 'invalid_token' } }, 'used up');
  const expiring = await initialAccessToken({ expires_in: 60 });
  // Moved into the past in the record rather than waited for.
  await srv.deps.sql`update initial_access_tokens set expires_at = ${Date.now() - 1} where id = ${expiring.id}`;
  t.match(await register(codeClient, expiring.token), { status: 401, body: { error: 'invalid_token' } }, 'expired');
  t.match((await admin('GET', `/api/admin/registration/initial-access-tokens/${expiring.id}`)).body, { status: 'expired' });
  const revoked = await initialAccessToken();
  t.equal((await register(codeClient, revoked.token)).status, 201);
  t.match((await admin('POST', `/api/admin/registration/initial-access-tokens/${revoked.id}/revoke`)).body, { status: 'revoked' });
  t.match(await register(codeClient, revoked.token), { status: 401, body: { error: 'invalid_token' } }, 'revoked');
  const listed = (await admin('GET', '/api/admin/registration/initial-access-tokens?limit=100')).body.items;
  t.ok(listed.every((i: Json) => !('token' in i) && !('token_hash' in i)), 'lists never show values');
});

t.test('software statements: claims of a trusted issuer win; forged or untrusted ones are refused', async (t) => {
  const trusted = await generateKeyPair('ES256', { extractable: true });
  const forger = await generateKeyPair('ES256');
  const iss = `https://software.example/${tenant.tenant_id}`;
  const added = await admin('POST', '/api/admin/registration/software-statement-issuers', { issuer: iss, jwks: { keys: [{ ...await exportJWK(trusted.publicKey), alg: 'ES256' }] } });
  t.equal(added.status, 201, JSON.stringify(added.body));
  t.equal((await admin('POST', '/api/admin/registration/software-statement-issuers', { issuer: iss, jwks: { keys: [await exportJWK(trusted.publicKey)] } })).status, 409);
  t.equal((await admin('POST', '/api/admin/registration/software-statement-issuers', { issuer: 'https://x.example', jwks: { keys: [await exportJWK(trusted.privateKey)] } })).status, 422, 'a private key is refused');
  const statement = (key: Parameters<SignJWT['sign']>[0], claims: Json, issuer = iss) => new SignJWT(claims).setProtectedHeader({ alg: 'ES256' }).setIssuer(issuer).setIssuedAt().setExpirationTime('5m').sign(key);
  const iat = await initialAccessToken();
  let r = await register({ ...codeClient, client_name: 'From the request', software_statement: await statement(trusted.privateKey, { client_name: 'From the statement', software_id: 'stmt-app' }) }, iat.token);
  t.equal(r.status, 201, JSON.stringify(r.body));
  t.match(r.body, { client_name: 'From the statement', software_id: 'stmt-app' }, 'the statement\'s claims win over the request');
  t.type(r.body.software_statement, 'string', 'the statement is echoed back');
  r = await register({ ...codeClient, software_statement: await statement(forger.privateKey, { client_name: 'Forged' }) }, iat.token);
  t.match(r, { status: 400, body: { error: 'invalid_software_statement' } }, 'a statement signed by another key');
  r = await register({ ...codeClient, software_statement: await statement(forger.privateKey, { client_name: 'Stranger' }, 'https://stranger.example') }, iat.token);
  t.match(r, { status: 400, body: { error: 'unapproved_software_statement' } }, 'an issuer the tenant does not trust');
  r = await register({ ...codeClient, software_statement: 'not.a.jwt' }, iat.token);
  t.match(r, { status: 400, body: { error: 'invalid_software_statement' } });
  r = await register({ ...codeClient, software_statement: await statement(trusted.privateKey, { redirect_uris: 'https://app.example/cb' }) }, iat.token);
  t.match(r, { status: 400, body: { error: 'invalid_software_statement' } }, 'a statement whose metadata is malformed');
  t.equal((await admin('PUT', '/api/admin/registration/policy', { require_software_statement: true })).status, 200);
  t.match(await register(codeClient, iat.token), { status: 400, body: { error: 'invalid_software_statement' } }, 'required by the policy');
  t.equal((await admin('PUT', '/api/admin/registration/policy', { require_software_statement: false })).status, 200);
});

t.test('open registration, the tenant rule, the per-source rate limit and the client maximum', async (t) => {
  const other = await setupTenant(srv, 'dcr-open');
  const otherAdmin = api(srv, await adminToken(srv, { tenantId: other.tenant_id, permissions: ['admin:*'] }));
  const query = `?tenant=${encodeURIComponent(other.tenant_id)}`;
  t.match(await register(codeClient, undefined, query), { status: 401, body: { error: 'invalid_token' } }, 'closed by default');
  const policy = await otherAdmin('PUT', '/api/admin/registration/policy', { open_registration: true, rate_limit_per_minute: 3, max_clients: 2 });
  t.match(policy, { status: 200, body: { open_registration: true, rate_limit_per_minute: 3, max_clients: 2 } });
  let r = await register(codeClient, undefined, query);
  t.equal(r.status, 201, JSON.stringify(r.body));
  t.match((await otherAdmin('GET', `/api/admin/clients/${r.body.client_id}`)).body, { tenant_id: other.tenant_id, registered_dynamically: true }, 'landed in the named tenant');
  t.match((await otherAdmin('GET', `/api/admin/admin-audit-log?resource_id=${r.body.client_id}`)).body.items, [{ action: 'client.create', actor_id: 'open-registration' }]);
  t.equal((await register(codeClient, undefined, query)).status, 201);
  r = await register(codeClient, undefined, query);
  t.match(r, { status: 403, body: { error: 'access_denied' } }, 'past max_clients');
  r = await register(codeClient, undefined, query);
  t.match(r, { status: 429, body: { error: 'rate_limit_exceeded' } }, 'past the per-source limit');
  t.ok(Number(r.headers.get('retry-after')) >= 1);
  // An initial access token decides the tenant: naming another one is refused.
  const iat = await initialAccessToken();
  r = await register(codeClient, iat.token, query);
  t.match(r, { status: 400, body: { error: 'invalid_request' } }, 'a token of one tenant with ?tenant= of another');
  r = await register(codeClient, iat.token, `?tenant=${encodeURIComponent(tenant.tenant_id)}`);
  t.equal(r.status, 201, 'naming its own tenant is fine');
});

t.test('tenancy: tokens of one tenant never reach another tenant\'s clients', async (t) => {
  const b = await setupTenant(srv, 'dcr-b');
  const bAdmin = api(srv, await adminToken(srv, { tenantId: b.tenant_id, permissions: ['admin:*'] }));
  const aIat = await initialAccessToken();
  const bIat = await initialAccessToken({}, bAdmin);
  const a = (await register(codeClient, aIat.token)).body;
  const bReg = (await register(codeClient, bIat.token)).body;
  t.match((await bAdmin('GET', `/api/admin/clients/${bReg.client_id}`)).body, { tenant_id: b.tenant_id }, "B's token registers in B");
  t.equal((await admin('GET', `/api/admin/clients/${bReg.client_id}`)).status, 404, "A's admin does not see B's registered client");
  for (const m of ['GET', 'DELETE'] as const) t.equal((await call(m, bReg.registration_client_uri, { token: a.registration_access_token })).status, 401, `${m} of B's client with A's registration token`);
  t.equal((await call('PUT', bReg.registration_client_uri, { token: a.registration_access_token, body: { ...codeClient, client_id: bReg.client_id } })).status, 401);
  t.equal((await call('GET', bReg.registration_client_uri, { token: bReg.registration_access_token })).status, 200, "B's client is untouched");
  t.equal((await admin('GET', `/api/admin/registration/initial-access-tokens/${bIat.id}`)).status, 404, "A's admin cannot read B's initial access token");
  t.equal((await admin('POST', `/api/admin/registration/initial-access-tokens/${bIat.id}/revoke`)).status, 404, 'nor revoke it');
  t.match((await bAdmin('GET', `/api/admin/registration/initial-access-tokens/${bIat.id}`)).body, { status: 'active', uses: 1 });
});

t.test('a loopback redirect URI matches with any port at /authorize (RFC 8252 7.3); an admin deleting the client ends its registration', async (t) => {
  const iat = await initialAccessToken();
  const r = await register({ ...codeClient, redirect_uris: ['http://127.0.0.1/cb'], token_endpoint_auth_method: 'none' }, iat.token);
  t.equal(r.status, 201);
  const authorize = (redirect: string) => fetch(`${srv.url}/authorize?${new URLSearchParams({ client_id: r.body.client_id, redirect_uri: redirect, response_type: 'code', scope: 'openid', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' })}`, { headers: { accept: 'application/json' } });
  const any = await authorize('http://127.0.0.1:49152/cb');
  t.match(await any.json(), { login_required: true }, 'another port of the registered loopback URI');
  t.equal((await authorize('http://127.0.0.1:49152/other')).status, 400, 'another path is not registered');
  t.equal((await authorize('http://localhost:49152/cb')).status, 400, 'another loopback host is not registered');
  t.equal((await admin('DELETE', `/api/admin/clients/${r.body.client_id}`)).status, 204);
  t.equal((await call('GET', r.body.registration_client_uri, { token: r.body.registration_access_token })).status, 401, 'the registration went with the client');
});

t.test('a suspended tenant registers nothing and its clients cannot manage their registrations', async (t) => {
  const s = await setupTenant(srv, 'dcr-susp');
  const sAdmin = api(srv, await adminToken(srv, { tenantId: s.tenant_id, permissions: ['admin:*'] }));
  const platform = api(srv, await adminToken(srv, { tenantId: tenant.tenant_id, permissions: ['admin:*'], platform: true }));
  const iat = await initialAccessToken({}, sAdmin);
  const r = await register(codeClient, iat.token);
  t.equal(r.status, 201);
  t.equal((await platform('POST', `/api/admin/tenants/${s.tenant_id}/suspend`)).status, 200);
  // The tenant status reaches this process by pub/sub; wait for it rather than sleep.
  const { waitFor } = await import('../helpers/processes.js');
  await waitFor(async () => (await register(codeClient, iat.token)).status === 403);
  t.match(await register(codeClient, iat.token), { status: 403, body: { error: 'access_denied' } });
  t.match(await call('GET', r.body.registration_client_uri, { token: r.body.registration_access_token }), { status: 403, body: { error: 'access_denied' } });
  t.equal((await platform('POST', `/api/admin/tenants/${s.tenant_id}/unsuspend`)).status, 200);
  await waitFor(async () => (await call('GET', r.body.registration_client_uri, { token: r.body.registration_access_token })).status === 200);
});

t.test('racing registrations: the last use of a token and the last place under max_clients are taken once', async (t) => {
  const r = await setupTenant(srv, 'dcr-race');
  const rAdmin = api(srv, await adminToken(srv, { tenantId: r.tenant_id, permissions: ['admin:*'] }));
  t.equal((await rAdmin('PUT', '/api/admin/registration/policy', { max_clients: 3, rate_limit_per_minute: 1000 })).status, 200);
  const once = await initialAccessToken({ max_uses: 1 }, rAdmin);
  const first = await Promise.all(Array.from({ length: 6 }, () => register(codeClient, once.token)));
  t.same(first.map((x) => x.status).sort(), [201, 401, 401, 401, 401, 401], 'one registration per use');
  const many = await initialAccessToken({}, rAdmin);
  const rest = await Promise.all(Array.from({ length: 6 }, () => register(codeClient, many.token)));
  t.same(rest.map((x) => x.status).sort(), [201, 201, 403, 403, 403, 403], 'max_clients 3 holds under concurrency');
  t.equal((await rAdmin('GET', '/api/admin/clients?registered_dynamically=true&limit=100')).body.items.length, 3);
});
