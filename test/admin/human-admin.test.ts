import t from 'tap';
import { j } from '../helpers/http.js';
import { claims } from '../helpers/jwt.js';
import { adminToken, postForm } from '../helpers/tokens.js';
import { authorizeUrl, codeFor, pkce, sessionCookieFrom, startLoginEnv, uniqueEmail } from '../login/fixtures.js';

// A person administers through the login flow: the admin console client, the admin scope, and tokens
// carrying the administrator permissions of the person's roles, re-read on every refresh.
const env = await startLoginEnv();
t.teardown(() => env.close());
const { srv, sink, tenant } = env;
const consoleClient = tenant.clients.admin_console;
const redirectUri = consoleClient.redirect_uris[0]!;

async function login(email: string): Promise<{ access_token: string; refresh_token: string }> {
  const { verifier, challenge } = pkce();
  const params = { response_type: 'code', client_id: consoleClient.client_id, redirect_uri: redirectUri, scope: 'openid email admin', state: 's', nonce: 'n', code_challenge: challenge, code_challenge_method: 'S256' };
  await fetch(authorizeUrl(srv.url, params), { headers: { accept: 'application/json' } }).then((r) => r.arrayBuffer());
  await fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, client_id: consoleClient.client_id }) });
  const code = await codeFor(sink, email);
  const verified = await fetch(`${srv.url}/email-code/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, code }) });
  const cookie = sessionCookieFrom(verified)!;
  const res = await fetch(authorizeUrl(srv.url, { ...params, prompt: 'none' }), { headers: { cookie }, redirect: 'manual' });
  const authCode = new URL(res.headers.get('location')!).searchParams.get('code')!;
  return j(await postForm(`${srv.url}/token`, consoleClient, { grant_type: 'authorization_code', code: authCode, redirect_uri: redirectUri, code_verifier: verifier }));
}

t.test('a person with a role administers within its permissions, and a role change applies at refresh', async (t) => {
  const platform = await adminToken(srv, { tenantId: tenant.tenant_id, permissions: ['admin:*'] });
  const asPlatform = (method: string, path: string, body?: unknown) => fetch(`${srv.url}${path}`, { method, headers: { authorization: `Bearer ${platform}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const email = uniqueEmail('operator');
  const user = await j(await asPlatform('POST', '/api/admin/users', { email }));
  const reader = await j(await asPlatform('POST', '/api/admin/roles', { name: 'user reader', permissions: ['admin:users:read'] }));
  t.equal((await asPlatform('POST', `/api/admin/users/${user.id}/roles`, { role_id: reader.id })).status < 300, true, 'role assigned');

  const tokens = await login(email);
  const c = claims(tokens.access_token);
  t.equal(c.sub, user.id);
  t.same(c.permissions, ['admin:users:read']);
  t.equal(c.aud, `${srv.config.issuer}/api/admin`);
  const asPerson = (method: string, path: string, token: string, body?: unknown) => fetch(`${srv.url}${path}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  t.equal((await asPerson('GET', '/api/admin/users', tokens.access_token)).status, 200, 'reading users is allowed');
  const denied = await asPerson('POST', '/api/admin/users', tokens.access_token, { email: uniqueEmail('x') });
  t.equal(denied.status, 403);
  t.equal((await j(denied)).error, 'forbidden', 'creating users is not');
  const foreign = await asPerson('GET', '/api/admin/users', tokens.access_token);
  t.equal(foreign.status, 200);
  const other = await fetch(`${srv.url}/api/admin/users`, { headers: { authorization: `Bearer ${tokens.access_token}`, 'x-tenant-id': 'someone-else' } });
  t.equal(other.status, 403, 'a person is held to their own tenant');

  const writer = await j(await asPlatform('POST', '/api/admin/roles', { name: 'user writer', permissions: ['admin:users:write'] }));
  await asPlatform('POST', `/api/admin/users/${user.id}/roles`, { role_id: writer.id });
  const refreshed = await j(await postForm(`${srv.url}/token`, consoleClient, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }));
  t.same(claims(refreshed.access_token).permissions, ['admin:users:read', 'admin:users:write'], 'the refresh reads the roles again');
  t.equal((await asPerson('POST', '/api/admin/users', refreshed.access_token, { email: uniqueEmail('y') })).status, 201);

  // The same person signing in to an ordinary application gets no administrator permissions.
  t.notOk(claims((await j(await postForm(`${srv.url}/token`, tenant.clients.exchanger, { grant_type: 'client_credentials' }))).access_token).permissions);
});
