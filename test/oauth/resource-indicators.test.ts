import t from 'tap';
import { decodeJwt } from '../../src/tokens/jwt.js';
import { api, type Api } from '../admin/helpers.js';
import { j } from '../helpers/http.js';
import { adminToken, postForm } from '../helpers/tokens.js';
import { uniqueName } from '../helpers/env.js';
import { codeFor, pkce, sessionCookieFrom, signInByEmailCode, startLoginEnv, uniqueEmail } from '../login/fixtures.js';

// RFC 8707 resource indicators end to end: `resource` at /authorize, /par and /token for every grant,
// the token's aud is the resource and its scope is bounded by the resource server's registered scopes,
// invalid_target for a resource the client may not use, and refresh downscoping within the grant.
type Subtest = Parameters<Parameters<typeof t.test>[0]>[0];

const env = await startLoginEnv();
t.teardown(() => env.close());
const { srv } = env;

const A = 'https://a.example.test/api';
const B = 'https://b.example.test/api';
const PLAIN = 'https://plain.example.test';
const REDIRECT = 'https://app.example.test/cb';

interface Cred { client_id: string; client_secret: string }
let admin: Api;
let m2m: Cred;
let web: Cred;
let tenantId: string;

t.before(async () => {
  tenantId = uniqueName('ri');
  admin = api(srv, await adminToken(srv, { tenantId, permissions: ['admin:*'] }));
  for (const [identifier, scopes] of [[A, ['read']], [B, ['write', 'delete']]] as const) {
    const res = await admin('POST', '/api/admin/resource-servers', { identifier, name: identifier, scopes });
    if (res.status !== 201) throw new Error(`resource server: ${res.status} ${JSON.stringify(res.body)}`);
  }
  const client = async (body: Record<string, unknown>): Promise<Cred> => {
    const res = await admin('POST', '/api/admin/clients', body);
    if (res.status !== 201) throw new Error(`client: ${res.status} ${JSON.stringify(res.body)}`);
    return { client_id: res.body.client_id, client_secret: res.body.client_secret };
  };
  m2m = await client({
    name: 'machine', grant_types: ['client_credentials', 'urn:ietf:params:oauth:grant-type:token-exchange'], scopes: ['read', 'write', 'delete'],
    allowed_audiences: [A, B, PLAIN],
  });
  web = await client({
    name: 'web', grant_types: ['authorization_code', 'refresh_token'], scopes: ['openid', 'offline_access', 'read', 'write'],
    redirect_uris: [REDIRECT], allowed_audiences: [A, B], first_party: true,
  });
});

const token = (c: Cred, form: Record<string, string | string[]>) => postForm(`${srv.url}/token`, c, form);
const aud = (jwt: string) => decodeJwt(jwt).payload.aud;

t.test('client_credentials: aud is the resource, scope bounded by its scopes', async (t) => {
  let res = await token(m2m, { grant_type: 'client_credentials', resource: A });
  t.equal(res.status, 200);
  let body = await j(res);
  t.equal(aud(body.access_token), A);
  t.equal(body.scope, 'read', 'only the scopes A defines, of all the client may have');
  t.equal(decodeJwt(body.access_token).payload.scope, 'read');

  res = await token(m2m, { grant_type: 'client_credentials', resource: B, scope: 'read write' });
  body = await j(res);
  t.equal(aud(body.access_token), B);
  t.equal(body.scope, 'write');

  res = await token(m2m, { grant_type: 'client_credentials', resource: A, scope: 'write' });
  t.equal(res.status, 400);
  t.equal((await j(res)).error, 'invalid_scope', 'asking only for scopes the resource does not define');

  res = await token(m2m, { grant_type: 'client_credentials', resource: [A, B] });
  body = await j(res);
  t.same(aud(body.access_token), [A, B], 'several resources: all of them');
  t.equal(body.scope, 'read write delete', 'the union of their scopes');

  res = await token(m2m, { grant_type: 'client_credentials', resource: PLAIN });
  body = await j(res);
  t.equal(aud(body.access_token), PLAIN, 'an allowed audience that is not a registered resource server still works');
  t.equal(body.scope, 'read write delete', 'and sets no bound');
});

t.test('invalid_target: unknown, not allowed, malformed', async (t) => {
  for (const resource of ['https://unknown.example.test/', 'https://a.example.test/api#frag', 'not-a-uri']) {
    const res = await token(m2m, { grant_type: 'client_credentials', resource });
    t.equal(res.status, 400, resource);
    t.equal((await j(res)).error, 'invalid_target', resource);
  }
  const res = await token(web, { grant_type: 'refresh_token', refresh_token: 'rt.g1.0.' + 'A'.repeat(43), resource: 'https://a.example.test/api#x' });
  t.equal((await j(res)).error, 'invalid_target', 'a malformed resource is refused before the refresh token is looked at');
});

