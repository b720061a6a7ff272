import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { CHROMIUM, launchChromium } from '../helpers/browser.js';
import { providerOf } from '../../src/account/passkeys/providers.js';
import { createClient } from '../../src/clients/create.js';
import { GRANT } from '../../src/clients/model.js';
import { closeLogin } from '../../src/login/index.js';
import { sha256 } from '../../src/login/keys.js';
import { createSession } from '../../src/login/sessions.js';
import { redisKeys } from '../../src/store/redis-keys.js';
import { createLogger } from '../../src/log.js';
import { startSmtpSink } from '../../src/mail/dev-sink.js';
import { startEmailWorker } from '../../workers/email-worker.js';
import { freePort } from '../helpers/env.js';
import { j } from '../helpers/http.js';
import { startTestServer } from '../helpers/server.js';
import { basic, postForm, setupTenant } from '../helpers/tokens.js';
import { codeFor, uniqueEmail } from '../login/fixtures.js';

// Passkeys as a person uses them, in headless Chromium with a CDP virtual authenticator (CTAP2, internal
// transport, resident keys, user verification): sign in by email, add a passkey on /account, rename it
// (page and PATCH), sign out, sign in with the passkey through /authorize, withdraw an application's
// access. WebAuthn needs a domain, not an IP address, so this server's issuer is http://localhost:<port>.
const SHOTS = path.resolve('.data/screenshots');
if (!fs.existsSync(CHROMIUM)) {
  t.plan(0, 'Chromium is not installed (apt-get install chromium)');
} else {
  const sink = await startSmtpSink();
  const port = await freePort();
  const srv = await startTestServer({ SMTP_URL: `smtp://127.0.0.1:${sink.port}`, PORT: String(port), ISSUER: `http://localhost:${port}` });
  const worker = await startEmailWorker(srv.config, createLogger('silent'));
  const tenant = await setupTenant(srv, 'passkeys');
  const base = srv.config.issuer;
  const browser: Browser = await launchChromium();
  t.teardown(async () => { await browser.close(); await worker.close(); await srv.close(); await closeLogin(srv.deps); await sink.close(); });
  fs.mkdirSync(SHOTS, { recursive: true });
  const web = tenant.clients.web;
  const callback = web.redirect_uris[0]!;
  const authorize = (clientId: string, scope: string, state: string) => `${base}/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: callback, scope, state })}`;
  const thirdId = `${tenant.tenant_id}-third`;
  const third = await createClient(srv.deps.sql, srv.deps.tokens.secretKey, { clientId: thirdId, tenantId: tenant.tenant_id, name: 'Third Party App', grantTypes: [GRANT.authorizationCode, GRANT.refreshToken], scopes: ['openid', 'email', 'offline_access'], redirectUris: [callback] });
  const introspector = await createClient(srv.deps.sql, srv.deps.tokens.secretKey, { clientId: `${tenant.tenant_id}-introspector`, tenantId: tenant.tenant_id, name: 'Introspector', grantTypes: [], canIntrospect: true });
  const events = (type: string, userId: string) => srv.deps.sql<{ data: Record<string, unknown> }[]>`
    select data from event_outbox where tenant_id = ${tenant.tenant_id} and event = ${type} and data->>'user_id' = ${userId} order by id`;

  async function withAuthenticator(context: BrowserContext, page: Page): Promise<void> {
    const cdp = await context.newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    await cdp.send('WebAuthn.addVirtualAuthenticator', { options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true } });
  }

  async function emailSignIn(page: Page, email: string, clientId: string, scope: string): Promise<URL> {
    await page.goto(authorize(clientId, scope, 'email-state'));
    await page.getByLabel('Email address').fill(email);
    await page.getByRole('button', { name: 'Email me a code' }).click();
    await page.waitForSelector('#code');
    await page.getByLabel('One-time code').fill(await codeFor(sink, email));
    await Promise.all([page.waitForURL(/\/demo\/callback\?/), page.getByRole('button', { name: 'Sign in' }).click()]);
    return new URL(page.url());
  }

  const sessionHeader = async (context: BrowserContext) => `svc_session=${(await context.cookies(base)).find((c) => c.name === 'svc_session')!.value}`;

  t.test('register from /account, rename, sign out, sign in with the passkey, withdraw access', async (t) => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await withAuthenticator(context, page);
    const violations: string[] = [];
    page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) violations.push(m.text()); });
    const email = uniqueEmail('passkey');
    await emailSignIn(page, email, web.client_id, 'openid email');
    const user = (await srv.deps.store.forTenant(tenant.tenant_id).users.getByEmail(email))!;

    // Add a passkey on the account page.
    await page.goto(`${base}/account`);
    t.equal(await page.title(), 'Your account');
    t.equal(await page.textContent('#account-email'), email);
    await Promise.all([page.waitForURL(/\/account\?done=added/), page.getByRole('button', { name: 'Add a passkey' }).click()]);
    t.match(await page.textContent('[role=status]'), /Passkey added/);
    const [stored] = await srv.deps.store.forTenant(tenant.tenant_id).passkeys.listForUser(user.id);
    t.ok(stored, 'the passkey is stored');
    t.same(stored!.transports, ['internal']);
    t.equal(stored!.device_name, providerOf(stored!.aaguid)?.name ?? null, 'the name defaults from the provider');
    t.same((await events('user.updated', user.id)).map((e) => e.data.change), ['passkey_added']);

    // Rename on the page.
    const label = stored!.device_name ?? 'Unnamed passkey';
    await page.getByLabel(`New name for ${label}`).fill('  My   laptop ');
    await Promise.all([page.waitForURL(/\/account\?done=renamed/), page.getByRole('button', { name: 'Rename' }).click()]);
    t.match(await page.textContent('main'), /My laptop/);
    await page.screenshot({ path: path.join(SHOTS, 'account.png'), fullPage: true });

    // Rename through the spec's PATCH: the exact body.
    const cookie = await sessionHeader(context);
    const res = await fetch(`${base}/api/account/passkeys/${stored!.id}`, { method: 'PATCH', headers: { cookie, 'content-type': 'application/json' }, body: JSON.stringify({ device_name: ' Work\tlaptop ' }) });
    t.equal(res.status, 200);
    t.same(await res.json(), { passkey: { id: stored!.id, device_name: 'Work laptop', aaguid: stored!.aaguid, provider: providerOf(stored!.aaguid), created_at: stored!.created_at, last_used_at: null } });
    const bad = await fetch(`${base}/api/account/passkeys/${stored!.id}`, { method: 'PATCH', headers: { cookie, 'content-type': 'application/json' }, body: JSON.stringify({ device_name: '  \n ' }) });
    t.equal(bad.status, 422);
    t.equal((await j(bad)).error, 'validation_error');
    const tooLong = await fetch(`${base}/api/account/passkeys/${stored!.id}`, { method: 'PATCH', headers: { cookie, 'content-type': 'application/json' }, body: JSON.stringify({ device_name: 'x'.repeat(101) }) });
    t.equal(tooLong.status, 422);
    const formPost = await fetch(`${base}/api/account/passkeys/${stored!.id}`, { method: 'PATCH', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: 'device_name=evil' });
    t.equal(formPost.status, 400, 'a form body is refused');
    const foreign = await fetch(`${base}/api/account/passkeys/${stored!.id}`, { method: 'PATCH', headers: { cookie, origin: 'https://evil.example', 'content-type': 'application/json' }, body: JSON.stringify({ device_name: 'evil' }) });
    t.equal(foreign.status, 403, 'another site\'s Origin is refused');
    const noCookie = await fetch(`${base}/api/account/passkeys/${stored!.id}`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ device_name: 'x' }) });
    t.equal(noCookie.status, 401);
    t.equal((await j(noCookie)).error, 'unauthorized');

    // Another user of the tenant cannot rename it; the answer equals that for an unknown id.
    const other = await createSession(srv.deps.redis, { tenantId: tenant.tenant_id, userId: 'usr_other', email: 'other@example.test', authTime: Math.floor(Date.now() / 1000) });
    const theirs = await fetch(`${base}/api/account/passkeys/${stored!.id}`, { method: 'PATCH', headers: { cookie: `svc_session=${other.id}`, 'content-type': 'application/json' }, body: JSON.stringify({ device_name: 'mine' }) });
    const unknown = await fetch(`${base}/api/account/passkeys/pk_unknown`, { method: 'PATCH', headers: { cookie, 'content-type': 'application/json' }, body: JSON.stringify({ device_name: 'mine' }) });
    t.equal(theirs.status, 404);
    t.equal(unknown.status, 404);
    const [a, b] = [await j(theirs), await j(unknown)];
    t.equal(a.error, 'not_found');
    t.same(a, b, 'a foreign id and an unknown id answer the same');
    t.equal((await srv.deps.store.forTenant(tenant.tenant_id).passkeys.getForUser(user.id, stored!.id))?.device_name, 'Work laptop');

    // An old sign-in cannot delete: the page sends the user to confirm it is them, here with the passkey.
    const sessionKey = redisKeys.session(sha256(cookie.slice('svc_session='.length)));
    const record = JSON.parse((await srv.deps.redis.get(sessionKey))!);
    await srv.deps.redis.set(sessionKey, JSON.stringify({ ...record, authTime: record.authTime - 600 }), 'KEEPTTL');
    await page.goto(`${base}/account`);
    await Promise.all([page.waitForURL(/\/account\/reauth$/), page.getByRole('button', { name: 'Delete Work laptop' }).click()]);
    t.equal(await page.title(), 'Confirm it is you');
    await Promise.all([page.waitForURL(/\/account\?done=reauth/), page.getByRole('button', { name: 'Use a passkey' }).click()]);
    const renewed = await sessionHeader(context);
    t.not(renewed, cookie, 'a new session after re-authentication');
    const opts = await fetch(`${base}/api/account/passkeys/registration-options`, { method: 'POST', headers: { cookie: renewed, 'content-type': 'application/json' }, body: '{}' });
    t.equal(opts.status, 200, 'the new session is recent');
    t.equal((await srv.deps.store.forTenant(tenant.tenant_id).passkeys.listForUser(user.id)).length, 1, 'nothing was deleted on the way');

    // Sign out from the account page, then sign in with the passkey through /authorize: first by the
    // email field's autofill (conditional mediation, which the virtual authenticator answers at once).
    const signOut = async () => {
      await page.goto(`${base}/account`);
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForSelector('h1:text("Signed out")');
    };
    const redeem = async (landed: URL) => postForm(`${base}/token`, web, { grant_type: 'authorization_code', code: landed.searchParams.get('code')!, redirect_uri: callback });
    await signOut();
    await page.goto(authorize(web.client_id, 'openid email', 'autofill-state'));
    await page.waitForURL(/\/demo\/callback\?/);
    let landed = new URL(page.url());
    t.equal(landed.searchParams.get('state'), 'autofill-state', 'signed in through autofill');
    t.equal((await redeem(landed)).status, 200);

    // Then with the button, in a browser without conditional mediation.
    await signOut();
    await page.addInitScript('Object.defineProperty(PublicKeyCredential, "isConditionalMediationAvailable", { value: undefined })');
    await page.goto(authorize(web.client_id, 'openid email', 'passkey-state'));
    t.equal(await page.title(), 'Sign in');
    await page.getByRole('button', { name: 'Sign in with a passkey' }).waitFor();
    await page.screenshot({ path: path.join(SHOTS, 'login.png'), fullPage: true });
    await Promise.all([page.waitForURL(/\/demo\/callback\?/), page.getByRole('button', { name: 'Sign in with a passkey' }).click()]);
    landed = new URL(page.url());
    t.equal(landed.searchParams.get('state'), 'passkey-state');
    t.equal((await redeem(landed)).status, 200, 'the code from a passkey sign-in is redeemed');
    const logins = await events('auth.login', user.id);
    t.same(logins.slice(-2).map((e) => e.data.method), ['passkey', 'passkey']);
    t.ok((await srv.deps.store.forTenant(tenant.tenant_id).passkeys.getForUser(user.id, stored!.id))!.last_used_at, 'last use recorded');

    // A third-party application gets consent and tokens; Revoke on the page cuts both.
    await page.goto(authorize(thirdId, 'openid offline_access', 'third'));
    await Promise.all([page.waitForURL(/\/demo\/callback\?/), page.getByRole('button', { name: 'Allow' }).click()]);
    const thirdClient = { client_id: thirdId, client_secret: third.clientSecret! };
    const tokens = await j(await postForm(`${base}/token`, thirdClient, { grant_type: 'authorization_code', code: new URL(page.url()).searchParams.get('code')!, redirect_uri: callback }));
    t.ok(tokens.refresh_token, 'a refresh token was issued');
    const introspect = async (token: string) => j(await fetch(`${base}/introspect`, { method: 'POST', headers: { authorization: basic(introspector.client.clientId, introspector.clientSecret!), 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token }) }));
    t.equal((await introspect(tokens.access_token)).active, true);
    await page.goto(`${base}/account`);
    t.match(await page.textContent('main'), /Third Party App/);
    await Promise.all([page.waitForURL(/\/account\?done=revoked/), page.getByRole('button', { name: 'Revoke Third Party App' }).click()]);
    t.equal(await page.getByRole('button', { name: 'Revoke Third Party App' }).count(), 0, 'the application is gone from the page');
    const refreshed = await postForm(`${base}/token`, thirdClient, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token });
    t.equal(refreshed.status, 400);
    t.equal((await j(refreshed)).error, 'invalid_grant');
    t.equal((await introspect(tokens.access_token)).active, false, 'the access token is inactive');
    t.match(await page.textContent('.activity'), /Access withdrawn from/);

    // A counter that goes backwards (a cloned authenticator) is refused and raises security.alert.
    await srv.deps.sql`update passkeys set counter = 1000000 where id = ${stored!.id}`;
    await signOut();
    await page.goto(authorize(web.client_id, 'openid email', 'clone'));
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.waitForSelector('#passkey-status:not([hidden])');
    t.match(await page.textContent('#passkey-status'), /counter went backwards/);
    t.equal(await page.title(), 'Sign in', 'no session was started');
    t.same((await events('security.alert', user.id)).map((e) => e.data.reason), ['passkey_counter_regression']);
    t.same(violations, [], 'no CSP violations');
    await context.close();
  });

  t.test('registration needs a sign-in from the last five minutes', async (t) => {
    const stale = await createSession(srv.deps.redis, { tenantId: tenant.tenant_id, userId: 'usr_stale', email: 'stale@example.test', authTime: Math.floor(Date.now() / 1000) - 600 });
    const res = await fetch(`${base}/api/account/passkeys/registration-options`, { method: 'POST', headers: { cookie: `svc_session=${stale.id}`, 'content-type': 'application/json' }, body: '{}' });
    t.equal(res.status, 403);
    const body = await j(res);
    t.equal(body.error, 'forbidden');
    t.same(body.details, { session: ['reauthentication_required'], reauthenticate: ['/account/reauth'] });
    const fresh = await createSession(srv.deps.redis, { tenantId: tenant.tenant_id, userId: 'usr_stale', email: 'stale@example.test', authTime: Math.floor(Date.now() / 1000) });
    const ok = await fetch(`${base}/api/account/passkeys/registration-options`, { method: 'POST', headers: { cookie: `svc_session=${fresh.id}`, 'content-type': 'application/json' }, body: '{}' });
    t.equal(ok.status, 200);
    const { options } = await j(ok);
    t.equal(options.authenticatorSelection.residentKey, 'required');
    t.equal(options.authenticatorSelection.userVerification, 'required');
    t.equal(options.rp.id, 'localhost');
  });

  t.test('DELETE /api/user/consents/{id} withdraws a consent with the user\'s Bearer token', async (t) => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const email = uniqueEmail('consent');
    const landed = await emailSignIn(page, email, web.client_id, 'openid email offline_access');
    const tok = await j(await postForm(`${base}/token`, web, { grant_type: 'authorization_code', code: landed.searchParams.get('code')!, redirect_uri: callback, audience: base }));
    const list = await j(await fetch(`${base}/api/user/consents`, { headers: { authorization: `Bearer ${tok.access_token}` } }));
    t.equal(list.total, 1);
    const bearerPatch = await fetch(`${base}/api/account/passkeys/pk_any`, { method: 'PATCH', headers: { authorization: `Bearer ${tok.access_token}`, 'content-type': 'application/json' }, body: JSON.stringify({ device_name: 'x' }) });
    t.equal(bearerPatch.status, 401, 'the passkey endpoint takes the session cookie, not a Bearer token');
    const unknown = await fetch(`${base}/api/user/consents/cns_unknown`, { method: 'DELETE', headers: { authorization: `Bearer ${tok.access_token}` } });
    t.equal(unknown.status, 404);
    const del = await fetch(`${base}/api/user/consents/${list.consents[0].id}`, { method: 'DELETE', headers: { authorization: `Bearer ${tok.access_token}` } });
    t.equal(del.status, 204);
    const after = await fetch(`${base}/api/user/consents`, { headers: { authorization: `Bearer ${tok.access_token}` } });
    t.equal(after.status, 401, 'the token that withdrew the consent no longer works either');
    t.equal((await j(after)).error, 'token_revoked');
    const refreshed = await postForm(`${base}/token`, web, { grant_type: 'refresh_token', refresh_token: tok.refresh_token });
    t.equal((await j(refreshed)).error, 'invalid_grant');
    await context.close();
  });
}
