import t from 'tap';
import { decodeJwt } from '../../src/tokens/jwt.js';
import { atHash } from '../../src/oauth/id-token.js';
import { j } from '../helpers/http.js';
import { postForm } from '../helpers/tokens.js';
import { authorizeUrl, codeFor, pkce, sessionCookieFrom, startLoginEnv, uniqueEmail } from './fixtures.js';

// The spec's five-request login flow as an API client performs it (JSON, no browser), plus what the
// tokens it yields can do: userinfo, consents, refresh, introspection-free checks of the ID token.
const env = await startLoginEnv();
t.teardown(() => env.close());
const { srv, sink, tenant } = env;
const web = tenant.clients.web;
const redirectUri = web.redirect_uris[0]!;

t.test('five requests: authorize, generate, verify, authorize prompt=none, token', async (t) => {
  const email = uniqueEmail('api');
  const { verifier, challenge } = pkce();
  const params = { response_type: 'code', client_id: web.client_id, redirect_uri: redirectUri, scope: 'openid email offline_access', state: 'st-1', nonce: 'n-1', code_challenge: challenge, code_challenge_method: 'S256' };
  // 1
  let res = await fetch(authorizeUrl(srv.url, params), { headers: { accept: 'application/json' }, redirect: 'manual' });
  t.equal(res.status, 200);
  const step1 = await j(res);
  t.equal(step1.login_required, true);
  t.equal(step1.client_id, web.client_id);
  t.match(step1.interaction, /^[A-Za-z0-9_-]{24}$/);
  // 2
  res = await fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, client_id: web.client_id }) });
  t.equal(res.status, 200);
  t.same(await j(res), { sent: true, expires_in: 300, code_length: 6 });
  const code = await codeFor(sink, email);
  t.match(code, /^\d{6}$/);
  // 3
  res = await fetch(`${srv.url}/email-code/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, code }) });
  t.equal(res.status, 200);
  const verified = await j(res);
  t.equal(verified.authenticated, true);
  t.match(verified.sub, /^u_/);
  const setCookie = res.headers.getSetCookie().find((c) => c.startsWith('svc_session='))!;
  t.match(setCookie, /HttpOnly/);
  t.match(setCookie, /SameSite=Lax/);
  t.notMatch(setCookie, /Secure/, 'http issuer: no Secure flag');
  const cookie = sessionCookieFrom(res)!;
  // 4
  res = await fetch(authorizeUrl(srv.url, { ...params, prompt: 'none' }), { headers: { accept: 'application/json', cookie }, redirect: 'manual' });
  t.equal(res.status, 302);
  const loc = new URL(res.headers.get('location')!);
  t.equal(`${loc.origin}${loc.pathname}`, redirectUri);
  t.equal(loc.searchParams.get('state'), 'st-1');
  t.equal(loc.searchParams.get('iss'), srv.url);
  const authCode = loc.searchParams.get('code')!;
  t.ok(authCode);
  // 5
  res = await postForm(`${srv.url}/token`, web, { grant_type: 'authorization_code', code: authCode, redirect_uri: redirectUri, code_verifier: verifier, audience: srv.url }); // the issuer: /api/user/consents below
  t.equal(res.status, 200);
  t.equal(res.headers.get('cache-control'), 'no-store');
  const tok = await j(res);
  t.equal(tok.token_type, 'Bearer');
  t.equal(tok.scope, 'openid email offline_access');
  t.match(tok.refresh_token, /^rt\./);
  const id = decodeJwt(tok.id_token);
  t.equal(id.header.typ, 'JWT');
  t.equal(id.payload.iss, srv.url);
  t.equal(id.payload.sub, verified.sub);
  t.equal(id.payload.aud, web.client_id);
  t.equal(id.payload.nonce, 'n-1');
  t.equal(id.payload.email, email);
  t.equal(id.payload.auth_time, verified.auth_time);
  t.equal(id.payload.at_hash, atHash(tok.access_token));
  t.ok(Number(id.payload.exp) > Number(id.payload.iat));
  const at = decodeJwt(tok.access_token).payload;
  t.equal(at.sub, verified.sub);
  t.equal(at.client_id, web.client_id);

  // userinfo
  res = await fetch(`${srv.url}/userinfo`, { headers: { authorization: `Bearer ${tok.access_token}` } });
  t.equal(res.status, 200);
  t.same(await j(res), { sub: verified.sub, email, email_verified: true });
  res = await fetch(`${srv.url}/userinfo`, { headers: { authorization: 'Bearer nope' } });
  t.equal(res.status, 401);
  t.equal((await j(res)).error, 'unauthorized');

  // consent recorded for the first-party client
  res = await fetch(`${srv.url}/api/user/consents`, { headers: { authorization: `Bearer ${tok.access_token}` } });
  t.equal(res.status, 200);
  const consents = await j(res);
  t.equal(consents.total, 1);
  t.same([...consents.consents[0].scopes].sort(), ['email', 'offline_access', 'openid']);
  t.match(consents.consents[0], { clientId: web.client_id, clientName: 'Demo web application', policyVersions: { privacyPolicyVersion: String, tosVersion: String, consentVersion: 1 } });
  t.type(consents.consents[0].grantedAt, 'number');

  // refresh keeps the audience
  res = await postForm(`${srv.url}/token`, web, { grant_type: 'refresh_token', refresh_token: tok.refresh_token });
  t.equal(res.status, 200);
  const refreshed = await j(res);
  t.same(decodeJwt(refreshed.access_token).payload.aud, at.aud);

  // user.created and auth.login were written to the outbox with the user
  const events = await srv.deps.sql<{ event: string; data: any }[]>`select event, data from event_outbox where tenant_id = ${tenant.tenant_id} and data->>'user_id' = ${verified.sub} order by id`;
  t.same(events.map((e) => e.event), ['user.created', 'auth.login']);
});

t.test('the same answer for a second login; no second user.created', async (t) => {
  const email = uniqueEmail('again');
  for (let i = 0; i < 2; i++) {
    const res = await fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, client_id: web.client_id }) });
    t.same(await j(res), { sent: true, expires_in: 300, code_length: 6 });
    const code = await codeFor(sink, email, i);
    const v = await fetch(`${srv.url}/email-code/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: email.toUpperCase(), code }) });
    t.equal(v.status, 200);
  }
  // Users are found by address through the blind index only (no column holds it): the repository does that.
  const found = (await srv.deps.store.forTenant(tenant.tenant_id).users.getByEmail(email))!;
  const rows = await srv.deps.sql<{ event: string }[]>`select o.event from event_outbox o where o.tenant_id = ${tenant.tenant_id} and o.data->>'user_id' = ${found.id} order by o.id`;
  t.same(rows.map((r) => r.event), ['user.created', 'auth.login', 'auth.login']);
  const [u] = await srv.deps.sql<{ last_login_at: number | null; created_at: number }[]>`select last_login_at, created_at from users where tenant_id = ${tenant.tenant_id} and id = ${found.id}`;
  t.type(u!.last_login_at, 'number', 'the login is stamped on the user');
  t.ok(u!.last_login_at! >= u!.created_at, 'at or after creation');
});