t.test('token exchange: the resource bounds the exchanged scope', async (t) => {
  const subject = (await j(await token(m2m, { grant_type: 'client_credentials', resource: PLAIN }))).access_token;
  const res = await token(m2m, {
    grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: subject,
    subject_token_type: 'urn:ietf:params:oauth:token-type:access_token', resource: B,
  });
  t.equal(res.status, 200);
  const body = await j(res);
  t.equal(aud(body.access_token), B);
  t.equal(body.scope, 'write delete');
  t.equal(decodeJwt(body.access_token).payload.resource, B, 'the resource claim, as before');
  const bad = await token(m2m, {
    grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: subject,
    subject_token_type: 'urn:ietf:params:oauth:token-type:access_token', audience: 'https://elsewhere.example.test',
  });
  t.equal((await j(bad)).error, 'invalid_target');
});

/** A code flow with these resources at /authorize; returns the token response. */
async function codeFlow(t: Subtest, resources: string[], tokenForm: Record<string, string | string[]> = {}): Promise<any> {
  const { verifier, challenge } = pkce();
  const q = new URLSearchParams({ response_type: 'code', client_id: web.client_id, redirect_uri: REDIRECT, scope: 'openid offline_access read write', code_challenge: challenge, code_challenge_method: 'S256' });
  for (const r of resources) q.append('resource', r);
  const back = await signInByEmailCode(env, `${srv.url}/authorize?${q}`, 'ri');
  const code = back.searchParams.get('code');
  t.ok(code, `a code (${back})`);
  const res = await token(web, { grant_type: 'authorization_code', code: code!, redirect_uri: REDIRECT, code_verifier: verifier, ...tokenForm });
  return { status: res.status, body: await j(res) };
}

t.test('authorization code with resources: aud, downscoping, refresh within the grant', async (t) => {
  const first = await codeFlow(t, [A, B], { resource: A });
  t.equal(first.status, 200);
  t.equal(aud(first.body.access_token), A, 'the token request picks one of the authorized resources');
  t.equal(first.body.scope, 'read');
  t.ok(first.body.id_token, 'the ID token is still issued (openid was granted)');

  // Refresh for the other authorized resource: downscoped to its scopes.
  let res = await token(web, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token, resource: B });
  t.equal(res.status, 200);
  let body = await j(res);
  t.equal(aud(body.access_token), B);
  t.equal(body.scope, 'write');

  // Without a resource: the grant's default audience again (the first token's).
  res = await token(web, { grant_type: 'refresh_token', refresh_token: body.refresh_token });
  body = await j(res);
  t.equal(aud(body.access_token), A);
  t.equal(body.scope, 'read');

  // A resource outside the grant: invalid_target, and the refresh token is not spent.
  res = await token(web, { grant_type: 'refresh_token', refresh_token: body.refresh_token, resource: PLAIN });
  t.equal(res.status, 400);
  t.equal((await j(res)).error, 'invalid_target');
  res = await token(web, { grant_type: 'refresh_token', refresh_token: body.refresh_token, resource: B, scope: 'read write' });
  t.equal(res.status, 200, 'the refused refresh left the token usable');
  t.equal((await j(res)).scope, 'write');

  const all = await codeFlow(t, [A, B]);
  t.same(aud(all.body.access_token), [A, B], 'no resource at /token: all the authorized ones');
  t.equal(all.body.scope, 'read write');

  const outside = await codeFlow(t, [A], { resource: B });
  t.equal(outside.status, 400);
  t.equal(outside.body.error, 'invalid_target', 'a token request for a resource the authorization request did not name');
});

t.test('authorization code without resources: refresh may narrow to a resource of its audience', async (t) => {
  const first = await codeFlow(t, [], { resource: [A, B] });
  t.equal(first.status, 200);
  t.same(aud(first.body.access_token), [A, B], 'resources at /token alone, as before');
  const res = await token(web, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token, resource: A });
  const body = await j(res);
  t.equal(aud(body.access_token), A, 'narrower than the grant: downscoped');
  t.equal(body.scope, 'read');
});

t.test('/authorize refuses a resource the client may not use, back at the redirect URI', async (t) => {
  const q = new URLSearchParams({ response_type: 'code', client_id: web.client_id, redirect_uri: REDIRECT, scope: 'openid', state: 's1', resource: PLAIN });
  const res = await fetch(`${srv.url}/authorize?${q}`, { redirect: 'manual' });
  t.equal(res.status, 302);
  const loc = new URL(res.headers.get('location')!);
  t.equal(loc.origin + loc.pathname, REDIRECT);
  t.equal(loc.searchParams.get('error'), 'invalid_target');
  t.equal(loc.searchParams.get('state'), 's1');
});

t.test('/par takes resource and refuses a disallowed one', async (t) => {
  const { challenge } = pkce();
  const form = { response_type: 'code', redirect_uri: REDIRECT, scope: 'openid read', code_challenge: challenge, code_challenge_method: 'S256' };
  let res = await postForm(`${srv.url}/par`, web, { ...form, resource: [A, B] });
  t.equal(res.status, 201);
  t.match(await j(res), { request_uri: /^urn:ietf:params:oauth:request_uri:/ });
  res = await postForm(`${srv.url}/par`, web, { ...form, resource: PLAIN });
  t.equal(res.status, 400);
  t.equal((await j(res)).error, 'invalid_target');
});

