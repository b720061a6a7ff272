import t from 'tap';
import { createClient } from '../../src/clients/create.js';
import { GRANT } from '../../src/clients/model.js';
import { loginKeys, sha256 } from '../../src/login/keys.js';
import { LOGIN } from '../../src/login/options.js';
import { j } from '../helpers/http.js';
import { postForm } from '../helpers/tokens.js';
import { authorizeUrl, codeFor, mailCount, pkce, sessionCookieFrom, startLoginEnv, uniqueEmail } from './fixtures.js';

// Failure paths of the login flow against a real server, SMTP sink and email worker.
const env = await startLoginEnv();
t.teardown(() => env.close());
const { srv, sink, tenant } = env;
const web = tenant.clients.web;
const redirectUri = web.redirect_uris[0]!;
const JSON_HEADERS = { 'content-type': 'application/json' };

const generate = (email: string, clientId = web.client_id) =>
  fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ email, client_id: clientId }) });
const verify = (email: string, code: string) =>
  fetch(`${srv.url}/email-code/verify`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ email, code }) });

async function signIn(email = uniqueEmail()): Promise<{ cookie: string; sub: string; email: string }> {
  const before = mailCount(sink, email);
  await generate(email);
  const code = await codeFor(sink, email, before);
  const res = await verify(email, code);
  const body = await j(res);
  return { cookie: sessionCookieFrom(res)!, sub: body.sub, email };
}

async function authCode(cookie: string, extra: Record<string, string> = {}): Promise<string> {
  const res = await fetch(authorizeUrl(srv.url, { response_type: 'code', client_id: web.client_id, redirect_uri: redirectUri, scope: 'openid email', state: 's', prompt: 'none', ...extra }), { headers: { cookie }, redirect: 'manual' });
  const loc = new URL(res.headers.get('location')!);
  const code = loc.searchParams.get('code');
  if (!code) throw new Error(`no code: ${loc}`);
  return code;
}

t.test('the login page: security headers, CSRF token, accessible form', async (t) => {
  const res = await fetch(authorizeUrl(srv.url, { response_type: 'code', client_id: web.client_id, redirect_uri: redirectUri, scope: 'openid', state: 's' }));
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^text\/html/);
  const csp = res.headers.get('content-security-policy')!;
  t.match(csp, /default-src 'none'/);
  t.match(csp, /frame-ancestors 'none'/);
  t.match(csp, /form-action 'self'/);
  t.notMatch(csp, /unsafe-inline/);
  t.match(csp, /script-src 'self'/);
  t.equal(res.headers.get('x-frame-options'), 'DENY');
  t.equal(res.headers.get('cache-control'), 'no-store');
  const html = await res.text();
  t.match(html, /<html lang="en">/);
  t.match(html, /<label for="email">/);
  t.match(html, /name="csrf_token" value="[A-Za-z0-9_-]{43}"/);
  // No inline script: the one script is the passkey file from this server (CSP script-src 'self').
  t.same(html.match(/<script[^>]*>[^<]*<\/script>/g), ['<script src="/assets/passkey.js" defer></script>']);
  // A form post without the CSRF cookie/token pair is refused.
  const interaction = /name="interaction" value="([^"]+)"/.exec(html)![1]!;
  const post = await fetch(`${srv.url}/email-code/generate`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ email: uniqueEmail(), interaction, csrf_token: 'x'.repeat(43) }) });
  t.equal(post.status, 403);
  t.match(await post.text(), /did not come from this site/);
});

t.test('wrong or missing redirect URI and unknown client: an error page, never a redirect', async (t) => {
  for (const params of <Array<Record<string, string>>>[
    { response_type: 'code', client_id: web.client_id, redirect_uri: 'https://evil.example/cb', scope: 'openid', state: 's' },
    { response_type: 'code', client_id: web.client_id, redirect_uri: `${redirectUri}/extra`, scope: 'openid' },
    { response_type: 'code', client_id: 'no-such-client', redirect_uri: redirectUri, scope: 'openid' },
  ]) {
    const res = await fetch(authorizeUrl(srv.url, params), { redirect: 'manual' });
    t.equal(res.status, 400, JSON.stringify(params));
    t.equal(res.headers.get('location'), null);
    t.equal(res.headers.get('x-frame-options'), 'DENY');
    t.match(await res.text(), /<p role="alert">/);
  }
  const res = await fetch(authorizeUrl(srv.url, { client_id: web.client_id, redirect_uri: 'https://evil.example/cb' }), { headers: { accept: 'application/json' }, redirect: 'manual' });
  t.equal(res.status, 400);
  t.equal((await j(res)).error, 'invalid_request');
});

