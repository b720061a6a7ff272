import t from 'tap';
import { sha256 } from '../../src/login/keys.js';
import { destroySession } from '../../src/login/sessions.js';
import { redisKeys } from '../../src/store/redis-keys.js';
import { uniqueName } from '../helpers/env.js';
import { j } from '../helpers/http.js';
import { adminToken } from '../helpers/tokens.js';
import { authorizeUrl, codeFor, pkce, sessionCookieFrom, startLoginEnv, uniqueEmail } from '../login/fixtures.js';

// A user's login sessions (the svc_session cookie) in the admin API: each sign-in is listed under an
// opaque id, and ending one makes its cookie sign in no more, over real HTTP, Redis and emailed codes.
const env = await startLoginEnv();
t.teardown(() => env.close());
const { srv, sink, tenant } = env;
const web = tenant.clients.web;
const tenantId = tenant.tenant_id;
const admin = await adminToken(srv, { tenantId, permissions: ['admin:users:read', 'admin:users:write', 'admin:audit-log:read'] });
const reader = await adminToken(srv, { tenantId, permissions: ['admin:users:read'] });
const stranger = await adminToken(srv, { tenantId: uniqueName('lses-other'), permissions: ['admin:users:read', 'admin:users:write'] });
const authorizeParams = () => ({ response_type: 'code', client_id: web.client_id, redirect_uri: web.redirect_uris[0]!, scope: 'openid email', state: 's', code_challenge: pkce().challenge, code_challenge_method: 'S256' });

