import fs from 'node:fs';
import t from 'tap';
import type { Browser } from 'playwright-core';
import { CHROMIUM, launchChromium } from '../helpers/browser.js';
import { createClient } from '../../src/clients/create.js';
import { GRANT } from '../../src/clients/model.js';
import { j } from '../helpers/http.js';
import { postForm } from '../helpers/tokens.js';
import { codeFor, startLoginEnv, uniqueEmail } from './fixtures.js';

// The whole flow as a person does it, in headless Chromium: login page, email, code from the SMTP
// sink, redirect to the client with a code the token endpoint redeems; then a third-party client's
// consent page; then sign-out with confirmation.
if (!fs.existsSync(CHROMIUM)) {
  t.plan(0, 'Chromium is not installed (apt-get install chromium)');
} else {
  const env = await startLoginEnv();
  const browser: Browser = await launchChromium();
  t.teardown(async () => { await browser.close(); await env.close(); });
  const { srv, sink, tenant } = env;
  const web = tenant.clients.web;
  const callback = web.redirect_uris[0]!;

  t.test('sign in with an emailed code and land on the redirect URI with a redeemable code', async (t) => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const violations: string[] = [];
    page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) violations.push(m.text()); });
    const email = uniqueEmail('browser');
    await page.goto(`${srv.url}/authorize?${new URLSearchParams({ response_type: 'code', client_id: web.client_id, redirect_uri: callback, scope: 'openid email', state: 'browser-state', nonce: 'bn' })}`);
    t.equal(await page.title(), 'Sign in');
    t.equal(await page.getByLabel('Email address').count(), 1, 'the field has a label');
    await page.getByLabel('Email address').fill(email);
    await page.getByRole('button', { name: 'Email me a code' }).click();
    await page.waitForSelector('#code');
    t.equal(await page.title(), 'Enter your code');
    const code = await codeFor(sink, email);
    // A wrong code first: the page says so and lets the user retry.
    await page.getByLabel('One-time code').fill(code === '000000' ? '111111' : '000000');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForSelector('.error');
    await page.getByLabel('One-time code').fill(code);
    await Promise.all([page.waitForURL(/\/demo\/callback\?/), page.getByRole('button', { name: 'Sign in' }).click()]);
    const landed = new URL(page.url());
    t.equal(landed.searchParams.get('state'), 'browser-state');
    t.equal(landed.searchParams.get('iss'), srv.url);
    const authCode = landed.searchParams.get('code')!;
    t.ok(authCode);
    const cookies = await context.cookies(srv.url);
    const session = cookies.find((c) => c.name === 'svc_session')!;
    t.ok(session, 'session cookie set');
    t.equal(session.httpOnly, true);
    t.equal(session.sameSite, 'Lax');
    const res = await postForm(`${srv.url}/token`, web, { grant_type: 'authorization_code', code: authCode, redirect_uri: callback, audience: srv.url });
    t.equal(res.status, 200);
    const tok = await j(res);
    t.ok(tok.id_token && tok.access_token);
    t.same(violations, [], 'no CSP violations');

    // Signed in already: another authorization goes straight back with a code (no page).
    await page.goto(`${srv.url}/authorize?${new URLSearchParams({ response_type: 'code', client_id: web.client_id, redirect_uri: callback, scope: 'openid', state: 's2' })}`);
    t.match(page.url(), /\/demo\/callback\?code=/);

    // A third-party client asks for consent; Allow records it and issues a code.
    const thirdId = `${tenant.tenant_id}-third`;
    await createClient(srv.deps.sql, srv.deps.tokens.secretKey, { clientId: thirdId, tenantId: tenant.tenant_id, name: 'Third Party App', grantTypes: [GRANT.authorizationCode], scopes: ['openid', 'email'], redirectUris: [callback] });
    await page.goto(`${srv.url}/authorize?${new URLSearchParams({ response_type: 'code', client_id: thirdId, redirect_uri: callback, scope: 'openid email', state: 's3' })}`);
    t.equal(await page.title(), 'Allow access?');
    t.match(await page.textContent('main'), /Third Party App/);
    await Promise.all([page.waitForURL(/\/demo\/callback\?/), page.getByRole('button', { name: 'Allow' }).click()]);
    t.ok(new URL(page.url()).searchParams.get('code'));
    const list = await j(await fetch(`${srv.url}/api/user/consents`, { headers: { authorization: `Bearer ${tok.access_token}` } }));
    t.same(list.consents.map((c: { clientId: string }) => c.clientId).sort(), [thirdId, web.client_id].sort());

    // Sign out without a hint: a confirmation page, then the signed-out page.
    await page.goto(`${srv.url}/logout`);
    t.equal(await page.title(), 'Sign out?');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForSelector('h1:text("Signed out")');
    t.notOk((await context.cookies(srv.url)).some((c) => c.name === 'svc_session' && c.value), 'session cookie cleared');
    await context.close();
  });
}