t.test('redirectable errors go back with error, state and iss', async (t) => {
  const cases: Array<[Record<string, string>, string]> = [
    [{ response_type: 'token' }, 'unsupported_response_type'],
    [{ scope: 'admin' }, 'invalid_scope'],
    [{ code_challenge: 'x'.repeat(43), code_challenge_method: 'plain' }, 'invalid_request'],
    [{ prompt: 'none login' }, 'invalid_request'],
    [{ prompt: 'none' }, 'login_required'],
  ];
  for (const [extra, error] of cases) {
    const res = await fetch(authorizeUrl(srv.url, { response_type: 'code', client_id: web.client_id, redirect_uri: redirectUri, scope: 'openid', state: 'xyz', ...extra }), { redirect: 'manual' });
    t.equal(res.status, 302, error);
    const loc = new URL(res.headers.get('location')!);
    t.equal(`${loc.origin}${loc.pathname}`, redirectUri);
    t.equal(loc.searchParams.get('error'), error);
    t.equal(loc.searchParams.get('state'), 'xyz');
    t.equal(loc.searchParams.get('iss'), srv.url);
    t.notOk(loc.searchParams.get('code'));
  }
});

t.test('public clients must use PKCE; a wrong verifier is invalid_grant', async (t) => {
  const clientId = `${tenant.tenant_id}-spa`;
  await createClient(srv.deps.sql, srv.deps.tokens.secretKey, { clientId, tenantId: tenant.tenant_id, name: 'SPA', authMethod: 'none', grantTypes: [GRANT.authorizationCode], scopes: ['openid', 'email'], redirectUris: ['http://127.0.0.1:1/spa'], firstParty: true });
  let res = await fetch(authorizeUrl(srv.url, { response_type: 'code', client_id: clientId, redirect_uri: 'http://127.0.0.1:1/spa', scope: 'openid', state: 's' }), { redirect: 'manual' });
  t.equal(new URL(res.headers.get('location')!).searchParams.get('error'), 'invalid_request', 'no challenge');
  const { cookie } = await signIn();
  const { verifier, challenge } = pkce();
  res = await fetch(authorizeUrl(srv.url, { response_type: 'code', client_id: clientId, redirect_uri: 'http://127.0.0.1:1/spa', scope: 'openid email', state: 's', prompt: 'none', code_challenge: challenge, code_challenge_method: 'S256' }), { headers: { cookie }, redirect: 'manual' });
  const code = new URL(res.headers.get('location')!).searchParams.get('code')!;
  const form = (v: string) => fetch(`${srv.url}/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ grant_type: 'authorization_code', client_id: clientId, code, redirect_uri: 'http://127.0.0.1:1/spa', code_verifier: v }) });
  res = await form(pkce().verifier);
  t.equal(res.status, 400);
  t.equal((await j(res)).error, 'invalid_grant');
  // The code was spent by the failed attempt (single use), so even the right verifier fails now.
  res = await form(verifier);
  t.equal((await j(res)).error, 'invalid_grant');

});

t.test('PKCE on a confidential client: missing and wrong verifier are invalid_grant, right one works', async (t) => {
  const { cookie } = await signIn();
  const { verifier, challenge } = pkce();
  for (const v of [undefined, pkce().verifier]) {
    const code = await authCode(cookie, { code_challenge: challenge, code_challenge_method: 'S256' });
    const res = await postForm(`${srv.url}/token`, web, { grant_type: 'authorization_code', code, redirect_uri: redirectUri, ...(v ? { code_verifier: v } : {}) });
    t.equal(res.status, 400);
    t.equal((await j(res)).error, 'invalid_grant');
  }
  const code = await authCode(cookie, { code_challenge: challenge, code_challenge_method: 'S256' });
  let res = await postForm(`${srv.url}/token`, web, { grant_type: 'authorization_code', code, redirect_uri: `${redirectUri}x`, code_verifier: verifier });
  t.equal((await j(res)).error, 'invalid_grant', 'redirect_uri must match');
  const code2 = await authCode(cookie, { code_challenge: challenge, code_challenge_method: 'S256' });
  res = await postForm(`${srv.url}/token`, web, { grant_type: 'authorization_code', code: code2, redirect_uri: redirectUri, code_verifier: verifier });
  t.equal(res.status, 200);
});

t.test('code reuse: the second redemption is invalid_grant and revokes what the first issued', async (t) => {
  const { cookie } = await signIn();
  const code = await authCode(cookie, { scope: 'openid email offline_access' });
  let res = await postForm(`${srv.url}/token`, web, { grant_type: 'authorization_code', code, redirect_uri: redirectUri });
  t.equal(res.status, 200);
  const first = await j(res);
  t.ok(first.refresh_token);
  res = await fetch(`${srv.url}/userinfo`, { headers: { authorization: `Bearer ${first.access_token}` } });
  t.equal(res.status, 200);
  res = await postForm(`${srv.url}/token`, web, { grant_type: 'authorization_code', code, redirect_uri: redirectUri });
  t.equal(res.status, 400);
  t.same(await j(res), { error: 'invalid_grant', error_description: 'The authorization code was already used.' });
  res = await fetch(`${srv.url}/userinfo`, { headers: { authorization: `Bearer ${first.access_token}` } });
  t.equal(res.status, 401);
  t.equal((await j(res)).error, 'token_revoked');
  res = await postForm(`${srv.url}/token`, web, { grant_type: 'refresh_token', refresh_token: first.refresh_token });
  t.equal((await j(res)).error, 'invalid_grant', 'the refresh token family is revoked too');
  const alerts = await srv.deps.sql<{ data: { reason: string } }[]>`
    select data from event_outbox where tenant_id = ${tenant.tenant_id} and event = 'security.alert'
      and data->>'reason' = 'authorization_code_replay' and data->>'client_id' = ${web.client_id}`;
  t.equal(alerts.length, 1, 'the replay raised one security.alert');
});

t.test('expired authorization code and unknown code', async (t) => {
  const { cookie } = await signIn();
  const code = await authCode(cookie);
  const key = loginKeys.authCode(sha256(code));
  const rec = JSON.parse((await srv.deps.redis.get(key))!);
  rec.exp = Math.floor(Date.now() / 1000) - 1;
  await srv.deps.redis.set(key, JSON.stringify(rec), 'EX', 60);
  let res = await postForm(`${srv.url}/token`, web, { grant_type: 'authorization_code', code, redirect_uri: redirectUri });
  t.same(await j(res), { error: 'invalid_grant', error_description: 'The authorization code has expired.' });
  res = await postForm(`${srv.url}/token`, web, { grant_type: 'authorization_code', code: 'A'.repeat(43), redirect_uri: redirectUri });
  t.equal((await j(res)).error, 'invalid_grant');
});

t.test('one-time code: wrong codes, too many attempts burn it, expiry', async (t) => {
  const email = uniqueEmail('attempts');
  await generate(email);
  const code = await codeFor(sink, email);
  const wrong = code === '000000' ? '111111' : '000000';
  let res = await verify(email, wrong);
  t.equal(res.status, 400);
  t.match(await j(res), { error: 'invalid_request', error_description: 'The code is invalid or has expired.' });
  for (let i = 2; i < LOGIN.codeMaxAttempts; i++) await verify(email, wrong);
  res = await verify(email, wrong);
  t.match((await j(res)).error_description, /Too many wrong codes/);
  res = await verify(email, code);
  t.equal(res.status, 400, 'the right code no longer works once burned');
  const failed = await srv.deps.sql<{ n: number }[]>`select count(*)::int as n from event_outbox where tenant_id = ${tenant.tenant_id} and event = 'auth.login_failed'`;
  t.ok(failed[0]!.n >= LOGIN.codeMaxAttempts, 'auth.login_failed recorded');
  const suspicious = await srv.deps.sql<{ n: number }[]>`select count(*)::int as n from event_outbox where tenant_id = ${tenant.tenant_id} and event = 'security.suspicious_activity' and data->>'reason' = 'one_time_code_guessing'`;
  t.equal(suspicious[0]!.n, 1, 'burning the code raised one security.suspicious_activity');

  // Expiry: the code's Redis entry is gone after its TTL (simulated by expiring it now).
  const email2 = uniqueEmail('expiry');
  await generate(email2);
  const code2 = await codeFor(sink, email2);
  const { emailHash } = await import('../../src/login/keys.js');
  await srv.deps.redis.pexpire(loginKeys.otp(emailHash(email2)), 1);
  await new Promise((r) => setTimeout(r, 20));
  res = await verify(email2, code2);
  t.equal(res.status, 400);
  t.equal((await j(res)).error, 'invalid_request');
  // A code works exactly once.
  await generate(email2);
  const code3 = await codeFor(sink, email2, 1);
  t.equal((await verify(email2, code3)).status, 200);
  t.equal((await verify(email2, code3)).status, 400);
});

t.test('rate limiting per address: 429 with Retry-After and retry_after; same answer for any address', async (t) => {
  const email = uniqueEmail('rate');
  for (let i = 0; i < LOGIN.perAddressLimit; i++) t.equal((await generate(email)).status, 200);
  const res = await generate(email);
  t.equal(res.status, 429);
  const retry = Number(res.headers.get('retry-after'));
  t.ok(retry > 0 && retry <= LOGIN.perAddressWindowSeconds);
  const body = await j(res);
  t.equal(body.error, 'rate_limit_exceeded');
  t.equal(body.retry_after, retry);
  // Invalid input is refused up front.
  const bad = await generate('not-an-email');
  t.equal(bad.status, 422);
  t.equal((await j(bad)).error, 'invalid_email');
});

t.test('suspended and locked users get 403 and no session', async (t) => {
  for (const [status, error] of [['suspended', 'user_suspended'], ['locked', 'user_locked']] as const) {
    const { email, sub } = await signIn(uniqueEmail(status));
    await srv.deps.sql`update users set status = ${status} where id = ${sub}`;
    const before = mailCount(sink, email);
    await generate(email);
    const code = await codeFor(sink, email, before);
    const res = await verify(email, code);
    t.equal(res.status, 403);
    t.equal((await j(res)).error, error);
    t.equal(sessionCookieFrom(res), undefined);
  }
});

t.test('logout: id_token_hint and post_logout_redirect_uri checked, session ended, auth.logout emitted', async (t) => {
  const { cookie, sub } = await signIn(uniqueEmail('logout'));
  const code = await authCode(cookie);
  const tok = await j(await postForm(`${srv.url}/token`, web, { grant_type: 'authorization_code', code, redirect_uri: redirectUri }));
  const postLogout = `${srv.url}/demo/logged-out`;
  // Unregistered post_logout_redirect_uri: error page, no redirect, session kept.
  let res = await fetch(`${srv.url}/logout?${new URLSearchParams({ id_token_hint: tok.id_token, post_logout_redirect_uri: 'https://evil.example/' })}`, { headers: { cookie }, redirect: 'manual' });
  t.equal(res.status, 400);
  t.equal(res.headers.get('location'), null);
  // Without a hint the user must confirm (CSRF-protected page).
  res = await fetch(`${srv.url}/logout`, { headers: { cookie }, redirect: 'manual' });
  t.equal(res.status, 200);
  t.match(await res.text(), /Do you want to sign out\?/);
  // With the hint: ended at once and sent back with state.
  res = await fetch(`${srv.url}/logout?${new URLSearchParams({ id_token_hint: tok.id_token, post_logout_redirect_uri: postLogout, state: 'bye' })}`, { headers: { cookie }, redirect: 'manual' });
  t.equal(res.status, 302);
  t.equal(res.headers.get('location'), `${postLogout}?state=bye`);
  t.match(res.headers.getSetCookie().join('\n'), /svc_session=; Path=\/; Max-Age=0/);
  res = await fetch(authorizeUrl(srv.url, { response_type: 'code', client_id: web.client_id, redirect_uri: redirectUri, scope: 'openid', state: 's', prompt: 'none' }), { headers: { cookie }, redirect: 'manual' });
  t.equal(new URL(res.headers.get('location')!).searchParams.get('error'), 'login_required', 'the session is gone');
  const ev = await srv.deps.sql<{ n: number }[]>`select count(*)::int as n from event_outbox where tenant_id = ${tenant.tenant_id} and event = 'auth.logout' and data->>'user_id' = ${sub}`;
  t.equal(ev[0]!.n, 1);
  // POST works too (form, with the hint).
  const again = await signIn(uniqueEmail('logout2'));
  const tok2 = await j(await postForm(`${srv.url}/token`, web, { grant_type: 'authorization_code', code: await authCode(again.cookie), redirect_uri: redirectUri }));
  res = await fetch(`${srv.url}/logout`, { method: 'POST', headers: { cookie: again.cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ id_token_hint: tok2.id_token, post_logout_redirect_uri: postLogout }), redirect: 'manual' });
  t.equal(res.status, 303);
  t.equal(res.headers.get('location'), postLogout);
});

t.test('rate limiting per client IP', async (t) => {
  // Distinct addresses from one IP: the IP bound applies (last in this file: it exhausts the IP's budget).
  let limited: Response | undefined;
  for (let i = 0; i <= srv.config.loginIpLimitPerMinute && !limited; i++) {
    const res = await generate(uniqueEmail('spray'));
    if (res.status === 429) limited = res;
    else await res.arrayBuffer();
  }
  t.ok(limited, 'the IP limit was reached');
  t.equal((await j(limited!)).error, 'rate_limit_exceeded');
  t.ok(Number(limited!.headers.get('retry-after')) > 0);
});
