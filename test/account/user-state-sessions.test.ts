import t from 'tap';
import { randomBytes } from 'node:crypto';
import { sha256 } from '../../src/login/keys.js';
import { redisKeys } from '../../src/store/redis-keys.js';
import { uniqueName } from '../helpers/env.js';
import { j } from '../helpers/http.js';
import { waitFor } from '../helpers/processes.js';
import { forgetRevocationState } from '../helpers/revocation.js';
import { adminToken, postForm } from '../helpers/tokens.js';
import { authorizeUrl, codeFor, mailCount, pkce, sessionCookieFrom, startLoginEnv, uniqueEmail } from '../login/fixtures.js';

// Locking, suspending or deleting a user ends their login sessions (the svc_session cookie) at once,
// over real HTTP, Redis, Postgres and emailed codes: the browser is asked to sign in again, a code the
// session got just before is refused at /token, and a session the per-user index never saw (one made
// before the index existed) is ended as well. Another tenant's administrator can do none of it.
const env = await startLoginEnv();
t.teardown(() => env.close());
const { srv, sink, tenant } = env;
const web = tenant.clients.web;
const tenantId = tenant.tenant_id;
const admin = await adminToken(srv, { tenantId, permissions: ['admin:*'] });
const stranger = await adminToken(srv, { tenantId: uniqueName('ustate-other'), permissions: ['admin:*'] });