t.test('a pushed request\'s resources bind its code like /authorize\'s', async (t) => {
  const { verifier, challenge } = pkce();
  const pushed = await j(await postForm(`${srv.url}/par`, web, {
    response_type: 'code', redirect_uri: REDIRECT, scope: 'openid offline_access read write', code_challenge: challenge, code_challenge_method: 'S256', resource: B,
  }));
  const back = await signInByEmailCode(env, `${srv.url}/authorize?${new URLSearchParams({ client_id: web.client_id, request_uri: pushed.request_uri })}`, 'par');
  let res = await token(web, { grant_type: 'authorization_code', code: back.searchParams.get('code')!, redirect_uri: REDIRECT, code_verifier: verifier });
  const body = await j(res);
  t.equal(aud(body.access_token), B);
  t.equal(body.scope, 'write');
  res = await token(web, { grant_type: 'refresh_token', refresh_token: body.refresh_token, resource: A });
  t.equal((await j(res)).error, 'invalid_target', 'A was not pushed');
});

t.test('a resource server update reaches /token at once (cache evicted by the change)', async (t) => {
  const list = await admin('GET', `/api/admin/resource-servers?identifier=${encodeURIComponent(A)}`);
  const id = list.body.items[0].id;
  t.equal((await admin('PUT', `/api/admin/resource-servers/${id}`, { scopes: ['read', 'write'] })).status, 200);
  let body = await j(await token(m2m, { grant_type: 'client_credentials', resource: A }));
  t.equal(body.scope, 'read write');
  t.equal((await admin('PUT', `/api/admin/resource-servers/${id}`, { scopes: ['read'] })).status, 200);
  body = await j(await token(m2m, { grant_type: 'client_credentials', resource: A }));
  t.equal(body.scope, 'read');
});

t.test('/token reads resource servers from the per-process cache, not Postgres', async (t) => {
  const C = 'https://c.example.test/api';
  const c = await admin('POST', '/api/admin/resource-servers', { identifier: C, name: 'C', scopes: ['read'] });
  await admin('PUT', `/api/admin/clients/${m2m.client_id}`, { allowed_audiences: [A, B, PLAIN, C] });
  let body = await j(await token(m2m, { grant_type: 'client_credentials', resource: C }));
  t.equal(body.scope, 'read');
  // Removed behind the admin API's back (no change notice): this process still answers from its cache.
  await srv.deps.sql`delete from resource_servers where tenant_id = ${tenantId} and id = ${c.body.id}`;
  body = await j(await token(m2m, { grant_type: 'client_credentials', resource: C }));
  t.equal(body.scope, 'read', 'no query per request');
  // The notice the admin API would have sent evicts the entry: C is now a plain allowed audience.
  await srv.deps.tokens.resourceServers.changed(tenantId);
  body = await j(await token(m2m, { grant_type: 'client_credentials', resource: C }));
  t.equal(body.scope, 'read write delete');
});

t.test('device code grant: the resource bounds the access token; the refresh token keeps the grant', async (t) => {
  const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
  const tv = await admin('POST', '/api/admin/clients', {
    name: 'tv', token_endpoint_auth_method: 'none', grant_types: [DEVICE_GRANT, 'refresh_token'], scopes: ['openid', 'offline_access', 'read', 'write'], allowed_audiences: [A, B],
  });
  t.equal(tv.status, 201);
  const post = (path: string, body: Record<string, string>) => fetch(`${srv.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(body) });
  const json = (path: string, body: unknown, headers: Record<string, string> = {}) => fetch(`${srv.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const started = await j(await post('/device_authorization', { client_id: tv.body.client_id, scope: 'offline_access read write' }));
  // The person's part: enter the code, sign in with an emailed code, allow.
  const entered = await j(await json('/device', { user_code: started.user_code }));
  const email = uniqueEmail('device-ri');
  await json('/email-code/generate', { email, interaction: entered.interaction });
  const verified = await json('/email-code/verify', { email, code: await codeFor(env.sink, email), interaction: entered.interaction });
  t.equal((await json('/device/confirm', { handle: entered.handle, decision: 'allow' }, { cookie: sessionCookieFrom(verified)! })).status, 200);
  const res = await post('/token', { grant_type: DEVICE_GRANT, client_id: tv.body.client_id, device_code: started.device_code, resource: B });
  t.equal(res.status, 200);
  const body = await j(res);
  t.equal(aud(body.access_token), B);
  t.equal(body.scope, 'write');
  const again = await j(await post('/token', { grant_type: 'refresh_token', client_id: tv.body.client_id, refresh_token: body.refresh_token, resource: B }));
  t.equal(again.scope, 'write', 'refreshed for the same resource');
});