/** Signs an address in with an emailed code: the session cookie (`svc_session=...`) and the user id. */
async function signIn(email: string): Promise<{ cookie: string; sub: string }> {
  const after = sink.messages.filter((m) => m.to.includes(email)).length;
  await fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, client_id: web.client_id }) });
  const res = await fetch(`${srv.url}/email-code/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, code: await codeFor(sink, email, after) }) });
  const verified = await j(res);
  return { cookie: sessionCookieFrom(res)!, sub: verified.sub };
}

/** /authorize with a cookie: 302 with a code when the session signs in, 200 `login_required` when not. */
async function authorize(cookie: string): Promise<{ status: number; loginRequired: boolean }> {
  const res = await fetch(authorizeUrl(srv.url, authorizeParams()), { headers: { accept: 'application/json', cookie }, redirect: 'manual' });
  if (res.status === 302) return { status: 302, loginRequired: false };
  return { status: res.status, loginRequired: (await j(res)).login_required === true };
}

function call(method: string, path: string, token = admin): Promise<Response> {
  return fetch(`${srv.url}/api/admin${path}`, { method, headers: { authorization: `Bearer ${token}` } });
}

t.test('listed under opaque ids; ending one stops its cookie, the other still signs in', async (t) => {
  const email = uniqueEmail('lses');
  const first = await signIn(email);
  const second = await signIn(email);
  t.equal(first.sub, second.sub, 'two sign-ins of one user');
  const user = first.sub;
  t.equal((await authorize(first.cookie)).status, 302, 'the first cookie signs in before');

  let res = await call('GET', `/users/${user}/login-sessions`);
  t.equal(res.status, 200);
  const list = await j(res);
  t.equal(list.user_id, user);
  t.equal(list.sessions.length, 2);
  const raw = [first.cookie, second.cookie].map((c) => c.slice('svc_session='.length));
  for (const s of list.sessions) {
    t.match(s.id, /^lses_[A-Za-z0-9_-]{22}$/);
    t.notOk(raw.some((c) => s.id.includes(c) || s.id.includes(sha256(c)) || sha256(c).includes(s.id.slice(5))), 'neither the cookie nor its key hash');
    t.ok(Math.abs(s.signed_in_at - Date.now()) < 60_000, 'epoch ms');
    t.equal(s.expires_at - s.signed_in_at, 8 * 3600 * 1000, 'the session lifetime');
  }
  t.ok(list.sessions[0].signed_in_at >= list.sessions[1].signed_in_at, 'newest first');
  t.notMatch(JSON.stringify(list), new RegExp(raw.map((c) => c.replace(/[-]/g, '\\-')).join('|')), 'no cookie value anywhere');

  // Which id is the first cookie's: end sessions one at a time and see which cookie stops.
  res = await call('DELETE', `/users/${user}/login-sessions/${list.sessions[1].id}`, reader);
  t.equal(res.status, 403, 'a reader cannot end a session');
  res = await call('DELETE', `/users/${user}/login-sessions/${list.sessions[1].id}`);
  t.equal(res.status, 204);
  const states = [await authorize(first.cookie), await authorize(second.cookie)];
  t.same(states.map((s) => s.loginRequired).sort(), [false, true], 'exactly one cookie asks for login again');
  const ended = states[0]!.loginRequired ? first : second;
  const kept = ended === first ? second : first;
  t.same(await authorize(ended.cookie), { status: 200, loginRequired: true }, '/authorize asks the ended session to sign in');
  t.equal((await authorize(kept.cookie)).status, 302, 'the other session still signs in');
  const after = await j(await call('GET', `/users/${user}/login-sessions`));
  t.same(after.sessions.map((s: { id: string }) => s.id), [list.sessions[0].id]);

  res = await call('DELETE', `/users/${user}/login-sessions/${list.sessions[1].id}`);
  t.equal(res.status, 404, 'ended already');
  t.equal((await j(res)).error, 'not_found');
  t.equal((await call('DELETE', `/users/${user}/login-sessions/lses_${'A'.repeat(22)}`)).status, 404, 'an unknown id');
  t.equal((await call('DELETE', `/users/${user}/login-sessions/${encodeURIComponent(ended.cookie.slice('svc_session='.length))}`)).status, 404, 'a cookie value is no id');
  t.equal((await call('GET', '/users/u_nope/login-sessions')).status, 404, 'an unknown user');

  const audit = await j(await call('GET', `/admin-audit-log?action=user.login_session.revoke&resource_id=${user}`));
  t.match(audit.items, [{ action: 'user.login_session.revoke', resource_id: user, result: 'success', metadata: { login_session_id: list.sessions[1].id } }], 'audited');
});

t.test('another tenant\'s administrator can neither list nor end them', async (t) => {
  const { cookie, sub } = await signIn(uniqueEmail('lses-iso'));
  const [s] = (await j(await call('GET', `/users/${sub}/login-sessions`))).sessions;
  let res = await call('GET', `/users/${sub}/login-sessions`, stranger);
  t.equal(res.status, 404);
  t.equal((await j(res)).error, 'user_not_found');
  res = await call('DELETE', `/users/${sub}/login-sessions/${s.id}`, stranger);
  t.equal(res.status, 404);
  t.equal((await authorize(cookie)).status, 302, 'the session still signs in');
  t.equal((await j(await call('GET', `/users/${sub}/login-sessions`))).sessions.length, 1);
});

t.test('the index follows sign-outs and sessions gone from Redis', async (t) => {
  const email = uniqueEmail('lses-idx');
  const a = await signIn(email);
  const b = await signIn(email);
  const c = await signIn(email);
  const key = redisKeys.userLoginSessions(tenantId, a.sub);
  t.equal(await srv.deps.redis.zcard(key), 3, 'one member per sign-in');
  const ttl = await srv.deps.redis.ttl(key);
  t.ok(ttl > 8 * 3600 - 60 && ttl <= 8 * 3600, 'the index expires with its newest session');
  // A sign-out (destroySession, as /logout and the account page call it) takes its member out.
  await destroySession(srv.deps.redis, a.cookie.slice('svc_session='.length));
  t.equal(await srv.deps.redis.zcard(key), 2);
  t.equal((await authorize(a.cookie)).loginRequired, true);
  // A session gone without a sign-out (here deleted by hand) is pruned when the list is read.
  await srv.deps.redis.del(redisKeys.session(sha256(b.cookie.slice('svc_session='.length))));
  const list = await j(await call('GET', `/users/${a.sub}/login-sessions`));
  t.equal(list.sessions.length, 1);
  t.equal(await srv.deps.redis.zcard(key), 1, 'pruned on read');
  t.equal((await authorize(c.cookie)).status, 302);
});