function call(method: string, path: string, token = admin, body?: unknown): Promise<Response> {
  return fetch(`${srv.url}/api/admin${path}`, {
    method, headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
}

/** Signs an address in with an emailed code: the session cookie (`svc_session=...`) and the user id. */
async function signIn(email: string): Promise<{ cookie: string; sub: string }> {
  const after = mailCount(sink, email);
  await fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, client_id: web.client_id }) });
  const res = await fetch(`${srv.url}/email-code/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, code: await codeFor(sink, email, after) }) });
  const body = await j(res);
  if (res.status !== 200) throw new Error(`verify answered ${res.status}: ${JSON.stringify(body)}`);
  return { cookie: sessionCookieFrom(res)!, sub: body.sub };
}

/**
 * A session written as sign-ins wrote them before the per-user index existed: the session key alone.
 * Its cookie signs in like any other, but no admin list or index names it.
 */
async function unindexedSession(sub: string, email: string): Promise<string> {
  const id = randomBytes(32).toString('base64url');
  const authTime = Math.floor(Date.now() / 1000) - 60;
  await srv.deps.redis.set(redisKeys.session(sha256(id)), JSON.stringify({ tenantId, userId: sub, email, authTime, expiresAt: authTime + 8 * 3600 }), 'EX', 8 * 3600);
  return `svc_session=${id}`;
}

const params = (challenge: string, extra: Record<string, string> = {}) => ({
  response_type: 'code', client_id: web.client_id, redirect_uri: web.redirect_uris[0]!, scope: 'openid email', state: 's', code_challenge: challenge, code_challenge_method: 'S256', ...extra,
});

/** /authorize as an API client with a cookie: the code when the session signs in, else whether login is asked for. */
async function authorize(cookie: string, challenge = pkce().challenge): Promise<{ status: number; code?: string; loginRequired: boolean }> {
  const res = await fetch(authorizeUrl(srv.url, params(challenge)), { headers: { accept: 'application/json', cookie }, redirect: 'manual' });
  if (res.status === 302) return { status: 302, code: new URL(res.headers.get('location')!).searchParams.get('code') ?? undefined, loginRequired: false };
  return { status: res.status, loginRequired: (await j(res)).login_required === true };
}

/** What a browser holding the cookie sees at /authorize: the sign-in page (200) or a redirect with a code (302). */
async function browserAuthorize(cookie: string): Promise<{ status: number; html: string }> {
  const res = await fetch(authorizeUrl(srv.url, params(pkce().challenge)), { headers: { accept: 'text/html', cookie }, redirect: 'manual' });
  return { status: res.status, html: res.status === 200 ? await res.text() : '' };
}

async function redeem(code: string, verifier: string): Promise<{ status: number; body: any }> {
  const res = await postForm(`${srv.url}/token`, web, { grant_type: 'authorization_code', code, redirect_uri: web.redirect_uris[0]!, code_verifier: verifier });
  return { status: res.status, body: await j(res) };
}

async function statusOf(sub: string): Promise<string> {
  return (await j(await call('GET', `/users/${sub}`))).status;
}

t.test('a lock ends every login session at once, indexed or not, and the code one got just before', async (t) => {
  const email = uniqueEmail('ustate-lock');
  const first = await signIn(email);
  const second = await signIn(email);
  const old = await unindexedSession(first.sub, email);
  const cookies = [first.cookie, second.cookie, old];
  for (const c of cookies) t.equal((await authorize(c)).status, 302, 'each cookie signs in before');
  t.equal((await j(await call('GET', `/users/${first.sub}/login-sessions`))).sessions.length, 2, 'the old session is not in the index');
  // Tokens and a code the session got before the lock.
  const before = pkce();
  const tokens = await redeem((await authorize(first.cookie, before.challenge)).code!, before.verifier);
  t.equal(tokens.status, 200);
  t.type(tokens.body.refresh_token, 'string', 'the first-party client gets a refresh token');
  const pending = pkce();
  const unredeemed = (await authorize(second.cookie, pending.challenge)).code!;
  t.ok(unredeemed, 'a code issued before the lock');

  const res = await call('POST', `/users/${first.sub}/lock`);
  const lockedAt = Date.now();
  t.equal(res.status, 200);
  t.equal((await j(res)).status, 'locked');

  for (const c of cookies) t.same(await authorize(c), { status: 200, loginRequired: true }, 'the cookie no longer signs in');
  const page = await browserAuthorize(old);
  t.equal(page.status, 200, 'a browser with the old cookie gets the sign-in page, not a code');
  t.match(page.html, /action="\/email-code\/generate"/);
  const silent = await fetch(authorizeUrl(srv.url, params(pkce().challenge, { prompt: 'none' })), { headers: { cookie: first.cookie }, redirect: 'manual' });
  t.equal(silent.status, 302);
  t.equal(new URL(silent.headers.get('location')!).searchParams.get('error'), 'login_required', 'prompt=none: login_required, no code');
  const account = await fetch(`${srv.url}/account`, { headers: { cookie: second.cookie }, redirect: 'manual' });
  t.not(account.status, 200, 'the account page does not open with it either');
  t.same((await j(await call('GET', `/users/${first.sub}/login-sessions`))).sessions, [], 'none listed');
  t.match(await redeem(unredeemed, pending.verifier), { status: 400, body: { error: 'invalid_grant' } }, 'the code issued before the lock is refused');

  // A lock leaves tokens at applications alone (as Keycloak's lockout does): the refresh token still works.
  const refreshed = await postForm(`${srv.url}/token`, web, { grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token });
  t.equal(refreshed.status, 200, 'the refresh token from before the lock still refreshes');

  t.equal((await call('POST', `/users/${first.sub}/unlock`)).status, 200);
  for (const c of cookies) t.equal((await authorize(c)).loginRequired, true, 'unlocking does not bring the ended sessions back');
  // Sign-in times have one-second precision: one in the lock's own second counts as before it.
  await waitFor(() => Math.floor(Date.now() / 1000) > Math.floor(lockedAt / 1000));
  const again = await signIn(email);
  t.equal((await authorize(again.cookie)).status, 302, 'after the unlock a new sign-in works');
});

t.test('suspension and deletion end the sessions too', async (t) => {
  const s = await signIn(uniqueEmail('ustate-susp'));
  t.equal((await authorize(s.cookie)).status, 302);
  t.equal((await call('POST', `/users/${s.sub}/suspend`)).status, 200);
  t.equal((await authorize(s.cookie)).loginRequired, true, 'suspended: the cookie asks for a sign-in');
  t.equal((await call('POST', `/users/${s.sub}/unsuspend`)).status, 200);
  t.equal((await authorize(s.cookie)).loginRequired, true, 'and stays ended after the suspension is lifted');

  const email = uniqueEmail('ustate-del');
  const d = await signIn(email);
  const old = await unindexedSession(d.sub, email);
  const p = pkce();
  const code = (await authorize(d.cookie, p.challenge)).code!;
  t.equal((await call('DELETE', `/users/${d.sub}`)).status, 204);
  t.equal((await authorize(d.cookie)).loginRequired, true, 'deleted: the cookie asks for a sign-in');
  t.equal((await authorize(old)).loginRequired, true, 'an unindexed session of the deleted user too');
  t.match(await redeem(code, p.verifier), { status: 400, body: { error: 'invalid_grant' } }, 'a code issued before the deletion is refused');
  t.equal(await srv.deps.redis.exists(redisKeys.userLoginSessions(tenantId, d.sub)), 0, 'the index is gone');
});

t.test('the lock after too many wrong codes ends them as well', async (t) => {
  t.equal((await call('PUT', '/settings/login-lockout', admin, { max_failed_logins: 2 })).status, 200);
  t.teardown(async () => { await call('PUT', '/settings/login-lockout', admin, { max_failed_logins: 0 }); });
  const email = uniqueEmail('ustate-auto');
  const s = await signIn(email);
  t.equal((await authorize(s.cookie)).status, 302);
  // Someone else guesses at the address's codes.
  await fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, client_id: web.client_id }) });
  for (const guess of ['000000', '000001']) {
    await fetch(`${srv.url}/email-code/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, code: guess }) });
  }
  await waitFor(async () => (await statusOf(s.sub)) === 'locked');
  t.equal((await authorize(s.cookie)).loginRequired, true, 'the locked user\'s cookie asks for a sign-in');
});

t.test('another tenant\'s administrator can neither lock, suspend, delete nor end the sessions', async (t) => {
  const s = await signIn(uniqueEmail('ustate-iso'));
  const [listed] = (await j(await call('GET', `/users/${s.sub}/login-sessions`))).sessions;
  for (const [method, path] of [['POST', 'lock'], ['POST', 'suspend'], ['DELETE', ''], ['DELETE', `login-sessions/${listed.id}`]] as const) {
    const res = await call(method, `/users/${s.sub}${path ? `/${path}` : ''}`, stranger);
    t.equal(res.status, 404, `${method} ${path || 'user'}: not found from the other tenant`);
    t.equal((await j(res)).error, 'user_not_found');
  }
  t.equal(await statusOf(s.sub), 'active', 'the user is untouched');
  t.equal((await authorize(s.cookie)).status, 302, 'the session still signs in');
});

t.test('the end is durable: a Redis that lost it is refilled from Postgres before a session is let in', async (t) => {
  const s = await signIn(uniqueEmail('ustate-durable'));
  t.equal((await call('POST', `/users/${s.sub}/lock`)).status, 200);
  t.equal((await authorize(s.cookie)).loginRequired, true);
  // The session comes back (a restore of old data) and the mark and its slot's sentinel are lost.
  const raw = s.cookie.slice('svc_session='.length);
  const authTime = Math.floor(Date.now() / 1000) - 5;
  await srv.deps.redis.set(redisKeys.session(sha256(raw)), JSON.stringify({ tenantId, userId: s.sub, email: 'x@example.test', authTime, expiresAt: authTime + 3600 }), 'EX', 3600);
  const mark = redisKeys.revocationMark(tenantId, 'login', s.sub);
  await srv.deps.redis.del(mark);
  await forgetRevocationState(srv.deps.redis);
  const answers = new Set<number>();
  await waitFor(async () => {
    const a = await authorize(s.cookie);
    answers.add(a.status);
    return a.loginRequired;
  });
  t.notOk(answers.has(302), 'never a code while the state was missing (503 until refilled)');
  t.ok(await srv.deps.redis.exists(mark), 'the mark is back from Postgres');
});
